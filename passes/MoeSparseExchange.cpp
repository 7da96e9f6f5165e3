//===- MoeSparseExchange.cpp - Routed rows only, for MoE exchanges --------===//
//
// Expert parallelism moves the dispatched tokens to their experts' devices
// and the experts' output back with what propagation derives (docs/moe.md):
// each device dispatches its own tokens into a partial buffer of every
// expert block, which a reduce-scatter completes, and the experts' output
// comes back through two all-to-alls (the combine splits the width). Both
// move every row, routed or not. This pass, on local programs, moves the
// routed rows alone:
//
//  * the dispatch: a reduce-scatter (sum, rows) of an `nn.moe_dispatch`'s
//    result becomes an `hspmd.sparse_reduce_scatter` naming the dispatch's
//    slots (its buffer is zero outside them, so the sum is the same);
//
//  * the way back: `all_to_all(Y) split 1 concat 0`, `nn.moe_combine` of
//    it with slots (and weights) the same on every member, then
//    `all_to_all split 0 concat 1` over the same axes become a combine of
//    the device's own tokens (the slots' and weights' local rows) over
//    `hspmd.sparse_all_gather(Y)` naming those slots: the rows its tokens
//    were routed to, fetched from the devices that computed them. With
//    tensor parallelism inside the experts (Y partial over other axes B),
//    the way back that reduce-scatters the width over B, all-to-alls over
//    both and all-gathers over B becomes that local combine and an
//    all-reduce over B (getWayBack);
//
//  * the gates' gradient: `nn.moe_slot_dot` of that width-split buffer and
//    a width-split gradient, reduce-scattered along the tokens, becomes the
//    slot dot product of the rows the forward gathered and the device's
//    own gradient rows (a sum in another order: equal up to rounding);
//    without such rows it stays dense (a gather of its own would move
//    more than the dense form);
//
//  * the routing: a route of the experts all-gathered along the tokens,
//    whose slots are only sliced back to the device's own tokens, becomes
//    a route of the device's own share from every member's counts per
//    expert, all-gathered instead of the choices (shareRoutes; run after
//    the way back has taken its local slices of the slots); a local slice
//    of an all-gather over the same members is then the gather's input.
//
//  * across device groups of different sizes (sparseExchanges): an
//    exchange that moves a dispatch's buffer to the experts' rows, with
//    the in-group collectives around it, becomes an
//    `hspmd.sparse_exchange` among every device of the groups; one that
//    brings the experts' rows to a combine's width split becomes a
//    gathering one of the rows the combine's slots name, then a slice of
//    the group's columns. Each device's rows come from the exchange's
//    layouts and the in-group collectives (GroupBoxes); every group's
//    function must qualify at the same exchange, which the new op
//    replaces in place.
//
// "The same on every member" is proved from the program: a value made by
// an all-gather or all-reduce over (at least) those mesh axes, an argument
// whose global layout gives every device the whole tensor, or
// side-effect-free nn ops of such values alone; anything else (a split
// argument, a local slice) leaves the way back dense.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Attributes.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNOps.h"
#include "runtime/layout/Collectives.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>
#include <set>

namespace loom {
#define GEN_PASS_DEF_MOESPARSEEXCHANGEPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The sub-groups a collective runs over: its mesh and axes, and its own
/// device group where a merged program tags it with one (null: the
/// function's).
struct Over {
  SmallVector<int64_t> mesh, axes;
  const void *group = nullptr;
  bool operator<(const Over &other) const {
    return std::tie(mesh, axes, group) <
           std::tie(other.mesh, other.axes, other.group);
  }
  bool operator==(const Over &other) const {
    return mesh == other.mesh && axes == other.axes && group == other.group;
  }
};

template <typename OpT> Over overOf(OpT op) {
  return {SmallVector<int64_t>(op.getMesh()),
          SmallVector<int64_t>(op.getAxes()),
          getGroup(op).getAsOpaquePointer()};
}

/// A local-view all-to-all moving the split of `concat` to `split`.
hspmd::AllToAllOp getAllToAll(Value value, int64_t split, int64_t concat) {
  auto all = value.getDefiningOp<hspmd::AllToAllOp>();
  if (!all || all.getFromAttr() ||
      static_cast<int64_t>(all.getSplitDim()) != split ||
      static_cast<int64_t>(all.getConcatDim()) != concat)
    return {};
  return all;
}

/// Whether values are the same on every member of the sub-groups `over`
/// (see the file comment), memoised; iterative, for long chains of ops.
class Replication {
public:
  explicit Replication(Over over) : over(std::move(over)) {}

  bool isReplicated(Value root) {
    // Post-order over the operands: a value is known once all of its
    // operands are.
    SmallVector<std::pair<Value, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [value, expanded] = stack.pop_back_val();
      if (known.count(value))
        continue;
      Operation *op = value.getDefiningOp();
      std::optional<bool> leaf =
          op ? classify(op) : isReplicatedArgument(value);
      if (leaf) {
        known[value] = *leaf;
        continue;
      }
      if (!expanded) {
        stack.push_back({value, true});
        for (Value operand : op->getOperands())
          if (!known.count(operand))
            stack.push_back({operand, false});
        continue;
      }
      known[value] = llvm::all_of(op->getOperands(), [&](Value operand) {
        auto it = known.find(operand);
        return it != known.end() && it->second;
      });
    }
    return known.lookup(root);
  }

private:
  bool covers(Operation *op, ArrayRef<int64_t> mesh,
              ArrayRef<int64_t> axes) const {
    return mesh == ArrayRef<int64_t>(over.mesh) &&
           getGroup(op).getAsOpaquePointer() == over.group &&
           llvm::all_of(over.axes, [&](int64_t axis) {
             return llvm::is_contained(axes, axis);
           });
  }

  /// Whether `value`, a function argument, is whole on every device by
  /// its global layout (every device's shard the whole tensor, no pending
  /// reduction): the runtime gives each the same value.
  static bool isReplicatedArgument(Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    auto func =
        arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!func || !type || !type.hasStaticShape())
      return false;
    hspmd::UnionAttr layout = getArgGlobalLayout(func, arg.getArgNumber());
    if (!layout)
      return false;
    for (int64_t device : layout.getAllDevices()) {
      std::optional<hspmd::Shard> shard =
          hspmd::getShard(layout, type.getShape(), device);
      if (!shard || shard->numPartials != 1 ||
          ArrayRef<int64_t>(shard->sizes) != type.getShape())
        return false;
    }
    return true;
  }

  /// Whether `op`'s result is replicated whatever its operands are
  /// (true: a gather or reduction over the sub-groups, a constant; false:
  /// an argument, another collective, an op with effects), or none when
  /// that depends on its operands (a pure nn op).
  std::optional<bool> classify(Operation *op) const {
    if (!op)
      return false;
    if (auto gather = dyn_cast<hspmd::AllGatherOp>(op))
      return !gather.getFromAttr() &&
             covers(op, gather.getMesh(), gather.getAxes());
    if (auto reduce = dyn_cast<hspmd::AllReduceOp>(op))
      return !reduce.getFromAttr() &&
             covers(op, reduce.getMesh(), reduce.getAxes());
    if (isa<arith::ConstantOp>(op))
      return true;
    if (!isa<nn::NNDialect>(op->getDialect()) || op->getNumRegions() != 0 ||
        !isMemoryEffectFree(op))
      return false;
    if (op->getNumOperands() == 0)
      return true;
    return std::nullopt;
  }

  Over over;
  DenseMap<Value, bool> known;
};

/// How a width-split combine's tokens go back to their devices: the ops
/// after the combine (each the only user of the one before), and the
/// axes whose partial sums the way back completes (none, or B below).
struct WayBack {
  SmallVector<Operation *> chain;
  std::optional<Over> partialOver;
};

/// The way back after `combine`, whose buffer an all-to-all over `over`
/// (A) split along the width, in one of the two forms propagation makes:
///
///  * all_to_all split 0 concat 1 over A: rows block a (A's position) of
///    the complete output, whole width;
///  * with partial sums over other axes B (tensor parallelism inside the
///    experts): reduce_scatter sum dim 1 over B, all_to_all split 0 concat
///    1 over A ++ B (A's axes first, so that row block a * |B| + b lands
///    on member (a, b)), all_gather dim 0 over B: rows block a, whole
///    width, summed over B.
///
/// Either way the result is what a combine of rows block a over the whole
/// width makes (then summed over B), which the rewrite computes locally.
std::optional<WayBack> getWayBack(nn::MoeCombineOp combine, const Over &over) {
  auto single = [](Operation *op) -> Operation * {
    return op->hasOneUse() ? *op->user_begin() : nullptr;
  };
  Operation *next = single(combine);
  if (!next)
    return std::nullopt;
  if (auto back = dyn_cast<hspmd::AllToAllOp>(next)) {
    if (back.getFromAttr() || back.getSplitDim() != 0 ||
        back.getConcatDim() != 1 || !(overOf(back) == over))
      return std::nullopt;
    return WayBack{{back}, std::nullopt};
  }
  auto scatter = dyn_cast<hspmd::ReduceScatterOp>(next);
  if (!scatter || scatter.getFromAttr() || scatter.getDim() != 1 ||
      scatter.getReduction() != hspmd::ReductionKind::Sum)
    return std::nullopt;
  Over partial = overOf(scatter);
  if (partial.mesh != over.mesh || partial.group != over.group ||
      partial.axes.front() <= over.axes.back())
    return std::nullopt;
  auto back = dyn_cast_or_null<hspmd::AllToAllOp>(single(scatter));
  if (!back || back.getFromAttr() || back.getSplitDim() != 0 ||
      back.getConcatDim() != 1)
    return std::nullopt;
  Over both = over;
  llvm::append_range(both.axes, partial.axes);
  if (!(overOf(back) == both))
    return std::nullopt;
  auto gather = dyn_cast_or_null<hspmd::AllGatherOp>(single(back));
  if (!gather || gather.getFromAttr() || gather.getDim() != 0 ||
      !(overOf(gather) == partial))
    return std::nullopt;
  return WayBack{{scatter, back, gather}, partial};
}

struct MoeSparseExchangePass
    : loom::impl::MoeSparseExchangePassBase<MoeSparseExchangePass> {
  void runOnOperation() override {
    sparseExchanges();
    sparseDispatches();
    sparseReplicaLookups();
    getOperation().walk([&](func::FuncOp func) { sparseWayBack(func); });
    shareRoutes();
    foldSlicesOfGathers();
  }

  /// A local slice of an all-gather along the same dimension over the same
  /// members is the gather's input: the gates' gather, once the way back
  /// combines each device's own tokens, moves nothing anybody reads.
  void foldSlicesOfGathers() {
    SmallVector<hspmd::LocalSliceOp> slices;
    getOperation().walk([&](hspmd::LocalSliceOp slice) {
      auto gather = slice.getInput().getDefiningOp<hspmd::AllGatherOp>();
      if (gather && !gather.getFromAttr() && !slice.getFromAttr() &&
          gather.getDim() == slice.getDim() &&
          overOf(gather) == overOf(slice) &&
          gather.getInput().getType() == slice.getType())
        slices.push_back(slice);
    });
    for (hspmd::LocalSliceOp slice : slices) {
      auto gather = slice.getInput().getDefiningOp<hspmd::AllGatherOp>();
      slice.replaceAllUsesWith(gather.getInput());
      slice.erase();
      if (gather->use_empty())
        gather.erase();
    }
  }

  /// Every route of experts all-gathered along the tokens whose slots are
  /// only sliced back to the device's own tokens (over the same members):
  /// each device routes its own share instead, from every share's counts
  /// (an all-gather of one row of `num_experts` counts a member instead of
  /// its tokens' choices). The slots and counts are the same.
  void shareRoutes() {
    SmallVector<nn::MoeRouteOp> routes;
    getOperation().walk([&](nn::MoeRouteOp route) {
      auto gather = route.getExperts().getDefiningOp<hspmd::AllGatherOp>();
      if (route.getShares() || !gather || gather.getFromAttr() ||
          gather.getDim() != 0)
        return;
      Over over = overOf(gather);
      bool ownRows = llvm::all_of(route.getSlots().getUsers(), [&](Operation
                                                                   *user) {
        auto slice = dyn_cast<hspmd::LocalSliceOp>(user);
        return slice && !slice.getFromAttr() && slice.getDim() == 0 &&
               overOf(slice) == over &&
               slice.getType() == gather.getInput().getType();
      });
      if (ownRows)
        routes.push_back(route);
    });
    for (nn::MoeRouteOp route : routes) {
      auto gather = route.getExperts().getDefiningOp<hspmd::AllGatherOp>();
      Value own = gather.getInput();
      Location loc = route.getLoc();
      OpBuilder builder(route);
      Type i64 = builder.getI64Type();
      int64_t experts = static_cast<int64_t>(route.getNumExperts());
      int64_t members = gather.getSubgroupSize();
      // The share's counts (no capacity: the whole batch's order drops),
      // one row each, gathered in member order.
      auto count = nn::MoeRouteOp::create(
          builder, loc, own, Value(), Value(), Value(),
          route.getNumExpertsAttr(), IntegerAttr(),
          builder.getI64IntegerAttr(1));
      auto row = nn::ReshapeOp::create(
          builder, loc, RankedTensorType::get({1, experts}, i64),
          count.getCounts());
      auto table = hspmd::AllGatherOp::create(
          builder, loc, RankedTensorType::get({members, experts}, i64),
          row.getResult(), builder.getI64IntegerAttr(0), gather.getAxesAttr(),
          gather.getMeshAttr(), nullptr, nullptr);
      copyDiscardable(gather, table);
      auto member = hspmd::AxisIndexOp::create(
          builder, loc, RankedTensorType::get({}, i64), gather.getAxesAttr(),
          gather.getMeshAttr(), builder.getI64IntegerAttr(1),
          builder.getI64IntegerAttr(0));
      // (A merged program tags what runs over a group other than its cell.)
      copyDiscardable(gather, member);
      auto share = nn::MoeRouteOp::create(
          builder, loc, own, route.getHosts(), table.getResult(),
          member.getResult(), route.getNumExpertsAttr(),
          route.getCapacityAttr(), route.getBlocksAttr());
      for (Operation *user :
           llvm::make_early_inc_range(route.getSlots().getUsers())) {
        user->getResult(0).replaceAllUsesWith(share.getSlots());
        user->erase();
      }
      route.getCounts().replaceAllUsesWith(share.getCounts());
      route.erase();
      if (gather->use_empty())
        gather.erase();
    }
  }

  /// The replicas' weights of a placed MoE layer (hspmd-moe-placement):
  /// every reduce-scatter (sum, rows) of a lookup by a plan's ids of a
  /// table split along its rows over the same members (`offset` the
  /// member's first row) becomes a fetch of the rows the member's own ids
  /// name; every reduce-scatter (sum, rows) of the lookup's gradient (a
  /// scatter-add by those ids, zero outside the rows they name) a sparse
  /// reduce-scatter naming them.
  void sparseReplicaLookups() {
    SmallVector<hspmd::ReduceScatterOp> scatters, gradients;
    getOperation().walk([&](hspmd::ReduceScatterOp scatter) {
      if (scatter.getFromAttr() || scatter.getDim() != 0 ||
          scatter.getReduction() != hspmd::ReductionKind::Sum)
        return;
      // The replicas' gradients, home: zero outside the rows the replicas'
      // lookup names.
      if (auto grad = scatter.getInput().getDefiningOp<nn::GatherGradOp>();
          grad && grad.getDim() == 0 && !grad.getOffset() &&
          fromPlan(grad.getIndices())) {
        gradients.push_back(scatter);
        return;
      }
      auto lookup = scatter.getInput().getDefiningOp<nn::EmbeddingOp>();
      if (!lookup || !lookup.getOffset() || !lookup->hasOneUse() ||
          !fromPlan(lookup.getIds()) ||
          cast<RankedTensorType>(lookup.getIds().getType()).getRank() != 1)
        return;
      auto offset = lookup.getOffset().getDefiningOp<hspmd::AxisIndexOp>();
      auto table = cast<RankedTensorType>(lookup.getTable().getType());
      if (!offset || offset.getBase() != 0 ||
          static_cast<int64_t>(offset.getStride()) != table.getDimSize(0) ||
          offset.getAxes() != scatter.getAxes() ||
          offset.getMesh() != scatter.getMesh())
        return;
      scatters.push_back(scatter);
    });
    for (hspmd::ReduceScatterOp scatter : scatters) {
      auto lookup = scatter.getInput().getDefiningOp<nn::EmbeddingOp>();
      auto table = cast<RankedTensorType>(lookup.getTable().getType());
      auto ids = cast<RankedTensorType>(lookup.getIds().getType());
      int64_t members = 1;
      for (int64_t axis : scatter.getAxes())
        members *= scatter.getMesh()[axis];
      OpBuilder builder(scatter);
      Location loc = scatter.getLoc();
      auto local = hspmd::LocalSliceOp::create(
          builder, loc, ids.clone({ids.getDimSize(0) / members}),
          lookup.getIds(), builder.getI64IntegerAttr(0),
          scatter.getAxesAttr(), scatter.getMeshAttr(), nullptr, nullptr);
      copyDiscardable(scatter, local);
      SmallVector<int64_t> fullShape(table.getShape());
      fullShape[0] *= members;
      auto full = hspmd::SparseAllGatherOp::create(
          builder, loc, table.clone(fullShape),
          lookup.getTable(), local.getResult(), scatter.getAxesAttr(),
          scatter.getMeshAttr());
      copyDiscardable(scatter, full);
      // A fetch of weights by the plan, for hspmd-overlap-fetches.
      full->setAttr(hspmd::HSPMDDialect::getWeightFetchAttrName(),
                    builder.getUnitAttr());
      auto rows = nn::EmbeddingOp::create(builder, loc, full.getResult(),
                                          local.getResult(), Value());
      scatter.replaceAllUsesWith(rows.getResult());
      auto offset = lookup.getOffset().getDefiningOp<hspmd::AxisIndexOp>();
      scatter.erase();
      lookup.erase();
      if (offset->use_empty())
        offset.erase();
    }
    for (hspmd::ReduceScatterOp scatter : gradients)
      makeSparse(scatter, namedRows(scatter.getInput()
                                        .getDefiningOp<nn::GatherGradOp>()
                                        .getIndices()));
  }

  /// The rows a scatter-add along dimension 0 by `indices` writes, as few
  /// indices as the program shows: where each row of `indices` is one id
  /// broadcast along the other dimensions (the lookup's gradient: [R, K, F]
  /// ids, then local slices of any dimension), its first element; else all
  /// of them.
  static Value namedRows(Value indices) {
    auto type = cast<RankedTensorType>(indices.getType());
    int64_t rank = type.getRank();
    Value walk = indices;
    // A local slice of a row's dimensions keeps each row one id; of the
    // rows, it keeps whole rows.
    while (auto slice = walk.getDefiningOp<hspmd::LocalSliceOp>())
      walk = slice.getInput();
    auto broadcast = walk.getDefiningOp<nn::BroadcastOp>();
    if (!broadcast || rank < 2 || !type.hasStaticShape())
      return indices;
    auto input = cast<RankedTensorType>(broadcast.getInput().getType());
    std::optional<ArrayRef<int64_t>> dims = broadcast.getBroadcastDims();
    bool rowsOnly = input.getRank() == rank &&
                    llvm::all_of(input.getShape().drop_front(),
                                 [](int64_t size) { return size == 1; }) &&
                    (!dims || llvm::equal(*dims, llvm::seq<int64_t>(0, rank)));
    if (!rowsOnly)
      return indices;
    OpBuilder builder(indices.getContext());
    builder.setInsertionPointAfterValue(indices);
    SmallVector<int64_t> shape(rank, 1), zeros(rank, 0), ones(rank, 1);
    shape[0] = type.getDimSize(0);
    return nn::SliceOp::create(builder, indices.getLoc(), type.clone(shape),
                               indices, builder.getDenseI64ArrayAttr(zeros),
                               builder.getDenseI64ArrayAttr(shape),
                               builder.getDenseI64ArrayAttr(ones));
  }

  /// Replaces `scatter` (sum, rows, of a buffer zero outside the rows
  /// `rows` names) by a sparse reduce-scatter naming them.
  static void makeSparse(hspmd::ReduceScatterOp scatter, Value rows) {
    OpBuilder builder(scatter);
    auto sparse = hspmd::SparseReduceScatterOp::create(
        builder, scatter.getLoc(), scatter.getType(), scatter.getInput(), rows,
        scatter.getAxesAttr(), scatter.getMeshAttr());
    copyDiscardable(scatter, sparse);
    scatter.replaceAllUsesWith(sparse.getResult());
    scatter.erase();
  }

  /// Whether `ids` are hspmd-moe-resident-replicas' first home expert of
  /// each slot's device, `reshape(cast(iota * fill))`: in range.
  static bool isHomeExperts(Value ids) {
    auto reshape = ids.getDefiningOp<nn::ReshapeOp>();
    auto cast = reshape ? reshape.getInput().getDefiningOp<nn::CastOp>()
                        : nn::CastOp();
    auto mul = cast ? cast.getInput().getDefiningOp<nn::MulOp>() : nn::MulOp();
    return mul && mul.getLhs().getDefiningOp<nn::IotaOp>() &&
           mul.getRhs().getDefiningOp<nn::FillOp>();
  }

  /// Whether `ids` are an nn.moe_plan's lookup (through local slices,
  /// reshapes and broadcasts: the replicas' lookup and its gradient's
  /// indices), which names an expert in every slot (its hosts may be -1).
  static bool fromPlan(Value ids) {
    while (Operation *op = ids.getDefiningOp()) {
      if (auto plan = dyn_cast<nn::MoePlanOp>(op))
        return ids == plan.getLookup();
      // A resident replica's slot reads its device's first home expert
      // instead (hspmd-moe-resident-replicas): the select's false value
      // is the plan's, its true value those home experts.
      if (auto select = dyn_cast<nn::SelectOp>(op)) {
        if (!isHomeExperts(select.getTrueValue()))
          return false;
        ids = select.getFalseValue();
        continue;
      }
      if (!isa<hspmd::LocalSliceOp, nn::ReshapeOp, nn::BroadcastOp>(op))
        return false;
      ids = op->getOperand(0);
    }
    return false;
  }

  /// The boxes of one tensor that a group's devices hold (in the group's
  /// device order), moved by the group's own collectives.
  struct GroupBoxes {
    std::vector<hspmd::Shard> boxes;

    /// Each device's sub-group over `axes` of `mesh`, as indices into the
    /// group.
    static layout::Subgroup subgroupOf(ArrayRef<int64_t> mesh,
                                       ArrayRef<int64_t> axes, size_t index) {
      return layout::getSubgroup(
          std::vector<int64_t>(mesh.begin(), mesh.end()),
          std::vector<int64_t>(axes.begin(), axes.end()),
          static_cast<int64_t>(index));
    }
    /// Dimension `dim` of every box cut in k, each device taking its part.
    bool cut(ArrayRef<int64_t> mesh, ArrayRef<int64_t> axes, int64_t dim) {
      std::vector<hspmd::Shard> next = boxes;
      for (size_t i = 0; i < boxes.size(); ++i) {
        layout::Subgroup sub = subgroupOf(mesh, axes, i);
        int64_t k = sub.members.size();
        if (boxes[i].sizes[dim] % k != 0)
          return false;
        next[i].sizes[dim] = boxes[i].sizes[dim] / k;
        next[i].offsets[dim] += sub.position * next[i].sizes[dim];
      }
      boxes.swap(next);
      return true;
    }
    /// Dimension `dim` of every box joined with its sub-group's, in member
    /// order (which must tile it, the other dimensions equal).
    bool join(ArrayRef<int64_t> mesh, ArrayRef<int64_t> axes, int64_t dim) {
      std::vector<hspmd::Shard> next = boxes;
      for (size_t i = 0; i < boxes.size(); ++i) {
        layout::Subgroup sub = subgroupOf(mesh, axes, i);
        const hspmd::Shard &head = boxes[sub.members.front()];
        int64_t end = head.offsets[dim];
        for (int64_t member : sub.members) {
          const hspmd::Shard &box = boxes[member];
          if (box.offsets[dim] != end)
            return false;
          for (size_t d = 0; d < box.sizes.size(); ++d)
            if (d != static_cast<size_t>(dim) &&
                (box.offsets[d] != head.offsets[d] ||
                 box.sizes[d] != head.sizes[d]))
              return false;
          end += box.sizes[dim];
        }
        next[i].offsets[dim] = head.offsets[dim];
        next[i].sizes[dim] = end - head.offsets[dim];
      }
      boxes.swap(next);
      return true;
    }
    /// Moves the boxes through in-group collective `op` (forward), or back
    /// from its result to its operand; false for an op that is not an
    /// untagged local-view all-to-all, all-gather or local slice over the
    /// whole group of `devices` devices, or boxes it cannot move.
    bool step(Operation *op, int64_t devices, bool backward) {
      if (op->hasAttr(hspmd::HSPMDDialect::getGroupAttrName()))
        return false;
      auto fits = [&](ArrayRef<int64_t> mesh) {
        int64_t size = 1;
        for (int64_t n : mesh)
          size *= n;
        return size == devices;
      };
      if (auto all = dyn_cast<hspmd::AllToAllOp>(op)) {
        if (all.getFromAttr() || !fits(all.getMesh()))
          return false;
        int64_t from = backward ? all.getSplitDim() : all.getConcatDim();
        int64_t to = backward ? all.getConcatDim() : all.getSplitDim();
        return join(all.getMesh(), all.getAxes(), from) &&
               cut(all.getMesh(), all.getAxes(), to);
      }
      if (auto gather = dyn_cast<hspmd::AllGatherOp>(op)) {
        if (gather.getFromAttr() || !fits(gather.getMesh()))
          return false;
        return backward ? cut(gather.getMesh(), gather.getAxes(),
                              gather.getDim())
                        : join(gather.getMesh(), gather.getAxes(),
                               gather.getDim());
      }
      if (auto slice = dyn_cast<hspmd::LocalSliceOp>(op)) {
        if (slice.getFromAttr() || !fits(slice.getMesh()))
          return false;
        return backward ? join(slice.getMesh(), slice.getAxes(),
                               slice.getDim())
                        : cut(slice.getMesh(), slice.getAxes(),
                              slice.getDim());
      }
      return false;
    }
    /// Whether every box is `type`'s shape.
    bool fit(Type type) const {
      auto shape = cast<RankedTensorType>(type).getShape();
      return llvm::all_of(boxes, [&](const hspmd::Shard &box) {
        return ArrayRef<int64_t>(box.sizes) == shape;
      });
    }
    /// Each device's rows, where every box holds whole rows of `shape`.
    std::optional<std::map<int64_t, std::pair<int64_t, int64_t>>>
    wholeRows(ArrayRef<int64_t> devices, ArrayRef<int64_t> shape) const {
      std::map<int64_t, std::pair<int64_t, int64_t>> rows;
      for (auto [device, box] : llvm::zip(devices, boxes)) {
        for (size_t d = 1; d < shape.size(); ++d)
          if (box.offsets[d] != 0 || box.sizes[d] != shape[d])
            return std::nullopt;
        rows[device] = {box.offsets[0], box.sizes[0]};
      }
      return rows;
    }
  };

  /// The boxes `layout` gives the group's `devices` of a tensor of
  /// `shape`; none where a device holds nothing of it.
  static std::optional<GroupBoxes> boxesOf(hspmd::UnionAttr layout,
                                           ArrayRef<int64_t> shape,
                                           ArrayRef<int64_t> devices) {
    GroupBoxes boxes;
    for (int64_t device : devices) {
      std::optional<hspmd::Shard> shard = hspmd::getShard(layout, shape, device);
      // (A partial sum is not the tensor's rows.)
      if (!shard || shard->numPartials != 1)
        return std::nullopt;
      boxes.boxes.push_back(*shard);
    }
    return boxes;
  }

  /// An exchange across device groups that moves an MoE buffer between
  /// the experts' rows and the tokens, in one group's function: how to
  /// replace it with an hspmd.sparse_exchange among every device.
  struct AcrossGroups {
    /// The buffer to send (the dispatch's) or the expert rows to fetch
    /// from, the row indices this device names, and the value the new op
    /// stands for (before any column slice).
    Value input, named, replaced;
    bool gather = false;
    /// The rows each device of the group holds of the expert rows.
    std::map<int64_t, std::pair<int64_t, int64_t>> rows;
    /// Gather: the columns of the full rows the replaced value holds.
    SmallVector<int64_t> offsets;
    /// The ops the new op makes dead, in program order.
    SmallVector<Operation *> chain;
  };

  /// The way to the experts (an AcrossGroups scatter), if `exchange` in a
  /// function of the group of `devices` is one: before it, reduce-scatters
  /// (sum) of a dispatch's buffer over sub-groups that together span the
  /// group (the buffer's sum within the group); the exchange sums across
  /// the groups (`from` partial) and hands each device a box of the whole
  /// buffer (`to`); after it, single-use all-to-alls, all-gathers and local
  /// slices within the group, ending in a value whose every device holds
  /// whole rows.
  static std::optional<AcrossGroups> getToExperts(hspmd::ExchangeOp exchange,
                                                  ArrayRef<int64_t> devices) {
    if (exchange.getSource().getRelation() != hspmd::UnionRelation::Partial)
      return std::nullopt;
    AcrossGroups found;
    // Back to the dispatch: the reduce-scatters run over one mesh of the
    // group, on distinct axes that together are all of it, so that the
    // exchange's operand is the group's whole sum.
    SmallVector<int64_t> mesh;
    std::set<int64_t> axes;
    SmallVector<Operation *> before;
    Value walk = exchange.getInput();
    while (auto scatter = walk.getDefiningOp<hspmd::ReduceScatterOp>()) {
      if (scatter.getFromAttr() ||
          scatter->hasAttr(hspmd::HSPMDDialect::getGroupAttrName()) ||
          scatter.getReduction() != hspmd::ReductionKind::Sum ||
          !scatter->hasOneUse() ||
          (!mesh.empty() && scatter.getMesh() != ArrayRef<int64_t>(mesh)))
        return std::nullopt;
      mesh.assign(scatter.getMesh().begin(), scatter.getMesh().end());
      for (int64_t axis : scatter.getAxes())
        if (!axes.insert(axis).second)
          return std::nullopt;
      before.push_back(scatter);
      walk = scatter.getInput();
    }
    int64_t spanned = 1, meshSize = 1;
    for (int64_t axis : axes)
      spanned *= mesh[axis];
    for (int64_t size : mesh)
      meshSize *= size;
    int64_t groupSize = static_cast<int64_t>(devices.size());
    auto dispatch = walk.getDefiningOp<nn::MoeDispatchOp>();
    if (!dispatch || spanned != groupSize ||
        (!mesh.empty() && meshSize != groupSize) ||
        dispatch.getType().getShape() != exchange.getShape())
      return std::nullopt;
    found.input = dispatch.getResult();
    found.named = dispatch.getSlots();
    found.chain.assign(before.rbegin(), before.rend());
    found.chain.push_back(exchange);
    ArrayRef<int64_t> shape = exchange.getShape();
    std::optional<GroupBoxes> boxes =
        boxesOf(exchange.getTarget(), shape, devices);
    if (!boxes)
      return std::nullopt;
    Value value = exchange.getResult();
    while (value.hasOneUse()) {
      Operation *user = *value.getUsers().begin();
      GroupBoxes moved = *boxes;
      if (!moved.step(user, devices.size(), /*backward=*/false))
        break;
      *boxes = std::move(moved);
      found.chain.push_back(user);
      value = user->getResult(0);
    }
    std::optional<std::map<int64_t, std::pair<int64_t, int64_t>>> rows =
        boxes->wholeRows(devices, shape);
    if (!boxes->fit(value.getType()) || !rows)
      return std::nullopt;
    found.rows = std::move(*rows);
    found.replaced = value;
    return found;
  }

  /// The way back (an AcrossGroups gather), if `exchange` in a function of
  /// the group of `devices` is one: before it, single-use in-group
  /// collectives from a value whose every device holds whole rows (the
  /// experts' output rows); the exchange hands each device the same
  /// columns of every row, the same for the whole group; its result is
  /// read only as the buffer of nn.moe_combine and nn.moe_slot_dot ops of
  /// one slots value, defined before the exchange. Those read the rows the
  /// slots name alone, which the new op fetches whole.
  static std::optional<AcrossGroups> getFromExperts(hspmd::ExchangeOp exchange,
                                                    ArrayRef<int64_t> devices) {
    if (exchange.getSource().getRelation() == hspmd::UnionRelation::Partial)
      return std::nullopt;
    ArrayRef<int64_t> shape = exchange.getShape();
    std::optional<GroupBoxes> boxes =
        boxesOf(exchange.getSource(), shape, devices);
    if (!boxes)
      return std::nullopt;
    AcrossGroups found;
    found.gather = true;
    SmallVector<Operation *> before;
    Value walk = exchange.getInput();
    while (Operation *def = walk.getDefiningOp()) {
      GroupBoxes moved = *boxes;
      if (!def->hasOneUse() ||
          !moved.step(def, devices.size(), /*backward=*/true))
        break;
      *boxes = std::move(moved);
      before.push_back(def);
      walk = def->getOperand(0);
    }
    std::optional<std::map<int64_t, std::pair<int64_t, int64_t>>> rows =
        boxes->wholeRows(devices, shape);
    if (!boxes->fit(walk.getType()) || !rows)
      return std::nullopt;
    found.input = walk;
    found.rows = std::move(*rows);
    found.chain.assign(before.rbegin(), before.rend());
    found.chain.push_back(exchange);
    // What the exchange hands out: every row, the group's columns.
    std::optional<GroupBoxes> target =
        boxesOf(exchange.getTarget(), shape, devices);
    if (!target || !target->fit(exchange.getType()))
      return std::nullopt;
    const hspmd::Shard &head = target->boxes.front();
    if (head.offsets[0] != 0 || head.sizes[0] != shape[0] ||
        llvm::any_of(target->boxes, [&](const hspmd::Shard &box) {
          return box.offsets != head.offsets || box.sizes != head.sizes;
        }))
      return std::nullopt;
    found.offsets.assign(head.offsets.begin(), head.offsets.end());
    // Its readers: MoE ops reading the rows of one slots value.
    Value slots;
    for (OpOperand &use : exchange->getUses()) {
      Value named;
      if (auto combine = dyn_cast<nn::MoeCombineOp>(use.getOwner());
          combine && use.getOperandNumber() == 0)
        named = combine.getSlots();
      else if (auto dot = dyn_cast<nn::MoeSlotDotOp>(use.getOwner());
               dot && use.getOperandNumber() == 0)
        named = dot.getSlots();
      if (!named || (slots && named != slots))
        return std::nullopt;
      slots = named;
    }
    if (!slots)
      return std::nullopt;
    // The new op takes the exchange's place: the slots come before it.
    Operation *def = slots.getDefiningOp();
    if (slots.getParentBlock() != exchange->getBlock() ||
        (def && !def->isBeforeInBlock(exchange)))
      return std::nullopt;
    found.named = slots;
    found.replaced = exchange.getResult();
    return found;
  }

  /// Expert parallelism across device groups: per global function, an
  /// exchange that every group's function uses to move an MoE buffer to
  /// the experts (getToExperts) or back (getFromExperts), the same way in
  /// each (the n-th exchange over the same devices in each, as the runtimes
  /// pair them), becomes
  /// one hspmd.sparse_exchange in each, at the exchange's place: the
  /// routed rows alone, to (or from) the devices whose blocks hold them.
  /// Only where every group's function qualifies: a group that kept the
  /// exchange would wait for the others forever.
  void sparseExchanges() {
    std::map<std::string, SmallVector<func::FuncOp>> families;
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>())
      if (func->getAttrOfType<hspmd::DeviceGroupAttr>(
              hspmd::HSPMDDialect::getGroupAttrName()))
        if (auto of = func->getAttrOfType<FlatSymbolRefAttr>(
                hspmd::HSPMDDialect::getSpecializesAttrName()))
          families[of.getValue().str()].push_back(func);
    auto groupOf = [](func::FuncOp func) {
      return func->getAttrOfType<hspmd::DeviceGroupAttr>(
                     hspmd::HSPMDDialect::getGroupAttrName())
          .getDevices();
    };
    for (auto &[name, funcs] : families) {
      if (funcs.size() < 2)
        continue;
      // The runtimes pair exchanges by their devices: per device set, each
      // function's exchanges over it, in order.
      std::map<std::vector<int64_t>, std::map<size_t, SmallVector<hspmd::ExchangeOp>>>
          bySet;
      for (auto [index, func] : llvm::enumerate(funcs)) {
        size_t at = index;
        func.walk([&](hspmd::ExchangeOp op) {
          std::set<int64_t> devices;
          for (hspmd::UnionAttr layout : {op.getSource(), op.getTarget()})
            for (int64_t device : layout.getAllDevices())
              devices.insert(device);
          bySet[std::vector<int64_t>(devices.begin(), devices.end())][at]
              .push_back(op);
        });
      }
      for (auto &set : bySet) {
        const std::vector<int64_t> &members = set.first;
        auto &perFunc = set.second;
        // Every member's function takes part, and no other.
        std::set<int64_t> covered;
        bool whole = true;
        for (auto [index, func] : llvm::enumerate(funcs)) {
          ArrayRef<int64_t> group = groupOf(func);
          bool inside = llvm::all_of(group, [&](int64_t device) {
            return llvm::is_contained(members, device);
          });
          bool touches = llvm::any_of(group, [&](int64_t device) {
            return llvm::is_contained(members, device);
          });
          if (touches && (!inside || !perFunc.count(index)))
            whole = false;
          if (inside)
            covered.insert(group.begin(), group.end());
        }
        if (!whole || covered != std::set<int64_t>(members.begin(),
                                                   members.end()))
          continue;
        size_t count = perFunc.begin()->second.size();
        if (llvm::any_of(perFunc, [&](auto &entry) {
              return entry.second.size() != count;
            }))
          continue;
        for (size_t n = 0; n < count; ++n)
          sparseExchange(funcs, perFunc, n, members);
      }
    }
  }

  /// The n-th exchange over `members` of each function of `funcs` (those
  /// in `perFunc`), as one sparse exchange in each, where all qualify.
  static void
  sparseExchange(ArrayRef<func::FuncOp> funcs,
                 const std::map<size_t, SmallVector<hspmd::ExchangeOp>> &perFunc,
                 size_t n, ArrayRef<int64_t> members) {
    SmallVector<std::pair<hspmd::ExchangeOp, AcrossGroups>> found;
    std::map<int64_t, std::pair<int64_t, int64_t>> rows;
    hspmd::ExchangeOp head = perFunc.begin()->second[n];
    for (auto &[index, list] : perFunc) {
      hspmd::ExchangeOp op = list[n];
      if (op.getSource() != head.getSource() ||
          op.getTarget() != head.getTarget() ||
          op.getShape() != head.getShape() ||
          op->hasAttr(hspmd::HSPMDDialect::getGroupAttrName()))
        return;
      ArrayRef<int64_t> devices =
          funcs[index]
              ->getAttrOfType<hspmd::DeviceGroupAttr>(
                  hspmd::HSPMDDialect::getGroupAttrName())
              .getDevices();
      std::optional<AcrossGroups> across = getToExperts(op, devices);
      if (!across)
        across = getFromExperts(op, devices);
      if (!across ||
          (!found.empty() && across->gather != found[0].second.gather))
        return;
      rows.insert(across->rows.begin(), across->rows.end());
      found.emplace_back(op, std::move(*across));
    }
    SmallVector<int64_t> among, blocks;
    for (auto &[device, block] : rows) {
      among.push_back(device);
      blocks.push_back(block.first);
      blocks.push_back(block.second);
    }
    if (!llvm::equal(among, members))
      return;
    for (auto &[op, across] : found) {
      OpBuilder builder(op);
      Location loc = op.getLoc();
      auto inputType = cast<RankedTensorType>(across.input.getType());
      Type type = across.gather
                      ? RankedTensorType::get(op.getShape(),
                                              inputType.getElementType())
                      : across.replaced.getType();
      Value result = hspmd::SparseExchangeOp::create(
          builder, loc, type, across.input, across.named,
          builder.getDenseI64ArrayAttr(among),
          builder.getDenseI64ArrayAttr(blocks), across.gather);
      // The way back: the columns the readers had.
      auto replacedType = cast<RankedTensorType>(across.replaced.getType());
      if (result.getType() != replacedType) {
        SmallVector<int64_t> ones(replacedType.getRank(), 1);
        result = nn::SliceOp::create(
            builder, loc, replacedType, result,
            builder.getDenseI64ArrayAttr(across.offsets),
            builder.getDenseI64ArrayAttr(replacedType.getShape()),
            builder.getDenseI64ArrayAttr(ones));
      }
      across.replaced.replaceAllUsesWith(result);
      for (Operation *dead : llvm::reverse(across.chain))
        if (dead->use_empty())
          dead->erase();
    }
  }

  /// Every reduce-scatter (sum, rows) of a dispatch's buffer.
  void sparseDispatches() {
    SmallVector<hspmd::ReduceScatterOp> scatters;
    getOperation().walk([&](hspmd::ReduceScatterOp scatter) {
      // Local view only: a global-view collective keeps its layouts.
      if (scatter.getFromAttr() || scatter.getDim() != 0 ||
          scatter.getReduction() != hspmd::ReductionKind::Sum)
        return;
      if (scatter.getInput().getDefiningOp<nn::MoeDispatchOp>())
        scatters.push_back(scatter);
    });
    for (hspmd::ReduceScatterOp scatter : scatters)
      makeSparse(scatter, scatter.getInput()
                              .getDefiningOp<nn::MoeDispatchOp>()
                              .getSlots());
  }

  /// The combines (and slot dot products) of a width-split buffer whose
  /// tokens go back along the rows, in `func`.
  void sparseWayBack(func::FuncOp func) {
    // One local slice per (value, sub-groups), one gather per (buffer,
    // slots, sub-groups), reused while they come before the user.
    std::map<std::pair<const void *, Over>, Value> slices;
    std::map<std::tuple<const void *, const void *, Over>, Value> gathers;
    std::map<Over, Replication> replication;
    auto replicated = [&](Value value, const Over &over) {
      return replication.try_emplace(over, over)
          .first->second.isReplicated(value);
    };
    auto before = [](Value value, Operation *user) {
      Operation *def = value.getDefiningOp();
      return def && def->getBlock() == user->getBlock() &&
             def->isBeforeInBlock(user);
    };
    // The rows of `value` (the same on every member) this device's tokens
    // are: a local slice of dimension 0, made right after `value`.
    auto localRows = [&](Value value, const Over &over, Operation *user,
                         Operation *like) -> Value {
      Value &slice = slices[{value.getAsOpaquePointer(), over}];
      if (slice && before(slice, user))
        return slice;
      // The partitioner's own slice of it, where there is one.
      for (Operation *other : value.getUsers())
        if (auto existing = dyn_cast<hspmd::LocalSliceOp>(other))
          if (!existing.getFromAttr() && existing.getDim() == 0 &&
              overOf(existing) == over &&
              before(existing.getResult(), user))
            return slice = existing.getResult();
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      int64_t members = 1;
      for (int64_t axis : over.axes)
        members *= over.mesh[axis];
      shape[0] /= members;
      OpBuilder builder(user);
      builder.setInsertionPointAfterValue(value);
      auto op = hspmd::LocalSliceOp::create(
          builder, value.getLoc(), type.clone(shape), value,
          builder.getI64IntegerAttr(0), builder.getDenseI64ArrayAttr(over.axes),
          builder.getDenseI64ArrayAttr(over.mesh), nullptr, nullptr);
      copyDiscardable(like, op);
      slice = op.getResult();
      return slice;
    };
    // The rows `slots` names of the blocks `block` (one a member), right
    // before `user`.
    auto gathered = [&](Value block, Value slots, const Over &over,
                        Operation *user, Operation *like) -> Value {
      Value &full = gathers[{block.getAsOpaquePointer(),
                             slots.getAsOpaquePointer(), over}];
      if (full && before(full, user))
        return full;
      auto type = cast<RankedTensorType>(block.getType());
      SmallVector<int64_t> shape(type.getShape());
      int64_t members = 1;
      for (int64_t axis : over.axes)
        members *= over.mesh[axis];
      shape[0] *= members;
      OpBuilder builder(user);
      auto op = hspmd::SparseAllGatherOp::create(
          builder, user->getLoc(), type.clone(shape), block, slots,
          builder.getDenseI64ArrayAttr(over.axes),
          builder.getDenseI64ArrayAttr(over.mesh));
      copyDiscardable(like, op);
      full = op.getResult();
      return full;
    };
    SmallVector<Operation *> users;
    func.walk([&](Operation *op) {
      if (isa<nn::MoeCombineOp, nn::MoeSlotDotOp>(op))
        users.push_back(op);
    });
    SmallVector<Operation *> dead;
    for (Operation *user : users) {
      if (auto combine = dyn_cast<nn::MoeCombineOp>(user)) {
        // all_to_all(Y) split 1 concat 0 over A -> combine -> the tokens
        // back (wayBack), with slots and weights the same over A.
        hspmd::AllToAllOp toWidth = getAllToAll(combine.getInput(), 1, 0);
        if (!toWidth || toWidth.getInput().getType().getRank() != 2)
          continue;
        Over over = overOf(toWidth);
        std::optional<WayBack> back = getWayBack(combine, over);
        if (!back || !replicated(combine.getSlots(), over) ||
            (combine.getWeights() && !replicated(combine.getWeights(), over)))
          continue;
        Value slots = localRows(combine.getSlots(), over, combine, toWidth);
        Value weights;
        if (combine.getWeights())
          weights = localRows(combine.getWeights(), over, combine, toWidth);
        Value full =
            gathered(toWidth.getInput(), slots, over, combine, toWidth);
        IRMapping mapping;
        mapping.map(combine.getInput(), full);
        mapping.map(combine.getSlots(), slots);
        if (weights)
          mapping.map(combine.getWeights(), weights);
        Operation *last = back->chain.back();
        OpBuilder builder(last);
        Operation *local = builder.clone(*combine, mapping);
        Value result = local->getResult(0);
        result.setType(cast<RankedTensorType>(last->getResult(0).getType()));
        if (back->partialOver) {
          // Partial sums over the tensor-parallel axes: completed there.
          auto reduce = hspmd::AllReduceOp::create(
              builder, last->getLoc(), result.getType(), result,
              hspmd::ReductionKindAttr::get(builder.getContext(),
                                            hspmd::ReductionKind::Sum),
              builder.getDenseI64ArrayAttr(back->partialOver->axes),
              builder.getDenseI64ArrayAttr(back->partialOver->mesh), nullptr,
              nullptr);
          copyDiscardable(last, reduce);
          result = reduce.getResult();
        }
        last->getResult(0).replaceAllUsesWith(result);
        for (Operation *op : llvm::reverse(back->chain))
          op->erase();
        combine.erase();
        dead.push_back(toWidth);
        continue;
      }
      // slot_dot(all_to_all(Y), all_to_all(G), slots) -> reduce_scatter of
      // the tokens, over the same sub-groups.
      auto dot = cast<nn::MoeSlotDotOp>(user);
      hspmd::AllToAllOp toWidth = getAllToAll(dot.getBuffer(), 1, 0);
      hspmd::AllToAllOp gradient = getAllToAll(dot.getTokens(), 1, 0);
      if (!toWidth || !gradient || !dot->hasOneUse())
        continue;
      auto scatter = dyn_cast<hspmd::ReduceScatterOp>(*dot->user_begin());
      Over over = overOf(toWidth);
      if (!scatter || scatter.getFromAttr() || scatter.getDim() != 0 ||
          scatter.getReduction() != hspmd::ReductionKind::Sum ||
          !(overOf(scatter) == over) || !(overOf(gradient) == over) ||
          toWidth.getInput().getType().getRank() != 2 ||
          !replicated(dot.getSlots(), over))
        continue;
      // Only with the rows the forward's combine gathered: a gather of its
      // own would move more than the dense form (the whole width of every
      // routed row, for a dot product).
      Value full, slots;
      for (auto &[key, value] : gathers) {
        if (std::get<0>(key) != toWidth.getInput().getAsOpaquePointer() ||
            !(std::get<2>(key) == over) || !value || !before(value, dot))
          continue;
        auto gather = value.getDefiningOp<hspmd::SparseAllGatherOp>();
        auto slice = gather.getRows().getDefiningOp<hspmd::LocalSliceOp>();
        if (slice && slice.getInput() == dot.getSlots()) {
          full = value;
          slots = gather.getRows();
          break;
        }
      }
      if (!full)
        continue;
      IRMapping mapping;
      mapping.map(dot.getBuffer(), full);
      mapping.map(dot.getTokens(), gradient.getInput());
      mapping.map(dot.getSlots(), slots);
      OpBuilder builder(scatter);
      Operation *local = builder.clone(*dot, mapping);
      local->getResult(0).setType(scatter.getType());
      scatter.replaceAllUsesWith(local->getResult(0));
      scatter.erase();
      dot.erase();
      dead.push_back(toWidth);
      dead.push_back(gradient);
    }
    // The width-split buffers nothing reads any more.
    llvm::SmallPtrSet<Operation *, 8> erased;
    for (Operation *op : dead)
      if (!erased.count(op) && op->use_empty()) {
        erased.insert(op);
        op->erase();
      }
  }

  /// Attributes the partitioner put on a collective (its group).
  static void copyDiscardable(Operation *from, Operation *to) {
    for (NamedAttribute attr : from->getDiscardableAttrs())
      to->setAttr(attr.getName(), attr.getValue());
  }
};

} // namespace
