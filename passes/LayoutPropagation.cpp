//===- LayoutPropagation.cpp - Lay out every tensor of a device group -----===//
//
// Fills in the layout of every tensor of a function whose layouts all live
// on one device group, from the user's annotations, through the factor rules
// of the ops (LayoutRuleOpInterface), forward and backward to a fixed point.
// See docs/rationale/partitioning.md, "The group mesh" and "Propagation".
//
// The model. Every layout in play is read on the group's mesh (HSPMDMesh.h).
// Propagation keeps, per tensor value and mesh axis, a role (split of a
// dimension, duplicate, partial) and the priority it came with
// (PropagationPriority: user, param, data, derived; see
// passes/Partitioning/CostModel.h).
//
// For an op with a factor rule, each mesh axis is given one factor to split
// (or none). Candidates are "none" and every factor that may be split: not
// replicated, the major factor of every dimension it appears in, of a size
// the mesh axes given to it divide, and keeping every tensor's mesh layout
// spellable as states (equal roles adjacent). Each candidate implies a role
// for every operand and result; a tensor whose current role differs
// disagrees, and its reshard costs bytes. The candidate with the smallest
// cost at the highest priority wins (costs compared priority level by
// priority level, user first), then the one with the fewest disagreeing
// tensors, then "none", then the lowest factor index. What a tensor and a
// reshard cost, what a result still owes, how candidates compare and the
// priority floors of arguments are the cost model's
// (PropagationCostModel, passes/Partitioning/CostModel.h): a search over
// strategies or placements passes its own model without changing this
// loop.
// The winner determines each tensor's role with a priority (see `assign`);
// a tensor takes its implied role where that priority (raised to param /
// data on arguments of those roles) is strictly higher than its own.
// Tensors that keep a different role make the op's operand layout differ
// from the producer's: a reshard goes in between.
//
// Besides the factors, each linear group of the rule (operands the op is
// linear in) is a candidate where its operands hold partial sums: they stay
// partial, the results are partial. A result left partial that way, or
// split by a split the op invents, is charged the reduction it owes further
// on; a reshard that an earlier use of the same operand needs is free (see
// `NeedTable`). Attribute writing re-checks pass-throughs against how each
// operand is actually produced.
//
// A result's cost also counts the reshards to what the function boundaries
// taking it need (`resultNeeds`): a function result's user layout, and for
// an `nn.updates = i` result argument i's layout. So an optimizer update on
// a data-parallel step sees that splitting it (a reduce-scatter of the
// gradient) also costs the all-gather of the updated parameter back to its
// argument's layout, and stays plain data parallel; it splits only where
// the user laid out the optimizer state split (ZeRO). Update ops are
// processed after everything else has settled (`lateWorklist`), so the
// layouts of the arguments they write back to are known when they choose.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionSteps.h"
#include "passes/Partitioning/Utils.h"
#include "passes/Passes.h"

#include "dialects/Interfaces/LayoutRuleOpInterface.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDMesh.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#include <array>
#include <deque>
#include <numeric>
#include <optional>

#define DEBUG_TYPE "hspmd-propagate-layouts"

namespace loom {
#define GEN_PASS_DEF_LAYOUTPROPAGATIONPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// Where a role came from; higher wins.
using Priority = PropagationPriority;

/// What propagation knows about a value on one mesh axis.
struct AxisInfo {
  MeshRole role = MeshRole::duplicate();
  Priority priority = Priority::None;
};

/// What propagation knows about a tensor value.
struct ValueState {
  SmallVector<AxisInfo> axes;
  /// The least priority a role derived onto this value gets (param or data
  /// for arguments with those roles).
  Priority floor = Priority::None;
  /// User layouts never change.
  bool pinned = false;
  /// For diagnostics: where a pinned layout comes from.
  Operation *sourceOp = nullptr;
  std::optional<Location> sourceLoc;

  SmallVector<MeshRole> getRoles() const {
    return llvm::map_to_vector(axes, [](const AxisInfo &axis) {
      return axis.role;
    });
  }
};

/// One tensor of an op as its factor rule sees it.
struct RuleTensor {
  Value value;
  const TensorFactors *dims;
  bool isResult;
  unsigned index;
};

/// The factor split by each mesh axis (-1: none), and per tensor of the op
/// (in getRuleTensors order) and mesh axis, the priority with which the
/// choice determines that tensor's role.
struct Assignment {
  SmallVector<int64_t> factors;
  /// Per mesh axis: the proportions of the explicit blocks its factor is
  /// cut into (a user's `S1:[16, 8, 8]` carried along), or empty.
  SmallVector<ArrayRef<int64_t>> ratios;
  SmallVector<SmallVector<Priority>> priorities;
};

/// A user layout, with where it was written.
struct UserLayout {
  UnionAttr layout;
  Location loc;
  /// The op that carries it (an annotate, a reshard, or the function).
  Operation *op;
};

/// The name FactorRule::str gives factor `index`.
std::string factorName(int64_t index) {
  if (index < 14)
    return std::string(1, static_cast<char>('i' + index));
  return "f" + std::to_string(index);
}

ReductionKind toReduction(PartialKind kind) {
  switch (kind) {
  case PartialKind::Sum:
    return ReductionKind::Sum;
  case PartialKind::Max:
    return ReductionKind::Max;
  case PartialKind::Min:
    return ReductionKind::Min;
  }
  llvm_unreachable("unknown partial kind");
}

/// What each tensor operand use needs, per mesh axis, as its op last chose
/// it, with per value and axis the number of uses needing each role, so
/// that "does another use need this role" is answered without walking the
/// uses (a step counter read by every optimizer update has thousands).
class NeedTable {
public:
  /// Records `roles` for `use`. Returns whether, on some axis, the number
  /// of uses needing the old or the new role crossed between 0, 1 and 2
  /// (the other uses' shares of a reshard then changed).
  bool set(OpOperand &use, ArrayRef<MeshRole> roles) {
    SmallVector<MeshRole> &need = needs[&use];
    if (need == roles)
      return false;
    PerAxis &axes = counts[use.get()];
    axes.resize(roles.size());
    bool crossed = false;
    for (auto [axis, role] : llvm::enumerate(roles)) {
      bool had = axis < need.size();
      if (had && need[axis] == role)
        continue;
      if (had) {
        unsigned &old = axes[axis][need[axis]];
        crossed |= old <= 2;
        --old;
      }
      unsigned &now = axes[axis][role];
      crossed |= now <= 1;
      ++now;
    }
    need.assign(roles.begin(), roles.end());
    return crossed;
  }
  /// Whether another use of `value` than `use`, made by an op before
  /// `use`'s in the block, needs `role` on `axis`: that one pays for the
  /// shared reshard, and `use` rides along. (Values with many uses, such as
  /// a step counter, are not walked: another use needing the role counts.)
  bool sharedWithEarlier(OpOperand &use, int64_t axis,
                         const MeshRole &role) const {
    Value value = use.get();
    unsigned others = countOthers(value, &use, axis, role);
    if (others == 0)
      return false;
    constexpr unsigned kMaxWalkedUses = 32;
    if (!value.hasNUsesOrMore(kMaxWalkedUses + 1)) {
      Operation *owner = use.getOwner();
      for (OpOperand &other : value.getUses()) {
        if (&other == &use)
          continue;
        auto it = needs.find(&other);
        if (it == needs.end() || it->second[axis] != role)
          continue;
        Operation *otherOwner = other.getOwner();
        if (otherOwner->getBlock() != owner->getBlock() ||
            otherOwner->isBeforeInBlock(owner) ||
            (otherOwner == owner &&
             other.getOperandNumber() < use.getOperandNumber()))
          return true;
      }
      return false;
    }
    return true;
  }
  /// How many uses of `value` other than `use` need `role` on `axis`.
  unsigned countOthers(Value value, OpOperand *use, int64_t axis,
                       const MeshRole &role) const {
    auto it = counts.find(value);
    if (it == counts.end() || axis >= static_cast<int64_t>(it->second.size()))
      return 0;
    auto found = it->second[axis].find(role);
    unsigned count = found == it->second[axis].end() ? 0 : found->second;
    if (use) {
      auto own = needs.find(use);
      if (own != needs.end() && own->second[axis] == role && count > 0)
        --count;
    }
    return count;
  }

private:
  struct RoleKey {
    static MeshRole getEmptyKey() {
      return {AxisKind::Split, -2, ReductionKind::Sum, {}};
    }
    static MeshRole getTombstoneKey() {
      return {AxisKind::Split, -3, ReductionKind::Sum, {}};
    }
    static unsigned getHashValue(const MeshRole &role) {
      return llvm::hash_combine(
          static_cast<int>(role.kind), role.dim,
          role.isPartial() ? static_cast<int>(role.reduction) : -1,
          llvm::hash_combine_range(role.ratio.begin(), role.ratio.end()));
    }
    static bool isEqual(const MeshRole &a, const MeshRole &b) {
      return a.kind == b.kind && a.dim == b.dim &&
             (a.kind != AxisKind::Partial || a.reduction == b.reduction) &&
             a.ratio == b.ratio;
    }
  };
  using PerAxis = SmallVector<DenseMap<MeshRole, unsigned, RoleKey>, 2>;
  DenseMap<OpOperand *, SmallVector<MeshRole>> needs;
  DenseMap<Value, PerAxis> counts;
};

class FunctionPropagation {
public:
  FunctionPropagation(func::FuncOp func, const PropagationCostModel &model,
                      bool uneven)
      : func(func), context(func.getContext()), model(model), uneven(uneven) {}

  /// Runs propagation and writes the attributes. Returns failure after
  /// reporting an error; `skipped` is set when the function has no layout.
  LogicalResult run(bool &skipped, int64_t &numReshards);

private:
  LogicalResult collectUserLayouts();
  LogicalResult computeMesh();
  void initialize();
  LogicalResult checkReplicatedConflicts();
  void propagate();
  void process(Operation *op);
  void processRuleOp(Operation *op, const FactorRule &rule);
  Assignment assign(Operation *op, const FactorRule &rule,
                    ArrayRef<RuleTensor> tensors,
                    function_ref<bool(Value, int64_t)> isPartialSum);
  /// Whether `value` holds partial sums on mesh axis `axis` as propagation
  /// currently sees it.
  bool statePartialSum(Value value, int64_t axis) const;
  SmallVector<MeshRole> impliedRoles(const FactorRule &rule,
                                     const RuleTensor &tensor,
                                     ArrayRef<int64_t> factors,
                                     ArrayRef<ArrayRef<int64_t>> ratios) const;
  /// The roles each tensor operand use needs, per mesh axis, as its op last
  /// chose them; a reshard that several uses need is made once
  /// (hspmd-insert-reshards shares it), so only the first pays for it.
  NeedTable needs;
  /// How often an op was queued again because a sibling use changed its
  /// need; bounded so that ops whose choices depend on each other settle.
  DenseMap<Operation *, unsigned> requeuedForNeeds;
  void hint(Value value, ArrayRef<MeshRole> roles, Priority priority);
  /// Records what `use` needs (see `needs`).
  void recordNeed(OpOperand &use, ArrayRef<MeshRole> roles);
  SmallVector<AxisInfo, 1> resultNeeds(Value value, int64_t axis);
  std::optional<Value> updatedArgument(unsigned resultIndex, Value operand);
  void enqueue(Operation *op) {
    if (queued.insert(op).second)
      (updaters.contains(op) ? lateWorklist : worklist).push_back(op);
  }
  void update(Value value, ArrayRef<MeshRole> roles,
              ArrayRef<Priority> priorities);
  bool fits(Value value, ArrayRef<MeshRole> roles) const;
  LogicalResult writeAttributes(int64_t &numReshards);

  /// The layout of a value of `type` whose mesh axes have `roles`.
  UnionAttr toUnion(ArrayRef<MeshRole> roles, Type type) const;
  UnionAttr duplicated() const;
  /// `layout` on the function's mesh; a balanced split of a tensor of
  /// `type` (a degree that does not divide its dimension) reads as the
  /// proportions of its blocks, so that it is carried like explicit ones.
  FailureOr<MeshLayout> read(UnionAttr layout, Type type) const;
  SmallVector<RuleTensor> getRuleTensors(Operation *op,
                                         const FactorRule &rule) const;
  LogicalResult checkRule(Operation *op, const FactorRule &rule) const;

  MLIRContext *getContext() const { return context; }

  func::FuncOp func;
  MLIRContext *context;
  /// What choices cost and which wins.
  const PropagationCostModel &model;
  /// Whether factors may be cut into blocks of unequal size.
  bool uneven;
  SmallVector<UserLayout> userLayouts;
  DeviceGroupAttr group;
  Mesh mesh;
  DenseMap<Value, ValueState> states;
  /// Ops to (re)process, first in first out, each queued at most once.
  std::deque<Operation *> worklist;
  DenseSet<Operation *> queued;
  /// Ops producing a value returned as an `nn.updates` result (optimizer
  /// updates), and their queue: they are processed only when `worklist` is
  /// empty, once the layouts of the arguments they write back to have
  /// settled.
  DenseSet<Operation *> updaters;
  std::deque<Operation *> lateWorklist;
  /// The function's returns (they follow the layouts of the arguments that
  /// `nn.updates` results update).
  SmallVector<Operation *> returns;
  /// Result indices a return has to look at again.
  DenseSet<unsigned> dirtyResults;
  /// For an argument, the results that update it (`nn.updates`).
  DenseMap<Value, SmallVector<unsigned, 1>> updatesOf;
  /// The rules of the ops that have one, in program order.
  llvm::MapVector<Operation *, FactorRule> rules;
};

LogicalResult FunctionPropagation::collectUserLayouts() {
  auto add = [&](Attribute attr, Type, Location loc,
                 Operation *op) -> LogicalResult {
    auto layout = dyn_cast<UnionAttr>(attr);
    if (!layout)
      return emitError(loc)
             << "layout " << attr
             << " is a strategy set; layout propagation handles one union "
                "per value (hspmd-specialize-strategies, the first pass of "
                "loom-partition-pipeline, makes one function per strategy "
                "of the sets on a function's arguments)";
    if (layout.getNumGroups() != 1)
      return emitError(loc)
             << "layout " << layout << " spans " << layout.getNumGroups()
             << " device groups; propagation inside a group handles one "
                "device group per function (unions of groups are partitioned "
                "first, see GroupPartition.cpp)";
    // Explicit blocks of unequal size are laid out in functions on one
    // group only (a part's specialisation takes no uneven blocks).
    if (!uneven)
      for (const Axis &axis : layout.getStates().front().getAxes())
        if (!axis.sizes.empty() && !llvm::all_equal(axis.sizes))
          return emitError(loc)
                 << "layout " << layout << " gives explicit block sizes ("
                 << axis.str()
                 << ") in a function laid out across groups or pipeline "
                    "stages; blocks of unequal size are laid out inside a "
                    "function on one group only so far";
    userLayouts.push_back({layout, loc, op});
    return success();
  };
  if (failed(forEachUserLayout(func, add)))
    return failure();
  if (userLayouts.empty())
    return success();
  group = userLayouts.front().layout.getGroups().front();
  for (const UserLayout &user : userLayouts) {
    DeviceGroupAttr other = user.layout.getGroups().front();
    if (other == group)
      continue;
    InFlightDiagnostic diag = emitError(user.loc)
                              << "layout " << user.layout << " is on group "
                              << other << " but " << userLayouts.front().layout
                              << " is on group " << group
                              << "; propagation inside a group lays out one "
                                 "device group per function (functions over "
                                 "several groups are partitioned first)";
    diag.attachNote(userLayouts.front().loc) << "first layout here";
    return failure();
  }
  return success();
}

LogicalResult FunctionPropagation::computeMesh() {
  SmallVector<DistStatesAttr> all = llvm::map_to_vector(
      userLayouts, [](const UserLayout &user) {
        return user.layout.getStates().front();
      });
  FailureOr<Mesh> refined = refineMesh(all);
  if (succeeded(refined)) {
    mesh = *refined;
    // Explicit blocks cut along one mesh axis: a layout that another
    // layout's axes would cut finer cannot be read.
    for (const UserLayout &user : userLayouts)
      if (failed(read(user.layout, Type())))
        return emitError(user.loc)
               << "layout " << user.layout
               << " cuts explicit blocks along more than one axis of the "
                  "function's mesh "
               << mesh.str()
               << " (other layouts split its devices finer); explicit "
                  "blocks are cut along one mesh axis";
    LLVM_DEBUG(llvm::dbgs() << "@" << func.getSymName() << ": mesh "
                            << mesh.str() << "\n");
    return success();
  }
  // Find the first pair that shares no mesh (if every pair shares one, the
  // cut points of all of them form a chain, so some pair fails).
  for (size_t j = 1; j < userLayouts.size(); ++j)
    for (size_t i = 0; i < j; ++i) {
      if (succeeded(refineMesh({all[i], all[j]})))
        continue;
      InFlightDiagnostic diag =
          emitError(userLayouts[j].loc)
          << "layout " << userLayouts[j].layout << " shares no mesh with "
          << userLayouts[i].layout
          << ": the strides of their axes do not divide one another, so no "
             "factor assignment relates them (a change between them is a "
             "general send/recv plan)";
      diag.attachNote(userLayouts[i].loc) << "other layout here";
      return failure();
    }
  return emitError(func.getLoc()) << "the layouts of this function share no mesh";
}

/// The proportions, in lowest terms, of the balanced blocks that `parts`
/// cuts `size` into.
static SmallVector<int64_t> getBalancedRatio(int64_t size, int64_t parts) {
  SmallVector<int64_t> blocks;
  // (No blocks to speak of: an empty dimension, or no parts.)
  if (size <= 0 || parts <= 0)
    return blocks;
  int64_t divisor = 0;
  for (int64_t j = 0; j < parts; ++j) {
    blocks.push_back(size / parts + (j < size % parts ? 1 : 0));
    divisor = std::gcd(divisor, blocks.back());
  }
  for (int64_t &block : blocks)
    block /= divisor;
  return blocks;
}

UnionAttr FunctionPropagation::toUnion(ArrayRef<MeshRole> roles,
                                       Type type) const {
  MeshLayout layout{SmallVector<MeshRole>(roles)};
  FailureOr<DistStatesAttr> states =
      toStates(layout, mesh, getContext());
  // Every role list propagation builds is representable (candidates keep
  // them so, updates that would not are dropped); fall back to duplicating
  // the value if one is not.
  if (failed(states))
    return duplicated();
  // Explicit blocks: the dimension cut in the role's proportions.
  if (llvm::any_of(roles, [](const MeshRole &role) {
        return !role.ratio.empty();
      })) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    SmallVector<Axis> axes(states->getAxes());
    for (const MeshRole &role : roles) {
      if (role.ratio.empty())
        continue;
      int64_t parts = 0;
      for (int64_t part : role.ratio)
        parts += part;
      if (!tensor || role.dim >= tensor.getRank() ||
          tensor.isDynamicDim(role.dim) || tensor.getDimSize(role.dim) <= 0 ||
          tensor.getDimSize(role.dim) % parts != 0)
        return duplicated();
      SmallVector<int64_t> sizes;
      for (int64_t part : role.ratio)
        sizes.push_back(tensor.getDimSize(role.dim) / parts * part);
      // Balanced blocks are spelled by their degree.
      int64_t degree = sizes.size();
      bool balanced =
          getBalancedRatio(tensor.getDimSize(role.dim), degree) ==
          SmallVector<int64_t>(role.ratio);
      for (Axis &axis : axes)
        if (axis.isSplit() && axis.dim == role.dim)
          axis = balanced ? Axis::split(role.dim, degree)
                          : Axis::split(role.dim, sizes);
    }
    states = DistStatesAttr::get(getContext(), axes);
  }
  return UnionAttr::get(getContext(), group, *states);
}

FailureOr<MeshLayout> FunctionPropagation::read(UnionAttr layout,
                                                Type type) const {
  FailureOr<MeshLayout> read = toMeshLayout(layout.getStates().front(), mesh);
  auto tensor = dyn_cast_if_present<RankedTensorType>(type);
  if (failed(read) || !tensor || !uneven)
    return read;
  for (auto [axis, role] : llvm::enumerate(read->roles)) {
    if (!role.isSplit() || !role.ratio.empty() || role.dim >= tensor.getRank() ||
        tensor.isDynamicDim(role.dim))
      continue;
    int64_t size = tensor.getDimSize(role.dim);
    int64_t degree = 1;
    for (auto [other, each] : llvm::enumerate(read->roles))
      if (each.isSplit() && each.dim == role.dim)
        degree *= mesh.sizes[other];
    // (A balanced split reads onto one mesh axis: toMeshLayout gives the
    // dimension's role to every mesh axis it covers.)
    if (size > 0 && size % degree != 0 && degree == mesh.sizes[axis])
      role = MeshRole::split(role.dim, getBalancedRatio(size, degree));
  }
  return read;
}

UnionAttr FunctionPropagation::duplicated() const {
  SmallVector<MeshRole> roles(mesh.getRank(), MeshRole::duplicate());
  return UnionAttr::get(
      getContext(), group, *toStates(MeshLayout{roles}, mesh, getContext()));
}

SmallVector<RuleTensor>
FunctionPropagation::getRuleTensors(Operation *op,
                                    const FactorRule &rule) const {
  SmallVector<RuleTensor> tensors;
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (isa<RankedTensorType>(operand.getType()))
      tensors.push_back({operand, &rule.getOperands()[index], false,
                         static_cast<unsigned>(index)});
  for (auto [index, result] : llvm::enumerate(op->getResults()))
    if (isa<RankedTensorType>(result.getType()))
      tensors.push_back({result, &rule.getResults()[index], true,
                         static_cast<unsigned>(index)});
  return tensors;
}

LogicalResult FunctionPropagation::checkRule(Operation *op,
                                             const FactorRule &rule) const {
  // Propagation indexes the rule by operand, result, dimension and factor;
  // a rule that does not match its op is a bug in the op, reported on it.
  return rule.verify(op);
}

void FunctionPropagation::initialize() {
  auto initState = [&](Value value) {
    if (!isa<RankedTensorType>(value.getType()))
      return;
    ValueState state;
    state.axes.assign(mesh.getRank(), AxisInfo());
    states[value] = std::move(state);
  };
  auto pin = [&](Value value, UnionAttr layout, Location loc, Operation *op) {
    ValueState &state = states[value];
    MeshLayout roles = *read(layout, value.getType());
    for (auto [axis, role] : llvm::zip_equal(state.axes, roles.roles))
      axis = {role, Priority::User};
    state.pinned = true;
    state.sourceOp = op;
    state.sourceLoc = loc;
  };
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    initState(arg);
    if (!states.count(arg))
      continue;
    unsigned index = arg.getArgNumber();
    ValueState &state = states[arg];
    state.floor = model.getArgumentFloor(func, index);
    if (UnionAttr layout = getArgLayout(func, index))
      pin(arg, layout, arg.getLoc(), func);
  }
  func.walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (op != func.getOperation())
            initState(arg);
    for (Value result : op->getResults())
      initState(result);
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      pin(annotate.getResult(), cast<UnionAttr>(annotate.getLayout()),
          op->getLoc(), op);
    if (auto reshard = dyn_cast<ReshardOp>(op))
      pin(reshard.getResult(), cast<UnionAttr>(reshard.getTarget()),
          op->getLoc(), op);
    if (auto ruleOp = dyn_cast<LayoutRuleOpInterface>(op))
      rules.try_emplace(op, ruleOp.getFactorRule());
  });
}

LogicalResult FunctionPropagation::checkReplicatedConflicts() {
  // A replicated factor that user layouts split on both sides of an op: on
  // an operand (a pinned value) and on a result (taken by an annotation or
  // returned as a function result with a user layout). Resharding could
  // satisfy both, but only by gathering what the user split on one side and
  // splitting it again on the other: the annotations contradict each other.
  for (auto &entry : rules) {
    Operation *op = entry.first;
    const FactorRule &rule = entry.second;
    SmallVector<RuleTensor> tensors = getRuleTensors(op, rule);
    // Per tensor, the user layouts that apply to it.
    SmallVector<std::pair<const RuleTensor *, UserLayout>> sides[2];
    for (const RuleTensor &tensor : tensors) {
      if (!tensor.isResult) {
        const ValueState &state = states[tensor.value];
        if (state.pinned) {
          UnionAttr layout;
          if (auto annotate = dyn_cast_or_null<AnnotateOp>(state.sourceOp))
            layout = cast<UnionAttr>(annotate.getLayout());
          else if (auto reshard = dyn_cast_or_null<ReshardOp>(state.sourceOp))
            layout = cast<UnionAttr>(reshard.getTarget());
          else
            layout = getArgLayout(
                func, cast<BlockArgument>(tensor.value).getArgNumber());
          sides[0].push_back(
              {&tensor, UserLayout{layout, *state.sourceLoc, state.sourceOp}});
        }
        continue;
      }
      for (OpOperand &use : tensor.value.getUses()) {
        Operation *user = use.getOwner();
        if (auto annotate = dyn_cast<AnnotateOp>(user))
          sides[1].push_back(
              {&tensor, UserLayout{cast<UnionAttr>(annotate.getLayout()),
                                   user->getLoc(), user}});
        else if (isa<func::ReturnOp>(user) &&
                 user->getParentOp() == func.getOperation())
          if (UnionAttr layout =
                  getResultLayout(func, use.getOperandNumber()))
            sides[1].push_back(
                {&tensor, UserLayout{layout, func.getLoc(), func}});
      }
    }
    // Which replicated factor a user layout splits, if any.
    auto splitReplicated = [&](const RuleTensor &tensor,
                               UnionAttr layout) -> int64_t {
      MeshLayout roles = *read(layout, tensor.value.getType());
      for (const MeshRole &role : roles.roles) {
        if (!role.isSplit() ||
            role.dim >= static_cast<int64_t>(tensor.dims->size()))
          continue;
        for (int64_t factor : (*tensor.dims)[role.dim])
          if (rule.getFactor(factor).kind == FactorKind::Replicated)
            return factor;
      }
      return -1;
    };
    for (auto &[operand, operandUser] : sides[0]) {
      int64_t factor = splitReplicated(*operand, operandUser.layout);
      if (factor < 0)
        continue;
      for (auto &[result, resultUser] : sides[1]) {
        if (splitReplicated(*result, resultUser.layout) != factor)
          continue;
        InFlightDiagnostic diag =
            op->emitError()
            << "user layouts split replicated factor " << factorName(factor)
            << " (size " << rule.getFactor(factor).size << ") of '"
            << op->getName() << "' on both sides: operand "
            << operand->index << " is " << operandUser.layout
            << " and result " << result->index << " is " << resultUser.layout;
        diag.attachNote(operandUser.loc)
            << "operand layout set by '" << operandUser.op->getName()
            << "' here";
        diag.attachNote(resultUser.loc)
            << "result layout set by '" << resultUser.op->getName()
            << "' here";
        return failure();
      }
    }
  }
  return success();
}

bool FunctionPropagation::fits(Value value, ArrayRef<MeshRole> roles) const {
  if (!isRepresentable(roles))
    return false;
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> degrees(type.getRank(), 1);
  for (auto [role, size] : llvm::zip_equal(roles, mesh.sizes)) {
    if (!role.isSplit())
      continue;
    if (role.dim >= type.getRank())
      return false;
    degrees[role.dim] *= size;
  }
  // Explicit blocks: one mesh axis cuts the dimension, in proportions that
  // divide it.
  for (auto [role, size] : llvm::zip_equal(roles, mesh.sizes)) {
    if (!role.isSplit() || role.ratio.empty())
      continue;
    if (!uneven)
      return false;
    int64_t parts = 0;
    for (int64_t part : role.ratio)
      parts += part;
    if (type.isDynamicDim(role.dim) || degrees[role.dim] != size ||
        type.getDimSize(role.dim) % parts != 0)
      return false;
  }
  // Splits without proportions are even (balanced ones carry theirs).
  for (auto [dim, size, degree] :
       llvm::enumerate(type.getShape(), degrees)) {
    bool proportional = llvm::any_of(roles, [&, dim = dim](const MeshRole &role) {
      return role.isSplit() && role.dim == static_cast<int64_t>(dim) &&
             !role.ratio.empty();
    });
    if (!proportional && !ShapedType::isDynamic(size) && size % degree != 0)
      return false;
  }
  return true;
}

void FunctionPropagation::update(Value value, ArrayRef<MeshRole> roles,
                                 ArrayRef<Priority> priorities) {
  auto it = states.find(value);
  if (it == states.end() || it->second.pinned)
    return;
  ValueState &state = it->second;
  SmallVector<AxisInfo> axes = state.axes;
  bool changed = false;
  for (auto [axis, role, priority] : llvm::zip_equal(axes, roles, priorities)) {
    if (priority == Priority::None)
      continue;
    Priority raised = std::max(priority, state.floor);
    if (raised <= axis.priority)
      continue;
    changed |= axis.role != role || axis.priority != raised;
    axis = {role, raised};
  }
  if (!changed)
    return;
  // An update that would leave the value without a states spelling or with
  // a split that does not divide its shape is dropped: the value keeps its
  // (less split) layout and the op that asked gets a reshard.
  SmallVector<MeshRole> newRoles =
      llvm::map_to_vector(axes, [](const AxisInfo &axis) { return axis.role; });
  if (!fits(value, newRoles)) {
    LLVM_DEBUG(llvm::dbgs() << "  dropped update of " << value << " to "
                            << MeshLayout{newRoles}.str() << "\n");
    return;
  }
  state.axes = std::move(axes);
  LLVM_DEBUG(llvm::dbgs() << "  " << value << " -> "
                          << MeshLayout{newRoles}.str() << "\n");
  if (Operation *def = value.getDefiningOp())
    enqueue(def);
  for (OpOperand &use : value.getUses()) {
    // A return only looks again at the results whose values changed.
    if (llvm::is_contained(returns, use.getOwner()))
      dirtyResults.insert(use.getOperandNumber());
    enqueue(use.getOwner());
  }
  // Function results that update an argument follow its layout, and the
  // ops producing them count the reshard to it (`resultNeeds`). Only the
  // results updating this argument (`updatesOf`) are concerned, which keeps
  // the pass linear in the number of parameters.
  if (isa<BlockArgument>(value)) {
    auto it = updatesOf.find(value);
    if (it == updatesOf.end())
      return;
    for (Operation *ret : returns) {
      for (unsigned index : it->second) {
        dirtyResults.insert(index);
        if (Operation *def = ret->getOperand(index).getDefiningOp())
          enqueue(def);
      }
      enqueue(ret);
    }
  }
}

std::optional<Value> FunctionPropagation::updatedArgument(unsigned resultIndex,
                                                          Value operand) {
  auto updates = func.getResultAttrOfType<IntegerAttr>(
      resultIndex, nn::NNDialect::getUpdatesAttrName());
  if (!updates)
    return std::nullopt;
  int64_t arg = updates.getInt();
  if (arg < 0 || arg >= func.getNumArguments())
    return std::nullopt;
  Value source = func.getArgument(arg);
  if (!states.count(source) || source.getType() != operand.getType())
    return std::nullopt;
  return source;
}

/// The roles on mesh axis `axis` that the function boundaries taking
/// `value` need, with their priorities: a function result with a user
/// layout needs that layout (user); an `nn.updates = i` result needs
/// argument i's layout, at the priority argument i holds it with. These
/// reshards happen whatever the value's own state becomes (the result's
/// layout is fixed by the boundary), so the op producing the value counts
/// them in the cost of each of its factor choices.
SmallVector<AxisInfo, 1> FunctionPropagation::resultNeeds(Value value,
                                                          int64_t axis) {
  SmallVector<AxisInfo, 1> needs;
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (!isa<func::ReturnOp>(user) ||
        user->getParentOp() != func.getOperation())
      continue;
    unsigned index = use.getOperandNumber();
    if (UnionAttr layout = getResultLayout(func, index)) {
      needs.push_back(
          {read(layout, value.getType())->roles[axis], Priority::User});
      continue;
    }
    if (std::optional<Value> source = updatedArgument(index, value)) {
      const AxisInfo &info = states.find(*source)->second.axes[axis];
      if (info.priority != Priority::None)
        needs.push_back(info);
    }
  }
  return needs;
}

void FunctionPropagation::hint(Value value, ArrayRef<MeshRole> roles,
                               Priority priority) {
  SmallVector<Priority> priorities(roles.size(), priority);
  update(value, roles, priorities);
}

SmallVector<MeshRole>
FunctionPropagation::impliedRoles(const FactorRule &rule,
                                  const RuleTensor &tensor,
                                  ArrayRef<int64_t> factors,
                                  ArrayRef<ArrayRef<int64_t>> ratios) const {
  SmallVector<MeshRole> roles;
  int64_t numFactors = static_cast<int64_t>(rule.getFactors().size());
  MeshRole partialSum = MeshRole::partial(ReductionKind::Sum);
  for (auto [axis, factor] : llvm::enumerate(factors)) {
    ArrayRef<int64_t> ratio =
        axis < ratios.size() ? ratios[axis] : ArrayRef<int64_t>();
    MeshRole role = MeshRole::duplicate();
    if (factor >= numFactors) {
      // A partial sum passing through a linear group: its operands and
      // every result are partial sums, the other operands whole.
      ArrayRef<unsigned> group = rule.getLinearGroups()[factor - numFactors];
      if (tensor.isResult || llvm::is_contained(group, tensor.index))
        role = partialSum;
    } else if (factor >= 0) {
      for (auto [dim, dimFactors] : llvm::enumerate(*tensor.dims))
        if (!dimFactors.empty() && dimFactors.front() == factor)
          role = ratio.empty() ? MeshRole::split(dim)
                               : MeshRole::split(dim, ratio);
      const Factor &info = rule.getFactor(factor);
      if (role.isDuplicate() && tensor.isResult &&
          info.kind == FactorKind::Reduction)
        role = MeshRole::partial(toReduction(info.partial));
    }
    roles.push_back(role);
  }
  return roles;
}

bool FunctionPropagation::statePartialSum(Value value, int64_t axis) const {
  auto it = states.find(value);
  if (it == states.end())
    return false;
  const AxisInfo &info = it->second.axes[axis];
  return info.priority != Priority::None &&
         info.role == MeshRole::partial(ReductionKind::Sum);
}

Assignment FunctionPropagation::assign(
    Operation *op, const FactorRule &rule, ArrayRef<RuleTensor> tensors,
    function_ref<bool(Value, int64_t)> isPartialSum) {
  int64_t numFactors = rule.getFactors().size();
  ArrayRef<SmallVector<unsigned, 2>> groups = rule.getLinearGroups();
  // Candidates numFactors + g pass partial sums through linear group g.
  int64_t numCandidates = numFactors + static_cast<int64_t>(groups.size());
  auto isPassThrough = [&](int64_t factor) { return factor >= numFactors; };
  // Which factors may be split at all: not replicated, and wherever they
  // appear, the major factor of their dimension.
  SmallVector<bool> splittable(numFactors, true);
  for (auto [index, factor] : llvm::enumerate(rule.getFactors()))
    if (factor.kind == FactorKind::Replicated)
      splittable[index] = false;
  for (const RuleTensor &tensor : tensors)
    for (const DimFactors &dim : *tensor.dims)
      for (size_t i = 1; i < dim.size(); ++i)
        splittable[dim[i]] = false;

  Assignment result;
  result.priorities.assign(tensors.size(), {});
  SmallVector<int64_t> splitBy(numFactors, 1);
  for (int64_t axis = 0; axis < mesh.getRank(); ++axis) {
    int64_t size = mesh.sizes[axis];
    struct Candidate {
      CandidateScore score;
      /// Per tensor: the priority of its current role if it agrees with
      /// the candidate, None otherwise.
      SmallVector<Priority> agreeing;
      /// The proportions of explicit blocks the factor is cut into.
      ArrayRef<int64_t> ratio;
    };
    std::optional<Candidate> best;
    SmallVector<int64_t> validFactors;
    for (int64_t factor = -1; factor < numCandidates; ++factor) {
      // The priority of the partial sums a pass-through candidate takes.
      Priority partialPriority = Priority::None;
      ArrayRef<int64_t> ratio;
      if (isPassThrough(factor)) {
        // Only partial sums that are there pass through (making one from a
        // whole value just to pass it on gains nothing).
        ArrayRef<unsigned> group = groups[factor - numFactors];
        if (!llvm::all_of(group, [&](unsigned index) {
              return isPartialSum(op->getOperand(index), axis);
            }))
          continue;
        for (unsigned index : group)
          partialPriority = std::max(
              partialPriority,
              std::max(states[op->getOperand(index)].axes[axis].priority,
                       Priority::Derived));
      } else if (factor >= 0) {
        int64_t factorSize = rule.getFactor(factor).size;
        // Explicit blocks a tensor already cuts this factor into on this
        // axis (the strongest such tensor's): every tensor holding the
        // factor then cuts it in the same proportions.
        // (The strongest tensor splitting the factor decides, whether it
        // has proportions or not.)
        Priority ratioPriority = Priority::None;
        for (const RuleTensor &tensor : tensors) {
          const AxisInfo &current = states[tensor.value].axes[axis];
          if (current.priority <= ratioPriority || !current.role.isSplit() ||
              current.role.dim >= static_cast<int64_t>(tensor.dims->size()))
            continue;
          const DimFactors &dim = (*tensor.dims)[current.role.dim];
          if (dim.empty() || dim.front() != factor)
            continue;
          ratio = current.role.ratio;
          ratioPriority = current.priority;
        }
        int64_t parts = 0;
        for (int64_t part : ratio)
          parts += part;
        if (!ratio.empty() &&
            (!uneven || splitBy[factor] != 1 ||
             static_cast<int64_t>(ratio.size()) != size ||
             ShapedType::isDynamic(factorSize) || factorSize % parts != 0))
          ratio = {};
        bool even = ShapedType::isDynamic(factorSize) ||
                    factorSize % (splitBy[factor] * size) == 0;
        // A degree that does not divide the factor cuts it into balanced
        // blocks, carried as their proportions: every tensor holding the
        // factor (as a whole dimension, or the leading factor of a merged
        // one: the batch of a [B*S] flatten, the heads of [H*Dh]) cuts at
        // the same points. One mesh axis only: a second would cut the
        // blocks again.
        if (ratio.empty() && !even && uneven && splitBy[factor] == 1 &&
            factorSize >= size)
          ratio = internBlockSizes(getBalancedRatio(factorSize, size));
        if (!splittable[factor] || (ratio.empty() && !even))
          continue;
        // Several mesh axes may split one factor only if they are adjacent.
        if (splitBy[factor] > 1 && result.factors.back() != factor)
          continue;
      }
      SmallVector<int64_t> factors = result.factors;
      factors.push_back(factor);
      SmallVector<ArrayRef<int64_t>> ratios = result.ratios;
      ratios.push_back(ratio);
      Candidate candidate{{factor, {}, 0}, {}, ratio};
      // A split of operands that are all whole (or partial) on this axis
      // is invented by this op on cost alone.
      bool invented = factor >= 0 && !isPassThrough(factor) &&
                      llvm::none_of(tensors, [&](const RuleTensor &tensor) {
                        const AxisInfo &current =
                            states[tensor.value].axes[axis];
                        return !tensor.isResult &&
                               current.priority != Priority::None &&
                               current.role.isSplit();
                      });
      bool valid = true;
      for (const RuleTensor &tensor : tensors) {
        candidate.agreeing.push_back(Priority::None);
        SmallVector<MeshRole> roles =
            impliedRoles(rule, tensor, factors, ratios);
        if (!isRepresentable(roles)) {
          valid = false;
          break;
        }
        const ValueState &state = states[tensor.value];
        const AxisInfo &current = state.axes[axis];
        // The bytes of the block this mesh axis acts on.
        double block = model.getTensorBytes(tensor.value.getType());
        for (auto [other, info] : llvm::enumerate(state.axes))
          if (static_cast<int64_t>(other) != axis && info.role.isSplit())
            block /= mesh.sizes[other];
        // What the tensor must become: an operand, its current role; a
        // result, its current role and what the function boundaries that
        // take it need (see `resultNeeds`).
        SmallVector<AxisInfo, 2> targets;
        if (current.priority != Priority::None)
          targets.push_back(current);
        if (tensor.isResult)
          for (const AxisInfo &need : resultNeeds(tensor.value, axis)) {
            auto same = llvm::find_if(targets, [&](const AxisInfo &target) {
              return target.role == need.role;
            });
            if (same == targets.end())
              targets.push_back(need);
            else
              same->priority = std::max(same->priority, need.priority);
          }
        if (current.priority != Priority::None && current.role == roles.back())
          candidate.agreeing.back() = current.priority;
        double charged = 0;
        for (const AxisInfo &target : targets) {
          if (target.role == roles.back())
            continue;
          double bytes =
              tensor.isResult
                  ? model.getReshardBytes(roles.back(), target.role, size,
                                          block)
                  : model.getReshardBytes(target.role, roles.back(), size,
                                          block);
          // A reshard of an operand that an earlier use needs too is made
          // once (hspmd-insert-reshards shares it): the first use in
          // program order pays for it, the later ones take it for free.
          if (!tensor.isResult && bytes > 0 &&
              needs.sharedWithEarlier(op->getOpOperand(tensor.index), axis,
                                      roles.back()))
            bytes = 0;
          candidate.score.cost[static_cast<size_t>(target.priority)] += bytes;
          charged += bytes;
          ++candidate.score.disagreements;
        }
        // A result left partial by a pass-through, or split by an
        // invented split, is charged (at least) what making it whole costs,
        // an all-reduce or an all-gather, unless a consumer takes it as it
        // is: otherwise that is owed further on. Passing a partial through
        // then wins only where it saves bytes (partials that meet are
        // reduced once; a reduction shrinks what is reduced), and an op
        // does not split on its own what the next op needs whole
        // (Megatron's layer norms stay whole between the two all-reduces).
        if (tensor.isResult && (invented || isPassThrough(factor)) &&
            !roles.back().isDuplicate() &&
            needs.countOthers(tensor.value, nullptr, axis, roles.back()) ==
                0) {
          // Owed at the priority of what forced the choice: the partials
          // passed on, or the strongest operand the split reshards.
          Priority level = partialPriority;
          if (!isPassThrough(factor))
            for (const RuleTensor &other : tensors)
              if (!other.isResult)
                level = std::max(level,
                                 states[other.value].axes[axis].priority);
          level = std::max(level, Priority::Derived);
          double owed = model.getOwedBytes(roles.back(), size, block);
          if (owed > charged) {
            candidate.score.cost[static_cast<size_t>(level)] += owed - charged;
            ++candidate.score.disagreements;
          }
        }
      }
      if (!valid)
        continue;
      if (factor >= 0)
        validFactors.push_back(factor);
      if (!best || model.isBetter(candidate.score, best->score))
        best = std::move(candidate);
    }
    if (!best) {
      // No choice keeps every tensor spellable (on a mesh of three or more
      // axes, (D, S0, D) has no states): the op computes on duplicates.
      Assignment none;
      none.factors.assign(mesh.getRank(), -1);
      none.ratios.assign(mesh.getRank(), {});
      none.priorities.assign(tensors.size(),
                             SmallVector<Priority>(mesh.getRank()));
      return none;
    }
    int64_t chosen = best->score.factor;
    result.factors.push_back(chosen);
    result.ratios.push_back(best->ratio);
    if (chosen >= 0 && !isPassThrough(chosen))
      splitBy[chosen] *= size;

    // How firmly the choice determines each tensor's role. A split factor
    // is as firm as the strongest tensor that already splits it (or holds
    // its partial), and determines every tensor (one factor per axis); a
    // choice made on cost alone is a derived one. Choosing no factor
    // determines a tensor only as far as every factor it could have been
    // split by is ruled out by an agreeing duplicate holding that factor.
    auto holds = [&](const RuleTensor &tensor, int64_t factor) {
      if (isPassThrough(factor))
        return tensor.isResult ||
               llvm::is_contained(groups[factor - numFactors], tensor.index);
      for (const DimFactors &dim : *tensor.dims)
        if (llvm::is_contained(dim, factor))
          return true;
      return tensor.isResult &&
             rule.getFactor(factor).kind == FactorKind::Reduction;
    };
    if (chosen >= 0) {
      Priority support = Priority::Derived;
      for (auto [tensor, agreeing] : llvm::zip_equal(tensors, best->agreeing))
        if (holds(tensor, chosen))
          support = std::max(support, agreeing);
      for (SmallVector<Priority> &priorities : result.priorities)
        priorities.push_back(support);
      continue;
    }
    Priority strongest = Priority::None;
    for (Priority agreeing : best->agreeing)
      strongest = std::max(strongest, agreeing);
    for (auto [index, tensor] : llvm::enumerate(tensors)) {
      std::optional<Priority> firm;
      for (int64_t factor : validFactors) {
        if (!holds(tensor, factor))
          continue;
        Priority ruledOut = Priority::None;
        for (auto [other, agreeing] : llvm::zip_equal(tensors, best->agreeing))
          if (holds(other, factor))
            ruledOut = std::max(ruledOut, agreeing);
        firm = firm ? std::min(*firm, ruledOut) : ruledOut;
      }
      result.priorities[index].push_back(firm ? *firm : strongest);
    }
  }
  return result;
}

void FunctionPropagation::processRuleOp(Operation *op, const FactorRule &rule) {
  SmallVector<RuleTensor> tensors = getRuleTensors(op, rule);
  Assignment assignment =
      assign(op, rule, tensors, [&](Value value, int64_t axis) {
        return statePartialSum(value, axis);
      });
  LLVM_DEBUG({
    llvm::dbgs() << "op " << op->getName() << " assigns (";
    llvm::interleaveComma(assignment.factors, llvm::dbgs(), [](int64_t f) {
      llvm::dbgs() << (f < 0 ? std::string("-") : factorName(f));
    });
    llvm::dbgs() << ")\n";
  });
  // What an op broadcasting a 0-d operand into the gradients of optimizer
  // updates needs of it (one element to move) is asked at the lowest
  // priority: a clipping scale, read through the updates at the priority of
  // their state's layout, must not make the gradient norm's sums of
  // squares gather their shards instead of passing partial sums on.
  auto isTensor = [](Value value) {
    auto ranked = dyn_cast<RankedTensorType>(value.getType());
    return ranked && ranked.getRank() > 0;
  };
  auto feedsUpdates = [&](Value value) {
    return !value.use_empty() &&
           llvm::all_of(value.getUsers(), [&](Operation *user) {
             return updaters.contains(user);
           });
  };
  bool scalesGradients = llvm::all_of(op->getResults(), isTensor) &&
                         llvm::all_of(op->getResults(), feedsUpdates);
  for (auto [tensor, priorities] :
       llvm::zip_equal(tensors, assignment.priorities)) {
    SmallVector<Priority> asked(priorities);
    auto type = dyn_cast<RankedTensorType>(tensor.value.getType());
    if (scalesGradients && !tensor.isResult && type && type.getRank() == 0)
      for (Priority &priority : asked)
        priority = std::min(priority, Priority::Derived);
    update(tensor.value,
           impliedRoles(rule, tensor, assignment.factors, assignment.ratios),
           asked);
  }
  for (const RuleTensor &tensor : tensors)
    if (!tensor.isResult)
      recordNeed(op->getOpOperand(tensor.index),
                 impliedRoles(rule, tensor, assignment.factors,
                              assignment.ratios));
}

void FunctionPropagation::recordNeed(OpOperand &use, ArrayRef<MeshRole> roles) {
  // When the uses sharing a role change, the value's other users (their
  // share of a common reshard) and its producer (whether a consumer takes
  // its result as it is) look again, a bounded number of times each.
  constexpr unsigned kMaxRequeues = 4;
  if (!needs.set(use, roles))
    return;
  Value value = use.get();
  auto requeue = [&](Operation *other) {
    if (other && other != use.getOwner() && rules.count(other) &&
        requeuedForNeeds[other]++ < kMaxRequeues)
      enqueue(other);
  };
  requeue(value.getDefiningOp());
  for (Operation *user : value.getUsers())
    requeue(user);
}

void FunctionPropagation::process(Operation *op) {
  if (auto annotate = dyn_cast<AnnotateOp>(op)) {
    // A boundary: the annotated layout is only a hint to the operand.
    SmallVector<MeshRole> roles =
        read(cast<UnionAttr>(annotate.getLayout()),
             annotate.getInput().getType())
            ->roles;
    recordNeed(op->getOpOperand(0), roles);
    hint(annotate.getInput(), roles, Priority::Derived);
    return;
  }
  if (auto reshard = dyn_cast<ReshardOp>(op)) {
    SmallVector<MeshRole> roles =
        read(cast<UnionAttr>(reshard.getSource()), reshard.getInput().getType())
            ->roles;
    recordNeed(op->getOpOperand(0), roles);
    hint(reshard.getInput(), roles, Priority::Derived);
    return;
  }
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    if (ret->getParentOp() != func.getOperation())
      return;
    // The results whose value (or updated argument) changed since the last
    // visit, in order.
    SmallVector<unsigned> dirty(dirtyResults.begin(), dirtyResults.end());
    llvm::sort(dirty);
    dirtyResults.clear();
    for (unsigned index : dirty) {
      Value operand = ret.getOperand(index);
      if (!states.count(operand))
        continue;
      if (UnionAttr layout = getResultLayout(func, index)) {
        SmallVector<MeshRole> roles =
            read(layout, operand.getType())->roles;
        recordNeed(op->getOpOperand(index), roles);
        hint(operand, roles, Priority::Derived);
        continue;
      }
      if (std::optional<Value> source = updatedArgument(index, operand)) {
        const ValueState &state = states[*source];
        if (llvm::all_of(state.axes, [](const AxisInfo &axis) {
              return axis.priority == Priority::None;
            }))
          continue;
        recordNeed(op->getOpOperand(index), state.getRoles());
        hint(operand, state.getRoles(), Priority::Derived);
      }
    }
    return;
  }
  auto it = rules.find(op);
  if (it != rules.end()) {
    processRuleOp(op, it->second);
    return;
  }
  // Ops without a factor rule compute on whole tensors: their results are
  // duplicated (and their operands are gathered to duplicates).
  SmallVector<MeshRole> whole(mesh.getRank(), MeshRole::duplicate());
  for (OpOperand &operand : op->getOpOperands())
    if (states.count(operand.get()))
      recordNeed(operand, whole);
  for (Value result : op->getResults())
    if (states.count(result))
      hint(result, SmallVector<MeshRole>(mesh.getRank(), MeshRole::duplicate()),
           Priority::Derived);
}

void FunctionPropagation::propagate() {
  // Termination: a (value, mesh axis) pair changes only to a strictly higher
  // priority (`update`), there are five priorities, and an op is processed
  // again only when one of its values changed (or, for an op producing an
  // `nn.updates` result, the argument it writes back to). So every pair
  // changes at most four times and both worklists empty. The costs an op's
  // choice reads (including `resultNeeds`) do not affect this: whatever it
  // chooses, a pair only moves up.
  func.walk([&](Operation *op) {
    if (!isa<func::ReturnOp>(op) || op->getParentOp() != func.getOperation())
      return;
    returns.push_back(op);
    for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
      dirtyResults.insert(index);
      auto updates = func.getResultAttrOfType<IntegerAttr>(
          index, nn::NNDialect::getUpdatesAttrName());
      if (!updates)
        continue;
      if (Operation *def = operand.getDefiningOp())
        updaters.insert(def);
      int64_t arg = updates.getInt();
      if (arg >= 0 && arg < func.getNumArguments())
        updatesOf[func.getArgument(arg)].push_back(index);
    }
  });
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      enqueue(op);
  });
  while (!worklist.empty() || !lateWorklist.empty()) {
    std::deque<Operation *> &queue = worklist.empty() ? lateWorklist : worklist;
    Operation *op = queue.front();
    queue.pop_front();
    queued.erase(op);
    process(op);
  }
}

LogicalResult FunctionPropagation::writeAttributes(int64_t &numReshards) {
  MLIRContext *context = func.getContext();
  // What each value is produced as: arguments as their state says, results
  // as their op's rule produces them.
  DenseMap<Value, UnionAttr> produced;
  auto stateLayout = [&](Value value) {
    return toUnion(states[value].getRoles(), value.getType());
  };
  Block &body = func.getBody().front();
  // Argument and result attributes are collected and set at once: setting
  // them one by one rebuilds the function's whole array each time.
  auto withLayout = [&](DictionaryAttr attrs, UnionAttr layout) {
    NamedAttrList list(attrs);
    setLayout(list, layout);
    return list.getDictionary(context);
  };
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    argAttrs.push_back(func.getArgAttrDict(i));
  for (BlockArgument arg : body.getArguments()) {
    if (!states.count(arg))
      continue;
    unsigned index = arg.getArgNumber();
    UnionAttr layout = getArgLayout(func, index);
    if (!layout) {
      layout = stateLayout(arg);
      argAttrs[index] = withLayout(argAttrs[index], layout);
    }
    produced[arg] = layout;
  }
  func.setAllArgAttrs(argAttrs);
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    resultAttrs.push_back(func.getResultAttrDict(i));

  auto setLayouts = [&](Operation *op, ArrayRef<UnionAttr> operandLayouts,
                        ArrayRef<UnionAttr> resultLayouts) {
    if (!operandLayouts.empty())
      setOperandLayouts(op, operandLayouts);
    if (!resultLayouts.empty())
      setResultLayouts(op, resultLayouts);
    for (auto [operand, layout] : llvm::zip_equal(
             llvm::make_filter_range(op->getOperands(),
                                     [&](Value v) { return states.count(v); }),
             operandLayouts)) {
      auto it = produced.find(operand);
      auto type = cast<RankedTensorType>(operand.getType());
      if (it != produced.end() &&
          !areEquivalent(it->second, layout, type.getShape()))
        ++numReshards;
    }
    for (auto [result, layout] : llvm::zip_equal(
             llvm::make_filter_range(op->getResults(),
                                     [&](Value v) { return states.count(v); }),
             resultLayouts))
      produced[result] = layout;
  };

  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    if (op == func.getOperation())
      return WalkResult::advance();
    SmallVector<UnionAttr> operandLayouts, resultLayouts;
    auto tensorsOf = [&](ValueRange values) {
      return llvm::count_if(values, [&](Value v) { return states.count(v); });
    };
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      auto layout = cast<UnionAttr>(annotate.getLayout());
      setLayouts(op, {layout}, {layout});
      return WalkResult::advance();
    }
    if (auto reshard = dyn_cast<ReshardOp>(op)) {
      setLayouts(op, {cast<UnionAttr>(reshard.getSource())},
                 {cast<UnionAttr>(reshard.getTarget())});
      return WalkResult::advance();
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op);
        ret && ret->getParentOp() == func.getOperation()) {
      for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
        if (!states.count(operand))
          continue;
        UnionAttr layout = getResultLayout(func, index);
        if (!layout) {
          if (auto updates = func.getResultAttrOfType<IntegerAttr>(
                  index, nn::NNDialect::getUpdatesAttrName())) {
            int64_t arg = updates.getInt();
            if (arg >= 0 && arg < func.getNumArguments() &&
                func.getArgument(arg).getType() == operand.getType())
              layout = produced.lookup(func.getArgument(arg));
          }
        }
        if (!layout)
          layout = produced.lookup(operand);
        if (!layout)
          layout = stateLayout(operand);
        resultAttrs[index] = withLayout(resultAttrs[index], layout);
        operandLayouts.push_back(layout);
      }
      setLayouts(op, operandLayouts, {});
      return WalkResult::advance();
    }
    auto it = rules.find(op);
    if (it != rules.end()) {
      SmallVector<RuleTensor> tensors = getRuleTensors(op, it->second);
      // Partial sums pass through only where the operand is produced as
      // one (its producer may have settled on another choice than its
      // state last said).
      Assignment assignment =
          assign(op, it->second, tensors, [&](Value value, int64_t axis) {
            UnionAttr layout = produced.lookup(value);
            if (!layout)
              return false;
            FailureOr<MeshLayout> roles = read(layout, value.getType());
            return succeeded(roles) &&
                   roles->roles[axis] ==
                       MeshRole::partial(ReductionKind::Sum);
          });
      for (const RuleTensor &tensor : tensors) {
        UnionAttr layout =
            toUnion(impliedRoles(it->second, tensor, assignment.factors,
                                 assignment.ratios),
                    tensor.value.getType());
        (tensor.isResult ? resultLayouts : operandLayouts).push_back(layout);
      }
      setLayouts(op, operandLayouts, resultLayouts);
      return WalkResult::advance();
    }
    operandLayouts.assign(tensorsOf(op->getOperands()), duplicated());
    resultLayouts.assign(tensorsOf(op->getResults()), duplicated());
    setLayouts(op, operandLayouts, resultLayouts);
    return WalkResult::advance();
  });
  func.setAllResultAttrs(resultAttrs);
  return failure(walk.wasInterrupted());
}

/// Gives every use of a broadcast or a fill beyond the first its own copy,
/// and returns the copies with their originals. Neither holds data of its
/// own: each copy can take the layout its user needs (along the broadcast
/// dimensions; anywhere for a fill) with no communication, where one
/// shared value (CSE merges identical ones, such as the ids the gradients
/// of two lookups by the same ids scatter by, or two zero gradients of one
/// shape) must take one layout and a reshard for the other users.
static SmallVector<std::pair<Operation *, Operation *>>
untieBroadcasts(func::FuncOp func) {
  SmallVector<Operation *> shared;
  func.walk([&](Operation *op) {
    if (isa<nn::BroadcastOp, nn::FillOp>(op) && !op->hasOneUse() &&
        !op->use_empty())
      shared.push_back(op);
  });
  SmallVector<std::pair<Operation *, Operation *>> copies;
  for (Operation *op : shared) {
    SmallVector<OpOperand *> uses = llvm::map_to_vector(
        op->getUses(), [](OpOperand &use) { return &use; });
    OpBuilder builder(op);
    for (OpOperand *use : ArrayRef(uses).drop_front()) {
      Operation *copy = builder.clone(*op);
      use->set(copy->getResult(0));
      copies.push_back({op, copy});
    }
  }
  return copies;
}

/// Folds back each copy untieBroadcasts made that took its original's
/// layouts: only the copies whose users needed another layout stay.
static void retieBroadcasts(
    ArrayRef<std::pair<Operation *, Operation *>> copies) {
  for (auto [original, copy] : copies)
    if (copy->getAttrDictionary() == original->getAttrDictionary()) {
      copy->getResult(0).replaceAllUsesWith(original->getResult(0));
      copy->erase();
    }
}

LogicalResult FunctionPropagation::run(bool &skipped, int64_t &numReshards) {
  skipped = false;
  if (func.isExternal()) {
    skipped = true;
    return success();
  }
  if (failed(collectUserLayouts()))
    return failure();
  if (userLayouts.empty()) {
    skipped = true;
    return success();
  }
  if (failed(computeMesh()))
    return failure();
  initialize();
  for (auto &[op, rule] : rules)
    if (failed(checkRule(op, rule)))
      return failure();
  if (failed(checkReplicatedConflicts()))
    return failure();
  propagate();
  return writeAttributes(numReshards);
}

struct LayoutPropagationPass
    : loom::impl::LayoutPropagationPassBase<LayoutPropagationPass> {
  void runOnOperation() override {
    // Partitioning adds functions: collect first.
    SmallVector<func::FuncOp> functions(
        getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : functions) {
      if (isPart(func) || isPartitioned(func))
        continue;
      int64_t reshards = 0;
      if (hasLayoutsAcrossGroups(func)) {
        int64_t parts = 0;
        if (failed(partitionAcrossGroups(func, parts, reshards)))
          return signalPassFailure();
        numFunctions += parts;
        numReshards += reshards;
        continue;
      }
      bool skipped = false;
      auto copies = untieBroadcasts(func);
      if (failed(propagateWithinGroup(func, skipped, reshards,
                                      PropagationCostModel::getDefault(),
                                      /*uneven=*/true)))
        return signalPassFailure();
      retieBroadcasts(copies);
      if (!skipped) {
        ++numFunctions;
        numReshards += reshards;
      }
    }
  }
};

} // namespace

LogicalResult loom::propagateWithinGroup(func::FuncOp func, bool &skipped,
                                         int64_t &numReshards,
                                         const PropagationCostModel &model,
                                         bool uneven) {
  return FunctionPropagation(func, model, uneven).run(skipped, numReshards);
}
