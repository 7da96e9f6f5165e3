//===- SelectShares.cpp - Shares of splits across groups from the cluster -===//
//
// Rewrites the shares of every split across device groups so that each
// group's share follows its speed within its memory (selectShares). See
// the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Utils.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDShares.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <numeric>

namespace loom {
#define GEN_PASS_DEF_SELECTSHARESPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// A split across groups written on a tensor of `type`.
struct Split {
  UnionAttr layout;
  RankedTensorType type;
  Location loc;
};

struct SelectSharesPass : loom::impl::SelectSharesPassBase<SelectSharesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto cluster =
        module->getAttrOfType<ClusterAttr>(HSPMDDialect::getClusterAttrName());
    if (alignment < 1) {
      emitError(module.getLoc())
          << "alignment must be at least 1, got " << alignment;
      return signalPassFailure();
    }
    if (!(reservedGib >= 0.0)) {
      emitError(module.getLoc())
          << "reserved-gib must be non-negative, got " << reservedGib;
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(selectFor(func, cluster)))
        return signalPassFailure();
  }

  /// The splits across groups `func`'s layouts write, with their tensors.
  SmallVector<Split> collectSplits(func::FuncOp func) {
    SmallVector<Split> splits;
    (void)forEachUserLayout(
        func, [&](Attribute attr, Type type, Location loc, Operation *) {
          auto layout = dyn_cast<UnionAttr>(attr);
          auto tensor = dyn_cast<RankedTensorType>(type);
          if (layout && tensor && layout.getNumGroups() > 1 &&
              layout.getRelation() == UnionRelation::Split)
            splits.push_back({layout, tensor, loc});
          return success();
        });
    return splits;
  }

  LogicalResult selectFor(func::FuncOp func, ClusterAttr cluster) {
    SmallVector<Split> splits = collectSplits(func);
    if (splits.empty())
      return success();
    const Split &first = splits.front();
    if (!cluster)
      return emitError(first.loc)
             << "layout " << first.layout
             << " splits across device groups but the module has no "
             << HSPMDDialect::getClusterAttrName()
             << " to choose shares from";
    ArrayRef<DeviceGroupAttr> groups = first.layout.getGroups();
    int64_t total = first.type.getDimSize(first.layout.getSplitDim());
    // The bytes one unit of the split dimension costs: of the largest
    // tensor split that way.
    int64_t bytesPerUnit = 1;
    for (const Split &split : splits) {
      int64_t dim = split.layout.getSplitDim();
      if (split.layout.getGroups() != groups ||
          split.type.getDimSize(dim) != total || !split.type.hasStaticShape()) {
        InFlightDiagnostic diag =
            emitError(split.loc)
            << "layout " << split.layout << " on " << split.type
            << " splits other groups or a dimension of another size than "
            << first.layout << " on " << first.type
            << "; the splits of one function share their shares";
        diag.attachNote(first.loc) << "first split here";
        return diag;
      }
      int64_t elementBytes = (split.type.getElementTypeBitWidth() + 7) / 8;
      bytesPerUnit = std::max(bytesPerUnit, split.type.getNumElements() /
                                                std::max<int64_t>(total, 1) *
                                                elementBytes);
    }
    int64_t reserved =
        static_cast<int64_t>(std::llround(reservedGib * (1LL << 30)));
    SmallVector<GroupCapacity> capacities;
    std::string why;
    for (DeviceGroupAttr group : groups) {
      FailureOr<GroupCapacity> capacity =
          getGroupCapacity(cluster, group, bytesPerUnit, reserved, why);
      if (failed(capacity))
        return emitError(first.loc) << "cannot choose shares: " << why;
      capacities.push_back(*capacity);
    }
    // Each group cuts its share again by its own split degree of the
    // dimension: shares are multiples of every such degree too.
    int64_t unit = alignment;
    for (const Split &split : splits)
      for (DistStatesAttr states : split.layout.getStates()) {
        int64_t degree = 1;
        for (const Axis &axis : states.getAxes())
          if (axis.isSplit() && axis.dim == split.layout.getSplitDim()) {
            // Explicit blocks cover the share they were written for; a new
            // share would leave them short or over.
            if (!axis.sizes.empty())
              return emitError(split.loc)
                     << "cannot choose shares for " << split.layout
                     << ": a group cuts its share into explicit blocks ("
                     << axis.str() << "), which fix the share";
            degree *= axis.degree;
          }
        unit = std::lcm(unit, degree);
      }
    FailureOr<SmallVector<int64_t>> sizes =
        selectShares(capacities, total, unit, why);
    if (failed(sizes))
      return emitError(first.loc) << "cannot choose shares for dimension "
                                  << first.layout.getSplitDim() << " of "
                                  << first.type << ": " << why;
    int64_t divisor = 0;
    for (int64_t size : *sizes)
      divisor = std::gcd(divisor, size);
    SmallVector<int64_t> ratio;
    for (int64_t size : *sizes)
      ratio.push_back(size / divisor);

    // Rewrite every split union of the function to the ratio.
    auto rewrite = [&](Attribute attr) -> Attribute {
      auto layout = dyn_cast_or_null<UnionAttr>(attr);
      if (!layout || layout.getNumGroups() < 2 ||
          layout.getRelation() != UnionRelation::Split)
        return attr;
      return UnionAttr::get(layout.getContext(), layout.getRelation(),
                            layout.getSplitDim(), layout.getReduction(), ratio,
                            /*explicitSizes=*/false, layout.getGroups(),
                            layout.getStates());
    };
    rewriteUserLayouts(func, rewrite);
    ++numFunctions;
    return success();
  }
};

} // namespace
