//===- GradientOpInterfaceImpl.cpp - Gradients of hspmd ops ---------------===//
//
// Layout annotations map to their gradients by duality (see
// getGradientLayout in HSPMDLayout.h): a split stays the same split, a
// duplicate becomes a partial sum, a partial sum becomes a duplicate.
// Nothing else about layouts is copied into the backward pass; layout
// propagation fills in the rest.
//
//===----------------------------------------------------------------------===//

#include "dialects/hspmd/Extensions/GradientOpInterfaceImpl.h"

#include "dialects/Interfaces/GradientOpInterface.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// The dual of `layout`, or null after an error on `op` that names the
/// annotated value `value` and says why there is none.
Attribute getDualOrReport(Operation *op, Value value, Attribute layout,
                          StringRef role) {
  auto emitError = [&]() {
    InFlightDiagnostic diag = op->emitOpError();
    diag << "cannot lay out the gradient of " << formatValueName(value);
    if (!role.empty())
      diag << " (" << role << " layout)";
    diag << ": ";
    return diag;
  };
  return getGradientLayout(layout, emitError);
}

/// d(annotate(x, L)) = annotate(dy, dual(L)).
struct AnnotateGradientModel
    : GradientOpInterface::ExternalModel<AnnotateGradientModel, AnnotateOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    auto annotate = cast<AnnotateOp>(op);
    Attribute dual = getDualOrReport(op, annotate.getResult(),
                                     annotate.getLayout(), "");
    if (!dual)
      return failure();
    operandGrads.push_back(
        AnnotateOp::create(builder, op->getLoc(), resultGrads[0], dual));
    return success();
  }
};

/// d(reshard(x, S -> T)) = reshard(dy, dual(T) -> dual(S)).
struct ReshardGradientModel
    : GradientOpInterface::ExternalModel<ReshardGradientModel, ReshardOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    auto reshard = cast<ReshardOp>(op);
    Attribute source = getDualOrReport(op, reshard.getResult(),
                                       reshard.getSource(), "source");
    if (!source)
      return failure();
    Attribute target = getDualOrReport(op, reshard.getResult(),
                                       reshard.getTarget(), "target");
    if (!target)
      return failure();
    operandGrads.push_back(ReshardOp::create(builder, op->getLoc(),
                                             resultGrads[0], target, source));
    return success();
  }
};

} // namespace

void loom::hspmd::registerGradientOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, HSPMDDialect *) {
    AnnotateOp::attachInterface<AnnotateGradientModel>(*context);
    ReshardOp::attachInterface<ReshardGradientModel>(*context);
  });
}
