//===- MoeKernels.cu - The mixture-of-experts ops on the device -----------===//
//
// nn.topk: one thread per row selects the row's top k by repeated scans
// (k is small: the experts a token picks), in the order of the host kernel
// (larger first, a NaN above any number, ties in index order), so the
// indices agree with it exactly. nn.moe_route: the stable grouping of
// entries by expert is sequential by nature (each slot counts the entries
// before it); one thread runs it, in the host kernel's order. Both give
// integers, exactly the host kernels'.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <climits>

using namespace loom::cuda;
using namespace loom::cuda::detail;

namespace {

template <typename T>
__device__ bool ranksBefore(T a, int64_t ia, T b, int64_t ib) {
  bool nanA = a != a, nanB = b != b;
  if (nanA != nanB)
    return nanA;
  if (!nanA && a != b)
    return a > b;
  return ia < ib;
}

/// Row r's top k: the j-th pick is the best element ranked after pick j-1.
template <typename T>
__global__ void topkKernel(int64_t *out, const T *in, int64_t rows, int64_t n,
                           int64_t k) {
  LOOM_CUDA_FOR(r, rows) {
    const T *row = in + r * n;
    int64_t previous = -1;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t i = 0; i < n; ++i) {
        // Candidates rank after the previous pick.
        if (previous >= 0 && !ranksBefore(row[previous], previous, row[i], i))
          continue;
        if (best < 0 || ranksBefore(row[i], i, row[best], best))
          best = i;
      }
      out[r * k + j] = best;
      previous = best;
    }
  }
}

__global__ void moeRouteKernel(int64_t *slots, int64_t *counts,
                               const int64_t *experts, int64_t entries,
                               int64_t numExperts, int64_t limit) {
  if (blockIdx.x != 0 || threadIdx.x != 0)
    return;
  for (int64_t e = 0; e < numExperts; ++e)
    counts[e] = 0;
  for (int64_t i = 0; i < entries; ++i) {
    int64_t e = experts[i];
    if (e < 0 || e >= numExperts || counts[e] >= limit) {
      slots[i] = -1;
      continue;
    }
    slots[i] = counts[e]++;
  }
  // The experts' starts, in place of the counts for a moment: each slot
  // then moves by its expert's start, and the counts come back.
  int64_t total = 0;
  for (int64_t e = 0; e < numExperts; ++e) {
    int64_t count = counts[e];
    counts[e] = total;
    total += count;
  }
  for (int64_t i = 0; i < entries; ++i)
    if (slots[i] >= 0)
      slots[i] += counts[experts[i]];
  for (int64_t e = 0; e < numExperts; ++e)
    counts[e] = (e + 1 < numExperts ? counts[e + 1] : total) - counts[e];
}

template <typename T>
void topkImpl(int64_t *result, const Shape &resultShape, const T *input,
              const Shape &inputShape, int64_t k) {
  const char *kernel = "topk";
  checkValid(kernel, "the input", inputShape);
  int64_t rank = inputShape.rank;
  LOOM_CUDA_CHECK(rank >= 1 && k >= 1 && k <= inputShape[rank - 1], kernel,
                  "k = %lld does not fit the input's last dimension",
                  static_cast<long long>(k));
  Shape expected = inputShape;
  expected.dims[rank - 1] = k;
  checkShape(kernel, "the result", resultShape, expected);
  int64_t n = inputShape[rank - 1], rows = inputShape.numElements() / n;
  if (rows == 0)
    return;
  topkKernel<<<gridFor(rows), kThreads, 0, stream()>>>(result, input, rows, n,
                                                        k);
  checkLaunch(kernel);
}

} // namespace

void loom::cuda::topk(int64_t *result, Shape resultShape, const float *input,
                      Shape inputShape, int64_t k) {
  topkImpl(result, resultShape, input, inputShape, k);
}

void loom::cuda::topk(int64_t *result, Shape resultShape, const double *input,
                      Shape inputShape, int64_t k) {
  topkImpl(result, resultShape, input, inputShape, k);
}

void loom::cuda::moe_route(int64_t *slots, Shape slotsShape, int64_t *counts,
                           Shape countsShape, const int64_t *experts,
                           Shape expertsShape, int64_t capacity,
                           int64_t num_experts) {
  const char *kernel = "moe_route";
  checkValid(kernel, "the experts", expertsShape);
  LOOM_CUDA_CHECK(expertsShape.rank == 2 && num_experts >= 1, kernel,
                  "experts of rank %lld and %lld experts",
                  static_cast<long long>(expertsShape.rank),
                  static_cast<long long>(num_experts));
  checkShape(kernel, "the slots", slotsShape, expertsShape);
  checkShape(kernel, "the counts", countsShape, Shape{num_experts});
  int64_t entries = expertsShape.numElements();
  int64_t limit = capacity == INT64_MIN ? INT64_MAX : capacity;
  LOOM_CUDA_CHECK(limit >= 1, kernel, "a capacity of %lld",
                  static_cast<long long>(capacity));
  moeRouteKernel<<<1, 1, 0, stream()>>>(slots, counts, experts, entries,
                                        num_experts, limit);
  checkLaunch(kernel);
}
