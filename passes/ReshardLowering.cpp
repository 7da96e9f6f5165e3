//===- ReshardLowering.cpp - Reshards to global-view collectives ----------===//
//
// Fuses chains of reshards, drops those that change nothing, and turns each
// reshard inside one device group into the chain of collectives that
// ReshardPlanner finds, every step carrying its `from` and `to` layouts
// (the global view: the program still computes the same values on one
// device, and the verifier checks each step does what its layouts say).
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Attributes.h"
#include "passes/Passes.h"
#include "passes/ReshardPlanner.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "hspmd-lower-reshards"

namespace loom {
#define GEN_PASS_DEF_RESHARDLOWERINGPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// Whether the two layouts (unions, or strategy sets strategy by strategy)
/// put the same shard on every device.
bool sameLayout(Attribute lhs, Attribute rhs, ArrayRef<int64_t> shape) {
  if (lhs == rhs)
    return true;
  auto lhsUnion = dyn_cast<UnionAttr>(lhs), rhsUnion = dyn_cast<UnionAttr>(rhs);
  if (lhsUnion && rhsUnion)
    return areEquivalent(lhsUnion, rhsUnion, shape);
  auto lhsSet = dyn_cast<StrategySetAttr>(lhs);
  auto rhsSet = dyn_cast<StrategySetAttr>(rhs);
  if (!lhsSet || !rhsSet || lhsSet.getNames() != rhsSet.getNames())
    return false;
  for (auto [a, b] : llvm::zip_equal(lhsSet.getLayouts(), rhsSet.getLayouts()))
    if (!areEquivalent(a, b, shape))
      return false;
  return true;
}

/// Fuses `reshard` into the reshard that feeds it when that one has no
/// other user and produces what `reshard` expects. Returns whether it did.
bool fuseWithProducer(ReshardOp reshard) {
  auto producer = reshard.getInput().getDefiningOp<ReshardOp>();
  if (!producer || !producer->hasOneUse() ||
      !sameLayout(producer.getTarget(), reshard.getSource(),
                  reshard.getInput().getType().getShape()) ||
      isa<UnionAttr>(producer.getSource()) !=
          isa<UnionAttr>(reshard.getTarget()))
    return false;
  reshard.getInputMutable().assign(producer.getInput());
  reshard.setSourceAttr(producer.getSource());
  if (getOperandLayoutsAttr(reshard))
    setOperandLayoutsAttr(
        reshard, ArrayAttr::get(reshard.getContext(), {producer.getSource()}));
  producer.erase();
  return true;
}

/// The chain of collectives for `reshard`, replacing it. Returns failure
/// after an error; sets `kept` when the reshard is not for this pass.
LogicalResult lower(ReshardOp reshard, bool &kept, int64_t &collectives) {
  kept = false;
  auto source = dyn_cast<UnionAttr>(reshard.getSource());
  auto target = dyn_cast<UnionAttr>(reshard.getTarget());
  // Strategy sets (graph switching), unions of several groups and changes
  // of group are heterogeneous transfers: issue 5 plans them.
  if (!source || !target || source.getNumGroups() != 1 ||
      target.getNumGroups() != 1 ||
      source.getGroups()[0] != target.getGroups()[0]) {
    kept = true;
    return success();
  }
  RankedTensorType type = reshard.getInput().getType();
  if (!type.hasStaticShape())
    return reshard.emitError()
           << "cannot lower a reshard of " << type
           << ": collectives need a static shape";
  // Blocks of unequal size inside the group: collectives move equal
  // blocks, so the change is a send/recv exchange (the "v" forms: each
  // device sends exactly the overlap of what it holds with what another
  // needs, planExchange), between complete values.
  if (hasUnevenSplits(source, type.getShape()) ||
      hasUnevenSplits(target, type.getShape())) {
    std::optional<ReductionKind> pending;
    if (source.getStates()[0].getPartialDegree() > 1)
      pending = source.getStates()[0].getPartialKind();
    if (target.getStates()[0].getPartialDegree() > 1)
      return reshard.emitError()
             << "cannot lower the reshard from " << source << " to "
             << target
             << ": the target holds partial sums and a tensor cut into "
                "blocks of unequal size; an exchange makes complete values "
                "only";
    if (pending && hasUnevenSplits(source, type.getShape())) {
      // The partial axis is reduced among devices that share every other
      // coordinate, so hold equal blocks: one all-reduce over it, read on
      // the states' own axes, then the rest as an exchange.
      ArrayRef<Axis> axes = source.getStates()[0].getAxes();
      SmallVector<int64_t> mesh, over;
      SmallVector<Axis> reducedAxes;
      for (auto [index, axis] : llvm::enumerate(axes)) {
        mesh.push_back(axis.degree);
        if (axis.isPartial()) {
          over.push_back(index);
          reducedAxes.push_back(Axis::duplicate(axis.degree));
        } else {
          reducedAxes.push_back(axis);
        }
      }
      MLIRContext *context = reshard.getContext();
      auto reduced = UnionAttr::get(context, source.getGroups()[0],
                                    DistStatesAttr::get(context, reducedAxes));
      OpBuilder builder(reshard);
      auto reduce = AllReduceOp::create(
          builder, reshard.getLoc(), type, reshard.getInput(),
          ReductionKindAttr::get(context, *pending),
          builder.getDenseI64ArrayAttr(over), builder.getDenseI64ArrayAttr(mesh),
          source, reduced);
      setOperandLayouts(reduce, {source});
      setResultLayouts(reduce, {reduced});
      ++collectives;
      if (areEquivalent(reduced, target, type.getShape())) {
        reshard.getResult().replaceAllUsesWith(reduce.getResult());
        reshard.erase();
        return success();
      }
      auto rest = ReshardOp::create(builder, reshard.getLoc(), type,
                                    reduce.getResult(), reduced, target);
      setOperandLayouts(rest, {reduced});
      setResultLayouts(rest, {target});
      reshard.getResult().replaceAllUsesWith(rest.getResult());
      reshard.erase();
      bool ignored = false;
      return lower(rest, ignored, collectives);
    }
    if (pending) {
      // Partial sums of equal blocks to uneven ones (a reduce-scatter-v):
      // reduce them (an all-reduce: the partial axis becomes a duplicate
      // one), then take each device's block (an exchange that moves
      // nothing). Twice the bytes of a reduce-scatter.
      SmallVector<Axis> axes(source.getStates()[0].getAxes());
      for (Axis &axis : axes)
        if (axis.isPartial())
          axis = Axis::duplicate(axis.degree);
      MLIRContext *context = reshard.getContext();
      auto reduced = UnionAttr::get(context, source.getGroups()[0],
                                    DistStatesAttr::get(context, axes));
      OpBuilder builder(reshard);
      auto first = ReshardOp::create(builder, reshard.getLoc(), type,
                                     reshard.getInput(), source, reduced);
      auto second = ReshardOp::create(builder, reshard.getLoc(), type,
                                      first.getResult(), reduced, target);
      setOperandLayouts(first, {source});
      setResultLayouts(first, {reduced});
      setOperandLayouts(second, {reduced});
      setResultLayouts(second, {target});
      reshard.getResult().replaceAllUsesWith(second.getResult());
      reshard.erase();
      int64_t more = 0;
      bool ignored = false;
      if (failed(lower(first, ignored, more)) ||
          failed(lower(second, ignored, collectives)))
        return failure();
      collectives += more;
      return success();
    }
    OpBuilder builder(reshard);
    auto exchange = ExchangeOp::create(
        builder, reshard.getLoc(), type, reshard.getInput(),
        builder.getDenseI64ArrayAttr(type.getShape()), source, target);
    setOperandLayouts(exchange, {source});
    setResultLayouts(exchange, {target});
    reshard.getResult().replaceAllUsesWith(exchange.getResult());
    reshard.erase();
    ++collectives;
    return success();
  }
  int64_t elementBytes =
      std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  std::string why;
  FailureOr<ReshardPlan> plan =
      planReshard(source.getStates()[0], target.getStates()[0],
                  type.getShape(), elementBytes, why);
  if (failed(plan)) {
    if (failed(refineMesh({source.getStates()[0], target.getStates()[0]}))) {
      // No common mesh: a general send/recv plan (issue 5).
      kept = true;
      return success();
    }
    return reshard.emitError() << "cannot lower the reshard from " << source
                               << " to " << target << ": " << why;
  }
  MLIRContext *context = reshard.getContext();
  DeviceGroupAttr group = source.getGroups()[0];
  SmallVector<UnionAttr> layouts;
  for (auto [i, layout] : llvm::enumerate(plan->layouts)) {
    if (i == 0) {
      layouts.push_back(source);
      continue;
    }
    if (i + 1 == plan->layouts.size()) {
      layouts.push_back(target);
      continue;
    }
    FailureOr<DistStatesAttr> states = toStates(layout, plan->mesh, context);
    if (failed(states))
      return reshard.emitError()
             << "internal error: planned layout " << layout.str()
             << " has no states spelling";
    layouts.push_back(UnionAttr::get(context, group, *states));
  }
  OpBuilder builder(reshard);
  Location loc = reshard.getLoc();
  Value value = reshard.getInput();
  auto mesh = builder.getDenseI64ArrayAttr(plan->mesh.sizes);
  for (auto [i, step] : llvm::enumerate(plan->steps)) {
    UnionAttr from = layouts[i], to = layouts[i + 1];
    auto axes = builder.getDenseI64ArrayAttr(step.axes);
    auto reduction = ReductionKindAttr::get(context, step.reduction);
    auto dim = builder.getI64IntegerAttr(step.dim);
    Operation *op = nullptr;
    switch (step.kind) {
    case CollectiveKind::AllReduce:
      op = AllReduceOp::create(builder, loc, type, value, reduction, axes,
                               mesh, from, to);
      break;
    case CollectiveKind::ReduceScatter:
      op = ReduceScatterOp::create(builder, loc, type, value, reduction, dim,
                                   axes, mesh, from, to);
      break;
    case CollectiveKind::AllGather:
      op = AllGatherOp::create(builder, loc, type, value, dim, axes, mesh,
                               from, to);
      break;
    case CollectiveKind::LocalSlice:
      op = LocalSliceOp::create(builder, loc, type, value, dim, axes, mesh,
                                from, to);
      break;
    case CollectiveKind::MakePartial:
      op = MakePartialOp::create(builder, loc, type, value,
                                 step.dim >= 0 ? dim : IntegerAttr(), axes,
                                 mesh, from, to);
      break;
    case CollectiveKind::AllToAll:
      op = AllToAllOp::create(builder, loc, type, value, dim,
                              builder.getI64IntegerAttr(step.concatDim), axes,
                              mesh, from, to);
      break;
    case CollectiveKind::Permute:
      op = PermuteOp::create(builder, loc, type, value,
                             builder.getDenseI64ArrayAttr(step.perm), axes,
                             mesh, from, to);
      break;
    }
    setOperandLayouts(op, {from});
    setResultLayouts(op, {to});
    value = op->getResult(0);
    ++collectives;
  }
  reshard.getResult().replaceAllUsesWith(value);
  reshard.erase();
  return success();
}

struct ReshardLoweringPass
    : loom::impl::ReshardLoweringPassBase<ReshardLoweringPass> {
  /// The reshards to lower: all but those of a function partitioned across
  /// groups (it stays the reference; its parts are lowered).
  void collectReshards(SmallVectorImpl<ReshardOp> &reshards) {
    getOperation().walk([&](ReshardOp op) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (!func || !isPartitioned(func))
        reshards.push_back(op);
    });
  }

  void runOnOperation() override {
    // Fuse chains, latest first, until none is left.
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<ReshardOp> reshards;
      collectReshards(reshards);
      for (ReshardOp reshard : llvm::reverse(reshards))
        if (fuseWithProducer(reshard)) {
          ++numFused;
          changed = true;
          break;
        }
    }
    SmallVector<ReshardOp> reshards;
    collectReshards(reshards);
    for (ReshardOp reshard : reshards) {
      if (sameLayout(reshard.getSource(), reshard.getTarget(),
                     reshard.getInput().getType().getShape())) {
        reshard.getResult().replaceAllUsesWith(reshard.getInput());
        reshard.erase();
        ++numErased;
        continue;
      }
      bool kept = false;
      int64_t collectives = 0;
      if (failed(lower(reshard, kept, collectives)))
        return signalPassFailure();
      numCollectives += collectives;
      if (kept)
        ++numKept;
      else
        ++numLowered;
    }
  }
};

} // namespace
