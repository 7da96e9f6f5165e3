//===- HSPMDDialect.cpp - The hspmd dialect -------------------------------===//

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace loom::hspmd;

#include "dialects/hspmd/IR/HSPMDDialect.cpp.inc"

void HSPMDDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/hspmd/IR/HSPMDOps.cpp.inc"
      >();
}

/// Checks that every device a layout names under `op` is in `cluster`. Runs
/// once for the module, after the nested ops verified.
static LogicalResult verifyDevicesInCluster(Operation *root,
                                            ClusterAttr cluster) {
  WalkResult result = root->walk([&](Operation *op) {
    if (op == root)
      return WalkResult::advance();
    WalkResult attrResult =
        op->getAttrDictionary().walk([&](DeviceGroupAttr group) {
          for (int64_t id : group.getDevices()) {
            if (cluster.lookup(id))
              continue;
            op->emitOpError() << "uses device " << id
                              << ", which is not in the module's cluster";
            return WalkResult::interrupt();
          }
          return WalkResult::advance();
        });
    return attrResult;
  });
  return failure(result.wasInterrupted());
}

/// Checks a per-operand or per-result layout array against `values`.
static LogicalResult verifyLayoutArray(Operation *op, NamedAttribute attr,
                                       ValueRange values, StringRef what) {
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array)
    return op->emitOpError() << "'" << attr.getName().getValue()
                             << "' must be an array of #hspmd.union, got "
                             << attr.getValue();
  SmallVector<RankedTensorType> types;
  for (Value value : values)
    if (auto type = dyn_cast<RankedTensorType>(value.getType()))
      types.push_back(type);
  if (array.size() != types.size())
    return op->emitOpError()
           << "'" << attr.getName().getValue() << "' has " << array.size()
           << " layouts for " << types.size() << " ranked tensor " << what
           << "s";
  for (auto [index, entry, type] : llvm::enumerate(array, types)) {
    auto layout = dyn_cast<UnionAttr>(entry);
    if (!layout)
      return op->emitOpError()
             << "'" << attr.getName().getValue() << "' entry " << index
             << " must be a #hspmd.union, got " << entry;
    size_t position = index;
    if (failed(verifyLayoutForShape(layout, type.getShape(), [&]() {
          InFlightDiagnostic diag = op->emitOpError();
          diag << "layout of tensor " << what << " " << position << ": ";
          return diag;
        })))
      return failure();
  }
  return success();
}

/// Checks an `hspmd.layout` argument or result attribute against `type`.
static LogicalResult verifyValueLayout(Operation *op, Location loc,
                                       NamedAttribute attr, Type type,
                                       StringRef what, unsigned index) {
  if (attr.getName() == HSPMDDialect::getGlobalLayoutAttrName()) {
    // On a specialised function: the value is one device's block of a
    // global tensor laid out as `layout`; the function runs on one of its
    // groups (`hspmd.group`, or the only one).
    auto layout = dyn_cast<UnionAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!layout || !tensor)
      return emitError(loc) << "'" << attr.getName().getValue() << "' of "
                            << what << " " << index
                            << " must be a #hspmd.union on a ranked tensor, "
                               "got "
                            << attr.getValue();
    int64_t member = 0;
    if (layout.getNumGroups() > 1) {
      auto group = op->getAttrOfType<DeviceGroupAttr>(
          HSPMDDialect::getGroupAttrName());
      member = group ? llvm::find(layout.getGroups(), group) -
                           layout.getGroups().begin()
                     : layout.getNumGroups();
      if (member == layout.getNumGroups())
        return emitError(loc)
               << "'" << attr.getName().getValue() << "' of " << what << " "
               << index << " is over groups none of which is the function's "
               << "'" << HSPMDDialect::getGroupAttrName() << "'";
    }
    SmallVector<int64_t> global(tensor.getShape());
    for (const Axis &axis : layout.getStates()[member].getAxes())
      if (axis.isSplit() && axis.dim < static_cast<int64_t>(global.size()) &&
          !ShapedType::isDynamic(global[axis.dim])) {
        // A block of explicit sizes: the dimension is their sum (the
        // function may hold any of the blocks). A balanced block times the
        // degree is a size that such blocks fit.
        if (!axis.sizes.empty()) {
          global[axis.dim] = 0;
          for (int64_t size : axis.sizes)
            global[axis.dim] += size;
        } else {
          global[axis.dim] *= axis.degree;
        }
      }
    // The group's share of a dimension split across groups.
    int64_t dim = layout.getSplitDim();
    if (layout.getRelation() == UnionRelation::Split &&
        dim < static_cast<int64_t>(global.size()) &&
        !ShapedType::isDynamic(global[dim])) {
      ArrayRef<int64_t> shares = layout.getShares();
      int64_t sum = 0;
      for (int64_t share : shares)
        sum += share;
      if (layout.getExplicitSizes())
        global[dim] = sum;
      else if (global[dim] % shares[member] == 0)
        global[dim] = global[dim] / shares[member] * sum;
    }
    return verifyLayoutForShape(layout, global, [&]() {
      InFlightDiagnostic diag = emitError(loc);
      diag << "global layout of " << what << " " << index << ": ";
      return diag;
    });
  }
  if (attr.getName() == HSPMDDialect::getWholeLayoutAttrName()) {
    // On a part of a function partitioned across groups: the layout of the
    // whole tensor of which the value is the group's part.
    auto layout = dyn_cast<UnionAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!layout || !tensor)
      return emitError(loc) << "'" << attr.getName().getValue() << "' of "
                            << what << " " << index
                            << " must be a #hspmd.union on a ranked tensor, "
                               "got "
                            << attr.getValue();
    return success();
  }
  if (attr.getName() != HSPMDDialect::getLayoutAttrName())
    return emitError(loc) << "unknown hspmd " << what << " attribute '"
                           << attr.getName().getValue() << "'";
  Attribute layout = attr.getValue();
  if (!isa<UnionAttr, StrategySetAttr>(layout))
    return emitError(loc) << "'" << attr.getName().getValue() << "' of "
                           << what << " " << index
                           << " must be a #hspmd.union or #hspmd.strategies, "
                              "got "
                           << layout;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError(loc) << "'" << attr.getName().getValue() << "' on "
                           << what << " " << index << " of type " << type
                           << "; layouts apply to ranked tensors";
  return verifyLayoutForShape(layout, tensor.getShape(), [&]() {
    InFlightDiagnostic diag = emitError(loc);
    diag << "layout of " << what << " " << index << ": ";
    return diag;
  });
}

LogicalResult HSPMDDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  Type type;
  Location loc = op->getLoc();
  Region &region = op->getRegion(regionIndex);
  if (!region.empty())
    loc = region.getArgument(argIndex).getLoc();
  if (auto function = dyn_cast<FunctionOpInterface>(op))
    type = function.getArgumentTypes()[argIndex];
  else
    type = region.getArgument(argIndex).getType();
  return verifyValueLayout(op, loc, attr, type, "argument", argIndex);
}

LogicalResult HSPMDDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' result attributes belong on functions";
  return verifyValueLayout(op, op->getLoc(), attr,
                           function.getResultTypes()[resultIndex],
                           "result", resultIndex);
}

LogicalResult HSPMDDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == getOperandLayoutsAttrName())
    return verifyLayoutArray(op, attr, op->getOperands(), "operand");
  if (attr.getName() == getResultLayoutsAttrName())
    return verifyLayoutArray(op, attr, op->getResults(), "result");
  if (attr.getName() == getStrategyAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !name || name.getValue().empty())
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a non-empty string on a function, "
                                "got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == getPartsAttrName() ||
      attr.getName() == getPartOfAttrName() ||
      attr.getName() == getPartAttrName()) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' belongs on a function";
    bool ok = attr.getName() == getPartsAttrName()
                  ? isa<ArrayAttr>(attr.getValue()) &&
                        llvm::all_of(cast<ArrayAttr>(attr.getValue()),
                                     llvm::IsaPred<FlatSymbolRefAttr>)
              : attr.getName() == getPartOfAttrName()
                  ? isa<FlatSymbolRefAttr>(attr.getValue())
                  : isa<IntegerAttr>(attr.getValue());
    if (!ok)
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be "
                             << (attr.getName() == getPartsAttrName()
                                     ? "an array of function symbols"
                                 : attr.getName() == getPartOfAttrName()
                                     ? "a function symbol"
                                     : "an integer")
                             << ", got " << attr.getValue();
    return success();
  }
  // On a collective or rank query of a program that merges several groups'
  // ops (pipeline stages on overlapping groups): the group it runs over.
  if (attr.getName() == getGroupAttrName() && !isa<FunctionOpInterface>(op) &&
      op->getDialect() && op->getDialect()->getNamespace() == getNamespace()) {
    if (!isa<DeviceGroupAttr>(attr.getValue()))
      return op->emitError() << "'" << getGroupAttrName()
                             << "' must be a #hspmd.group, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == getWeightFetchAttrName()) {
    if (!isa<SparseAllGatherOp, SparseAllGatherStartOp>(op) ||
        !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << getWeightFetchAttrName()
                             << "' marks an hspmd.sparse_all_gather (or its "
                                "start) as a unit attribute";
    return success();
  }
  if (attr.getName() == getGroupAttrName() ||
      attr.getName() == getSpecializesAttrName()) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' belongs on a specialised function";
    if (attr.getName() == getGroupAttrName() &&
        !isa<DeviceGroupAttr>(attr.getValue()))
      return op->emitError() << "'" << getGroupAttrName()
                             << "' must be a #hspmd.group, got "
                             << attr.getValue();
    if (attr.getName() == getSpecializesAttrName() &&
        !isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitError() << "'" << getSpecializesAttrName()
                             << "' must name the global function, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == getDevicesAttrName()) {
    auto devices = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto group = op->getAttrOfType<DeviceGroupAttr>(getGroupAttrName());
    if (!isa<FunctionOpInterface>(op) || !devices || !group)
      return op->emitError()
             << "'" << getDevicesAttrName()
             << "' belongs on a specialised function with an '"
             << getGroupAttrName() << "', as an array of device ids";
    int64_t last = -1;
    for (int64_t device : devices.asArrayRef()) {
      int64_t index = group.indexOf(device);
      if (index <= last)
        return op->emitError()
               << "'" << getDevicesAttrName() << "' lists device " << device
               << ", which is not in the group " << group
               << " after the devices before it";
      last = index;
    }
    if (devices.empty())
      return op->emitError() << "'" << getDevicesAttrName() << "' is empty";
    return success();
  }
  if (attr.getName() != getClusterAttrName())
    return op->emitError() << "unknown hspmd attribute '"
                           << attr.getName().getValue()
                           << "'";
  auto cluster = dyn_cast<ClusterAttr>(attr.getValue());
  if (!cluster)
    return op->emitError() << "'" << getClusterAttrName()
                           << "' must be a #hspmd.cluster, got "
                           << attr.getValue();
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << getClusterAttrName()
                           << "' belongs on a builtin.module";
  return verifyDevicesInCluster(op, cluster);
}
