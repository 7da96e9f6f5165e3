//===- ReductionKernels.cu - nn.reduce on the device ----------------------===//
//
// Two deterministic strategies, chosen from the shapes alone:
// * one thread per result element, summing its inputs sequentially in
//   row-major order of the input from 0 (sum, mean) or -inf (max): the host
//   kernel's order, hence its bits. Used when there are many result elements
//   or few inputs per element.
// * one block per result element (few results, many inputs each): every
//   thread sums a fixed strided subset sequentially, then the block combines
//   the partial sums in a fixed tree (blockReduce).
// mean divides by the count afterwards, in the element type.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

/// Fewer result elements than this, each with at least kBlockMinCount
/// inputs, take one block each.
constexpr int64_t kBlockMaxResults = 2048;
constexpr int64_t kBlockMinCount = 1024;

/// `results` locates each result element's first input; `reduced` walks the
/// inputs of one result element (row-major over the reduced dimensions).
struct ReduceGeometry {
  Space<1> results;
  Space<1> reduced;
  int64_t count;
};

template <typename T> struct Accumulate {
  bool max;
  __device__ T operator()(T acc, T x) const {
    return max ? math::reduceMax(acc, x) : acc + x;
  }
};

template <typename T>
__global__ void reducePerThreadKernel(T *result, const T *input,
                                      ReduceGeometry g, int64_t n, bool max,
                                      bool mean) {
  const Accumulate<T> accumulate{max};
  const int rank = g.reduced.rank;
  LOOM_CUDA_FOR(o, n) {
    int64_t base;
    g.results.offsets(o, &base);
    T acc = max ? negativeInfinity<T>() : T(0);
    // An odometer over the reduced space, in row-major order.
    int64_t index[kMaxRank] = {};
    int64_t offset = 0;
    for (int64_t r = 0; r < g.count; ++r) {
      acc = accumulate(acc, input[base + offset]);
      for (int d = rank - 1; d >= 0; --d) {
        offset += g.reduced.strides[0][d];
        if (++index[d] < g.reduced.shape[d])
          break;
        offset -= g.reduced.strides[0][d] * g.reduced.shape[d];
        index[d] = 0;
      }
    }
    result[o] = mean ? acc / static_cast<T>(g.count) : acc;
  }
}

template <typename T> struct ReduceMaxOp {
  __device__ T operator()(T a, T b) const { return math::reduceMax(a, b); }
};

template <typename T>
__global__ void reducePerBlockKernel(T *result, const T *input,
                                     ReduceGeometry g, int64_t n, bool max,
                                     bool mean) {
  const Accumulate<T> accumulate{max};
  for (int64_t o = blockIdx.x; o < n; o += gridDim.x) {
    int64_t base;
    g.results.offsets(o, &base);
    T acc = max ? negativeInfinity<T>() : T(0);
    for (int64_t r = threadIdx.x; r < g.count; r += blockDim.x) {
      int64_t offset;
      g.reduced.offsets(r, &offset);
      acc = accumulate(acc, input[base + offset]);
    }
    if (max)
      acc = blockReduce(acc, ReduceMaxOp<T>{});
    else
      acc = blockReduce(acc, SumOp{});
    if (threadIdx.x == 0)
      result[o] = mean ? acc / static_cast<T>(g.count) : acc;
  }
}

template <typename T>
void reduceImpl(T *result, const Shape &resultShape, const T *input,
                const Shape &inputShape, const Shape &dims, bool keepDims,
                const char *kindKeyword) {
  const char *kernel = "reduce";
  ReduceKind kind = parseReduceKind(kernel, kindKeyword);
  checkValid(kernel, "the input", inputShape);
  checkValid(kernel, "the result", resultShape);
  int64_t rank = inputShape.rank;
  bool reduced[kMaxRank] = {};
  LOOM_CUDA_CHECK(dims.rank >= 0, kernel, "needs dims");
  for (int64_t i = 0; i < dims.rank; ++i) {
    int64_t dim = dims[i];
    LOOM_CUDA_CHECK(dim >= 0 && dim < rank, kernel,
                    "reduced dimension %lld is not in [0, %lld)",
                    static_cast<long long>(dim), static_cast<long long>(rank));
    reduced[dim] = true;
  }
  Shape kept, expected, reducedShape;
  kept.rank = rank;
  reducedShape.rank = rank;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    kept.dims[d] = reduced[d] ? 1 : inputShape[d];
    reducedShape.dims[d] = reduced[d] ? inputShape[d] : 1;
    if (reduced[d])
      count *= inputShape[d];
    else
      expected.dims[expected.rank++] = inputShape[d];
  }
  checkShape(kernel, "the result", resultShape, keepDims ? kept : expected);
  int64_t n = resultShape.numElements();
  if (n == 0)
    return;

  ReduceGeometry g{Space<1>(kept), Space<1>(reducedShape), count};
  getRowMajorStrides(inputShape, g.results.strides[0]);
  getRowMajorStrides(inputShape, g.reduced.strides[0]);
  g.results.coalesce();
  g.reduced.coalesce();
  bool max = kind == ReduceKind::Max, mean = kind == ReduceKind::Mean;
  if (n < kBlockMaxResults && count >= kBlockMinCount) {
    reducePerBlockKernel<<<gridFor(n, 1), kMaxBlock, 0, stream()>>>(
        result, input, g, n, max, mean);
  } else {
    reducePerThreadKernel<<<gridFor(n), kThreads, 0, stream()>>>(
        result, input, g, n, max, mean);
  }
  checkLaunch(kernel);
}

} // namespace

void loom::cuda::reduce(float *result, Shape resultShape, const float *input,
                        Shape inputShape, Shape dims, bool keepDims,
                        const char *kind) {
  reduceImpl(result, resultShape, input, inputShape, dims, keepDims, kind);
}
void loom::cuda::reduce(double *result, Shape resultShape, const double *input,
                        Shape inputShape, Shape dims, bool keepDims,
                        const char *kind) {
  reduceImpl(result, resultShape, input, inputShape, dims, keepDims, kind);
}
