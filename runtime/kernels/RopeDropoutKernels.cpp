//===- RopeDropoutKernels.cpp - nn.rope and nn.dropout on the host --------===//
//
// As the interpreter: RoPE computes each angle and its sine and cosine in
// f64 and rounds them to the element type, the rotation in the element
// type; dropout draws its mask with splitmix64 as the op doc specifies and
// scales kept elements by 1 / (1 - rate) rounded to the element type.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

#include <cmath>

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

template <typename T>
void ropeImpl(T *result, const Shape &resultShape, const T *input,
              const Shape &inputShape, IndexPtr positions,
              const Shape &positionsShape, bool inverse, double theta) {
  const char *kernel = "rope";
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  int64_t rank = inputShape.rank;
  LOOM_HOST_CHECK(rank >= 3, kernel,
                  "the input must have rank at least 3, got shape %s",
                  formatShape(inputShape));
  Shape tokens = inputShape;
  tokens.rank -= 2;
  checkShape(kernel, "the positions", positionsShape, tokens);
  int64_t heads = inputShape[rank - 2], headDim = inputShape[rank - 1];
  LOOM_HOST_CHECK(headDim % 2 == 0, kernel, "head_dim %lld is odd",
                  static_cast<long long>(headDim));
  theta = orDefault(theta, 10000.0);
  int64_t half = headDim / 2;
  double direction = inverse ? -1.0 : 1.0;
  double *inverseFrequency = scratch<double>(0, static_cast<size_t>(half));
  T *cosines = scratch<T>(1, static_cast<size_t>(half));
  T *sines = scratch<T>(2, static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inverseFrequency[i] =
        direction * std::pow(theta, -2.0 * static_cast<double>(i) /
                                        static_cast<double>(headDim));
  for (int64_t token = 0, e = tokens.numElements(); token < e; ++token) {
    double position = static_cast<double>(positions[token]);
    for (int64_t i = 0; i < half; ++i) {
      double angle = position * inverseFrequency[i];
      cosines[i] = static_cast<T>(std::cos(angle));
      sines[i] = static_cast<T>(std::sin(angle));
    }
    for (int64_t h = 0; h < heads; ++h) {
      int64_t base = (token * heads + h) * headDim;
      const T *x = input + base;
      T *y = result + base;
      for (int64_t i = 0; i < half; ++i) {
        T a = x[i], b = x[i + half];
        y[i] = a * cosines[i] - b * sines[i];
        y[i + half] = a * sines[i] + b * cosines[i];
      }
    }
  }
}

template <typename T>
void dropoutImpl(T *result, const Shape &resultShape, const T *input,
                 const Shape &inputShape, const int64_t *offset,
                 const Shape &offsetShape, int64_t startCount,
                 const int64_t *const *starts, const Shape *startsShapes,
                 const Shape &globalShape, double rate, int64_t seed) {
  const char *kernel = "dropout";
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  if (offset)
    checkShape(kernel, "the offset", offsetShape, Shape{});
  // A block of a larger tensor: its global start per dimension.
  int64_t rank = inputShape.rank;
  int64_t blockStarts[kMaxRank] = {};
  bool block = startCount != 0;
  LOOM_HOST_CHECK(block != globalShape.isAbsent(), kernel,
             "takes starts and a global shape together, got %s",
             block ? "starts without a global shape"
                   : "a global shape without starts");
  if (block) {
    LOOM_HOST_CHECK(startCount == rank && globalShape.rank == rank, kernel,
                    "needs one start and one global size per dimension of "
                    "the input %s, got %lld starts and the global shape %s",
                    formatShape(inputShape), static_cast<long long>(startCount),
                    formatShape(globalShape, 1));
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t *start = starts[d];
      checkShape(kernel, "a start", startsShapes[d], Shape{});
      LOOM_HOST_CHECK(start && *start >= 0 &&
                     *start + inputShape[d] <= globalShape[d],
                 kernel,
                 "the block %s at start %lld of dimension %lld does not lie "
                 "in the global shape %s",
                 formatShape(inputShape),
                 static_cast<long long>(start ? *start : -1),
                 static_cast<long long>(d), formatShape(globalShape, 1));
      blockStarts[d] = *start;
    }
  }
  uint64_t key = static_cast<uint64_t>(seed);
  if (offset)
    key += static_cast<uint64_t>(*offset);
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  for (int64_t i = 0, e = inputShape.numElements(); i < e; ++i) {
    uint64_t index =
        block ? math::globalElementIndex(i, rank, inputShape.dims, blockStarts,
                                         globalShape.dims)
              : static_cast<uint64_t>(i);
    result[i] = math::dropped(key, index, rate) ? T(0) : input[i] * scale;
  }
}

} // namespace

#define DEFINE_ROPE_DROPOUT(T)                                                 \
  void loom::host::rope(T *result, Shape resultShape, const T *input,          \
                        Shape inputShape, IndexPtr positions,                  \
                        Shape positionsShape, bool inverse, double theta) {    \
    ropeImpl(result, resultShape, input, inputShape, positions,                \
             positionsShape, inverse, theta);                                  \
  }                                                                            \
  void loom::host::dropout(                                                   \
      T *result, Shape resultShape, const T *input, Shape inputShape,          \
      const int64_t *offset, Shape offsetShape,                                \
      int64_t startCount, const int64_t *const *starts,                        \
      const Shape *startsShapes, Shape globalShape, double rate,               \
      int64_t seed) {                                                          \
    dropoutImpl(result, resultShape, input, inputShape, offset, offsetShape,   \
                startCount, starts, startsShapes, globalShape, rate, seed);    \
  }                                                                            \
  void loom::host::dropout(                                                   \
      T *result, Shape resultShape, const T *input, Shape inputShape,          \
      const int64_t *offset, Shape offsetShape,                                \
      std::initializer_list<const int64_t *> starts,                           \
      std::initializer_list<Shape> startsShapes, Shape globalShape,            \
      double rate, int64_t seed) {                                             \
    LOOM_HOST_CHECK(starts.size() == startsShapes.size(), "dropout",           \
                    "got %zu starts but %zu shapes", starts.size(),            \
                    startsShapes.size());                                      \
    dropoutImpl(result, resultShape, input, inputShape, offset, offsetShape,   \
                static_cast<int64_t>(starts.size()), starts.begin(),           \
                startsShapes.begin(), globalShape, rate, seed);                \
  }
DEFINE_ROPE_DROPOUT(float)
DEFINE_ROPE_DROPOUT(double)
#undef DEFINE_ROPE_DROPOUT
