//===- HSPMDDialect.cpp - The hspmd dialect -------------------------------===//

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

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

LogicalResult HSPMDDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
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
