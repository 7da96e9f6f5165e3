//===- MoeKernels.cpp - nn.topk and nn.moe_route --------------------------===//
//
// The mixture-of-experts ops: the top k of each row (the router's choice
// of experts) and the routing of every (token, choice) entry to its row of
// the expert-ordered buffer. Both give integers and are exact; ties and
// NaNs follow the op docs (NNOps.td), which the target kernels mirror.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

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
  int64_t entries = experts.getNumElements();
  // (An absent capacity: dropless. The experts are read as integers: a
  // double would round indices above 2^53.)
  int64_t capacity = op.getCapacity() ? static_cast<int64_t>(*op.getCapacity())
                                      : INT64_MAX;
  if (experts.getKind() != ElementKind::I64)
    return call.emitError() << "nn.moe_route: the experts must be i64";
  const int64_t *expert = experts.data<int64_t>();
  // (Both results made before they are added: adding one may move the
  // other.)
  Tensor slotsTensor(ElementKind::I64, experts.getShape()),
      countsTensor(ElementKind::I64, {numExperts});
  Tensor *slots = &slotsTensor, *counts = &countsTensor;
  // Each expert's kept entries, in order, then the buffer rows.
  std::vector<int64_t> kept(static_cast<size_t>(numExperts), 0);
  std::vector<int64_t> rank(static_cast<size_t>(entries), -1);
  for (int64_t i = 0; i < entries; ++i) {
    int64_t e = expert[i];
    if (e < 0 || e >= numExperts || kept[e] >= capacity)
      continue;
    rank[i] = kept[e]++;
  }
  std::vector<int64_t> start(static_cast<size_t>(numExperts), 0);
  for (int64_t e = 1; e < numExperts; ++e)
    start[e] = start[e - 1] + kept[e - 1];
  for (int64_t i = 0; i < entries; ++i) {
    slots->data<int64_t>()[i] = rank[i] < 0 ? -1 : start[expert[i]] + rank[i];
  }
  std::copy(kept.begin(), kept.end(), counts->data<int64_t>());
  call.addResult(std::move(slotsTensor));
  call.addResult(std::move(countsTensor));
  return success();
}

} // namespace

void loom::interp::registerMoeKernels(KernelRegistry &registry) {
  registry.add(topkKernel);
  registry.add(moeRouteKernel);
}
