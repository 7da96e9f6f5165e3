//===- NormKernels.cpp - softmax and normalisations on the host -----------===//
//
// softmax, log_softmax, layer_norm, rms_norm and the two norm gradients,
// exactly as the interpreter computes them: sums in the element type, in
// index order along the normalised elements; softmax subtracts the maximum
// first. Sums stay sequential (the compiler does not reorder them), the
// per-element passes vectorise.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

#include <cmath>
#include <limits>

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

template <typename T>
void softmaxImpl(const char *kernel, T *result, const Shape &resultShape,
                 const T *input, const Shape &inputShape, int64_t dim,
                 bool logarithm) {
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  LOOM_HOST_CHECK(dim >= 0 && dim < inputShape.rank, kernel,
                  "dim %lld is not in [0, %lld)", static_cast<long long>(dim),
                  static_cast<long long>(inputShape.rank));
  AxisSplit split = splitAt(inputShape, dim);
  const int64_t size = split.size, stride = split.inner;
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t in = 0; in < split.inner; ++in) {
      const T *x = input + o * size * stride + in;
      T *y = result + o * size * stride + in;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t s = 0; s < size; ++s)
        max = math::runningMax(max, x[s * stride]);
      T sum = 0;
      for (int64_t s = 0; s < size; ++s)
        sum += std::exp(x[s * stride] - max);
      if (logarithm) {
        T logSum = std::log(sum);
        for (int64_t s = 0; s < size; ++s)
          y[s * stride] = (x[s * stride] - max) - logSum;
      } else {
        for (int64_t s = 0; s < size; ++s)
          y[s * stride] = std::exp(x[s * stride] - max) / sum;
      }
    }
  }
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
  LOOM_HOST_CHECK(normalizedDims >= 1 && normalizedDims <= rank, kernel,
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
  const T eps = static_cast<T>(epsilon), count = static_cast<T>(row);
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = input + r * row;
    T *y = result + r * row;
    T sum = 0;
    for (int64_t j = 0; j < row; ++j)
      sum += x[j];
    const T mean = sum / count;
    T squares = 0;
    for (int64_t j = 0; j < row; ++j)
      squares += (x[j] - mean) * (x[j] - mean);
    const T denom = std::sqrt(squares / count + eps);
    if (scale && bias) {
      for (int64_t j = 0; j < row; ++j)
        y[j] = (x[j] - mean) / denom * scale[j] + bias[j];
    } else if (scale) {
      for (int64_t j = 0; j < row; ++j)
        y[j] = (x[j] - mean) / denom * scale[j];
    } else if (bias) {
      for (int64_t j = 0; j < row; ++j)
        y[j] = (x[j] - mean) / denom + bias[j];
    } else {
      for (int64_t j = 0; j < row; ++j)
        y[j] = (x[j] - mean) / denom;
    }
  }
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
  const T eps = static_cast<T>(epsilon), count = static_cast<T>(row);
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = input + r * row;
    T *y = result + r * row;
    T squares = 0;
    for (int64_t j = 0; j < row; ++j)
      squares += x[j] * x[j];
    const T denom = std::sqrt(squares / count + eps);
    if (scale) {
      for (int64_t j = 0; j < row; ++j)
        y[j] = x[j] / denom * scale[j];
    } else {
      for (int64_t j = 0; j < row; ++j)
        y[j] = x[j] / denom;
    }
  }
}

//===----------------------------------------------------------------------===//
// layer_norm_grad, rms_norm_grad
//===----------------------------------------------------------------------===//

/// The shared body of the norm gradients; `centre` subtracts the mean
/// (layer norm) or not (rms norm). xhat and g are recomputed in the last
/// pass instead of stored: the same operations on the same values give the
/// same bits as the interpreter's stored copies.
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
  const T eps = static_cast<T>(epsilon), count = static_cast<T>(row);
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = input + r * row;
    const T *dy = grad + r * row;
    T *dx = result + r * row;
    T mu = 0;
    if (centre) {
      for (int64_t j = 0; j < row; ++j)
        mu += x[j];
      mu /= count;
    }
    T squares = 0;
    for (int64_t j = 0; j < row; ++j)
      squares += (x[j] - mu) * (x[j] - mu);
    const T rstd = T(1) / std::sqrt(squares / count + eps);
    T sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < row; ++j) {
      T xhat = (x[j] - mu) * rstd;
      T g = scale ? dy[j] * scale[j] : dy[j];
      sumG += g;
      sumGX += g * xhat;
    }
    const T meanG = centre ? sumG / count : T(0), meanGX = sumGX / count;
    if (scale) {
      for (int64_t j = 0; j < row; ++j)
        dx[j] = rstd * (dy[j] * scale[j] - meanG - (x[j] - mu) * rstd * meanGX);
    } else {
      for (int64_t j = 0; j < row; ++j)
        dx[j] = rstd * (dy[j] - meanG - (x[j] - mu) * rstd * meanGX);
    }
  }
}

} // namespace

#define DEFINE_NORMS(T)                                                        \
  void loom::host::softmax(T *result, Shape resultShape, const T *input,       \
                           Shape inputShape, int64_t dim) {                    \
    softmaxImpl("softmax", result, resultShape, input, inputShape, dim,        \
                /*logarithm=*/false);                                          \
  }                                                                            \
  void loom::host::log_softmax(T *result, Shape resultShape, const T *input,   \
                               Shape inputShape, int64_t dim) {                \
    softmaxImpl("log_softmax", result, resultShape, input, inputShape, dim,    \
                /*logarithm=*/true);                                           \
  }                                                                            \
  void loom::host::layer_norm(                                                 \
      T *result, Shape resultShape, const T *input, Shape inputShape,          \
      const T *scale, Shape scaleShape, const T *bias, Shape biasShape,        \
      double epsilon, int64_t normalizedDims) {                                \
    layerNormImpl(result, resultShape, input, inputShape, scale, scaleShape,   \
                  bias, biasShape, epsilon, normalizedDims);                   \
  }                                                                            \
  void loom::host::rms_norm(T *result, Shape resultShape, const T *input,      \
                            Shape inputShape, const T *scale,                  \
                            Shape scaleShape, double epsilon,                  \
                            int64_t normalizedDims) {                          \
    rmsNormImpl(result, resultShape, input, inputShape, scale, scaleShape,     \
                epsilon, normalizedDims);                                      \
  }                                                                            \
  void loom::host::layer_norm_grad(                                            \
      T *result, Shape resultShape, const T *grad, Shape gradShape,            \
      const T *input, Shape inputShape, const T *scale, Shape scaleShape,      \
      double epsilon, int64_t normalizedDims) {                                \
    normGradImpl("layer_norm_grad", result, resultShape, grad, gradShape,      \
                 input, inputShape, scale, scaleShape,                         \
                 orDefault(epsilon, 1.0e-5),                                   \
                 orDefault(normalizedDims, int64_t{1}), /*centre=*/true);      \
  }                                                                            \
  void loom::host::rms_norm_grad(                                              \
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
