//===- MoeKernels.cpp - Host kernels of the mixture-of-experts ops --------===//
//
// nn.topk (the router's choice of experts) and nn.moe_route (each entry's
// row of the expert-ordered buffer), exact and mirroring the reference
// interpreter (runtime/interpreter/MoeKernels.cpp): ties in index order, a
// NaN above any number, entries of an expert beyond its capacity or of an
// expert out of range dropped (slot -1).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

using namespace loom::host;
using namespace loom::host::detail;

namespace {

template <typename T> bool ranksBefore(T a, int64_t ia, T b, int64_t ib) {
  bool nanA = std::isnan(a), nanB = std::isnan(b);
  if (nanA != nanB)
    return nanA;
  if (!nanA && a != b)
    return a > b;
  return ia < ib;
}

template <typename T>
void topkImpl(int64_t *result, const Shape &resultShape, const T *input,
              const Shape &inputShape, int64_t k) {
  const char *kernel = "topk";
  checkValid(kernel, "the input", inputShape);
  int64_t rank = inputShape.rank;
  LOOM_HOST_CHECK(rank >= 1 && k >= 1 && k <= inputShape[rank - 1], kernel,
                  "k = %lld does not fit an input of shape %s",
                  static_cast<long long>(k), formatShape(inputShape, 0));
  Shape expected = inputShape;
  expected.dims[rank - 1] = k;
  checkShape(kernel, "the result", resultShape, expected);
  int64_t n = inputShape[rank - 1];
  int64_t rows = inputShape.numElements() / n;
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = input + r * n;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) {
                        return ranksBefore(row[a], a, row[b], b);
                      });
    std::copy(order.begin(), order.begin() + k, result + r * k);
  }
}

} // namespace

void loom::host::topk(int64_t *result, Shape resultShape, const float *input,
                      Shape inputShape, int64_t k) {
  topkImpl(result, resultShape, input, inputShape, k);
}

void loom::host::topk(int64_t *result, Shape resultShape, const double *input,
                      Shape inputShape, int64_t k) {
  topkImpl(result, resultShape, input, inputShape, k);
}

void loom::host::moe_route(int64_t *slots, Shape slotsShape, int64_t *counts,
                           Shape countsShape, const int64_t *experts,
                           Shape expertsShape, int64_t capacity,
                           int64_t num_experts) {
  const char *kernel = "moe_route";
  checkValid(kernel, "the experts", expertsShape);
  LOOM_HOST_CHECK(expertsShape.rank == 2 && num_experts >= 1, kernel,
                  "experts of shape %s and %lld experts: the experts must "
                  "have rank 2 and there must be one expert at least",
                  formatShape(expertsShape, 0),
                  static_cast<long long>(num_experts));
  checkShape(kernel, "the slots", slotsShape, expertsShape);
  checkShape(kernel, "the counts", countsShape, Shape{num_experts});
  int64_t entries = expertsShape.numElements();
  // (An absent capacity: dropless.)
  int64_t limit = capacity == INT64_MIN ? INT64_MAX : capacity;
  LOOM_HOST_CHECK(limit >= 1, kernel, "a capacity of %lld",
                  static_cast<long long>(capacity));
  std::fill(counts, counts + num_experts, int64_t{0});
  // Each entry's rank within its expert, then the experts' starts.
  for (int64_t i = 0; i < entries; ++i) {
    int64_t e = experts[i];
    if (e < 0 || e >= num_experts || counts[e] >= limit) {
      slots[i] = -1;
      continue;
    }
    slots[i] = counts[e]++;
  }
  std::vector<int64_t> start(static_cast<size_t>(num_experts), 0);
  for (int64_t e = 1; e < num_experts; ++e)
    start[e] = start[e - 1] + counts[e - 1];
  for (int64_t i = 0; i < entries; ++i)
    if (slots[i] >= 0)
      slots[i] += start[experts[i]];
}
