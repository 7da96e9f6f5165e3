//===- NormKernels.cu - softmax and normalisations on the device ----------===//
//
// softmax, log_softmax, layer_norm, rms_norm and the two norm gradients:
// one block per normalised row (a grid-stride loop over rows), the host
// kernels' formulas per element. Each row sum is a fixed-order block
// reduction (every thread sums a fixed strided subset, then a fixed tree),
// so the bits depend only on the shapes.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <utility>

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

/// Row r = (o, in) holds elements o * size * stride + in + s * stride.
template <typename T>
__global__ void softmaxKernel(T *result, const T *input, int64_t rows,
                              int64_t size, int64_t stride, bool logarithm) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t o = r / stride, in = r % stride;
    const T *x = input + o * size * stride + in;
    T *y = result + o * size * stride + in;
    T max = negativeInfinity<T>();
    for (int64_t s = threadIdx.x; s < size; s += blockDim.x)
      max = math::runningMax(max, x[s * stride]);
    max = blockReduce(max, MaxOp{});
    T sum = 0;
    for (int64_t s = threadIdx.x; s < size; s += blockDim.x)
      sum += std::exp(x[s * stride] - max);
    sum = blockReduce(sum, SumOp{});
    if (logarithm) {
      T logSum = std::log(sum);
      for (int64_t s = threadIdx.x; s < size; s += blockDim.x)
        y[s * stride] = (x[s * stride] - max) - logSum;
    } else {
      for (int64_t s = threadIdx.x; s < size; s += blockDim.x)
        y[s * stride] = std::exp(x[s * stride] - max) / sum;
    }
  }
}

template <typename T>
void softmaxImpl(const char *kernel, T *result, const Shape &resultShape,
                 const T *input, const Shape &inputShape, int64_t dim,
                 bool logarithm) {
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  LOOM_CUDA_CHECK(dim >= 0 && dim < inputShape.rank, kernel,
                  "dim %lld is not in [0, %lld)", static_cast<long long>(dim),
                  static_cast<long long>(inputShape.rank));
  AxisSplit split = splitAt(inputShape, dim);
  int64_t rows = split.outer * split.inner;
  if (rows == 0 || split.size == 0)
    return;
  softmaxKernel<<<gridFor(rows, 1), rowThreads(split.size), 0, stream()>>>(
      result, input, rows, split.size, split.inner, logarithm);
  checkLaunch(kernel);
}

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

/// Checks a normalisation's operands; returns (rows, row length).
void normShape(
    const char *kernel, const Shape &resultShape, const Shape &inputShape,
    int64_t normalizedDims,
    std::initializer_list<std::pair<const Shape *, const char *>> affine,
    int64_t &rows, int64_t &row) {
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  int64_t rank = inputShape.rank;
  LOOM_CUDA_CHECK(normalizedDims >= 1 && normalizedDims <= rank, kernel,
                  "normalized_dims %lld is not in [1, %lld]",
                  static_cast<long long>(normalizedDims),
                  static_cast<long long>(rank));
  Shape trailing;
  for (int64_t d = rank - normalizedDims; d < rank; ++d)
    trailing.dims[trailing.rank++] = inputShape[d];
  for (auto [shape, name] : affine)
    if (shape)
      checkShape(kernel, name, *shape, trailing);
  row = trailing.numElements();
  rows = row == 0 ? 0 : inputShape.numElements() / row;
}

/// layer_norm (centre) or rms_norm; `bias` only with centre.
template <typename T>
__global__ void normKernel(T *result, const T *input, const T *scale,
                           const T *bias, int64_t rows, int64_t row, T eps,
                           bool centre) {
  const T count = static_cast<T>(row);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *x = input + r * row;
    T *y = result + r * row;
    T mean = 0;
    if (centre) {
      T sum = 0;
      for (int64_t j = threadIdx.x; j < row; j += blockDim.x)
        sum += x[j];
      mean = blockReduce(sum, SumOp{}) / count;
    }
    T squares = 0;
    for (int64_t j = threadIdx.x; j < row; j += blockDim.x)
      squares += (x[j] - mean) * (x[j] - mean);
    squares = blockReduce(squares, SumOp{});
    const T denom = std::sqrt(squares / count + eps);
    for (int64_t j = threadIdx.x; j < row; j += blockDim.x) {
      T value = (x[j] - mean) / denom;
      if (scale)
        value = value * scale[j];
      if (bias)
        value = value + bias[j];
      y[j] = value;
    }
  }
}

template <typename T>
void layerNormImpl(T *result, const Shape &resultShape, const T *input,
                   const Shape &inputShape, const T *scale,
                   const Shape &scaleShape, const T *bias,
                   const Shape &biasShape, double epsilon,
                   int64_t normalizedDims) {
  const char *kernel = "layer_norm";
  epsilon = orDefault(epsilon, 1.0e-5);
  normalizedDims = orDefault(normalizedDims, int64_t{1});
  int64_t rows, row;
  normShape(kernel, resultShape, inputShape, normalizedDims,
            {{scale ? &scaleShape : nullptr, "scale"},
             {bias ? &biasShape : nullptr, "bias"}},
            rows, row);
  if (rows == 0)
    return;
  normKernel<<<gridFor(rows, 1), rowThreads(row), 0, stream()>>>(
      result, input, scale, bias, rows, row, static_cast<T>(epsilon),
      /*centre=*/true);
  checkLaunch(kernel);
}

template <typename T>
void rmsNormImpl(T *result, const Shape &resultShape, const T *input,
                 const Shape &inputShape, const T *scale,
                 const Shape &scaleShape, double epsilon,
                 int64_t normalizedDims) {
  const char *kernel = "rms_norm";
  epsilon = orDefault(epsilon, 1.0e-6);
  normalizedDims = orDefault(normalizedDims, int64_t{1});
  int64_t rows, row;
  normShape(kernel, resultShape, inputShape, normalizedDims,
            {{scale ? &scaleShape : nullptr, "scale"}}, rows, row);
  if (rows == 0)
    return;
  normKernel<<<gridFor(rows, 1), rowThreads(row), 0, stream()>>>(
      result, input, scale, static_cast<const T *>(nullptr), rows, row,
      static_cast<T>(epsilon), /*centre=*/false);
  checkLaunch(kernel);
}

//===----------------------------------------------------------------------===//
// layer_norm_grad, rms_norm_grad
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void normGradKernel(T *result, const T *grad, const T *input,
                               const T *scale, int64_t rows, int64_t row, T eps,
                               bool centre) {
  const T count = static_cast<T>(row);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *x = input + r * row;
    const T *dy = grad + r * row;
    T *dx = result + r * row;
    T mu = 0;
    if (centre) {
      T sum = 0;
      for (int64_t j = threadIdx.x; j < row; j += blockDim.x)
        sum += x[j];
      mu = blockReduce(sum, SumOp{}) / count;
    }
    T squares = 0;
    for (int64_t j = threadIdx.x; j < row; j += blockDim.x)
      squares += (x[j] - mu) * (x[j] - mu);
    squares = blockReduce(squares, SumOp{});
    const T rstd = T(1) / std::sqrt(squares / count + eps);
    T sumG = 0, sumGX = 0;
    for (int64_t j = threadIdx.x; j < row; j += blockDim.x) {
      T xhat = (x[j] - mu) * rstd;
      T g = scale ? dy[j] * scale[j] : dy[j];
      sumG += g;
      sumGX += g * xhat;
    }
    sumG = blockReduce(sumG, SumOp{});
    sumGX = blockReduce(sumGX, SumOp{});
    const T meanG = centre ? sumG / count : T(0), meanGX = sumGX / count;
    for (int64_t j = threadIdx.x; j < row; j += blockDim.x) {
      T g = scale ? dy[j] * scale[j] : dy[j];
      dx[j] = rstd * (g - meanG - (x[j] - mu) * rstd * meanGX);
    }
  }
}

template <typename T>
void normGradImpl(const char *kernel, T *result, const Shape &resultShape,
                  const T *grad, const Shape &gradShape, const T *input,
                  const Shape &inputShape, const T *scale,
                  const Shape &scaleShape, double epsilon,
                  int64_t normalizedDims, bool centre) {
  checkShape(kernel, "grad", gradShape, inputShape);
  int64_t rows, row;
  normShape(kernel, resultShape, inputShape, normalizedDims,
            {{scale ? &scaleShape : nullptr, "scale"}}, rows, row);
  if (rows == 0)
    return;
  normGradKernel<<<gridFor(rows, 1), rowThreads(row), 0, stream()>>>(
      result, grad, input, scale, rows, row, static_cast<T>(epsilon), centre);
  checkLaunch(kernel);
}

} // namespace

#define DEFINE_NORMS(T)                                                        \
  void loom::cuda::softmax(T *result, Shape resultShape, const T *input,       \
                           Shape inputShape, int64_t dim) {                    \
    softmaxImpl("softmax", result, resultShape, input, inputShape, dim,        \
                /*logarithm=*/false);                                          \
  }                                                                            \
  void loom::cuda::log_softmax(T *result, Shape resultShape, const T *input,   \
                               Shape inputShape, int64_t dim) {                \
    softmaxImpl("log_softmax", result, resultShape, input, inputShape, dim,    \
                /*logarithm=*/true);                                           \
  }                                                                            \
  void loom::cuda::layer_norm(                                                 \
      T *result, Shape resultShape, const T *input, Shape inputShape,          \
      const T *scale, Shape scaleShape, const T *bias, Shape biasShape,        \
      double epsilon, int64_t normalizedDims) {                                \
    layerNormImpl(result, resultShape, input, inputShape, scale, scaleShape,   \
                  bias, biasShape, epsilon, normalizedDims);                   \
  }                                                                            \
  void loom::cuda::rms_norm(T *result, Shape resultShape, const T *input,      \
                            Shape inputShape, const T *scale,                  \
                            Shape scaleShape, double epsilon,                  \
                            int64_t normalizedDims) {                          \
    rmsNormImpl(result, resultShape, input, inputShape, scale, scaleShape,     \
                epsilon, normalizedDims);                                      \
  }                                                                            \
  void loom::cuda::layer_norm_grad(                                            \
      T *result, Shape resultShape, const T *grad, Shape gradShape,            \
      const T *input, Shape inputShape, const T *scale, Shape scaleShape,      \
      double epsilon, int64_t normalizedDims) {                                \
    normGradImpl("layer_norm_grad", result, resultShape, grad, gradShape,      \
                 input, inputShape, scale, scaleShape,                         \
                 orDefault(epsilon, 1.0e-5),                                   \
                 orDefault(normalizedDims, int64_t{1}), /*centre=*/true);      \
  }                                                                            \
  void loom::cuda::rms_norm_grad(                                              \
      T *result, Shape resultShape, const T *grad, Shape gradShape,            \
      const T *input, Shape inputShape, const T *scale, Shape scaleShape,      \
      double epsilon, int64_t normalizedDims) {                                \
    normGradImpl("rms_norm_grad", result, resultShape, grad, gradShape, input, \
                 inputShape, scale, scaleShape, orDefault(epsilon, 1.0e-6),    \
                 orDefault(normalizedDims, int64_t{1}), /*centre=*/false);     \
  }
DEFINE_NORMS(float)
DEFINE_NORMS(double)
#undef DEFINE_NORMS
