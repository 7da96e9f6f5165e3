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
// nn.moe_dispatch adds each (token, pick) into its buffer row with atomics:
// slots from nn.moe_route are distinct, so each row receives one product and
// the result is the host's bits; colliding slots sum in an unspecified
// order. nn.moe_combine and nn.moe_slot_dot give one thread per output
// element, summing the picks (or the width) in the host's order. The grouped
// matmul and its weight gradient read the counts back to the host (a
// synchronization: the group boundaries decide the GEMM shapes) and make one
// cuBLAS GEMM per expert with rows, as the host kernels do with BLAS.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"
#include "runtime/moe/Blocks.h"
#include "runtime/moe/RunTimePlan.h"

#include <climits>
#include <initializer_list>
#include <string>
#include <vector>

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
                               int64_t numExperts, int64_t limit,
                               int64_t perBlock, int64_t blockRows) {
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
  // The experts' starts (each block's from its first row), in place of
  // the counts for a moment: each slot then moves by its expert's start,
  // and the counts come back.
  int64_t next = 0;
  for (int64_t e = 0; e < numExperts; ++e) {
    if (e % perBlock == 0)
      next = (e / perBlock) * blockRows;
    int64_t count = counts[e];
    counts[e] = next;
    next += count;
  }
  for (int64_t i = 0; i < entries; ++i)
    if (slots[i] >= 0)
      slots[i] += counts[experts[i]];
  // (A block's last expert ends where the slots of its entries end: its
  // count is the difference to the block's end, recounted here.)
  for (int64_t e = 0; e < numExperts; ++e)
    counts[e] = 0;
  for (int64_t i = 0; i < entries; ++i)
    if (slots[i] >= 0)
      ++counts[experts[i]];
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

template <typename T>
__global__ void moeDispatchKernel(T *out, const T *in, const int64_t *slots,
                                  const T *weights, int64_t entries, int64_t k,
                                  int64_t width, int64_t rows) {
  LOOM_CUDA_FOR(i, entries * width) {
    int64_t entry = i / width, h = i % width;
    int64_t row = slots[entry];
    if (row < 0 || row >= rows)
      continue;
    T x = in[(entry / k) * width + h];
    atomicAdd(out + row * width + h, weights ? weights[entry] * x : x);
  }
}

template <typename T>
__global__ void moeCombineKernel(T *out, const T *in, const int64_t *slots,
                                 const T *weights, int64_t tokens, int64_t k,
                                 int64_t width, int64_t rows) {
  LOOM_CUDA_FOR(i, tokens * width) {
    int64_t t = i / width, h = i % width;
    T sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t row = slots[t * k + j];
      if (row < 0 || row >= rows)
        continue;
      T x = in[row * width + h];
      sum += weights ? weights[t * k + j] * x : x;
    }
    out[i] = sum;
  }
}

template <typename T>
__global__ void moeSlotDotKernel(T *out, const T *buffer, const T *tokens,
                                 const int64_t *slots, int64_t entries,
                                 int64_t k, int64_t width, int64_t rows) {
  LOOM_CUDA_FOR(entry, entries) {
    int64_t row = slots[entry];
    T sum = 0;
    if (row >= 0 && row < rows) {
      const T *b = buffer + row * width, *x = tokens + (entry / k) * width;
      for (int64_t h = 0; h < width; ++h)
        sum += b[h] * x[h];
    }
    out[entry] = sum;
  }
}

void checkMatrix(const char *kernel, const char *what, const Shape &shape) {
  checkValid(kernel, what, shape);
  LOOM_CUDA_CHECK(shape.rank == 2, kernel, "%s of shape %s must have rank 2",
                  what, formatShape(shape, 0));
}

void checkRouting(const char *kernel, const Shape &slotsShape, int64_t tokens,
                  const void *weights, const Shape &weightsShape) {
  checkMatrix(kernel, "the slots", slotsShape);
  LOOM_CUDA_CHECK(slotsShape[0] == tokens, kernel,
                  "slots of shape %s for %lld tokens",
                  formatShape(slotsShape, 0), static_cast<long long>(tokens));
  if (weights)
    checkShape(kernel, "the weights", weightsShape, slotsShape);
}

/// The rows of each expert's group from the device counts (moe::groupRows),
/// checked as the host kernels check them.
loom::moe::GroupRows groupRows(const char *kernel, const int64_t *counts,
                               const Shape &countsShape, int64_t experts,
                               int64_t rows, int64_t blocks) {
  checkShape(kernel, "the counts", countsShape, Shape{experts});
  std::vector<int64_t> host(static_cast<size_t>(experts));
  copyToHost(host.data(), counts, host.size() * sizeof(int64_t));
  loom::moe::GroupRows groups =
      loom::moe::groupRows(host.data(), experts, rows, blocks);
  LOOM_CUDA_CHECK(groups.error.empty(), kernel, "%s", groups.error.c_str());
  return groups;
}

void checkGemmSizes(const char *kernel, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes)
    LOOM_CUDA_CHECK(size <= INT_MAX, kernel,
                    "dimension %lld is too large for cuBLAS",
                    static_cast<long long>(size));
}

template <typename T>
void moeDispatchImpl(T *result, const Shape &resultShape, const T *input,
                     const Shape &inputShape, const int64_t *slots,
                     const Shape &slotsShape, const T *weights,
                     const Shape &weightsShape, int64_t rows) {
  const char *kernel = "moe_dispatch";
  checkMatrix(kernel, "the input", inputShape);
  checkRouting(kernel, slotsShape, inputShape[0], weights, weightsShape);
  int64_t width = inputShape[1], entries = slotsShape.numElements();
  checkShape(kernel, "the result", resultShape, Shape{rows, width});
  zero(kernel, result, rows * width);
  if (entries * width == 0)
    return;
  moeDispatchKernel<<<gridFor(entries * width), kThreads, 0, stream()>>>(
      result, input, slots, weights, entries, slotsShape[1], width, rows);
  checkLaunch(kernel);
}

template <typename T>
void moeCombineImpl(T *result, const Shape &resultShape, const T *input,
                    const Shape &inputShape, const int64_t *slots,
                    const Shape &slotsShape, const T *weights,
                    const Shape &weightsShape) {
  const char *kernel = "moe_combine";
  checkMatrix(kernel, "the input", inputShape);
  checkMatrix(kernel, "the slots", slotsShape);
  checkRouting(kernel, slotsShape, slotsShape[0], weights, weightsShape);
  int64_t rows = inputShape[0], width = inputShape[1];
  int64_t tokens = slotsShape[0];
  checkShape(kernel, "the result", resultShape, Shape{tokens, width});
  if (tokens * width == 0)
    return;
  moeCombineKernel<<<gridFor(tokens * width), kThreads, 0, stream()>>>(
      result, input, slots, weights, tokens, slotsShape[1], width, rows);
  checkLaunch(kernel);
}

template <typename T>
void moeSlotDotImpl(T *result, const Shape &resultShape, const T *buffer,
                    const Shape &bufferShape, const T *tokens,
                    const Shape &tokensShape, const int64_t *slots,
                    const Shape &slotsShape) {
  const char *kernel = "moe_slot_dot";
  checkMatrix(kernel, "the buffer", bufferShape);
  checkMatrix(kernel, "the tokens", tokensShape);
  LOOM_CUDA_CHECK(bufferShape[1] == tokensShape[1], kernel,
                  "the buffer %s and the tokens %s differ in width",
                  formatShape(bufferShape, 0), formatShape(tokensShape, 1));
  checkRouting(kernel, slotsShape, tokensShape[0], nullptr, slotsShape);
  checkShape(kernel, "the result", resultShape, slotsShape);
  int64_t entries = slotsShape.numElements();
  if (entries == 0)
    return;
  moeSlotDotKernel<<<gridFor(entries), kThreads, 0, stream()>>>(
      result, buffer, tokens, slots, entries, slotsShape[1], bufferShape[1],
      bufferShape[0]);
  checkLaunch(kernel);
}

template <typename T>
void groupedMatmulImpl(T *result, const Shape &resultShape, const T *input,
                       const Shape &inputShape, const T *weight,
                       const Shape &weightShape, const int64_t *counts,
                       const Shape &countsShape, int64_t blocks,
                       bool transposed) {
  const char *kernel = "grouped_matmul";
  checkMatrix(kernel, "the input", inputShape);
  checkValid(kernel, "the weight", weightShape);
  LOOM_CUDA_CHECK(weightShape.rank == 3 &&
                      weightShape[transposed ? 2 : 1] == inputShape[1],
                  kernel,
                  "a weight of shape %s does not fit an input of shape %s",
                  formatShape(weightShape, 0), formatShape(inputShape, 1));
  int64_t rows = inputShape[0], depth = inputShape[1];
  int64_t experts = weightShape[0], width = weightShape[transposed ? 1 : 2];
  checkShape(kernel, "the result", resultShape, Shape{rows, width});
  checkGemmSizes(kernel, {rows, depth, width});
  loom::moe::GroupRows groups =
      groupRows(kernel, counts, countsShape, experts, rows, blocks);
  if (depth == 0) {
    zero(kernel, result, rows * width);
    return;
  }
  // Each block's tail past its last group.
  int64_t blockRows = rows / blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t end = groups.blockEnds[b];
    zero(kernel, result + end * width, ((b + 1) * blockRows - end) * width);
  }
  if (width == 0)
    return;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t start = groups.starts[e], m = groups.ends[e] - start;
    if (m == 0)
      continue;
    gemmStridedBatched(kernel, false, transposed, m, width, depth,
                       input + start * depth, depth, 0,
                       weight + e * depth * width, transposed ? depth : width,
                       0, result + start * width, 0, 1);
  }
}

template <typename T>
void groupedMatmulGradImpl(T *result, const Shape &resultShape, const T *lhs,
                           const Shape &lhsShape, const T *rhs,
                           const Shape &rhsShape, const int64_t *counts,
                           const Shape &countsShape, int64_t blocks) {
  const char *kernel = "grouped_matmul_grad";
  checkMatrix(kernel, "lhs", lhsShape);
  checkMatrix(kernel, "rhs", rhsShape);
  LOOM_CUDA_CHECK(lhsShape[0] == rhsShape[0], kernel,
                  "lhs %s and rhs %s differ in rows", formatShape(lhsShape, 0),
                  formatShape(rhsShape, 1));
  checkValid(kernel, "the counts", countsShape);
  LOOM_CUDA_CHECK(countsShape.rank == 1, kernel,
                  "counts of shape %s must have rank 1",
                  formatShape(countsShape, 0));
  int64_t rows = lhsShape[0], a = lhsShape[1], b = rhsShape[1];
  int64_t experts = countsShape[0];
  checkShape(kernel, "the result", resultShape, Shape{experts, a, b});
  checkGemmSizes(kernel, {rows, a, b});
  loom::moe::GroupRows groups =
      groupRows(kernel, counts, countsShape, experts, rows, blocks);
  // An expert without rows has a zero gradient; the others are written.
  zero(kernel, result, experts * a * b);
  if (a * b == 0)
    return;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t start = groups.starts[e], m = groups.ends[e] - start;
    if (m == 0)
      continue;
    gemmStridedBatched(kernel, true, false, a, b, m, lhs + start * a, a, 0,
                       rhs + start * b, b, 0, result + e * a * b, 0, 1);
  }
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
                           Shape expertsShape, const int64_t *hosts,
                           Shape hostsShape, const int64_t *shares,
                           Shape sharesShape, const int64_t *member,
                           Shape memberShape, int64_t blocks,
                           int64_t capacity, int64_t num_experts) {
  const char *kernel = "moe_route";
  checkValid(kernel, "the experts", expertsShape);
  LOOM_CUDA_CHECK(expertsShape.rank == 2 && num_experts >= 1, kernel,
                  "experts of rank %lld and %lld experts",
                  static_cast<long long>(expertsShape.rank),
                  static_cast<long long>(num_experts));
  checkShape(kernel, "the slots", slotsShape, expertsShape);
  int64_t entries = expertsShape.numElements();
  int64_t limit = capacity == INT64_MIN ? INT64_MAX : capacity;
  LOOM_CUDA_CHECK(limit >= 1, kernel, "a capacity of %lld",
                  static_cast<long long>(capacity));
  // By a placement, or one share of a batch: on the host, the shared
  // routine, from copies (the slots of a placed route are needed before
  // anything else of the layer, nn.moe_plan's hosts are made on the host
  // too, and a share's table has come through the host's exchange).
  bool placed = hosts != nullptr || hostsShape.rank != 0;
  bool shared = shares != nullptr || sharesShape.rank != 0;
  if (placed || shared) {
    int64_t hostCount = 0;
    if (placed) {
      checkValid(kernel, "the hosts", hostsShape);
      LOOM_CUDA_CHECK(hostsShape.rank == 1, kernel,
                      "hosts of rank %lld must have rank 1",
                      static_cast<long long>(hostsShape.rank));
      hostCount = hostsShape[0];
    }
    checkShape(kernel, "the counts", countsShape,
               Shape{placed ? hostCount : num_experts});
    std::vector<int64_t> e(static_cast<size_t>(entries)),
        h(static_cast<size_t>(hostCount)), s(e.size()),
        c(static_cast<size_t>(countsShape[0])), table;
    copyToHost(e.data(), experts, e.size() * sizeof(int64_t));
    copyToHost(h.data(), hosts, h.size() * sizeof(int64_t));
    loom::moe::RouteShares share;
    if (shared) {
      checkValid(kernel, "the shares", sharesShape);
      LOOM_CUDA_CHECK(loom::moe::shareShapesFit(sharesShape.rank,
                                                sharesShape.dims, member,
                                                memberShape.rank, num_experts),
                      kernel,
                      "shares of rank %lld and a member of rank %lld: they "
                      "must be [members, %lld] and []",
                      static_cast<long long>(sharesShape.rank),
                      static_cast<long long>(memberShape.rank),
                      static_cast<long long>(num_experts));
      table.resize(static_cast<size_t>(sharesShape.numElements()));
      copyToHost(table.data(), shares, table.size() * sizeof(int64_t));
      int64_t m = 0;
      copyToHost(&m, member, sizeof(int64_t));
      share = {table.data(), sharesShape[0], m};
    }
    std::string error = loom::moe::routeEntries(
        e.data(), entries, num_experts, capacity == INT64_MIN ? 0 : capacity,
        blocks, placed, h.data(), hostCount, s.data(), c.data(), share);
    LOOM_CUDA_CHECK(error.empty(), kernel, "%s", error.c_str());
    copyToDevice(slots, s.data(), s.size() * sizeof(int64_t));
    copyToDevice(counts, c.data(), c.size() * sizeof(int64_t));
    return;
  }
  checkShape(kernel, "the counts", countsShape, Shape{num_experts});
  LOOM_CUDA_CHECK(blocks >= 1 && num_experts % blocks == 0, kernel,
                  "blocks = %lld does not divide the %lld experts",
                  static_cast<long long>(blocks),
                  static_cast<long long>(num_experts));
  int64_t blockRows = loom::moe::blockRows(
      entries, num_experts, blocks, capacity == INT64_MIN ? 0 : capacity);
  moeRouteKernel<<<1, 1, 0, stream()>>>(slots, counts, experts, entries,
                                        num_experts, limit,
                                        num_experts / blocks, blockRows);
  checkLaunch(kernel);
}

void loom::cuda::moe_plan(int64_t *hosts, Shape hostsShape, int64_t *lookup,
                          Shape lookupShape, const int64_t *forecast,
                          Shape forecastShape, const int64_t *previous,
                          Shape previousShape, int64_t devices,
                          int64_t expertBytes, int64_t layer, int64_t nodes,
                          int64_t slots) {
  // The planner on the host (runtime/moe/Placement.h), from a copy of the
  // forecast: every rank makes the same plan from the same rows.
  const char *kernel = "moe_plan";
  checkValid(kernel, "the forecast", forecastShape);
  LOOM_CUDA_CHECK(forecastShape.rank == 3, kernel,
                  "a forecast of rank %lld must have rank 3",
                  static_cast<long long>(forecastShape.rank));
  LOOM_CUDA_CHECK(devices >= 1 && slots >= 1 && devices <= INT64_MAX / slots,
                  kernel, "%lld devices of %lld slots",
                  static_cast<long long>(devices),
                  static_cast<long long>(slots));
  checkShape(kernel, "the hosts", hostsShape, Shape{devices * slots});
  checkShape(kernel, "the lookup", lookupShape, Shape{devices * slots});
  std::vector<int64_t> f(static_cast<size_t>(forecastShape.numElements()));
  std::vector<int64_t> h(static_cast<size_t>(devices * slots)), l(h.size()),
      p;
  copyToHost(f.data(), forecast, f.size() * sizeof(int64_t));
  if (previous) {
    checkShape(kernel, "the previous lookup", previousShape,
               Shape{devices * slots});
    p.resize(h.size());
    copyToHost(p.data(), previous, p.size() * sizeof(int64_t));
  }
  std::string error = loom::moe::planFromForecast(
      f.data(), forecastShape[0], forecastShape[1], forecastShape[2], layer,
      devices, slots, nodes, expertBytes, previous ? p.data() : nullptr,
      h.data(), l.data());
  LOOM_CUDA_CHECK(error.empty(), kernel, "%s", error.c_str());
  copyToDevice(hosts, h.data(), h.size() * sizeof(int64_t));
  copyToDevice(lookup, l.data(), l.size() * sizeof(int64_t));
}

#define LOOM_MOE_FLOAT_KERNELS(T)                                              \
  void loom::cuda::moe_dispatch(T *result, Shape resultShape, const T *input, \
                                Shape inputShape, const int64_t *slots,        \
                                Shape slotsShape, const T *weights,            \
                                Shape weightsShape, int64_t rows) {            \
    moeDispatchImpl(result, resultShape, input, inputShape, slots,            \
                    slotsShape, weights, weightsShape, rows);                  \
  }                                                                            \
  void loom::cuda::moe_combine(T *result, Shape resultShape, const T *input,  \
                               Shape inputShape, const int64_t *slots,         \
                               Shape slotsShape, const T *weights,             \
                               Shape weightsShape) {                           \
    moeCombineImpl(result, resultShape, input, inputShape, slots, slotsShape, \
                   weights, weightsShape);                                     \
  }                                                                            \
  void loom::cuda::moe_slot_dot(T *result, Shape resultShape, const T *buffer,\
                                Shape bufferShape, const T *tokens,            \
                                Shape tokensShape, const int64_t *slots,       \
                                Shape slotsShape) {                            \
    moeSlotDotImpl(result, resultShape, buffer, bufferShape, tokens,          \
                   tokensShape, slots, slotsShape);                            \
  }                                                                            \
  void loom::cuda::grouped_matmul(T *result, Shape resultShape,               \
                                  const T *input, Shape inputShape,            \
                                  const T *weight, Shape weightShape,          \
                                  const int64_t *counts, Shape countsShape,    \
                                  int64_t blocks, bool transposeRhs) {         \
    groupedMatmulImpl(result, resultShape, input, inputShape, weight,         \
                      weightShape, counts, countsShape, blocks, transposeRhs); \
  }                                                                            \
  void loom::cuda::grouped_matmul_grad(                                        \
      T *result, Shape resultShape, const T *lhs, Shape lhsShape,              \
      const T *rhs, Shape rhsShape, const int64_t *counts, Shape countsShape,  \
      int64_t blocks) {                                                        \
    groupedMatmulGradImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape,  \
                          counts, countsShape, blocks);                        \
  }

LOOM_MOE_FLOAT_KERNELS(float)
LOOM_MOE_FLOAT_KERNELS(double)
