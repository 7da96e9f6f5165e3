//===- LossKernels.cpp - nn.cross_entropy and its gradient on the host ----===//
//
// As the interpreter: per row, the maximum, then the sum of exp(x - max) in
// index order, in the element type; the loss sums rows in row-major order.
// A row with weight 0 contributes nothing (and gets a zero gradient); a
// label outside [0, vocab) in a weighted row makes the loss NaN and gives no
// one-hot term in the gradient.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

#include <cmath>
#include <limits>

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

/// Checks the operands shared by the loss and its gradient; returns the
/// number of rows and the vocabulary size, and the normaliser.
template <typename T>
void lossShapes(const char *kernel, const Shape &logitsShape,
                const Shape &labelsShape, const T *weights,
                const Shape &weightsShape, const T *normalizerValue,
                const Shape &normalizerValueShape, double normalizer,
                int64_t &rows, int64_t &vocab, T &divisor) {
  checkValid(kernel, "the logits", logitsShape);
  LOOM_HOST_CHECK(logitsShape.rank >= 1, kernel,
                  "logits must have rank at least 1");
  Shape rowsShape = logitsShape;
  --rowsShape.rank;
  checkShape(kernel, "the labels", labelsShape, rowsShape);
  if (weights)
    checkShape(kernel, "the weights", weightsShape, rowsShape);
  bool hasAttr = normalizer == normalizer;
  LOOM_HOST_CHECK((normalizerValue != nullptr) != hasAttr, kernel,
                  "needs exactly one normalizer, the attribute or the "
                  "operand");
  if (normalizerValue)
    checkShape(kernel, "the normalizer operand", normalizerValueShape, Shape{});
  rows = rowsShape.numElements();
  vocab = logitsShape[logitsShape.rank - 1];
  divisor = normalizerValue ? *normalizerValue : static_cast<T>(normalizer);
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
  T divisor;
  lossShapes(kernel, logitsShape, labelsShape, weights, weightsShape,
             normalizerValue, normalizerValueShape, normalizer, rows, vocab,
             divisor);
  T total = 0;
  for (int64_t n = 0; n < rows; ++n) {
    T weight = weights ? weights[n] : T(1);
    if (weight == T(0))
      continue;
    int64_t label = labels[n];
    if (label < 0 || label >= vocab) {
      total = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    const T *x = logits + n * vocab;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < vocab; ++j)
      max = math::runningMax(max, x[j]);
    T sum = 0;
    for (int64_t j = 0; j < vocab; ++j)
      sum += std::exp(x[j] - max);
    T logSumExp = max + std::log(sum);
    total += weight * (logSumExp - x[label]);
  }
  result[0] = total / divisor;
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
  T divisor;
  lossShapes(kernel, logitsShape, labelsShape, weights, weightsShape,
             normalizerValue, normalizerValueShape, normalizer, rows, vocab,
             divisor);
  const T dloss = grad[0];
  for (int64_t n = 0; n < rows; ++n) {
    const T *x = logits + n * vocab;
    T *dx = result + n * vocab;
    if (weights && weights[n] == T(0)) {
      for (int64_t v = 0; v < vocab; ++v)
        dx[v] = T(0);
      continue;
    }
    const T coefficient = dloss * (weights ? weights[n] : T(1)) / divisor;
    int64_t label = labels[n];
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t v = 0; v < vocab; ++v)
      max = math::runningMax(max, x[v]);
    T sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(x[v] - max);
    for (int64_t v = 0; v < vocab; ++v) {
      T p = std::exp(x[v] - max) / sum;
      dx[v] = coefficient * p;
    }
    // The one-hot term, as the interpreter computes it: coefficient * (p - 1).
    if (label >= 0 && label < vocab) {
      T p = std::exp(x[label] - max) / sum;
      dx[label] = coefficient * (p - T(1));
    }
  }
}

} // namespace

#define DEFINE_LOSS(T)                                                         \
  void loom::host::cross_entropy(                                              \
      T *result, Shape resultShape, const T *logits, Shape logitsShape,        \
      IndexPtr labels, Shape labelsShape, const T *weights,                    \
      Shape weightsShape, const T *normalizerValue,                            \
      Shape normalizerValueShape, double normalizer) {                         \
    crossEntropyImpl(result, resultShape, logits, logitsShape, labels,         \
                     labelsShape, weights, weightsShape, normalizerValue,      \
                     normalizerValueShape, normalizer);                        \
  }                                                                            \
  void loom::host::cross_entropy_grad(                                         \
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
