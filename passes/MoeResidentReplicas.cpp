//===- MoeResidentReplicas.cpp - Replicas kept from micro-step to micro-step //
//
// hspmd-moe-placement gives every micro-step of a training step its own
// plan, and each micro-step looks its replicas' weights up from the
// experts' (a fetch from their home devices once partitioned) and scatters
// their gradients back (a send home). From one micro-step to the next most
// slots often keep their expert; this pass, on a training step whose
// micro-batches are unrolled (nn-training-step micro-batches=K), keeps
// them resident:
//
//  * each plan after the first takes the previous one's lookup
//    (`nn.moe_plan ... previous`): a replica already in a slot costs the
//    planner nothing, keeps its slot, and an empty slot keeps what it held;
//
//  * micro-step m > 0 looks up only the slots whose expert changed and
//    takes the others from micro-step m - 1's replicas; a slot that keeps
//    its expert reads its device's first home expert instead, which a
//    device holds (no fetch once partitioned, and an id in range on every
//    target):
//
//      %same = nn.compare eq, %lookup_m, %lookup_m-1
//      %ids = nn.select %same, %home, %lookup_m
//      %fresh = nn.embedding %table, %ids
//      %replicas_m = nn.select %same, %replicas_m-1, %fresh
//
//  * a replica's gradient stays with it while its slot keeps the expert
//    (acc_m = dR_m + select(same_m, acc_m-1, 0)) and goes home once: in
//    the micro-step whose plan moves it (the slots that change, summed
//    into the table by the previous lookup) or after the last micro-step
//    (all of them).
//
// Every value is the same as before but for the order of additions: a
// replica holds its expert's weights (the master weights do not change
// within a step) and every replica gradient reaches its expert once.
// Lookups and gradients are found by the `nn.moe_replicas` mark
// hspmd-moe-placement puts on a replicas' lookup and autodiff carries to
// its scatter-add; a weight whose lookups or gradients do not line up
// micro-step by micro-step with its layer's plans is left as it is.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace loom {
#define GEN_PASS_DEF_MOERESIDENTREPLICASPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The plan whose lookup `ids` is, through the reshapes and broadcasts
/// autodiff puts between a lookup's ids and its gradient's indices.
nn::MoePlanOp planOf(Value ids) {
  while (Operation *op = ids.getDefiningOp()) {
    if (auto plan = dyn_cast<nn::MoePlanOp>(op))
      return ids == plan.getLookup() ? plan : nn::MoePlanOp();
    if (!isa<nn::ReshapeOp, nn::BroadcastOp>(op))
      return {};
    ids = op->getOperand(0);
  }
  return {};
}

/// One micro-step's view of a slot-wise comparison with the previous one.
struct Step {
  nn::MoePlanOp plan;
  /// `lookup_m == lookup_m-1`, [P], and reshaped to [P, 1, ...] for
  /// tables of rank 2, 3, ... (null for m = 0).
  Value same;
  DenseMap<int64_t, Value> sameRows;
  /// Each slot's device's first home expert, [P] (null for m = 0).
  Value home;

  /// `same` as [P, 1, ...] of `rank` dimensions, made once.
  Value rows(int64_t rank) {
    Value &value = sameRows[rank];
    if (!value) {
      OpBuilder b(same.getContext());
      b.setInsertionPointAfterValue(same);
      auto type = cast<RankedTensorType>(same.getType());
      SmallVector<int64_t> shape(rank, 1);
      shape[0] = type.getDimSize(0);
      value = nn::ReshapeOp::create(b, same.getLoc(), type.clone(shape), same);
    }
    return value;
  }
};

class Rewriter {
public:
  explicit Rewriter(func::FuncOp func) : func(func) {}

  void run() {
    // The plans of each layer, in program order: one a micro-step.
    llvm::MapVector<int64_t, SmallVector<nn::MoePlanOp>> plans;
    func.walk([&](nn::MoePlanOp plan) {
      plans[static_cast<int64_t>(plan.getLayer())].push_back(plan);
    });
    llvm::MapVector<int64_t, SmallVector<nn::EmbeddingOp>> lookups;
    llvm::MapVector<int64_t, SmallVector<nn::GatherGradOp>> gradients;
    StringRef mark = nn::NNDialect::getMoeReplicasAttrName();
    func.walk([&](Operation *op) {
      auto id = op->getAttrOfType<IntegerAttr>(mark);
      if (!id)
        return;
      if (auto lookup = dyn_cast<nn::EmbeddingOp>(op))
        lookups[id.getInt()].push_back(lookup);
      else if (auto grad = dyn_cast<nn::GatherGradOp>(op))
        gradients[id.getInt()].push_back(grad);
    });
    // One chain of micro-steps a layer, shared by its weights.
    llvm::MapVector<int64_t, SmallVector<Step>> chains;
    for (auto &[layer, steps] : plans) {
      if (steps.size() < 2 || !inOneBlock(steps))
        continue;
      SmallVector<Step> &chain = chains[layer];
      for (nn::MoePlanOp plan : steps) {
        Step step;
        step.plan = plan;
        chain.push_back(std::move(step));
      }
    }
    // Each weight once, with its layer's chain.
    for (auto &[id, ops] : lookups) {
      nn::MoePlanOp plan = planOf(ops.front().getIds());
      if (!plan)
        continue;
      auto chain = chains.find(static_cast<int64_t>(plan.getLayer()));
      if (chain != chains.end() && linedUp(ops, chain->second))
        keepResident(ops, chain->second, gradients[id]);
    }
  }

private:
  func::FuncOp func;

  static bool inOneBlock(ArrayRef<nn::MoePlanOp> steps) {
    return llvm::all_of(steps, [&](nn::MoePlanOp plan) {
      auto forecast = cast<RankedTensorType>(plan.getForecast().getType());
      return plan->getBlock() == steps.front()->getBlock() &&
             !plan.getPrevious() && forecast.getDimSize(2) < (1 << 24);
    });
  }

  /// Whether `ops` are in one block, each after the one before.
  template <typename Op>
  static bool inOrder(MutableArrayRef<Op> ops) {
    for (size_t i = 1; i < ops.size(); ++i)
      if (ops[i]->getBlock() != ops[0]->getBlock() ||
          !ops[i - 1]->isBeforeInBlock(ops[i]))
        return false;
    return true;
  }

  /// The weights a replicas' lookup reads, under its home annotation.
  static Value weightsOf(nn::EmbeddingOp op) {
    Value table = op.getTable();
    if (auto annotate = table.getDefiningOp<hspmd::AnnotateOp>())
      return annotate.getInput();
    return table;
  }

  /// Whether lookup m reads plan m's lookup, for every micro-step, in
  /// micro-step order, and every lookup the same weights: a replica kept
  /// from micro-step m - 1 must hold what micro-step m would look up (not
  /// so for weights computed in each micro-batch, say scaled by its data).
  static bool linedUp(MutableArrayRef<nn::EmbeddingOp> ops,
                      ArrayRef<Step> chain) {
    if (ops.size() != chain.size() || !inOrder(ops))
      return false;
    Value weights = weightsOf(ops.front());
    for (auto [op, step] : llvm::zip(ops, chain))
      if (op.getIds() != nn::MoePlanOp(step.plan).getLookup() ||
          op.getOffset() || weightsOf(op) != weights ||
          op->getBlock() != step.plan->getBlock())
        return false;
    return true;
  }

  /// `lookup_m == lookup_m-1` for each m > 0, made once a layer (before
  /// the plan's first user), and each plan given the previous lookup.
  void compare(MutableArrayRef<Step> chain) {
    for (size_t m = 1; m < chain.size(); ++m) {
      Step &step = chain[m];
      if (step.same)
        continue;
      nn::MoePlanOp plan = step.plan, before = chain[m - 1].plan;
      plan.getPreviousMutable().assign(before.getLookup());
      OpBuilder b(plan->getContext());
      b.setInsertionPointAfter(plan);
      Location loc = plan.getLoc();
      step.same = nn::CompareOp::create(b, loc, nn::ComparePredicate::EQ,
                                        plan.getLookup(), before.getLookup());
      // Slot p's device's first home expert: (p / slots) * (E / devices),
      // in f32 (every target has it; exact below 2^24 experts, which
      // run() checks).
      int64_t devices = static_cast<int64_t>(plan.getDevices()),
              slots = static_cast<int64_t>(plan.getSlots()),
              experts = cast<RankedTensorType>(plan.getForecast().getType())
                            .getDimSize(2);
      auto grid = RankedTensorType::get({devices, slots}, b.getF32Type());
      Value device = nn::IotaOp::create(b, loc, grid, /*offset=*/Value(),
                                        b.getI64IntegerAttr(0));
      Value first = nn::MulOp::create(
          b, loc, device,
          nn::FillOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                             b.getF64FloatAttr(
                                 static_cast<double>(experts / devices))));
      Value ids = nn::CastOp::create(b, loc, grid.clone(b.getI64Type()), first);
      step.home = nn::ReshapeOp::create(
          b, loc, RankedTensorType::get({devices * slots}, b.getI64Type()),
          ids);
    }
  }

  void keepResident(MutableArrayRef<nn::EmbeddingOp> ops,
                    MutableArrayRef<Step> chain,
                    MutableArrayRef<nn::GatherGradOp> grads) {
    auto table = cast<RankedTensorType>(ops.front().getTable().getType());
    compare(chain);
    int64_t rank = table.getRank();
    StringRef mark = nn::NNDialect::getMoeReplicasAttrName();
    Attribute id = ops.front()->getAttr(mark);
    // The forward: micro-step m > 0 fetches the slots that changed. The
    // select reads the replicas as annotated (hspmd-moe-placement's
    // layout of the weights), so that each lookup goes to its devices
    // before the select: a select of the lookups' partial sums would
    // leave one dense reduce-scatter of its result.
    auto annotated = [](Value value) -> Value {
      for (Operation *user : value.getUsers())
        if (auto annotate = dyn_cast<hspmd::AnnotateOp>(user))
          return annotate.getResult();
      return value;
    };
    Value previous = annotated(ops.front().getResult());
    auto layoutOf = previous.getDefiningOp<hspmd::AnnotateOp>();
    for (size_t m = 1; m < ops.size(); ++m) {
      nn::EmbeddingOp op = ops[m];
      Step &step = chain[m];
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value ids = nn::SelectOp::create(b, loc, step.same, step.home,
                                       step.plan.getLookup());
      auto fresh = nn::EmbeddingOp::create(b, loc, op.getTable(), ids, Value());
      fresh->setAttr(mark, id);
      Value fetched = fresh.getResult();
      if (layoutOf)
        fetched = hspmd::AnnotateOp::create(b, loc, fetched,
                                            layoutOf.getLayout());
      Value replicas = nn::SelectOp::create(b, loc, step.rows(rank), previous,
                                            fetched);
      op.getResult().replaceAllUsesWith(replicas);
      op.erase();
      previous = annotated(replicas);
    }
    // The backward: the gradients go home where the slots change, and
    // after the last micro-step.
    if (grads.size() != chain.size() || !inOrder(grads) ||
        grads.front()->getBlock() != ops.front()->getBlock() ||
        !llvm::all_of(llvm::zip(grads, chain), [](auto pair) {
          auto [grad, step] = pair;
          return planOf(grad.getIndices()) == step.plan && !grad.getOffset() &&
                 grad.getDim() == 0 && step.plan->isBeforeInBlock(grad);
        }))
      return;
    // A replica's gradient accumulates in f32 at least, as nn-training-step
    // sums the micro-batches' gradients of narrower types.
    Type element =
        cast<RankedTensorType>(grads.front().getGrad().getType())
            .getElementType();
    OpBuilder types(element.getContext());
    Type wide = element.getIntOrFloatBitWidth() < 32 ? types.getF32Type()
                                                     : element;
    auto as = [](OpBuilder &b, Location loc, Value value, Type type) -> Value {
      auto tensor = cast<RankedTensorType>(value.getType());
      if (tensor.getElementType() == type)
        return value;
      return nn::CastOp::create(b, loc, tensor.clone(type), value);
    };
    Value acc;
    SmallVector<Value> home;
    for (size_t m = 0; m < grads.size(); ++m) {
      nn::GatherGradOp grad = grads[m];
      OpBuilder b(grad);
      Location loc = grad.getLoc();
      Value dR = as(b, loc, grad.getGrad(), wide);
      if (m == 0) {
        acc = dR;
        home.push_back(nn::FillOp::create(b, loc, grad.getType(),
                                          b.getF64FloatAttr(0.0)));
        continue;
      }
      Step &step = chain[m];
      Value zero = nn::FillOp::create(b, loc, RankedTensorType::get({}, wide),
                                      b.getF64FloatAttr(0.0));
      // The slots whose expert changes send what they gathered home, to
      // the expert they held; the others add zeros at home.
      Value leaving =
          nn::SelectOp::create(b, loc, step.rows(rank), zero, acc);
      Value heldIds = nn::SelectOp::create(b, loc, step.same, step.home,
                                           chain[m - 1].plan.getLookup());
      Value flushed =
          scatter(b, loc, grad, as(b, loc, leaving, element), heldIds);
      Value kept = nn::SelectOp::create(b, loc, step.rows(rank), acc, zero);
      acc = nn::AddOp::create(b, loc, dR, kept);
      home.push_back(flushed);
    }
    // After the last micro-step, every slot's gradient goes home too: a
    // scatter-add of its own, annotated like the gradient it joins (the
    // table's home layout), so that each goes home before they add up.
    nn::GatherGradOp last = grads.back();
    OpBuilder b(last);
    Location loc = last.getLoc();
    Value all = scatter(b, loc, last, as(b, loc, acc, element),
                        chain.back().plan.getLookup());
    Value moved = home.back();
    if (last->hasOneUse())
      if (auto annotate = dyn_cast<hspmd::AnnotateOp>(*last->user_begin())) {
        all = hspmd::AnnotateOp::create(b, loc, all, annotate.getLayout());
        moved =
            hspmd::AnnotateOp::create(b, loc, moved, annotate.getLayout());
      }
    Value sum = nn::AddOp::create(b, loc, as(b, loc, moved, wide),
                                  as(b, loc, all, wide));
    home.back() = as(b, loc, sum, element);
    for (auto [grad, value] : llvm::zip(grads, home)) {
      grad.getResult().replaceAllUsesWith(value);
      grad.erase();
    }
  }

  /// `grad`'s scatter-add of `rows` into the table by `ids` ([P]), each id
  /// repeated along its row, as autodiff builds a lookup's gradient.
  static Value scatter(OpBuilder &b, Location loc, nn::GatherGradOp grad,
                       Value rows, Value ids) {
    auto rowsType = cast<RankedTensorType>(rows.getType());
    auto idsType = cast<RankedTensorType>(ids.getType());
    SmallVector<int64_t> shape(rowsType.getRank(), 1);
    shape[0] = rowsType.getDimSize(0);
    Value column = nn::ReshapeOp::create(b, loc, idsType.clone(shape), ids);
    Value spread = nn::BroadcastOp::create(
        b, loc, rowsType.clone(idsType.getElementType()), column,
        DenseI64ArrayAttr());
    auto result = nn::GatherGradOp::create(b, loc, grad.getType(), rows, spread,
                                           /*offset=*/Value(),
                                           grad.getDimAttr());
    result->setAttr(nn::NNDialect::getMoeReplicasAttrName(),
                    grad->getAttr(nn::NNDialect::getMoeReplicasAttrName()));
    return result;
  }
};

struct MoeResidentReplicasPass
    : loom::impl::MoeResidentReplicasPassBase<MoeResidentReplicasPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) { Rewriter(func).run(); });
  }
};

} // namespace
