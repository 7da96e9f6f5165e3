//===- RopeDropoutKernels.cu - nn.rope and nn.dropout on the device -------===//
//
// As the host kernels: RoPE computes each angle and its sine and cosine in
// f64 and rounds them to the element type, the rotation in the element type
// (one thread per rotated pair); dropout draws its mask with Math.h's
// splitmix64 stream (one thread per element), so it drops exactly the
// elements the host kernel drops. The dropout offset and a block's starts
// are device scalars.
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

/// Where a dropout block sits in its global tensor (nn.dropout's starts,
/// device scalars, and global shape), passed by value.
struct DropoutBlock {
  const int64_t *starts[kMaxRank] = {};
  int64_t local[kMaxRank] = {};
  int64_t global[kMaxRank] = {};
  int64_t rank = 0;
  bool present = false;
};

template <typename T>
__global__ void dropoutKernel(T *result, const T *input, const int64_t *offset,
                              DropoutBlock block, uint64_t seed, double rate,
                              T scale, int64_t n) {
  uint64_t key = seed;
  if (offset)
    key += static_cast<uint64_t>(*offset);
  int64_t starts[kMaxRank] = {};
  for (int64_t d = 0; d < block.rank; ++d)
    starts[d] = *block.starts[d];
  LOOM_CUDA_FOR(i, n) {
    uint64_t index = block.present
                         ? math::globalElementIndex(i, block.rank, block.local,
                                                    starts, block.global)
                         : static_cast<uint64_t>(i);
    result[i] = math::dropped(key, index, rate) ? T(0) : input[i] * scale;
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
                 const Shape &offsetShape,
                 std::initializer_list<const int64_t *> starts,
                 std::initializer_list<Shape> startsShapes,
                 const Shape &globalShape, double rate, int64_t seed) {
  const char *kernel = "dropout";
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, inputShape);
  if (offset)
    checkShape(kernel, "the offset", offsetShape, Shape{});
  DropoutBlock block;
  block.present = starts.size() != 0;
  LOOM_CUDA_CHECK(block.present != globalShape.isAbsent(), kernel,
                  "takes starts and a global shape together, got %s",
                  block.present ? "starts without a global shape"
                                : "a global shape without starts");
  if (block.present) {
    block.rank = inputShape.rank;
    LOOM_CUDA_CHECK(static_cast<int64_t>(starts.size()) == block.rank &&
                        startsShapes.size() == starts.size() &&
                        globalShape.rank == block.rank,
                    kernel,
                    "needs one start and one global size per dimension of "
                    "the input %s, got %zu starts and the global shape %s",
                    formatShape(inputShape), starts.size(),
                    formatShape(globalShape, 1));
    int64_t d = 0;
    for (const int64_t *start : starts) {
      checkShape(kernel, "a start", startsShapes.begin()[d], Shape{});
      LOOM_CUDA_CHECK(start && globalShape[d] >= inputShape[d], kernel,
                      "needs a start for dimension %lld, and a global size "
                      "no smaller than the input's %s, got %s",
                      static_cast<long long>(d), formatShape(inputShape),
                      formatShape(globalShape, 1));
      block.starts[d] = start;
      block.local[d] = inputShape[d];
      block.global[d] = globalShape[d];
      ++d;
    }
  }
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  int64_t n = inputShape.numElements();
  if (n == 0)
    return;
  dropoutKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      result, input, offset, block, static_cast<uint64_t>(seed), rate, scale,
      n);
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
  void loom::cuda::dropout(                                                   \
      T *result, Shape resultShape, const T *input, Shape inputShape,          \
      const int64_t *offset, Shape offsetShape,                                \
      std::initializer_list<const int64_t *> starts,                           \
      std::initializer_list<Shape> startsShapes, Shape globalShape,            \
      double rate, int64_t seed) {                                             \
    dropoutImpl(result, resultShape, input, inputShape, offset, offsetShape,   \
                starts, startsShapes, globalShape, rate, seed);                \
  }
DEFINE_ROPE_DROPOUT(float)
DEFINE_ROPE_DROPOUT(double)
#undef DEFINE_ROPE_DROPOUT
