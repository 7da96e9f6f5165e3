//===- MoeKernels.cpp - The mixture-of-experts ops ------------------------===//
//
// The top k of each row (the router's choice of experts) and the routing of
// every (token, choice) entry to its row of the expert-ordered buffer, both
// integer and exact (ties and NaNs as the op docs in NNOps.td say); then
// the float ops over that buffer: dispatch (a scatter-add), combine (a
// weighted gather), the slot dot products (the weights' gradient), and the
// grouped matmul and its weight gradient, one GEMM per expert on its rows.
// The host kernels (runtime/kernels/MoeKernels.cpp) make the same GEMM
// calls and sums in the same order, so the two agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/Blas.h"
#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"
#include "runtime/moe/Blocks.h"
#include "runtime/moe/Placement.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

/// Whether `a` ranks before `b` in a top k: larger first, a NaN above any
/// number, equal values (NaNs among them) in index order.
bool ranksBefore(double a, int64_t ia, double b, int64_t ib) {
  bool nanA = std::isnan(a), nanB = std::isnan(b);
  if (nanA != nanB)
    return nanA;
  if (!nanA && a != b)
    return a > b;
  return ia < ib;
}

LogicalResult topkKernel(nn::TopkOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  llvm::ArrayRef<int64_t> shape = input.getShape();
  int64_t k = static_cast<int64_t>(op.getK());
  if (shape.empty() || k < 1 || k > shape.back())
    return call.emitError() << "nn.topk: k = " << k
                            << " does not fit an input of shape "
                            << formatShape(shape);
  llvm::SmallVector<int64_t> outShape(shape);
  outShape.back() = k;
  Tensor *out = call.addResult(ElementKind::I64, outShape);
  if (!out)
    return failure();
  int64_t n = shape.back(), rows = input.getNumElements() / std::max<int64_t>(n, 1);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), 0);
    auto value = [&](int64_t i) { return input.getDouble(r * n + i); };
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) {
                        return ranksBefore(value(a), a, value(b), b);
                      });
    for (int64_t j = 0; j < k; ++j)
      out->setDouble(r * k + j, static_cast<double>(order[j]));
  }
  return success();
}

LogicalResult moeRouteKernel(nn::MoeRouteOp op, KernelCall &call) {
  const Tensor &experts = call.operand(0);
  if (experts.getRank() != 2)
    return call.emitError() << "nn.moe_route: experts of shape "
                            << formatShape(experts.getShape())
                            << " must have rank 2";
  int64_t numExperts = static_cast<int64_t>(op.getNumExperts());
  // (The experts are read as integers: a double would round indices above
  // 2^53.)
  if (experts.getKind() != ElementKind::I64)
    return call.emitError() << "nn.moe_route: the experts must be i64";
  const int64_t *hosts = nullptr;
  int64_t hostCount = 0;
  unsigned next = 1;
  if (op.getHosts()) {
    const Tensor &placement = call.operand(next++);
    if (placement.getKind() != ElementKind::I64 || placement.getRank() != 1)
      return call.emitError() << "nn.moe_route: hosts must be i64 of rank 1";
    hosts = placement.data<int64_t>();
    hostCount = placement.getNumElements();
  }
  loom::moe::RouteShares shares;
  if (op.getShares()) {
    const Tensor &table = call.operand(next++);
    const Tensor &member = call.operand(next++);
    if (table.getKind() != ElementKind::I64 || table.getRank() != 2 ||
        table.getShape()[1] != numExperts || table.getShape()[0] < 1 ||
        member.getKind() != ElementKind::I64 || member.getRank() != 0)
      return call.emitError()
             << "nn.moe_route: the shares must be i64 of shape [members, "
             << numExperts << "] and the member a 0-d i64, got "
             << formatShape(table.getShape()) << " and "
             << formatShape(member.getShape());
    shares = {table.data<int64_t>(), table.getShape()[0],
              member.data<int64_t>()[0]};
  }
  // (Both results made before they are added: adding one may move the
  // other.)
  bool placed = static_cast<bool>(op.getHosts());
  Tensor slots(ElementKind::I64, experts.getShape()),
      counts(ElementKind::I64, {placed ? hostCount : numExperts});
  std::string error = loom::moe::routeEntries(
      experts.data<int64_t>(), experts.getNumElements(), numExperts,
      op.getCapacity() ? static_cast<int64_t>(*op.getCapacity()) : 0,
      static_cast<int64_t>(op.getBlocks()), placed, hosts, hostCount,
      slots.data<int64_t>(), counts.data<int64_t>(), shares);
  if (!error.empty())
    return call.emitError() << "nn.moe_route: " << error;
  call.addResult(std::move(slots));
  call.addResult(std::move(counts));
  return success();
}

/// nn.moe_plan: Loom's planner over the forecast's rows of the layer, the
/// experts' home placement (or the previous lookup) as the previous one.
LogicalResult moePlanKernel(nn::MoePlanOp op, KernelCall &call) {
  const Tensor &forecast = call.operand(0);
  if (forecast.getKind() != ElementKind::I64 || forecast.getRank() != 3)
    return call.emitError() << "nn.moe_plan: the forecast must be i64 of "
                            << "rank 3, got shape "
                            << formatShape(forecast.getShape());
  int64_t devices = static_cast<int64_t>(op.getDevices()),
          slots = static_cast<int64_t>(op.getSlots());
  const int64_t *previous = nullptr;
  if (op.getPrevious()) {
    const Tensor &given = call.operand(1);
    if (given.getKind() != ElementKind::I64 || given.getRank() != 1 ||
        given.getShape()[0] != devices * slots)
      return call.emitError()
             << "nn.moe_plan: the previous lookup must be i64 of shape ["
             << devices * slots << "], got shape "
             << formatShape(given.getShape());
    previous = given.data<int64_t>();
  }
  Tensor hosts(ElementKind::I64, {devices * slots}),
      lookup(ElementKind::I64, {devices * slots});
  std::string error = loom::moe::planFromForecast(
      forecast.data<int64_t>(), forecast.getShape()[0], forecast.getShape()[1],
      forecast.getShape()[2], static_cast<int64_t>(op.getLayer()), devices,
      slots, static_cast<int64_t>(op.getNodes()),
      static_cast<int64_t>(op.getExpertBytes()), previous,
      hosts.data<int64_t>(), lookup.data<int64_t>());
  if (!error.empty())
    return call.emitError() << "nn.moe_plan: " << error;
  call.addResult(std::move(hosts));
  call.addResult(std::move(lookup));
  return success();
}

/// Checks that `tensor` (operand `name`) is a matrix.
LogicalResult checkMatrixOperand(const KernelCall &call, const Tensor &tensor,
                                 llvm::StringRef name) {
  if (tensor.getRank() == 2)
    return success();
  return call.emitError() << name << " of shape "
                          << formatShape(tensor.getShape())
                          << " must have rank 2";
}

/// Checks the slots (i64, `[T, k]` for `tokens` tokens) and the optional
/// weights (the slots' shape, of element kind `kind`).
LogicalResult checkRouting(const KernelCall &call, const Tensor &slots,
                           int64_t tokens, const Tensor *weights,
                           ElementKind kind) {
  if (slots.getKind() != ElementKind::I64)
    return call.emitError() << "slots must be i64, got "
                            << getElementKindName(slots.getKind());
  if (failed(checkMatrixOperand(call, slots, "slots")))
    return failure();
  if (slots.getShape()[0] != tokens)
    return call.emitError() << "slots of shape "
                            << formatShape(slots.getShape()) << " for "
                            << tokens << " tokens";
  if (!weights)
    return success();
  if (weights->getKind() != kind)
    return call.emitError() << "weights must have the input's element type";
  return checkShape(call, "weights", weights->getShape(), slots.getShape(),
                    "the slots' shape");
}

/// The rows of each expert's group from run-time counts (i64, `[E]`;
/// moe::groupRows: `blocks` blocks of `rows / blocks` rows, each with the
/// groups of `E / blocks` consecutive experts), checked: the counts
/// non-negative and each block's sum at most its rows.
FailureOr<loom::moe::GroupRows> groupRows(const KernelCall &call,
                                          const Tensor &counts,
                                          int64_t experts, int64_t rows,
                                          int64_t blocks) {
  if (counts.getKind() != ElementKind::I64 || counts.getRank() != 1 ||
      counts.getShape()[0] != experts)
    return call.emitError() << "counts must be i64 of shape [" << experts
                            << "], got " << getElementKindName(counts.getKind())
                            << " " << formatShape(counts.getShape());
  loom::moe::GroupRows groups =
      loom::moe::groupRows(counts.data<int64_t>(), experts, rows, blocks);
  if (!groups.error.empty())
    return call.emitError() << groups.error;
  return groups;
}

LogicalResult moeDispatchKernel(nn::MoeDispatchOp op, KernelCall &call) {
  const Tensor &input = call.operand(0), &slots = call.operand(1);
  const Tensor *weights =
      op.getWeights() ? call.operandFor(op.getWeights()) : nullptr;
  if (failed(checkMatrixOperand(call, input, "input")) ||
      failed(checkRouting(call, slots, input.getShape()[0], weights,
                          input.getKind())))
    return failure();
  int64_t rows = static_cast<int64_t>(op.getRows());
  int64_t tokens = input.getShape()[0], width = input.getShape()[1];
  int64_t k = slots.getShape()[1];
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), {rows, width});
    if (!out)
      return failure();
    const T *x = input.data<T>();
    const T *w = weights ? weights->data<T>() : nullptr;
    const int64_t *s = slots.data<int64_t>();
    T *y = out->data<T>();
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < k; ++j) {
        int64_t row = s[t * k + j];
        if (row < 0 || row >= rows)
          continue;
        for (int64_t h = 0; h < width; ++h)
          y[row * width + h] +=
              w ? w[t * k + j] * x[t * width + h] : x[t * width + h];
      }
    return success();
  });
}

LogicalResult moeCombineKernel(nn::MoeCombineOp op, KernelCall &call) {
  const Tensor &input = call.operand(0), &slots = call.operand(1);
  const Tensor *weights =
      op.getWeights() ? call.operandFor(op.getWeights()) : nullptr;
  if (failed(checkMatrixOperand(call, input, "input")) ||
      failed(checkMatrixOperand(call, slots, "slots")) ||
      failed(checkRouting(call, slots, slots.getShape()[0], weights,
                          input.getKind())))
    return failure();
  int64_t rows = input.getShape()[0], width = input.getShape()[1];
  int64_t tokens = slots.getShape()[0], k = slots.getShape()[1];
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), {tokens, width});
    if (!out)
      return failure();
    const T *x = input.data<T>();
    const T *w = weights ? weights->data<T>() : nullptr;
    const int64_t *s = slots.data<int64_t>();
    T *y = out->data<T>();
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < k; ++j) {
        int64_t row = s[t * k + j];
        if (row < 0 || row >= rows)
          continue;
        for (int64_t h = 0; h < width; ++h)
          y[t * width + h] +=
              w ? w[t * k + j] * x[row * width + h] : x[row * width + h];
      }
    return success();
  });
}

LogicalResult moeSlotDotKernel(nn::MoeSlotDotOp, KernelCall &call) {
  const Tensor &buffer = call.operand(0), &tokens = call.operand(1),
               &slots = call.operand(2);
  if (failed(checkMatrixOperand(call, buffer, "buffer")) ||
      failed(checkMatrixOperand(call, tokens, "tokens")) ||
      failed(checkRouting(call, slots, tokens.getShape()[0], nullptr,
                          buffer.getKind())))
    return failure();
  if (buffer.getKind() != tokens.getKind() ||
      buffer.getShape()[1] != tokens.getShape()[1])
    return call.emitError() << "buffer " << formatShape(buffer.getShape())
                            << " and tokens "
                            << formatShape(tokens.getShape())
                            << " must have one element type and width";
  int64_t rows = buffer.getShape()[0], width = buffer.getShape()[1];
  int64_t count = tokens.getShape()[0], k = slots.getShape()[1];
  return dispatchFloat(call, buffer.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(buffer.getKind(), {count, k});
    if (!out)
      return failure();
    const T *b = buffer.data<T>(), *x = tokens.data<T>();
    const int64_t *s = slots.data<int64_t>();
    T *y = out->data<T>();
    for (int64_t t = 0; t < count; ++t)
      for (int64_t j = 0; j < k; ++j) {
        int64_t row = s[t * k + j];
        if (row < 0 || row >= rows)
          continue;
        T sum = 0;
        for (int64_t h = 0; h < width; ++h)
          sum += b[row * width + h] * x[t * width + h];
        y[t * k + j] = sum;
      }
    return success();
  });
}

LogicalResult groupedMatmulKernel(nn::GroupedMatmulOp op, KernelCall &call) {
  const Tensor &input = call.operand(0), &weight = call.operand(1),
               &counts = call.operand(2);
  bool transposed = op.getTransposeRhs();
  if (failed(checkMatrixOperand(call, input, "input")))
    return failure();
  if (weight.getRank() != 3 || weight.getKind() != input.getKind() ||
      weight.getShape()[transposed ? 2 : 1] != input.getShape()[1])
    return call.emitError() << "weight of shape "
                            << formatShape(weight.getShape())
                            << " does not fit an input of shape "
                            << formatShape(input.getShape());
  int64_t rows = input.getShape()[0], depth = input.getShape()[1];
  int64_t experts = weight.getShape()[0];
  int64_t width = weight.getShape()[transposed ? 1 : 2];
  FailureOr<loom::moe::GroupRows> groups = groupRows(
      call, counts, experts, rows, static_cast<int64_t>(op.getBlocks()));
  if (failed(groups))
    return failure();
  for (int64_t size : {rows, depth, width})
    if (!fitsBlasInt(size))
      return call.emitError() << "dimension " << size
                              << " is too large for BLAS";
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), {rows, width});
    if (!out)
      return failure();
    const T *x = input.data<T>(), *w = weight.data<T>();
    T *y = out->data<T>();
    for (int64_t e = 0; e < experts; ++e) {
      int64_t start = groups->starts[e], m = groups->ends[e] - start;
      gemm(false, transposed, m, width, depth, T(1), x + start * depth, depth,
           w + e * depth * width, transposed ? depth : width, T(0),
           y + start * width, width);
    }
    return success();
  });
}

LogicalResult groupedMatmulGradKernel(nn::GroupedMatmulGradOp op,
                                      KernelCall &call) {
  const Tensor &lhs = call.operand(0), &rhs = call.operand(1),
               &counts = call.operand(2);
  if (failed(checkMatrixOperand(call, lhs, "lhs")) ||
      failed(checkMatrixOperand(call, rhs, "rhs")))
    return failure();
  if (lhs.getKind() != rhs.getKind() ||
      lhs.getShape()[0] != rhs.getShape()[0])
    return call.emitError() << "lhs " << formatShape(lhs.getShape())
                            << " and rhs " << formatShape(rhs.getShape())
                            << " must have one element type and row count";
  if (counts.getRank() != 1)
    return call.emitError() << "counts must have rank 1";
  int64_t rows = lhs.getShape()[0], a = lhs.getShape()[1],
          b = rhs.getShape()[1], experts = counts.getShape()[0];
  FailureOr<loom::moe::GroupRows> groups = groupRows(
      call, counts, experts, rows, static_cast<int64_t>(op.getBlocks()));
  if (failed(groups))
    return failure();
  for (int64_t size : {rows, a, b})
    if (!fitsBlasInt(size))
      return call.emitError() << "dimension " << size
                              << " is too large for BLAS";
  return dispatchFloat(call, lhs.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(lhs.getKind(), {experts, a, b});
    if (!out)
      return failure();
    const T *l = lhs.data<T>(), *r = rhs.data<T>();
    T *y = out->data<T>();
    for (int64_t e = 0; e < experts; ++e) {
      int64_t start = groups->starts[e], m = groups->ends[e] - start;
      gemm(true, false, a, b, m, T(1), l + start * a, a, r + start * b, b,
           T(0), y + e * a * b, b);
    }
    return success();
  });
}

} // namespace

void loom::interp::registerMoeKernels(KernelRegistry &registry) {
  registry.add(topkKernel);
  registry.add(moeRouteKernel);
  registry.add(moePlanKernel);
  registry.add(moeDispatchKernel, /*computesBf16InF32=*/true);
  registry.add(moeCombineKernel, /*computesBf16InF32=*/true);
  registry.add(moeSlotDotKernel, /*computesBf16InF32=*/true);
  registry.add(groupedMatmulKernel, /*computesBf16InF32=*/true);
  registry.add(groupedMatmulGradKernel, /*computesBf16InF32=*/true);
}
