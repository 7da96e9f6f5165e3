//===- HSPMDOps.cpp - Operations of the hspmd dialect ---------------------===//

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"

using namespace mlir;
using namespace loom::hspmd;

LogicalResult AnnotateOp::verify() {
  return verifyLayoutForShape(getLayout(), getInput().getType().getShape(),
                              [&]() { return emitOpError(); });
}

LogicalResult ReshardOp::verify() {
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  auto withRole = [&](StringRef role) {
    return [this, role]() {
      InFlightDiagnostic diag = emitOpError();
      diag << role << " layout: ";
      return diag;
    };
  };
  if (failed(verifyLayoutForShape(getSource(), shape, withRole("source"))) ||
      failed(verifyLayoutForShape(getTarget(), shape, withRole("target"))))
    return failure();
  auto sourceSet = dyn_cast<StrategySetAttr>(getSource());
  auto targetSet = dyn_cast<StrategySetAttr>(getTarget());
  if (!sourceSet != !targetSet)
    return emitOpError("reshards between a union and a strategy set; both "
                       "layouts must be of the same kind");
  if (sourceSet && sourceSet.getNames() != targetSet.getNames())
    return emitOpError("source and target strategy sets name different "
                       "strategies");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/hspmd/IR/HSPMDOps.cpp.inc"
