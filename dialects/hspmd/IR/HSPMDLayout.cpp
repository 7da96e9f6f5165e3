//===- HSPMDLayout.cpp - Layout arithmetic over hspmd unions --------------===//

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDMesh.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace loom::hspmd;

bool Shard::operator==(const Shard &other) const {
  return offsets == other.offsets && sizes == other.sizes &&
         partialIndex == other.partialIndex &&
         numPartials == other.numPartials && reduction == other.reduction &&
         replicaIndex == other.replicaIndex && numReplicas == other.numReplicas;
}

int64_t Shard::getNumElements() const {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

llvm::raw_ostream &loom::hspmd::operator<<(llvm::raw_ostream &os,
                                           const Shard &shard) {
  os << "shard ";
  if (shard.sizes.empty())
    os << "scalar";
  llvm::interleave(shard.sizes, os, "x");
  os << " at [";
  llvm::interleaveComma(shard.offsets, os);
  os << ']';
  if (shard.numPartials > 1)
    os << ", partial " << shard.partialIndex << '/' << shard.numPartials << " ("
       << stringifyReductionKind(*shard.reduction) << ')';
  if (shard.numReplicas > 1)
    os << ", replica " << shard.replicaIndex << '/' << shard.numReplicas;
  return os;
}

/// Computes the per-group extents of a split union; reports through
/// `emitError` when it is non-null.
static FailureOr<SmallVector<int64_t>>
computeGroupExtents(UnionAttr layout, int64_t dimSize,
                    function_ref<InFlightDiagnostic()> emitError) {
  int64_t numGroups = layout.getNumGroups();
  ArrayRef<int64_t> shares = layout.getShares();
  int64_t dim = layout.getSplitDim();
  SmallVector<int64_t> extents;
  if (layout.getExplicitSizes()) {
    int64_t total = 0;
    for (int64_t size : shares)
      total += size;
    if (total != dimSize) {
      if (emitError)
        emitError() << "sizes [" << shares << "] cover " << total
                    << " of dimension " << dim << " of size " << dimSize;
      return failure();
    }
    extents.assign(shares.begin(), shares.end());
    return extents;
  }
  if (shares.empty()) {
    if (dimSize % numGroups != 0) {
      if (emitError)
        emitError() << "dimension " << dim << " of size " << dimSize
                    << " cannot be split equally among " << numGroups
                    << " groups; give shares or sizes";
      return failure();
    }
    extents.assign(numGroups, dimSize / numGroups);
    return extents;
  }
  int64_t total = 0;
  for (int64_t share : shares)
    total += share;
  if (dimSize % total != 0) {
    if (emitError)
      emitError() << "shares [" << shares << "] do not divide dimension "
                  << dim << " of size " << dimSize
                  << " exactly; give explicit sizes";
    return failure();
  }
  for (int64_t share : shares)
    extents.push_back(dimSize / total * share);
  return extents;
}

FailureOr<SmallVector<int64_t>> loom::hspmd::getGroupExtents(UnionAttr layout,
                                                             int64_t dimSize) {
  if (layout.getRelation() != UnionRelation::Split)
    return failure();
  return computeGroupExtents(layout, dimSize, nullptr);
}

/// Checks that `layout` fits `shape`; reports through `emitError` when it is
/// non-null and fails silently otherwise.
static LogicalResult
checkLayoutForShape(UnionAttr layout, ArrayRef<int64_t> shape,
                    function_ref<InFlightDiagnostic()> emitError) {
  auto fail = [&](auto &&describe) {
    if (emitError) {
      InFlightDiagnostic diag = emitError();
      describe(diag);
    }
    return failure();
  };
  int64_t rank = shape.size();
  bool splitsGroups = layout.getRelation() == UnionRelation::Split;
  int64_t splitDim = layout.getSplitDim();
  SmallVector<int64_t> extents;
  if (splitsGroups) {
    if (splitDim >= rank)
      return fail([&](InFlightDiagnostic &diag) {
        diag << "union splits dimension " << splitDim
             << " but the tensor has rank " << rank;
      });
    if (!ShapedType::isDynamic(shape[splitDim])) {
      FailureOr<SmallVector<int64_t>> computed =
          computeGroupExtents(layout, shape[splitDim], emitError);
      if (failed(computed))
        return failure();
      extents = std::move(*computed);
    }
  }

  for (auto [index, states] : llvm::enumerate(layout.getStates())) {
    int64_t member = index;
    for (const Axis &axis : states.getAxes()) {
      if (!axis.isSplit())
        continue;
      if (axis.dim >= rank)
        return fail([&](InFlightDiagnostic &diag) {
          diag << "axis " << axis.str() << " of union member " << member
               << " splits dimension " << axis.dim
               << " but the tensor has rank " << rank;
        });
      bool isShare = splitsGroups && axis.dim == splitDim;
      int64_t size = isShare && !extents.empty() ? extents[member]
                                                 : shape[axis.dim];
      if (ShapedType::isDynamic(size) || (isShare && extents.empty()))
        continue;
      // Equal, balanced or explicit blocks (runtime/layout/Layout.h).
      absl::StatusOr<std::vector<int64_t>> blocks =
          ::loom::layout::getBlockSizes(toLayoutCore(axis), size);
      if (blocks.ok())
        continue;
      return fail([&](InFlightDiagnostic &diag) {
        if (isShare)
          diag << "union member " << member << "'s share of dimension "
               << axis.dim << " (size " << size << "): ";
        else
          diag << "dimension " << axis.dim << ": ";
        diag << std::string(blocks.status().message());
      });
    }
  }
  return success();
}

LogicalResult loom::hspmd::verifyLayoutForShape(
    UnionAttr layout, ArrayRef<int64_t> shape,
    function_ref<InFlightDiagnostic()> emitError) {
  return checkLayoutForShape(layout, shape, emitError);
}

LogicalResult loom::hspmd::verifyLayoutForShape(
    Attribute layout, ArrayRef<int64_t> shape,
    function_ref<InFlightDiagnostic()> emitError) {
  if (auto single = dyn_cast<UnionAttr>(layout))
    return verifyLayoutForShape(single, shape, emitError);
  auto set = dyn_cast<StrategySetAttr>(layout);
  if (!set)
    return emitError() << "expected a #hspmd.union or #hspmd.strategies "
                          "layout, got "
                       << layout;
  for (auto [name, strategy] : llvm::zip_equal(set.getNames(), set.getLayouts())) {
    StringRef strategyName = name.getValue();
    auto prefixed = [&]() {
      InFlightDiagnostic diag = emitError();
      diag << "strategy '" << strategyName << "': ";
      return diag;
    };
    if (failed(verifyLayoutForShape(strategy, shape, prefixed)))
      return failure();
  }
  return success();
}

std::optional<Shard> loom::hspmd::getShard(UnionAttr layout,
                                           ArrayRef<int64_t> shape,
                                           int64_t device) {
  int64_t member = layout.getMemberOf(device);
  if (member < 0 || llvm::any_of(shape, ShapedType::isDynamic) ||
      failed(checkLayoutForShape(layout, shape, nullptr)))
    return std::nullopt;
  ArrayRef<DistStatesAttr> allStates = layout.getStates();
  DistStatesAttr states = allStates[member];

  Shard shard;
  shard.offsets.assign(shape.size(), 0);
  shard.sizes.assign(shape.begin(), shape.end());

  if (layout.getRelation() == UnionRelation::Split) {
    int64_t dim = layout.getSplitDim();
    SmallVector<int64_t> extents =
        *computeGroupExtents(layout, shape[dim], nullptr);
    for (int64_t i = 0; i < member; ++i)
      shard.offsets[dim] += extents[i];
    shard.sizes[dim] = extents[member];
  }

  int64_t index = layout.getGroups()[member].indexOf(device);
  for (auto [axis, coord] :
       llvm::zip_equal(states.getAxes(), states.getCoordinates(index))) {
    switch (axis.kind) {
    case AxisKind::Split: {
      SmallVector<int64_t> blocks =
          *getBlockSizes(axis, shard.sizes[axis.dim]);
      for (int64_t j = 0; j < coord; ++j)
        shard.offsets[axis.dim] += blocks[j];
      shard.sizes[axis.dim] = blocks[coord];
      break;
    }
    case AxisKind::Duplicate:
      shard.replicaIndex = coord;
      shard.numReplicas = axis.degree;
      break;
    case AxisKind::Partial:
      shard.partialIndex = coord;
      shard.numPartials = axis.degree;
      shard.reduction = axis.reduction;
      break;
    }
  }

  // Across groups: replicas add up over replicated groups, contributions over
  // partial groups.
  switch (layout.getRelation()) {
  case UnionRelation::Replicated:
    for (auto [i, other] : llvm::enumerate(allStates)) {
      if (static_cast<int64_t>(i) < member)
        shard.replicaIndex += other.getDuplicateDegree();
      if (static_cast<int64_t>(i) != member)
        shard.numReplicas += other.getDuplicateDegree();
    }
    break;
  case UnionRelation::Partial:
    shard.reduction = layout.getReduction();
    for (auto [i, other] : llvm::enumerate(allStates)) {
      if (static_cast<int64_t>(i) < member)
        shard.partialIndex += other.getPartialDegree();
      if (static_cast<int64_t>(i) != member)
        shard.numPartials += other.getPartialDegree();
    }
    break;
  case UnionRelation::Split:
    break;
  }
  if (shard.numPartials == 1)
    shard.reduction = std::nullopt;
  return shard;
}

bool loom::hspmd::haveSameDevices(UnionAttr lhs, UnionAttr rhs) {
  SmallVector<int64_t> lhsDevices = lhs.getAllDevices();
  SmallVector<int64_t> rhsDevices = rhs.getAllDevices();
  llvm::sort(lhsDevices);
  llvm::sort(rhsDevices);
  return lhsDevices == rhsDevices;
}

bool loom::hspmd::areEquivalent(UnionAttr lhs, UnionAttr rhs,
                                ArrayRef<int64_t> shape) {
  if (lhs == rhs)
    return true;
  // One group in the same device order: compare the layouts axis by axis on
  // their common mesh, in time independent of the number of devices (equal
  // roles on every mesh axis is exactly "every device holds the same
  // shard", given both fit the shape). A mesh reading has no block sizes:
  // uneven splits compare shard by shard.
  if (lhs.getNumGroups() == 1 && rhs.getNumGroups() == 1 &&
      !hasUnevenSplits(lhs, shape) && !hasUnevenSplits(rhs, shape) &&
      lhs.getGroups()[0] == rhs.getGroups()[0] &&
      llvm::none_of(shape, ShapedType::isDynamic) &&
      succeeded(checkLayoutForShape(lhs, shape, nullptr)) &&
      succeeded(checkLayoutForShape(rhs, shape, nullptr))) {
    DistStatesAttr a = lhs.getStates()[0], b = rhs.getStates()[0];
    FailureOr<Mesh> mesh = refineMesh({a, b});
    if (succeeded(mesh)) {
      FailureOr<MeshLayout> la = toMeshLayout(a, *mesh);
      FailureOr<MeshLayout> lb = toMeshLayout(b, *mesh);
      if (succeeded(la) && succeeded(lb))
        return *la == *lb;
    }
  }
  if (!haveSameDevices(lhs, rhs))
    return false;
  for (int64_t device : lhs.getAllDevices()) {
    std::optional<Shard> lhsShard = getShard(lhs, shape, device);
    std::optional<Shard> rhsShard = getShard(rhs, shape, device);
    if (!lhsShard || !rhsShard)
      return false;
    const Shard &a = *lhsShard, &b = *rhsShard;
    // Which replica a device is does not change what it holds.
    if (a.offsets != b.offsets || a.sizes != b.sizes ||
        a.partialIndex != b.partialIndex || a.numPartials != b.numPartials ||
        a.reduction != b.reduction)
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The runtime's layout core
//===----------------------------------------------------------------------===//

loom::layout::Reduction loom::hspmd::toLayoutCore(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum:
    return layout::Reduction::Sum;
  case ReductionKind::Mean:
    return layout::Reduction::Mean;
  case ReductionKind::Max:
    return layout::Reduction::Max;
  case ReductionKind::Min:
    return layout::Reduction::Min;
  }
  llvm_unreachable("unknown reduction kind");
}

loom::layout::Layout loom::hspmd::toLayoutCore(UnionAttr attr) {
  layout::Layout core;
  switch (attr.getRelation()) {
  case UnionRelation::Split:
    core.relation = layout::Relation::Split;
    break;
  case UnionRelation::Replicated:
    core.relation = layout::Relation::Replicated;
    break;
  case UnionRelation::Partial:
    core.relation = layout::Relation::Partial;
    break;
  }
  core.splitDim = attr.getSplitDim();
  core.shares.assign(attr.getShares().begin(), attr.getShares().end());
  core.explicitSizes = attr.getExplicitSizes();
  core.reduction = toLayoutCore(attr.getReduction());
  for (auto [group, states] : llvm::zip_equal(attr.getGroups(), attr.getStates())) {
    layout::Member member;
    member.devices.assign(group.getDevices().begin(), group.getDevices().end());
    for (const Axis &axis : states.getAxes())
      member.states.axes.push_back(toLayoutCore(axis));
    core.members.push_back(std::move(member));
  }
  return core;
}

loom::layout::Axis loom::hspmd::toLayoutCore(const Axis &axis) {
  switch (axis.kind) {
  case AxisKind::Split:
    if (!axis.sizes.empty())
      return loom::layout::Axis::split(
          axis.dim, std::vector<int64_t>(axis.sizes.begin(), axis.sizes.end()));
    return loom::layout::Axis::split(axis.dim, axis.degree);
  case AxisKind::Duplicate:
    return loom::layout::Axis::duplicate(axis.degree);
  case AxisKind::Partial:
    return loom::layout::Axis::partial(axis.degree, toLayoutCore(axis.reduction));
  }
  llvm_unreachable("unknown axis kind");
}

FailureOr<SmallVector<int64_t>> loom::hspmd::getBlockSizes(const Axis &axis,
                                                           int64_t size) {
  absl::StatusOr<std::vector<int64_t>> blocks =
      loom::layout::getBlockSizes(toLayoutCore(axis), size);
  if (!blocks.ok())
    return failure();
  return SmallVector<int64_t>(blocks->begin(), blocks->end());
}

bool loom::hspmd::isEvenSplit(const Axis &axis, int64_t size) {
  return !axis.isSplit() || ShapedType::isDynamic(size) ||
         loom::layout::isEvenSplit(toLayoutCore(axis), size);
}

bool loom::hspmd::hasUnevenSplits(UnionAttr layout, ArrayRef<int64_t> shape) {
  for (int64_t dim = 0, e = shape.size(); dim < e; ++dim)
    if (isUnevenAlong(layout, shape, dim))
      return true;
  return false;
}

bool loom::hspmd::isUnevenAlong(UnionAttr layout, ArrayRef<int64_t> shape,
                                int64_t only) {
  if (!layout)
    return false;
  int64_t splitDim =
      layout.getRelation() == UnionRelation::Split ? layout.getSplitDim() : -1;
  FailureOr<SmallVector<int64_t>> extents = failure();
  if (splitDim >= 0 && splitDim < static_cast<int64_t>(shape.size()) &&
      !ShapedType::isDynamic(shape[splitDim]))
    extents = getGroupExtents(layout, shape[splitDim]);
  for (auto [member, states] : llvm::enumerate(layout.getStates()))
    for (const Axis &axis : states.getAxes()) {
      if (!axis.isSplit() || axis.dim != only ||
          axis.dim >= static_cast<int64_t>(shape.size()))
        continue;
      int64_t size = shape[axis.dim];
      if (axis.dim == splitDim)
        size = succeeded(extents) ? (*extents)[member] : ShapedType::kDynamic;
      if (!isEvenSplit(axis, size))
        return true;
    }
  return false;
}

//===----------------------------------------------------------------------===//
// Duality
//===----------------------------------------------------------------------===//

DistStatesAttr loom::hspmd::getGradientStates(
    DistStatesAttr states, function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<Axis> axes;
  for (const Axis &axis : states.getAxes()) {
    switch (axis.kind) {
    case AxisKind::Split:
      axes.push_back(axis);
      break;
    case AxisKind::Duplicate:
      axes.push_back(Axis::partial(axis.degree, ReductionKind::Sum));
      break;
    case AxisKind::Partial:
      if (axis.reduction != ReductionKind::Sum) {
        if (emitError)
          emitError() << "axis " << axis.str()
                      << " has no dual: only a pending sum (P(sum)) turns "
                         "into a duplicate in the gradient";
        return {};
      }
      axes.push_back(Axis::duplicate(axis.degree));
      break;
    }
  }
  return DistStatesAttr::get(states.getContext(), axes);
}

UnionAttr
loom::hspmd::getGradientLayout(UnionAttr layout,
                               function_ref<InFlightDiagnostic()> emitError) {
  MLIRContext *context = layout.getContext();
  SmallVector<DistStatesAttr> states;
  for (DistStatesAttr member : layout.getStates()) {
    DistStatesAttr dual = getGradientStates(member, emitError);
    if (!dual)
      return {};
    states.push_back(dual);
  }

  UnionRelation relation = layout.getRelation();
  ReductionKind reduction = ReductionKind::Sum;
  SmallVector<int64_t> shares(layout.getShares());
  bool explicitSizes = layout.getExplicitSizes();
  bool severalGroups = layout.getNumGroups() > 1;
  switch (layout.getRelation()) {
  case UnionRelation::Split: {
    // Members of a split union agree on the pending reduction: where one
    // member's gradient is a partial sum, the others hold theirs as a
    // degree-1 partial sum.
    bool anyPartial = llvm::any_of(states, [](DistStatesAttr member) {
      return member.getPartialKind().has_value();
    });
    if (anyPartial)
      for (DistStatesAttr &member : states)
        if (!member.getPartialKind()) {
          SmallVector<Axis> axes(member.getAxes());
          axes.push_back(Axis::partial(1, ReductionKind::Sum));
          member = DistStatesAttr::get(context, axes);
        }
    break;
  }
  case UnionRelation::Replicated:
    // Every group uses the whole value: each holds a part of the gradient.
    if (severalGroups)
      relation = UnionRelation::Partial;
    break;
  case UnionRelation::Partial:
    if (layout.getReduction() != ReductionKind::Sum) {
      if (emitError)
        emitError() << "a partial(" << stringifyReductionKind(layout.getReduction())
                    << ") union has no dual: only a pending sum across groups "
                       "turns into a replicated gradient";
      return {};
    }
    relation = UnionRelation::Replicated;
    shares.clear();
    // Replicated groups hold complete values, so a member that duplicated
    // its contribution (and now holds a partial sum of the gradient) has no
    // place in the dual.
    if (severalGroups)
      for (auto [i, member] : llvm::enumerate(states))
        if (member.getPartialKind() && member.getPartialDegree() > 1) {
          if (emitError)
            emitError() << "union member " << i
                        << " duplicates its contribution to a partial(sum) "
                           "union, so its gradient would be a partial sum "
                           "inside a replicated union, which has no layout";
          return {};
        }
    break;
  }
  if (relation == UnionRelation::Replicated && severalGroups)
    for (DistStatesAttr &member : states)
      if (member.getPartialKind()) {
        // Only degree-1 partial axes are left here; drop them.
        SmallVector<Axis> axes;
        for (const Axis &axis : member.getAxes())
          if (!axis.isPartial())
            axes.push_back(axis);
        member = DistStatesAttr::get(context, axes);
      }
  return UnionAttr::get(context, relation, layout.getSplitDim(), reduction,
                        shares, explicitSizes, layout.getGroups(), states);
}

StrategySetAttr
loom::hspmd::getGradientLayout(StrategySetAttr layouts,
                               function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<UnionAttr> duals;
  for (auto [name, layout] :
       llvm::zip_equal(layouts.getNames(), layouts.getLayouts())) {
    auto withStrategy = [&, name = name]() {
      InFlightDiagnostic diag = emitError();
      diag << "strategy '" << name.getValue() << "': ";
      return diag;
    };
    UnionAttr dual = getGradientLayout(
        layout, emitError ? function_ref<InFlightDiagnostic()>(withStrategy)
                          : function_ref<InFlightDiagnostic()>());
    if (!dual)
      return {};
    duals.push_back(dual);
  }
  return StrategySetAttr::get(layouts.getContext(), layouts.getNames(), duals,
                              layouts.getOptimizerIndex());
}

Attribute
loom::hspmd::getGradientLayout(Attribute layout,
                               function_ref<InFlightDiagnostic()> emitError) {
  if (auto layoutUnion = dyn_cast<UnionAttr>(layout))
    return getGradientLayout(layoutUnion, emitError);
  if (auto set = dyn_cast<StrategySetAttr>(layout))
    return getGradientLayout(set, emitError);
  return {};
}
