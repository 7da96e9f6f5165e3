//===- RopeDropoutKernels.cu - nn.rope and nn.dropout on the device -------===//
//
// As the host kernels: RoPE computes each angle and its sine and cosine in
// f64 and rounds them to the element type, the rotation in the element type
// (one thread per rotated pair); dropout draws its mask with Math.h's
// splitmix64 stream (one thread per element), so it drops exactly the
// elements the host kernel drops. The dropout offset is a device scalar.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

/// Pair (token, head, i) of `n` = tokens * heads * half.
template <typename T>
__global__ void ropeKernel(T *result, const T *input, DeviceIndex positions,
                           int64_t heads, int64_t headDim, double theta,
                           double direction, int64_t n) {
  const int64_t half = headDim / 2;
  LOOM_CUDA_FOR(k, n) {
    int64_t i = k % half, tokenHead = k / half;
    int64_t token = tokenHead / heads;
    double inverseFrequency =
        direction * std::pow(theta, -2.0 * static_cast<double>(i) /
                                        static_cast<double>(headDim));
    double angle = static_cast<double>(positions[token]) * inverseFrequency;
    const T c = static_cast<T>(std::cos(angle));
    const T s = static_cast<T>(std::sin(angle));
    int64_t base = tokenHead * headDim;
    T a = input[base + i], b = input[base + i + half];
    result[base + i] = a * c - b * s;
    result[base + i + half] = a * s + b * c;
  }
}

template <typename T>
__global__ void dropoutKernel(T *result, const T *input, const int64_t *offset,
                              uint64_t seed, double rate, T scale, int64_t n) {
  uint64_t key = seed;
  if (offset)
    key += static_cast<uint64_t>(*offset);
  LOOM_CUDA_FOR(i, n) {
    result[i] = math::dropped(key, static_cast<uint64_t>(i), rate)
                    ? T(0)
                    : input[i] * scale;
  }
}

template <typename T>
void ropeImpl(T *result, const Shape &resultShape, const T *input,
              const Shape &inputShape, IndexPtr positions,
              const Shape &positionsShape, bool inverse, double theta) {
  const char *kernel = "rope";
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  int64_t rank = inputShape.rank;
  LOOM_CUDA_CHECK(rank >= 3, kernel,
                  "the input must have rank at least 3, got shape %s",
                  formatShape(inputShape));
  Shape tokens = inputShape;
  tokens.rank -= 2;
  checkShape(kernel, "the positions", positionsShape, tokens);
  int64_t heads = inputShape[rank - 2], headDim = inputShape[rank - 1];
  LOOM_CUDA_CHECK(headDim % 2 == 0, kernel, "head_dim %lld is odd",
                  static_cast<long long>(headDim));
  theta = orDefault(theta, 10000.0);
  int64_t n = tokens.numElements() * heads * (headDim / 2);
  if (n == 0)
    return;
  ropeKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      result, input, DeviceIndex(positions), heads, headDim, theta,
      inverse ? -1.0 : 1.0, n);
  checkLaunch(kernel);
}

template <typename T>
void dropoutImpl(T *result, const Shape &resultShape, const T *input,
                 const Shape &inputShape, const int64_t *offset,
                 const Shape &offsetShape, double rate, int64_t seed) {
  const char *kernel = "dropout";
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  if (offset)
    checkShape(kernel, "the offset", offsetShape, Shape{});
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  int64_t n = inputShape.numElements();
  if (n == 0)
    return;
  dropoutKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      result, input, offset, static_cast<uint64_t>(seed), rate, scale, n);
  checkLaunch(kernel);
}

} // namespace

#define DEFINE_ROPE_DROPOUT(T)                                                 \
  void loom::cuda::rope(T *result, Shape resultShape, const T *input,          \
                        Shape inputShape, IndexPtr positions,                  \
                        Shape positionsShape, bool inverse, double theta) {    \
    ropeImpl(result, resultShape, input, inputShape, positions,                \
             positionsShape, inverse, theta);                                  \
  }                                                                            \
  void loom::cuda::dropout(T *result, Shape resultShape, const T *input,       \
                           Shape inputShape, const int64_t *offset,            \
                           Shape offsetShape, double rate, int64_t seed) {     \
    dropoutImpl(result, resultShape, input, inputShape, offset, offsetShape,   \
                rate, seed);                                                   \
  }
DEFINE_ROPE_DROPOUT(float)
DEFINE_ROPE_DROPOUT(double)
#undef DEFINE_ROPE_DROPOUT
