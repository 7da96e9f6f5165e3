//===- MoeKernels.cpp - The mixture-of-experts ops as CANN operators ------===//
//
// The Ascend kernels of nn.topk, nn.moe_route, nn.moe_plan,
// nn.moe_dispatch, nn.moe_combine, nn.moe_slot_dot, nn.grouped_matmul and
// nn.grouped_matmul_grad (docs/moe.md, "Targets"), on CANN's operators:
//
//   topk                  aclnnTopk (largest, sorted, along the last
//                         dimension; its values go to a scratch tensor)
//   moe_dispatch          the entries' rows (aclnnMul by the weights, or a
//                         broadcast copy) added into a zero buffer with
//                         aclnnIndexAdd; a dropped entry (a slot outside
//                         the buffer) goes to one extra row, not copied out
//   moe_combine           the entries' buffer rows (aclnnEmbedding), times
//                         the weights (aclnnMul), dropped entries zeroed
//                         (aclnnSWhere), summed over the k picks
//                         (aclnnReduceSum)
//   moe_slot_dot          the entries' buffer rows (aclnnEmbedding) times
//                         their tokens' rows (aclnnMul), summed over the
//                         width (aclnnReduceSum), dropped entries zeroed
//   grouped_matmul        aclnnGroupedMatmulV4, M grouping, one call per
//                         expert block on the rows its groups hold
//   grouped_matmul_grad   aclnnGroupedMatmulV4, K grouping (x transposed),
//                         one call per block; experts with no rows zeroed
//   moe_route, moe_plan   on the host, from copies (Loom's routing and
//                         planner, moe::routeEntries and
//                         moe::planFromForecast, as every target)
//
// Which entries are valid (a slot in [0, rows)) and where a dropped one
// goes is computed on the device with aclnnGeTensor, aclnnLtTensor and
// aclnnSWhere. Each sum runs in the host kernel's order in the test
// double (the dispatch's rows in entry order, the combine's picks and the
// slot dot's width from the first), so the two agree bit for bit there;
// on hardware CANN sums in its own order.
//
// A kernel's temporaries live in KernelScratch memory (Internal.h), which
// the drains that bound the operators' workspaces leave alone until the
// kernel returns.
//
// The grouped matmuls read the counts back to the host (as the CUDA
// target does): CANN's single-tensor grouped matmul on Atlas A2/A3 needs
// its groups to cover x exactly, and each block's rows past its groups are
// zeroed by Loom, not left to the operator.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/Internal.h"
#include "runtime/ascend/Program.h"
#include "runtime/moe/Blocks.h"
#include "runtime/moe/RunTimePlan.h"

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::ascend;
using namespace loom::ascend::internal;
using detail::Arg;

namespace {

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (int64_t d = 0; d < shape.rank; ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

void require(bool condition, const char *kernel, const std::string &what) {
  if (!condition)
    fail(std::string(kernel) + ": " + what);
}

void requireShape(const char *kernel, const char *what, const Arg &arg,
                  const Shape &shape) {
  bool same = arg.shape.rank == shape.rank;
  for (int64_t d = 0; same && d < shape.rank; ++d)
    same = arg.shape[d] == shape[d];
  require(same, kernel,
          std::string(what) + " has shape " + shapeText(arg.shape) +
              ", not " + shapeText(shape));
}

size_t elementBytes(aclDataType type) {
  return type == ACL_DOUBLE || type == ACL_INT64 ? 8 : type == ACL_BOOL ? 1 : 4;
}

/// A kernel's temporaries: device tensors alive until the kernel returns.
struct Temporaries {
  KernelScratch memory;

  Arg tensor(const Shape &shape, aclDataType type) {
    size_t bytes =
        static_cast<size_t>(shape.numElements()) * elementBytes(type);
    return Arg{memory.allocate(bytes), shape, type};
  }

  /// A 0-d tensor holding `value`.
  Arg constant(double value, aclDataType type) {
    Arg c = tensor(Shape{}, type);
    LOOM_ACLNN(aclnnInplaceFillScalar, internal::tensor(c),
               scalar(value, type));
    return c;
  }
};

/// `arg`'s elements seen as `shape` (same count, row-major).
Arg as(const Arg &arg, const Shape &shape) {
  return Arg{arg.data, shape, arg.type};
}

/// The entries of `slots` ([T, k]) that name a row of a buffer of `rows`
/// rows (`valid`, bool [T, k]), and each entry's row with the others sent
/// to row `dropped` (`index`, i64 [T, k]).
struct Entries {
  Arg valid, index;
};
Entries entries(Temporaries &temp, const Arg &slots, int64_t rows,
                int64_t dropped) {
  Arg zero = temp.constant(0, ACL_INT64);
  Arg bound = temp.constant(rows, ACL_INT64);
  Arg other = dropped == rows ? bound : temp.constant(dropped, ACL_INT64);
  Arg nonNegative = temp.tensor(slots.shape, ACL_BOOL);
  Arg raised = temp.tensor(slots.shape, ACL_INT64);
  Entries result{temp.tensor(slots.shape, ACL_BOOL),
                 temp.tensor(slots.shape, ACL_INT64)};
  // Negative slots become `rows`; then what is below `rows` is valid.
  LOOM_ACLNN(aclnnGeTensor, tensor(slots), tensor(zero), tensor(nonNegative));
  LOOM_ACLNN(aclnnSWhere, tensor(nonNegative), tensor(slots), tensor(bound),
             tensor(raised));
  LOOM_ACLNN(aclnnLtTensor, tensor(raised), tensor(bound),
             tensor(result.valid));
  LOOM_ACLNN(aclnnSWhere, tensor(result.valid), tensor(raised), tensor(other),
             tensor(result.index));
  return result;
}

/// Checks the routing operands: `slots` [T, k] for `tokens` tokens, and
/// `weights` absent or of the slots' shape.
void checkRouting(const char *kernel, const Arg &slots, int64_t tokens,
                  const Arg &weights) {
  require(slots.shape.rank == 2 && slots.shape[0] == tokens, kernel,
          "slots of shape " + shapeText(slots.shape) + " for " +
              std::to_string(tokens) + " tokens");
  if (weights.data)
    requireShape(kernel, "the weights", weights, slots.shape);
}

void requireMatrix(const char *kernel, const char *what, const Arg &arg) {
  require(arg.shape.rank == 2, kernel,
          std::string(what) + " of shape " + shapeText(arg.shape) +
              " must have rank 2");
}

/// The counts read back, grouped into rows (moe::groupRows), checked.
moe::GroupRows groupRows(const char *kernel, const Arg &counts,
                         int64_t experts, int64_t rows, int64_t blocks) {
  requireShape(kernel, "the counts", counts, Shape{experts});
  std::vector<int64_t> host(static_cast<size_t>(experts));
  copyToHost(host.data(), counts.data, host.size() * sizeof(int64_t));
  moe::GroupRows groups = moe::groupRows(host.data(), experts, rows, blocks);
  require(groups.error.empty(), kernel, groups.error);
  return groups;
}

/// One aclnnGroupedMatmulV4 of single tensors: no bias, quantisation or
/// activation; the group sizes as counts (groupListType 1).
void groupedMatmul(aclTensor *x, aclTensor *weight, aclTensor *counts,
                   aclTensor *out, int64_t groupType) {
  LOOM_ACLNN(aclnnGroupedMatmulV4, tensorList(&x, 1), tensorList(&weight, 1),
             nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, counts,
             nullptr, nullptr, nullptr, /*splitItem=*/int64_t(3), groupType,
             /*groupListType=*/int64_t(1), /*actType=*/int64_t(0),
             tensorList(&out, 1), nullptr, nullptr);
}

} // namespace

void detail::topk(Arg out, Arg in, int64_t k) {
  if (empty(out))
    return;
  Temporaries temp;
  Arg values = temp.tensor(out.shape, in.type);
  LOOM_ACLNN(aclnnTopk, tensor(in), k, int64_t(-1), true, true, tensor(values),
             tensor(out));
}

void detail::moe_route(Arg slots, Arg counts, Arg experts, Arg hosts,
                       Arg shares, Arg member, int64_t blocks,
                       int64_t capacity, int64_t numExperts) {
  const char *kernel = "moe_route";
  require(experts.shape.rank == 2 && numExperts >= 1, kernel,
          "experts of shape " + shapeText(experts.shape) + " and " +
              std::to_string(numExperts) +
              " experts: the experts must have rank 2 and there must be one "
              "expert at least");
  requireShape(kernel, "the slots", slots, experts.shape);
  // (A given placement has rank 1, even when empty; an absent one none.)
  bool placed = hosts.data != nullptr || hosts.shape.rank != 0;
  int64_t hostCount = 0;
  if (placed) {
    require(hosts.shape.rank == 1, kernel,
            "hosts of shape " + shapeText(hosts.shape) +
                " must have rank 1");
    hostCount = hosts.shape[0];
  }
  requireShape(kernel, "the counts", counts,
               Shape{placed ? hostCount : numExperts});
  require(capacity == INT64_MIN || capacity >= 1, kernel,
          "a capacity of " + std::to_string(capacity));
  // On the host from copies: the routing is integer work on T * k entries
  // whose result every later op of the layer needs. (The stream drains
  // first even when there is nothing to copy: the results' memory may
  // still be read by queued work.)
  synchronize();
  int64_t n = experts.shape.numElements();
  std::vector<int64_t> e(static_cast<size_t>(n)), s(e.size()),
      h(static_cast<size_t>(hostCount)),
      c(static_cast<size_t>(counts.shape[0]));
  copyToHost(e.data(), experts.data, e.size() * sizeof(int64_t));
  copyToHost(h.data(), hosts.data, h.size() * sizeof(int64_t));
  // One share of a batch: the table of every share's counts and the
  // member, copied too.
  std::vector<int64_t> table;
  moe::RouteShares share;
  if (shares.data || shares.shape.rank != 0) {
    require(moe::shareShapesFit(shares.shape.rank, shares.shape.dims,
                                member.data != nullptr, member.shape.rank,
                                numExperts),
            kernel,
            "shares of shape " + shapeText(shares.shape) +
                " and a member of shape " + shapeText(member.shape) +
                ": they must be [members, " + std::to_string(numExperts) +
                "] and []");
    table.resize(static_cast<size_t>(shares.shape.numElements()));
    copyToHost(table.data(), shares.data, table.size() * sizeof(int64_t));
    int64_t m = 0;
    copyToHost(&m, member.data, sizeof(int64_t));
    share = {table.data(), shares.shape[0], m};
  }
  std::string error = moe::routeEntries(
      e.data(), n, numExperts, capacity == INT64_MIN ? 0 : capacity, blocks,
      placed, h.data(), hostCount, s.data(), c.data(), share);
  require(error.empty(), kernel, error);
  copyToDevice(const_cast<void *>(slots.data), s.data(),
               s.size() * sizeof(int64_t));
  copyToDevice(const_cast<void *>(counts.data), c.data(),
               c.size() * sizeof(int64_t));
}

void detail::moe_plan(Arg hosts, Arg lookup, Arg forecast, Arg previous,
                      int64_t devices, int64_t expertBytes, int64_t layer,
                      int64_t nodes, int64_t slots) {
  const char *kernel = "moe_plan";
  require(forecast.shape.rank == 3, kernel,
          "a forecast of shape " + shapeText(forecast.shape) +
              " must have rank 3");
  require(devices >= 1 && slots >= 1 && devices <= INT64_MAX / slots, kernel,
          std::to_string(devices) + " devices of " + std::to_string(slots) +
              " slots");
  requireShape(kernel, "the hosts", hosts, Shape{devices * slots});
  requireShape(kernel, "the lookup", lookup, Shape{devices * slots});
  // The planner on the host, from a copy of the forecast: every rank makes
  // the same plan from the same rows (after the stream drains, as the
  // route).
  synchronize();
  std::vector<int64_t> f(static_cast<size_t>(forecast.shape.numElements()));
  std::vector<int64_t> h(static_cast<size_t>(devices * slots)), l(h.size()),
      p;
  copyToHost(f.data(), forecast.data, f.size() * sizeof(int64_t));
  if (previous.data) {
    requireShape(kernel, "the previous lookup", previous,
                 Shape{devices * slots});
    p.resize(h.size());
    copyToHost(p.data(), previous.data, p.size() * sizeof(int64_t));
  }
  std::string error = moe::planFromForecast(
      f.data(), forecast.shape[0], forecast.shape[1], forecast.shape[2],
      layer, devices, slots, nodes, expertBytes,
      previous.data ? p.data() : nullptr, h.data(), l.data());
  require(error.empty(), kernel, error);
  copyToDevice(const_cast<void *>(hosts.data), h.data(),
               h.size() * sizeof(int64_t));
  copyToDevice(const_cast<void *>(lookup.data), l.data(),
               l.size() * sizeof(int64_t));
}

void detail::moe_dispatch(Arg out, Arg input, Arg slots, Arg weights,
                          int64_t rows) {
  const char *kernel = "moe_dispatch";
  requireMatrix(kernel, "the input", input);
  checkRouting(kernel, slots, input.shape[0], weights);
  int64_t tokens = input.shape[0], width = input.shape[1];
  int64_t k = slots.shape[1];
  requireShape(kernel, "the result", out, Shape{rows, width});
  if (empty(out))
    return;
  if (tokens * k == 0)
    return fill(out, 0.0);
  // Each entry's row: token t's input row, times its weight.
  Temporaries temp;
  Arg rowsOf = temp.tensor(Shape{tokens, k, width}, input.type);
  if (weights.data) {
    LOOM_ACLNN(aclnnMul, tensor(as(input, Shape{tokens, 1, width})),
               tensor(as(weights, Shape{tokens, k, 1})), tensor(rowsOf));
  } else {
    int64_t strides[host::kMaxRank] = {width, 0, 1};
    LOOM_ACLNN(aclnnInplaceCopy, tensor(rowsOf),
               viewOf(input, rowsOf.shape, strides, 0));
  }
  // Added into a zero buffer with one extra row for the dropped entries.
  Arg buffer = temp.tensor(Shape{rows + 1, width}, out.type);
  fill(buffer, 0.0);
  Entries picked = entries(temp, slots, rows, rows);
  LOOM_ACLNN(aclnnIndexAdd, tensor(buffer), int64_t(0),
             tensor(as(picked.index, Shape{tokens * k})),
             tensor(as(rowsOf, Shape{tokens * k, width})),
             scalar(1.0, out.type), tensor(buffer));
  LOOM_ACLNN(aclnnInplaceCopy, tensor(out), tensor(as(buffer, out.shape)));
}

void detail::moe_combine(Arg out, Arg input, Arg slots, Arg weights) {
  const char *kernel = "moe_combine";
  requireMatrix(kernel, "the input", input);
  requireMatrix(kernel, "the slots", slots);
  checkRouting(kernel, slots, slots.shape[0], weights);
  int64_t rows = input.shape[0], width = input.shape[1];
  int64_t tokens = slots.shape[0], k = slots.shape[1];
  requireShape(kernel, "the result", out, Shape{tokens, width});
  if (empty(out))
    return;
  // With no buffer rows or picks every entry is dropped.
  if (rows == 0 || k == 0)
    return fill(out, 0.0);
  // Each entry's buffer row (a dropped one reads row 0), weighted, zero
  // where dropped, summed over the picks.
  Temporaries temp;
  Entries picked = entries(temp, slots, rows, 0);
  Shape picks{tokens, k, width};
  Arg rowsOf = temp.tensor(picks, input.type);
  LOOM_ACLNN(aclnnEmbedding, tensor(input), tensor(picked.index),
             tensor(rowsOf));
  if (weights.data) {
    Arg weighted = temp.tensor(picks, input.type);
    LOOM_ACLNN(aclnnMul, tensor(rowsOf),
               tensor(as(weights, Shape{tokens, k, 1})), tensor(weighted));
    rowsOf = weighted;
  }
  Arg kept = temp.tensor(picks, input.type);
  LOOM_ACLNN(aclnnSWhere, tensor(as(picked.valid, Shape{tokens, k, 1})),
             tensor(rowsOf), tensor(temp.constant(0, input.type)),
             tensor(kept));
  int64_t pickDim = 1;
  LOOM_ACLNN(aclnnReduceSum, tensor(kept), intArray(&pickDim, 1), false,
             out.type, tensor(out));
}

void detail::moe_slot_dot(Arg out, Arg buffer, Arg tokens, Arg slots) {
  const char *kernel = "moe_slot_dot";
  requireMatrix(kernel, "the buffer", buffer);
  requireMatrix(kernel, "the tokens", tokens);
  require(buffer.shape[1] == tokens.shape[1], kernel,
          "the buffer " + shapeText(buffer.shape) + " and the tokens " +
              shapeText(tokens.shape) + " differ in width");
  checkRouting(kernel, slots, tokens.shape[0], Arg{});
  int64_t rows = buffer.shape[0], width = buffer.shape[1];
  int64_t count = tokens.shape[0], k = slots.shape[1];
  requireShape(kernel, "the result", out, slots.shape);
  if (empty(out))
    return;
  if (rows == 0 || width == 0)
    return fill(out, 0.0);
  Temporaries temp;
  Entries picked = entries(temp, slots, rows, 0);
  Arg rowsOf = temp.tensor(Shape{count, k, width}, buffer.type);
  Arg products = temp.tensor(rowsOf.shape, buffer.type);
  LOOM_ACLNN(aclnnEmbedding, tensor(buffer), tensor(picked.index),
             tensor(rowsOf));
  LOOM_ACLNN(aclnnMul, tensor(rowsOf),
             tensor(as(tokens, Shape{count, 1, width})), tensor(products));
  Arg sums = temp.tensor(out.shape, out.type);
  int64_t widthDim = 2;
  LOOM_ACLNN(aclnnReduceSum, tensor(products), intArray(&widthDim, 1), false,
             out.type, tensor(sums));
  LOOM_ACLNN(aclnnSWhere, tensor(picked.valid), tensor(sums),
             tensor(temp.constant(0, out.type)), tensor(out));
}

void detail::grouped_matmul(Arg out, Arg input, Arg weight, Arg counts,
                            int64_t blocks, bool transposeRhs) {
  const char *kernel = "grouped_matmul";
  requireMatrix(kernel, "the input", input);
  require(weight.shape.rank == 3 &&
              weight.shape[transposeRhs ? 2 : 1] == input.shape[1],
          kernel,
          "a weight of shape " + shapeText(weight.shape) +
              " does not fit an input of shape " + shapeText(input.shape));
  int64_t rows = input.shape[0], depth = input.shape[1];
  int64_t experts = weight.shape[0];
  int64_t width = weight.shape[transposeRhs ? 1 : 2];
  requireShape(kernel, "the result", out, Shape{rows, width});
  moe::GroupRows groups = groupRows(kernel, counts, experts, rows, blocks);
  if (empty(out))
    return;
  int64_t blockRows = rows / blocks, perBlock = experts / blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t first = b * blockRows, used = groups.blockEnds[b] - first;
    // The block's rows past its groups are zero.
    if (used < blockRows) {
      int64_t strides[host::kMaxRank] = {width, 1};
      LOOM_ACLNN(aclnnInplaceFillScalar,
                 viewOf(out, Shape{blockRows - used, width}, strides,
                        groups.blockEnds[b] * width),
                 scalar(0.0, out.type));
    }
    if (used == 0 || depth == 0 || width == 0) {
      if (used > 0) {
        int64_t strides[host::kMaxRank] = {width, 1};
        LOOM_ACLNN(aclnnInplaceFillScalar,
                   viewOf(out, Shape{used, width}, strides, first * width),
                   scalar(0.0, out.type));
      }
      continue;
    }
    int64_t xStrides[host::kMaxRank] = {depth, 1};
    int64_t yStrides[host::kMaxRank] = {width, 1};
    int64_t countStrides[host::kMaxRank] = {1};
    // weight[e] is [K, N]; with transpose_rhs the stored [N, K] seen
    // transposed.
    int64_t wStrides[host::kMaxRank] = {depth * width, width, 1};
    if (transposeRhs) {
      wStrides[1] = 1;
      wStrides[2] = depth;
    }
    groupedMatmul(viewOf(input, Shape{used, depth}, xStrides, first * depth),
                  viewOf(weight, Shape{perBlock, depth, width}, wStrides,
                         b * perBlock * depth * width),
                  viewOf(counts, Shape{perBlock}, countStrides, b * perBlock),
                  viewOf(out, Shape{used, width}, yStrides, first * width),
                  /*groupType=*/0);
  }
}

void detail::grouped_matmul_grad(Arg out, Arg lhs, Arg rhs, Arg counts,
                                 int64_t blocks) {
  const char *kernel = "grouped_matmul_grad";
  requireMatrix(kernel, "lhs", lhs);
  requireMatrix(kernel, "rhs", rhs);
  require(lhs.shape[0] == rhs.shape[0], kernel,
          "lhs " + shapeText(lhs.shape) + " and rhs " + shapeText(rhs.shape) +
              " differ in rows");
  require(counts.shape.rank == 1, kernel,
          "counts of shape " + shapeText(counts.shape) + " must have rank 1");
  int64_t rows = lhs.shape[0], a = lhs.shape[1], b = rhs.shape[1];
  int64_t experts = counts.shape[0];
  requireShape(kernel, "the result", out, Shape{experts, a, b});
  moe::GroupRows groups = groupRows(kernel, counts, experts, rows, blocks);
  if (empty(out))
    return;
  int64_t blockRows = rows / blocks, perBlock = experts / blocks;
  int64_t matrix[host::kMaxRank] = {b, 1};
  for (int64_t blk = 0; blk < blocks; ++blk) {
    int64_t first = blk * blockRows, used = groups.blockEnds[blk] - first;
    if (used > 0) {
      // lhs's rows of the block seen transposed ([a, used]), rhs's rows.
      int64_t xStrides[host::kMaxRank] = {1, a};
      int64_t yStrides[host::kMaxRank] = {a * b, b, 1};
      int64_t countStrides[host::kMaxRank] = {1};
      groupedMatmul(viewOf(lhs, Shape{a, used}, xStrides, first * a),
                    viewOf(rhs, Shape{used, b}, matrix, first * b),
                    viewOf(counts, Shape{perBlock}, countStrides,
                           blk * perBlock),
                    viewOf(out, Shape{perBlock, a, b}, yStrides,
                           blk * perBlock * a * b),
                    /*groupType=*/2);
    }
    // An expert with no rows gets zeros (CANN leaves its group undefined).
    for (int64_t e = blk * perBlock; e < (blk + 1) * perBlock; ++e)
      if (groups.ends[e] == groups.starts[e])
        LOOM_ACLNN(aclnnInplaceFillScalar,
                   viewOf(out, Shape{a, b}, matrix, e * a * b),
                   scalar(0.0, out.type));
  }
}
