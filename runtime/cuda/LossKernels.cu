//===- LossKernels.cu - nn.cross_entropy and its gradient on the device ---===//
//
// One block per row of logits: the maximum, then the sum of exp(x - max),
// each a fixed-order block reduction. The loss writes each row's term to
// scratch, then one block sums the terms of the weighted rows (fixed order)
// and divides by the normaliser. Semantics as the host kernels: a row with
// weight 0 contributes nothing (and gets a zero gradient); a label outside
// [0, vocab) in a weighted row makes the loss NaN and gives no one-hot term
// in the gradient. The normaliser operand and the incoming gradient are
// device scalars, read on the device.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

/// Checks the operands shared by the loss and its gradient; returns the
/// number of rows and the vocabulary size.
template <typename T>
void lossShapes(const char *kernel, const Shape &logitsShape,
                const Shape &labelsShape, const T *weights,
                const Shape &weightsShape, const T *normalizerValue,
                const Shape &normalizerValueShape, double normalizer,
                int64_t &rows, int64_t &vocab) {
  checkValid(kernel, "the logits", logitsShape);
  LOOM_CUDA_CHECK(logitsShape.rank >= 1, kernel,
                  "logits must have rank at least 1");
  Shape rowsShape = logitsShape;
  --rowsShape.rank;
  checkShape(kernel, "the labels", labelsShape, rowsShape);
  if (weights)
    checkShape(kernel, "the weights", weightsShape, rowsShape);
  bool hasAttr = normalizer == normalizer;
  LOOM_CUDA_CHECK((normalizerValue != nullptr) != hasAttr, kernel,
                  "needs exactly one normalizer, the attribute or the "
                  "operand");
  if (normalizerValue)
    checkShape(kernel, "the normalizer operand", normalizerValueShape, Shape{});
  rows = rowsShape.numElements();
  vocab = logitsShape[logitsShape.rank - 1];
}

/// The maximum and sum of exp(x - max) of one row (block-wide).
template <typename T>
__device__ void rowStatistics(const T *x, int64_t vocab, T &max, T &sum) {
  max = negativeInfinity<T>();
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    max = math::runningMax(max, x[j]);
  max = blockReduce(max, MaxOp{});
  sum = 0;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    sum += std::exp(x[j] - max);
  sum = blockReduce(sum, SumOp{});
}

/// terms[n] = weight * (logsumexp - x[label]) of row n (NaN for a label
/// out of range; unused for weight 0).
template <typename T>
__global__ void lossTermsKernel(T *terms, const T *logits, DeviceIndex labels,
                                const T *weights, int64_t rows, int64_t vocab) {
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    T weight = weights ? weights[n] : T(1);
    if (weight == T(0))
      continue; // Uniform across the block.
    int64_t label = labels[n];
    if (label < 0 || label >= vocab) {
      if (threadIdx.x == 0)
        terms[n] = undefinedValue<T>();
      continue;
    }
    const T *x = logits + n * vocab;
    T max, sum;
    rowStatistics(x, vocab, max, sum);
    if (threadIdx.x == 0) {
      T logSumExp = max + std::log(sum);
      terms[n] = weight * (logSumExp - x[label]);
    }
  }
}

/// result = (sum of the weighted rows' terms) / divisor; one block.
template <typename T>
__global__ void lossSumKernel(T *result, const T *terms, const T *weights,
                              int64_t rows, const T *normalizerValue,
                              T normalizer) {
  T total = 0;
  for (int64_t n = threadIdx.x; n < rows; n += blockDim.x)
    if (!weights || weights[n] != T(0))
      total += terms[n];
  total = blockReduce(total, SumOp{});
  if (threadIdx.x == 0)
    result[0] = total / (normalizerValue ? *normalizerValue : normalizer);
}

template <typename T>
void crossEntropyImpl(T *result, const Shape &resultShape, const T *logits,
                      const Shape &logitsShape, IndexPtr labels,
                      const Shape &labelsShape, const T *weights,
                      const Shape &weightsShape, const T *normalizerValue,
                      const Shape &normalizerValueShape, double normalizer) {
  const char *kernel = "cross_entropy";
  checkShape(kernel, "the result", resultShape, Shape{});
  int64_t rows, vocab;
  lossShapes(kernel, logitsShape, labelsShape, weights, weightsShape,
             normalizerValue, normalizerValueShape, normalizer, rows, vocab);
  Scratch<T> terms(kernel, static_cast<size_t>(rows));
  if (rows > 0) {
    lossTermsKernel<<<gridFor(rows, 1), rowThreads(vocab), 0, stream()>>>(
        terms.get(), logits, DeviceIndex(labels), weights, rows, vocab);
    checkLaunch(kernel);
  }
  lossSumKernel<<<1, kMaxBlock, 0, stream()>>>(result, terms.get(), weights,
                                               rows, normalizerValue,
                                               static_cast<T>(normalizer));
  checkLaunch(kernel);
}

template <typename T>
__global__ void lossGradKernel(T *result, const T *grad, const T *logits,
                               DeviceIndex labels, const T *weights,
                               int64_t rows, int64_t vocab,
                               const T *normalizerValue, T normalizer) {
  const T dloss = grad[0];
  const T divisor = normalizerValue ? *normalizerValue : normalizer;
  for (int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const T *x = logits + n * vocab;
    T *dx = result + n * vocab;
    if (weights && weights[n] == T(0)) {
      for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x)
        dx[v] = T(0);
      continue; // Uniform across the block.
    }
    const T coefficient = dloss * (weights ? weights[n] : T(1)) / divisor;
    int64_t label = labels[n];
    T max, sum;
    rowStatistics(x, vocab, max, sum);
    for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
      T p = std::exp(x[v] - max) / sum;
      // The one-hot term, as the host kernel computes it.
      dx[v] = v == label ? coefficient * (p - T(1)) : coefficient * p;
    }
  }
}

template <typename T>
void crossEntropyGradImpl(T *result, const Shape &resultShape, const T *grad,
                          const Shape &gradShape, const T *logits,
                          const Shape &logitsShape, IndexPtr labels,
                          const Shape &labelsShape, const T *weights,
                          const Shape &weightsShape, const T *normalizerValue,
                          const Shape &normalizerValueShape,
                          double normalizer) {
  const char *kernel = "cross_entropy_grad";
  checkShape(kernel, "grad", gradShape, Shape{});
  checkShape(kernel, "the result", resultShape, logitsShape);
  int64_t rows, vocab;
  lossShapes(kernel, logitsShape, labelsShape, weights, weightsShape,
             normalizerValue, normalizerValueShape, normalizer, rows, vocab);
  if (rows == 0 || vocab == 0)
    return;
  lossGradKernel<<<gridFor(rows, 1), rowThreads(vocab), 0, stream()>>>(
      result, grad, logits, DeviceIndex(labels), weights, rows, vocab,
      normalizerValue, static_cast<T>(normalizer));
  checkLaunch(kernel);
}

} // namespace

#define DEFINE_LOSS(T)                                                         \
  void loom::cuda::cross_entropy(                                              \
      T *result, Shape resultShape, const T *logits, Shape logitsShape,        \
      IndexPtr labels, Shape labelsShape, const T *weights,                    \
      Shape weightsShape, const T *normalizerValue,                            \
      Shape normalizerValueShape, double normalizer) {                         \
    crossEntropyImpl(result, resultShape, logits, logitsShape, labels,         \
                     labelsShape, weights, weightsShape, normalizerValue,      \
                     normalizerValueShape, normalizer);                        \
  }                                                                            \
  void loom::cuda::cross_entropy_grad(                                         \
      T *result, Shape resultShape, const T *grad, Shape gradShape,            \
      const T *logits, Shape logitsShape, IndexPtr labels, Shape labelsShape,  \
      const T *weights, Shape weightsShape, const T *normalizerValue,          \
      Shape normalizerValueShape, double normalizer) {                         \
    crossEntropyGradImpl(result, resultShape, grad, gradShape, logits,         \
                         logitsShape, labels, labelsShape, weights,            \
                         weightsShape, normalizerValue, normalizerValueShape,  \
                         normalizer);                                          \
  }
DEFINE_LOSS(float)
DEFINE_LOSS(double)
#undef DEFINE_LOSS
