//===- ExpertBlocks.cpp - Expert blocks from the experts' layouts ---------===//
//
// Expert parallelism needs the MoE buffer in expert blocks (docs/moe.md):
// which rows the plain buffer gives an expert depends on the counts of
// every expert before it, so only a buffer of B blocks of static size, one
// per group of E / B experts, splits with the experts. This pass writes the
// blocks into a program whose expert weights are laid out split along the
// experts, so that the user writes the layer as for one device:
//
//   * the blocks of a route are the finest cut of the experts that every
//     device's share of every grouped matmul weight using its counts falls
//     on: B = E / gcd(E, every shard's first expert and size), under every
//     strategy of a strategy set;
//   * the route gets `blocks = B`, its dispatches `rows = B * S`, its grouped
//     matmuls (and weight gradients) `blocks = B`, and every value whose
//     type follows the buffer's rows (element-wise ops, the second grouped
//     matmul, ...) its new type, inferred op by op.
//
// The program computes the same results: the blocks only move each
// expert's rows within the buffer (checked against the numpy model and on
// ranks by test/e2e/moe-gpt-mini-layouts.test). That holds only where
// nothing but the MoE ops sees where the rows are, so the pass first checks
// every use of the slots and of the buffer (element-wise ops, casts, the
// route's grouped matmuls, combines and slot dot products) and refuses
// anything else (a slice or a mean over the rows, a return, a call) with a
// diagnostic before it changes anything. Routes whose weights are not
// split, or already blocked, are left alone.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Attributes.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/SetVector.h"

#include <numeric>

namespace loom {
#define GEN_PASS_DEF_EXPERTBLOCKSPASS
#include "passes/Passes.h.inc"
} // namespace loom

#define DEBUG_TYPE "hspmd-expert-blocks"

using namespace mlir;
using namespace loom;

namespace {

/// The experts (dimension 0) each device's shard of `weight` (laid out as
/// `layout`, or not laid out: null) holds, folded into `cut`: the gcd of
/// the experts and every shard's first expert and size. Fails (after a
/// diagnostic at `user`) where the layout does not give every device a
/// shard.
LogicalResult foldExpertCuts(Operation *user, Value weight,
                             hspmd::UnionAttr layout, int64_t &cut) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!layout || !type || !type.hasStaticShape())
    return success();
  for (int64_t device : layout.getAllDevices()) {
    std::optional<hspmd::Shard> shard =
        hspmd::getShard(layout, type.getShape(), device);
    if (!shard)
      return user->emitOpError()
             << "has an expert weight whose layout gives device " << device
             << " no shard of " << Type(type);
    cut = std::gcd(cut, std::gcd(shard->offsets[0], shard->sizes[0]));
  }
  return success();
}

/// Whether `op` computes element by element, so that its results have the
/// rows of its buffer operands: unary ops (the same type in and out), the
/// broadcasting binary ops and casts.
bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
         isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp, nn::MinimumOp,
             nn::MaximumOp, nn::CastOp>(op);
}

/// The values in the row space of `route`'s buffer (its dispatches'
/// results and what follows them row for row), in program order, after
/// checking that blocks cannot change what anything computes: the slots
/// feed only the route's dispatches, combines and slot dot products, the
/// buffer only element-wise ops (whose other operands do not have the
/// buffer's rows), casts, the route's grouped matmuls and those, and every
/// grouped matmul, combine and slot dot product of the route reads such a
/// buffer. Anything else (a slice, a mean over the rows, a call, a return)
/// would see the rows move: a diagnostic at it, before anything changes.
FailureOr<SmallVector<Value>> bufferValues(nn::MoeRouteOp route) {
  auto refuse = [&](Operation *op, StringRef what) {
    return op->emitOpError()
           << what << " of an nn.moe_route whose experts are split, which "
           << "expert blocks resize (blocks move its rows); only "
           << "element-wise ops, casts, grouped matmuls, combines and slot "
           << "dot products may use it";
  };
  llvm::SetVector<Value> buffer;
  for (OpOperand &use : route.getSlots().getUses()) {
    Operation *user = use.getOwner();
    if (auto dispatch = dyn_cast<nn::MoeDispatchOp>(user);
        dispatch && use.getOperandNumber() == 1)
      buffer.insert(dispatch.getResult());
    else if (!(isa<nn::MoeCombineOp>(user) && use.getOperandNumber() == 1) &&
             !(isa<nn::MoeSlotDotOp>(user) && use.getOperandNumber() == 2))
      return refuse(user, "uses the slots");
  }
  // Walk forward from the dispatches: every use of a buffer value.
  for (size_t i = 0; i < buffer.size(); ++i) {
    Value value = buffer[i];
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      unsigned index = use.getOperandNumber();
      if (auto gmm = dyn_cast<nn::GroupedMatmulOp>(user)) {
        if (index != 0 || gmm.getCounts() != route.getCounts())
          return refuse(user, "uses the buffer");
        buffer.insert(gmm.getResult());
      } else if (auto grad = dyn_cast<nn::GroupedMatmulGradOp>(user)) {
        if (index == 2 || grad.getCounts() != route.getCounts())
          return refuse(user, "uses the buffer");
      } else if (auto combine = dyn_cast<nn::MoeCombineOp>(user)) {
        if (index != 0 || combine.getSlots() != route.getSlots())
          return refuse(user, "uses the buffer");
      } else if (auto dot = dyn_cast<nn::MoeSlotDotOp>(user)) {
        if (index != 0 || dot.getSlots() != route.getSlots())
          return refuse(user, "uses the buffer");
      } else if (isElementwise(user)) {
        for (Value result : user->getResults())
          buffer.insert(result);
      } else {
        return refuse(user, "uses the buffer");
      }
    }
  }
  // The other operands of element-wise ops on the buffer: in its row space
  // too, or without its rows (a broadcast bias).
  auto rows = [](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return type.getRank() == 0 ? int64_t{1} : type.getDimSize(0);
  };
  for (Value value : buffer)
    for (Operation *user : value.getUsers()) {
      if (!isElementwise(user))
        continue;
      auto rank = cast<RankedTensorType>(value.getType()).getRank();
      for (Value operand : user->getOperands())
        if (!buffer.contains(operand) &&
            cast<RankedTensorType>(operand.getType()).getRank() == rank &&
            rows(operand) != 1)
          return refuse(user, "combines the buffer with a tensor of its rows "
                              "that is not");
    }
  // Every grouped matmul, combine and slot dot product of the route reads a
  // buffer of the route.
  for (Operation *user : route.getCounts().getUsers())
    if (auto gmm = dyn_cast<nn::GroupedMatmulOp>(user);
        gmm && !buffer.contains(gmm.getInput()))
      return refuse(user, "reads a buffer that is not the dispatch");
    else if (auto grad = dyn_cast<nn::GroupedMatmulGradOp>(user);
             grad && !(buffer.contains(grad.getLhs()) &&
                       buffer.contains(grad.getRhs())))
      return refuse(user, "reads a buffer that is not the dispatch");
  for (Operation *user : route.getSlots().getUsers())
    if (auto combine = dyn_cast<nn::MoeCombineOp>(user);
        combine && !buffer.contains(combine.getInput()))
      return refuse(user, "reads a buffer that is not the dispatch");
    else if (auto dot = dyn_cast<nn::MoeSlotDotOp>(user);
             dot && !buffer.contains(dot.getBuffer()))
      return refuse(user, "reads a buffer that is not the dispatch");
  // In program order, for retyping each op once after its operands.
  SmallVector<Value> ordered(buffer.begin(), buffer.end());
  for (Value value : ordered)
    if (!value.getDefiningOp() ||
        value.getDefiningOp()->getBlock() != route->getBlock())
      return refuse(route, "has a buffer outside its block: the buffer");
  llvm::sort(ordered, [](Value a, Value b) {
    return a.getDefiningOp()->isBeforeInBlock(b.getDefiningOp());
  });
  return ordered;
}

/// Folds the expert cuts of `gmm`'s weight layout (an argument's
/// hspmd.layout or the hspmd.annotate that makes it) into `cut`. Under a
/// strategy set, every strategy's: the pass runs before strategies are
/// specialised, so one program's blocks must serve them all (a strategy
/// that splits the experts less, or not at all, runs with the finer
/// blocks, B times the buffer rows of the plain form).
LogicalResult foldWeightCuts(nn::GroupedMatmulOp gmm, int64_t &cut) {
  Value weight = gmm.getWeight();
  Attribute layout;
  if (auto annotate = weight.getDefiningOp<hspmd::AnnotateOp>())
    layout = annotate.getLayout();
  else if (auto arg = dyn_cast<BlockArgument>(weight))
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      layout = getArgLayoutAttr(func, arg.getArgNumber());
  if (auto set = dyn_cast_or_null<hspmd::StrategySetAttr>(layout)) {
    for (hspmd::UnionAttr strategy : set.getLayouts())
      if (failed(foldExpertCuts(gmm, weight, strategy, cut)))
        return failure();
    return success();
  }
  return foldExpertCuts(gmm, weight, dyn_cast_or_null<hspmd::UnionAttr>(layout),
                        cut);
}

/// Writes the blocks of `route` (see the file comment); no change where its
/// weights are not split along the experts.
LogicalResult blockRoute(nn::MoeRouteOp route) {
  if (route.getBlocks() != 1)
    return success();
  int64_t experts = static_cast<int64_t>(route.getNumExperts());
  int64_t cut = experts;
  for (Operation *user : route.getCounts().getUsers())
    if (auto gmm = dyn_cast<nn::GroupedMatmulOp>(user))
      if (failed(foldWeightCuts(gmm, cut)))
        return failure();
  if (cut == experts || cut <= 0)
    return success();
  int64_t blocks = experts / cut;
  if (!cast<RankedTensorType>(route.getExperts().getType()).hasStaticShape())
    return route.emitOpError()
           << "needs static tokens and choices for expert blocks (its "
           << "experts' weights are split " << blocks << " ways)";
  FailureOr<SmallVector<Value>> buffer = bufferValues(route);
  if (failed(buffer))
    return failure();

  Builder b(route.getContext());
  route.setBlocksAttr(b.getI64IntegerAttr(blocks));
  int64_t rows = blocks * route.getBlockRows();
  for (Operation *user : route.getCounts().getUsers())
    if (isa<nn::GroupedMatmulOp, nn::GroupedMatmulGradOp>(user))
      user->setAttr("blocks", b.getI64IntegerAttr(blocks));
  // Each buffer value's new type, in program order (its operands first).
  for (Value value : *buffer) {
    Operation *op = value.getDefiningOp();
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    if (auto dispatch = dyn_cast<nn::MoeDispatchOp>(op)) {
      dispatch.setRowsAttr(b.getI64IntegerAttr(rows));
      shape[0] = rows;
      value.setType(type.clone(shape));
      continue;
    }
    SmallVector<Type> inferred;
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(infer.inferReturnTypes(
              op->getContext(), std::nullopt, op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), inferred)))
        return op->emitOpError() << "cannot take the expert blocks' buffer";
      value.setType(inferred[cast<OpResult>(value).getResultNumber()]);
      continue;
    }
    // (An element-wise op without inference: the rows of its operand in
    // the buffer, its own element type.)
    for (Value operand : op->getOperands())
      if (llvm::is_contained(*buffer, operand)) {
        shape[0] = cast<RankedTensorType>(operand.getType()).getDimSize(0);
        break;
      }
    value.setType(type.clone(shape));
  }
  return success();
}

struct ExpertBlocksPass
    : public loom::impl::ExpertBlocksPassBase<ExpertBlocksPass> {
  void runOnOperation() override {
    SmallVector<nn::MoeRouteOp> routes;
    getOperation().walk([&](nn::MoeRouteOp route) { routes.push_back(route); });
    for (nn::MoeRouteOp route : routes)
      if (failed(blockRoute(route)))
        return signalPassFailure();
  }
};

} // namespace
