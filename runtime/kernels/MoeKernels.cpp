//===- MoeKernels.cpp - Host kernels of the mixture-of-experts ops --------===//
//
// nn.topk (the router's choice of experts) and nn.moe_route (each entry's
// row of the expert-ordered buffer), exact and mirroring the reference
// interpreter (runtime/interpreter/MoeKernels.cpp): ties in index order, a
// NaN above any number, entries of an expert beyond its capacity or of an
// expert out of range dropped (slot -1). The float ops over the buffer
// (dispatch, combine, slot dot products, the grouped matmul and its weight
// gradient) sum in the interpreter's order and make its GEMM calls, one
// per expert on its rows, so the two agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Blas.h"
#include "runtime/kernels/KernelSupport.h"
#include "runtime/moe/Blocks.h"
#include "runtime/moe/Placement.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <vector>

using namespace loom::host;
using namespace loom::host::detail;
namespace moe = loom::moe;

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

/// Ends the process unless `shape` (operand `what`) is a valid matrix.
void checkMatrix(const char *kernel, const char *what, const Shape &shape) {
  checkValid(kernel, what, shape);
  LOOM_HOST_CHECK(shape.rank == 2, kernel, "%s of shape %s must have rank 2",
                  what, formatShape(shape, 0));
}

/// Checks the slots (`[tokens, k]`) and the weights (absent, or the slots'
/// shape).
void checkRouting(const char *kernel, const Shape &slotsShape, int64_t tokens,
                  const void *weights, const Shape &weightsShape) {
  checkMatrix(kernel, "the slots", slotsShape);
  LOOM_HOST_CHECK(slotsShape[0] == tokens, kernel,
                  "slots of shape %s for %lld tokens",
                  formatShape(slotsShape, 0), static_cast<long long>(tokens));
  if (weights)
    checkShape(kernel, "the weights", weightsShape, slotsShape);
}

/// The rows of each expert's group from run-time counts (moe::groupRows:
/// `blocks` blocks of `rows / blocks` rows, each with the groups of `E /
/// blocks` consecutive experts; one block is the plain buffer), checked:
/// the counts non-negative and each block's sum at most its rows.
moe::GroupRows groupRows(const char *kernel, const int64_t *counts,
                         const Shape &countsShape, int64_t experts,
                         int64_t rows, int64_t blocks) {
  checkShape(kernel, "the counts", countsShape, Shape{experts});
  moe::GroupRows groups = moe::groupRows(counts, experts, rows, blocks);
  LOOM_HOST_CHECK(groups.error.empty(), kernel, "%s", groups.error.c_str());
  return groups;
}

void checkBlasSizes(const char *kernel, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes)
    LOOM_HOST_CHECK(size <= INT_MAX, kernel,
                    "dimension %lld is too large for BLAS",
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
  int64_t tokens = inputShape[0], width = inputShape[1], k = slotsShape[1];
  checkShape(kernel, "the result", resultShape, Shape{rows, width});
  std::fill(result, result + rows * width, T(0));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t row = slots[t * k + j];
      if (row < 0 || row >= rows)
        continue;
      const T *x = input + t * width;
      T *y = result + row * width;
      if (weights)
        for (int64_t h = 0; h < width; ++h)
          y[h] += weights[t * k + j] * x[h];
      else
        for (int64_t h = 0; h < width; ++h)
          y[h] += x[h];
    }
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
  int64_t tokens = slotsShape[0], k = slotsShape[1];
  checkShape(kernel, "the result", resultShape, Shape{tokens, width});
  std::fill(result, result + tokens * width, T(0));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t row = slots[t * k + j];
      if (row < 0 || row >= rows)
        continue;
      const T *x = input + row * width;
      T *y = result + t * width;
      if (weights)
        for (int64_t h = 0; h < width; ++h)
          y[h] += weights[t * k + j] * x[h];
      else
        for (int64_t h = 0; h < width; ++h)
          y[h] += x[h];
    }
}

template <typename T>
void moeSlotDotImpl(T *result, const Shape &resultShape, const T *buffer,
                    const Shape &bufferShape, const T *tokens,
                    const Shape &tokensShape, const int64_t *slots,
                    const Shape &slotsShape) {
  const char *kernel = "moe_slot_dot";
  checkMatrix(kernel, "the buffer", bufferShape);
  checkMatrix(kernel, "the tokens", tokensShape);
  LOOM_HOST_CHECK(bufferShape[1] == tokensShape[1], kernel,
                  "the buffer %s and the tokens %s differ in width",
                  formatShape(bufferShape, 0), formatShape(tokensShape, 1));
  checkRouting(kernel, slotsShape, tokensShape[0], nullptr, slotsShape);
  int64_t rows = bufferShape[0], width = bufferShape[1];
  int64_t count = tokensShape[0], k = slotsShape[1];
  checkShape(kernel, "the result", resultShape, slotsShape);
  for (int64_t t = 0; t < count; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t row = slots[t * k + j];
      T sum = 0;
      if (row >= 0 && row < rows)
        for (int64_t h = 0; h < width; ++h)
          sum += buffer[row * width + h] * tokens[t * width + h];
      result[t * k + j] = sum;
    }
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
  LOOM_HOST_CHECK(weightShape.rank == 3 &&
                      weightShape[transposed ? 2 : 1] == inputShape[1],
                  kernel, "a weight of shape %s does not fit an input of "
                  "shape %s", formatShape(weightShape, 0),
                  formatShape(inputShape, 1));
  int64_t rows = inputShape[0], depth = inputShape[1];
  int64_t experts = weightShape[0], width = weightShape[transposed ? 1 : 2];
  checkShape(kernel, "the result", resultShape, Shape{rows, width});
  checkBlasSizes(kernel, {rows, depth, width});
  moe::GroupRows groups =
      groupRows(kernel, counts, countsShape, experts, rows, blocks);
  // (Each block's tail past its last group is zero; the groups are all
  // written.)
  int64_t blockRows = rows / blocks;
  for (int64_t b = 0; b < blocks; ++b)
    std::fill(result + groups.blockEnds[b] * width,
              result + (b + 1) * blockRows * width, T(0));
  for (int64_t e = 0; e < experts; ++e) {
    int64_t start = groups.starts[e], m = groups.ends[e] - start;
    gemm(false, transposed, m, width, depth, T(1), input + start * depth,
         depth, weight + e * depth * width, transposed ? depth : width, T(0),
         result + start * width, width);
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
  LOOM_HOST_CHECK(lhsShape[0] == rhsShape[0], kernel,
                  "lhs %s and rhs %s differ in rows", formatShape(lhsShape, 0),
                  formatShape(rhsShape, 1));
  checkValid(kernel, "the counts", countsShape);
  LOOM_HOST_CHECK(countsShape.rank == 1, kernel,
                  "counts of shape %s must have rank 1",
                  formatShape(countsShape, 0));
  int64_t rows = lhsShape[0], a = lhsShape[1], b = rhsShape[1];
  int64_t experts = countsShape[0];
  checkShape(kernel, "the result", resultShape, Shape{experts, a, b});
  checkBlasSizes(kernel, {rows, a, b});
  moe::GroupRows groups =
      groupRows(kernel, counts, countsShape, experts, rows, blocks);
  for (int64_t e = 0; e < experts; ++e) {
    int64_t start = groups.starts[e], m = groups.ends[e] - start;
    // (With no rows, gemm only scales C by beta = 0.)
    std::fill(result + e * a * b, result + (e + 1) * a * b, T(0));
    gemm(true, false, a, b, m, T(1), lhs + start * a, a, rhs + start * b, b,
         T(0), result + e * a * b, b);
  }
}

/// nn.moe_route's share of a batch (`shares` null: the whole batch), its
/// shapes checked.
moe::RouteShares routeShares(const char *kernel, const int64_t *shares,
                             const Shape &sharesShape, const int64_t *member,
                             const Shape &memberShape, int64_t experts) {
  if (!shares && sharesShape.rank == 0)
    return {};
  checkValid(kernel, "the shares", sharesShape);
  LOOM_HOST_CHECK(moe::shareShapesFit(sharesShape.rank, sharesShape.dims,
                                      member, memberShape.rank, experts),
                  kernel,
                  "shares of shape %s and a member of shape %s: they must "
                  "be [members, %lld] and []",
                  formatShape(sharesShape, 0), formatShape(memberShape, 1),
                  static_cast<long long>(experts));
  return {shares, sharesShape[0], *member};
}

} // namespace

#define LOOM_MOE_FLOAT_KERNELS(T)                                              \
  void loom::host::moe_dispatch(T *result, Shape resultShape, const T *input, \
                                Shape inputShape, const int64_t *slots,        \
                                Shape slotsShape, const T *weights,            \
                                Shape weightsShape, int64_t rows) {            \
    moeDispatchImpl(result, resultShape, input, inputShape, slots,            \
                    slotsShape, weights, weightsShape, rows);                  \
  }                                                                            \
  void loom::host::moe_combine(T *result, Shape resultShape, const T *input,  \
                               Shape inputShape, const int64_t *slots,         \
                               Shape slotsShape, const T *weights,             \
                               Shape weightsShape) {                           \
    moeCombineImpl(result, resultShape, input, inputShape, slots, slotsShape, \
                   weights, weightsShape);                                     \
  }                                                                            \
  void loom::host::moe_slot_dot(T *result, Shape resultShape, const T *buffer,\
                                Shape bufferShape, const T *tokens,            \
                                Shape tokensShape, const int64_t *slots,       \
                                Shape slotsShape) {                            \
    moeSlotDotImpl(result, resultShape, buffer, bufferShape, tokens,          \
                   tokensShape, slots, slotsShape);                            \
  }                                                                            \
  void loom::host::grouped_matmul(T *result, Shape resultShape,               \
                                  const T *input, Shape inputShape,            \
                                  const T *weight, Shape weightShape,          \
                                  const int64_t *counts, Shape countsShape,    \
                                  int64_t blocks, bool transposeRhs) {         \
    groupedMatmulImpl(result, resultShape, input, inputShape, weight,         \
                      weightShape, counts, countsShape, blocks, transposeRhs); \
  }                                                                            \
  void loom::host::grouped_matmul_grad(                                        \
      T *result, Shape resultShape, const T *lhs, Shape lhsShape,              \
      const T *rhs, Shape rhsShape, const int64_t *counts, Shape countsShape,  \
      int64_t blocks) {                                                        \
    groupedMatmulGradImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape,  \
                          counts, countsShape, blocks);                        \
  }

LOOM_MOE_FLOAT_KERNELS(float)
LOOM_MOE_FLOAT_KERNELS(double)

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
                           Shape expertsShape, const int64_t *hosts,
                           Shape hostsShape, const int64_t *shares,
                           Shape sharesShape, const int64_t *member,
                           Shape memberShape, int64_t blocks,
                           int64_t capacity, int64_t num_experts) {
  const char *kernel = "moe_route";
  checkValid(kernel, "the experts", expertsShape);
  LOOM_HOST_CHECK(expertsShape.rank == 2 && num_experts >= 1, kernel,
                  "experts of shape %s and %lld experts: the experts must "
                  "have rank 2 and there must be one expert at least",
                  formatShape(expertsShape, 0),
                  static_cast<long long>(num_experts));
  checkShape(kernel, "the slots", slotsShape, expertsShape);
  // (A given placement has rank 1, even when empty; an absent one none.)
  bool placed = hosts != nullptr || hostsShape.rank != 0;
  int64_t hostCount = 0;
  if (placed) {
    checkValid(kernel, "the hosts", hostsShape);
    LOOM_HOST_CHECK(hostsShape.rank == 1, kernel,
                    "hosts of shape %s must have rank 1",
                    formatShape(hostsShape, 0));
    hostCount = hostsShape.numElements();
  }
  checkShape(kernel, "the counts", countsShape,
             Shape{placed ? hostCount : num_experts});
  // (An absent capacity: dropless.)
  LOOM_HOST_CHECK(capacity == INT64_MIN || capacity >= 1, kernel,
                  "a capacity of %lld", static_cast<long long>(capacity));
  std::string error = moe::routeEntries(
      experts, expertsShape.numElements(), num_experts,
      capacity == INT64_MIN ? 0 : capacity, blocks, placed, hosts, hostCount,
      slots, counts,
      routeShares(kernel, shares, sharesShape, member, memberShape,
                  num_experts));
  LOOM_HOST_CHECK(error.empty(), kernel, "%s", error.c_str());
}

void loom::host::moe_plan(int64_t *hosts, Shape hostsShape, int64_t *lookup,
                          Shape lookupShape, const int64_t *forecast,
                          Shape forecastShape, const int64_t *previous,
                          Shape previousShape, int64_t devices,
                          int64_t expertBytes, int64_t layer, int64_t nodes,
                          int64_t slots) {
  const char *kernel = "moe_plan";
  checkValid(kernel, "the forecast", forecastShape);
  LOOM_HOST_CHECK(forecastShape.rank == 3, kernel,
                  "a forecast of shape %s must have rank 3",
                  formatShape(forecastShape, 0));
  checkShape(kernel, "the hosts", hostsShape, Shape{devices * slots});
  checkShape(kernel, "the lookup", lookupShape, Shape{devices * slots});
  if (previous)
    checkShape(kernel, "the previous lookup", previousShape,
               Shape{devices * slots});
  std::string error = moe::planFromForecast(
      forecast, forecastShape.dims[0], forecastShape.dims[1],
      forecastShape.dims[2], layer, devices, slots, nodes, expertBytes,
      previous, hosts, lookup);
  LOOM_HOST_CHECK(error.empty(), kernel, "%s", error.c_str());
}
