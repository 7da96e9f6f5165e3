//===- NNOps.h - Operations of the nn dialect ------------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_NN_IR_NNOPS_H
#define LOOM_DIALECTS_NN_IR_NNOPS_H

#include "dialects/Interfaces/GradientOpInterface.h"
#include "dialects/Interfaces/LayoutRuleOpInterface.h"
#include "dialects/Interfaces/LocalView.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <utility>

namespace loom::nn {

/// Where the shape checks of an op report a problem: on the op itself (the
/// verifier), at a location in the op's name (parsing and builders, which
/// have no op yet), or nowhere (inference without a location). Calling it
/// emits the pieces streamed together and returns failure.
class ShapeDiag {
public:
  explicit ShapeDiag(mlir::Operation *op) : op(op) {}
  ShapeDiag(std::optional<mlir::Location> loc, llvm::StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args>
  mlir::LogicalResult operator()(Args &&...args) const {
    if (op) {
      mlir::InFlightDiagnostic diag = op->emitOpError();
      (diag << ... << std::forward<Args>(args));
      return diag;
    }
    if (!loc)
      return mlir::failure();
    mlir::InFlightDiagnostic diag = mlir::emitError(*loc);
    diag << "'" << opName << "' op ";
    (diag << ... << std::forward<Args>(args));
    return diag;
  }

private:
  mlir::Operation *op = nullptr;
  std::optional<mlir::Location> loc;
  llvm::StringRef opName;
};

namespace OpTrait {

/// Verifies an op by running its shape inference (`inferShape`) with
/// diagnostics on the op, then comparing the inferred result types with the
/// actual ones. It runs before InferTypeOpInterface's own check (a region
/// verifier), so a malformed op gets one diagnostic, from the check that
/// failed.
template <typename ConcreteType>
class InferShape : public mlir::OpTrait::TraitBase<ConcreteType, InferShape> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    llvm::SmallVector<mlir::Type> inferred;
    if (mlir::failed(ConcreteType::inferShape(
            typename ConcreteType::Adaptor(llvm::cast<ConcreteType>(op)),
            inferred, ShapeDiag(op))))
      return mlir::failure();
    if (inferred.size() != op->getNumResults())
      return op->emitOpError()
             << "has " << op->getNumResults() << " results but "
             << inferred.size() << " were inferred";
    for (auto [index, actual] : llvm::enumerate(op->getResultTypes()))
      if (actual != inferred[index])
        return op->emitOpError()
               << "result #" << index << " has type " << actual
               << " but the operands imply " << inferred[index];
    return mlir::success();
  }
};

} // namespace OpTrait

/// The model FLOPs of one op (docs/training.md, "Throughput"): two per
/// multiply-add of nn.matmul, and of the attention's products over every
/// query-key pair (nn.attention_grad: twice nn.attention's); 0 for others.
double getModelFlops(mlir::Operation *op);
/// The sum over `root` and the ops nested in it.
double countModelFlops(mlir::Operation *root);

} // namespace loom::nn

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.h.inc"

#endif // LOOM_DIALECTS_NN_IR_NNOPS_H
