//===- MoePlacement.cpp - Expert placement planned per micro-step ---------===//
//
// Expert parallelism gives every device a fixed share of the experts, and
// a micro-step whose tokens favour some experts leaves the other devices
// idle. In RL post-training the routing of the update is known ahead from
// the rollout, so each micro-step's placement can be planned (DESIGN.md
// item 6, docs/moe.md). This pass rewrites every expert-parallel MoE layer
// of a function that has a forecast argument (`nn.moe_forecast`, `rows x
// layers x experts` of recorded expert counts, the layers in program
// order) so that the experts run where a plan made at run time puts them:
//
//   %hosts, %lookup = nn.moe_plan %forecast layer = l devices = B slots = R
//   %slots, %counts = nn.moe_route %experts hosts %hosts num_experts = E
//                         blocks = B
//   %home = hspmd.annotate %w as <the layout of %w>
//   %rows = nn.embedding %home, %lookup   // [E, K, F] -> [B * R, K, F]
//   %replicas = hspmd.annotate %rows as <the layout of %w>
//   nn.grouped_matmul %buffer, %replicas, %counts blocks = B
//
// The blocks (B, from hspmd-expert-blocks) become devices of R replica
// slots; the route puts each entry in the block of the device that serves
// it; the replicas' weights are looked up from the experts' weights, whose
// layout (the home placement, master weights and optimizer state) does not
// change. The layer computes the same thing whatever the plan: a replica
// holds its expert's weights, the gradients of all replicas of an expert
// sum into it (the lookup's gradient), and the counts are the actual
// routing's. Only where the rows are computed depends on the forecast.
//
// Partitioned, the lookup of a table split along the experts is a partial
// sum reduce-scattered to the replicas' devices, and its gradient a partial
// sum reduce-scattered home; hspmd-moe-sparse-exchange makes both move the
// replicas' rows alone. The forecast is a data argument, so the training
// step gives every micro-batch its own rows: the placement changes every
// micro-step.
//
// The forecast's attribute is the slots a device has for replicas (R);
// a unit attribute gives E / B + 1. Routes with a capacity are refused (the
// blocks' rows would change), so are weights split unevenly.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Attributes.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace loom {
#define GEN_PASS_DEF_MOEPLACEMENTPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

constexpr llvm::StringLiteral kForecastAttr = "nn.moe_forecast";

/// The layout attribute of an expert weight: its hspmd.annotate's or its
/// argument's (a union, a strategy set, or null).
Attribute weightLayoutAttr(Value weight) {
  if (auto annotate = weight.getDefiningOp<hspmd::AnnotateOp>())
    return annotate.getLayout();
  if (auto arg = dyn_cast<BlockArgument>(weight))
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      return getArgLayoutAttr(func, arg.getArgNumber());
  return {};
}

/// The layout of an expert weight, where it is one union.
hspmd::UnionAttr weightLayout(Value weight) {
  return dyn_cast_or_null<hspmd::UnionAttr>(weightLayoutAttr(weight));
}

/// A mark no replicas' lookup of `op`'s function carries yet.
int64_t nextReplicasMark(Operation *op) {
  int64_t next = 0;
  op->getParentOfType<func::FuncOp>().walk([&](nn::EmbeddingOp lookup) {
    if (auto mark = lookup->getAttrOfType<IntegerAttr>(
            nn::NNDialect::getMoeReplicasAttrName()))
      next = std::max(next, mark.getInt() + 1);
  });
  return next;
}

/// Checks that `layout` gives every device the experts of one block of
/// `experts / blocks` (the home placement nn.moe_plan assumes).
LogicalResult checkEvenBlocks(Operation *user, RankedTensorType type,
                              hspmd::UnionAttr layout, int64_t blocks) {
  int64_t perBlock = type.getDimSize(0) / blocks;
  for (int64_t device : layout.getAllDevices()) {
    std::optional<hspmd::Shard> shard =
        hspmd::getShard(layout, type.getShape(), device);
    if (!shard || shard->sizes[0] != perBlock ||
        shard->offsets[0] % perBlock != 0)
      return user->emitOpError()
             << "has an expert weight " << Type(type)
             << " whose layout does not give device " << device
             << " one block of " << perBlock
             << " experts; placement per micro-step needs the experts "
             << "split evenly";
  }
  return success();
}

struct Layer {
  nn::MoeRouteOp route;
  SmallVector<nn::GroupedMatmulOp> matmuls;
};

/// Plans `layer` (number `index` of the forecast) as the file comment says.
LogicalResult placeLayer(Layer &layer, int64_t index, Value forecast,
                         int64_t slotsAttr) {
  nn::MoeRouteOp route = layer.route;
  int64_t experts = static_cast<int64_t>(route.getNumExperts());
  int64_t blocks = static_cast<int64_t>(route.getBlocks());
  auto forecastType = cast<RankedTensorType>(forecast.getType());
  if (forecastType.getDimSize(2) != experts)
    return route.emitOpError()
           << "has " << experts << " experts but its layer (" << index
           << ") of the forecast " << Type(forecastType) << " has "
           << forecastType.getDimSize(2);
  if (route.getCapacity())
    return route.emitOpError()
           << "has a capacity; placement per micro-step needs a dropless "
           << "route";
  int64_t slots = slotsAttr > 0 ? slotsAttr : experts / blocks + 1;
  if (slots > experts)
    return route.emitOpError()
           << "would give each of its " << blocks << " devices " << slots
           << " replica slots, more than its " << experts << " experts";
  if (blocks * slots < experts)
    return route.emitOpError()
           << "cannot place its " << experts << " experts on " << blocks
           << " devices of " << slots << " slots";
  if (layer.matmuls.empty())
    return route.emitOpError()
           << "has no grouped matmul to place (its counts feed none)";

  // The bytes a replica fetches: every weight of the layer's experts.
  int64_t expertBytes = 0;
  SmallVector<Value> weights;
  for (nn::GroupedMatmulOp gmm : layer.matmuls) {
    Value weight = gmm.getWeight();
    auto type = dyn_cast<RankedTensorType>(weight.getType());
    // (A plan's devices are one layout's blocks; a strategy set has a
    // layout per strategy, and the expert blocks serve them all.)
    if (isa_and_nonnull<hspmd::StrategySetAttr>(weightLayoutAttr(weight)))
      return gmm.emitOpError()
             << "has an expert weight laid out by a strategy set: placement "
             << "per micro-step under strategy sets is not supported yet";
    hspmd::UnionAttr layout = weightLayout(weight);
    if (!type || !type.hasStaticShape() || !layout)
      return gmm.emitOpError()
             << "needs a static expert weight laid out split along the "
             << "experts for placement per micro-step";
    if (failed(checkEvenBlocks(gmm, type, layout, blocks)))
      return failure();
    if (llvm::is_contained(weights, weight))
      continue;
    weights.push_back(weight);
    expertBytes += type.getNumElements() / experts *
                   ((type.getElementTypeBitWidth() + 7) / 8);
  }

  OpBuilder b(route);
  Location loc = route.getLoc();
  auto plan = nn::MoePlanOp::create(
      b, loc, forecast, /*previous=*/Value(), b.getI64IntegerAttr(index),
      b.getI64IntegerAttr(blocks), b.getI64IntegerAttr(slots),
      b.getI64IntegerAttr(1), b.getI64IntegerAttr(expertBytes));
  auto placed = nn::MoeRouteOp::create(
      b, loc, route.getExperts(), plan.getHosts(), /*shares=*/Value(),
      /*member=*/Value(), route.getNumExpertsAttr(),
      /*capacity=*/IntegerAttr(), route.getBlocksAttr());
  route.getSlots().replaceAllUsesWith(placed.getSlots());
  // Each weight's replicas, looked up once, before its first matmul.
  DenseMap<Value, Value> replicasOf;
  for (nn::GroupedMatmulOp gmm : layer.matmuls) {
    Value weight = gmm.getWeight();
    Value &replicas = replicasOf[weight];
    if (!replicas) {
      // The lookup reads whole [K, F] rows of the weights: a split of K or
      // F (tensor parallelism inside the experts) stays a split of the
      // replicas', so only the expert dimension's split moves rows. The
      // table it reads is annotated with the weights' layout, so that the
      // gradient (a scatter-add by the lookup, a partial sum over the
      // devices) goes home in the micro-step that made it, where it names
      // the replicas' rows alone, instead of a partial sum of the whole
      // table kept on every device until the step's end.
      b.setInsertionPoint(gmm);
      Value home = hspmd::AnnotateOp::create(b, loc, weight.getType(), weight,
                                             weightLayout(weight));
      auto rows = nn::EmbeddingOp::create(b, loc, home, plan.getLookup(),
                                          Value());
      // Marked, for hspmd-moe-resident-replicas (one mark a weight).
      rows->setAttr(nn::NNDialect::getMoeReplicasAttrName(),
                    b.getI64IntegerAttr(nextReplicasMark(gmm)));
      replicas = hspmd::AnnotateOp::create(b, loc, rows.getType(), rows,
                                           weightLayout(weight));
    }
    gmm.getWeightMutable().assign(replicas);
    gmm.getCountsMutable().assign(placed.getCounts());
  }
  // The experts' own counts stay for anything else (a load-balancing
  // loss).
  if (route.getCounts().use_empty())
    route.erase();
  return success();
}

LogicalResult placeFunction(func::FuncOp func) {
  std::optional<unsigned> forecastArg;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, kForecastAttr)) {
      if (forecastArg)
        return func.emitOpError()
               << "has two arguments marked " << kForecastAttr;
      forecastArg = i;
    }
  if (!forecastArg)
    return success();
  Value forecast = func.getArgument(*forecastArg);
  Attribute attr = func.getArgAttr(*forecastArg, kForecastAttr);
  // (The dialect checks the attribute: unit, or positive slots.)
  int64_t slots = 0;
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    slots = integer.getInt();
  auto type = dyn_cast<RankedTensorType>(forecast.getType());
  if (!type || type.getRank() != 3 || !type.getElementType().isInteger(64) ||
      ShapedType::isDynamic(type.getDimSize(1)) ||
      ShapedType::isDynamic(type.getDimSize(2)))
    return func.emitOpError()
           << "has a forecast of type " << forecast.getType()
           << "; it must be tensor<rows x layers x experts x i64> with "
           << "static layers and experts";

  SmallVector<Layer> layers;
  Operation *backward = nullptr;
  bool placed = false;
  func.walk([&](nn::MoeRouteOp route) {
    placed |= static_cast<bool>(route.getHosts());
    if (route.getBlocks() <= 1 || route.getHosts())
      return;
    Layer layer{route, {}};
    for (Operation *user : route.getCounts().getUsers()) {
      if (auto gmm = dyn_cast<nn::GroupedMatmulOp>(user))
        layer.matmuls.push_back(gmm);
      if (isa<nn::GroupedMatmulGradOp>(user) && !backward)
        backward = user;
    }
    // (In program order: a weight's replicas are looked up before its
    // first matmul.)
    llvm::sort(layer.matmuls, [](nn::GroupedMatmulOp a, nn::GroupedMatmulOp b) {
      return a->getBlock() == b->getBlock() && a->isBeforeInBlock(b);
    });
    layers.push_back(layer);
  });
  if (backward)
    return backward->emitOpError()
           << "reads the counts of a route to be placed; placement per "
           << "micro-step runs before autodiff (in loom-training-pipeline)";
  // (Placed already: nothing left to do.)
  if (layers.empty() && placed)
    return success();
  if (static_cast<int64_t>(layers.size()) != type.getDimSize(1))
    return func.emitOpError()
           << "has a forecast of " << type.getDimSize(1)
           << " layers but " << layers.size()
           << " expert-parallel MoE layers (routes with expert blocks)";
  for (auto [index, layer] : llvm::enumerate(layers))
    if (failed(placeLayer(layer, static_cast<int64_t>(index), forecast,
                          slots)))
      return failure();
  return success();
}

struct MoePlacementPass
    : public loom::impl::MoePlacementPassBase<MoePlacementPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(placeFunction(func)))
        return signalPassFailure();
  }
};

} // namespace
