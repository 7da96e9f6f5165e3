//===- HSPMDLayout.cpp - Layout arithmetic over hspmd unions --------------===//

#include "dialects/hspmd/IR/HSPMDLayout.h"

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
      if (ShapedType::isDynamic(size) || (isShare && extents.empty()) ||
          size % axis.degree == 0)
        continue;
      return fail([&](InFlightDiagnostic &diag) {
        if (isShare)
          diag << "union member " << member << "'s share of dimension "
               << axis.dim << " (size " << size
               << ") is not divisible by split degree " << axis.degree;
        else
          diag << "dimension " << axis.dim << " of size " << size
               << " is not divisible by split degree " << axis.degree;
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
      int64_t chunk = shard.sizes[axis.dim] / axis.degree;
      shard.offsets[axis.dim] += coord * chunk;
      shard.sizes[axis.dim] = chunk;
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
