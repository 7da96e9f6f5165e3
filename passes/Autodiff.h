//===- Autodiff.h - Reverse-mode differentiation of functions --*- C++ -*-===//
//
// The entry point that nn-autodiff and nn-training-step share: differentiate
// one forward function. See the nn-autodiff pass description.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_AUTODIFF_H
#define LOOM_PASSES_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace loom {

/// What differentiateInPlace built.
struct Gradients {
  /// The loss (the forward function's returned value).
  mlir::Value loss;
  /// The indices of the `nn.param` arguments, in order.
  llvm::SmallVector<unsigned> paramArgs;
  /// The gradient of the loss with respect to each of them.
  llvm::SmallVector<mlir::Value> paramGrads;
  /// The number of ops added beyond the forward ops that are still needed.
  unsigned numGradientOps = 0;
};

/// Whether `func` is one that autodiff applies to when no function is
/// named: it has a body, `nn.param` arguments, and returns one 0-d float
/// tensor.
bool isForwardFunction(mlir::func::FuncOp func);

/// The forward functions a pass works on: the function named `name`, or
/// when `name` is empty every forward function (isForwardFunction) of
/// `module`. Fails, after reporting it, when there is no function `name`.
mlir::LogicalResult
collectForwardFunctions(mlir::ModuleOp module, llvm::StringRef name,
                        llvm::SmallVectorImpl<mlir::func::FuncOp> &functions);

/// Runs `create` on every forward function of `module`
/// (collectForwardFunctions with `name`), on all of them even after one
/// fails; fails when collecting or some `create` failed.
mlir::LogicalResult forEachForwardFunction(
    mlir::ModuleOp module, llvm::StringRef name,
    llvm::function_ref<mlir::LogicalResult(mlir::func::FuncOp,
                                           mlir::SymbolTable &)>
        create);

/// Differentiates `func`, a forward function returning a scalar loss, in
/// place: after the forward ops it computes the gradient of the loss with
/// respect to every `nn.param` argument, returns (loss, gradients...) in
/// argument order, and keeps only the ops these need. Meant for a copy of
/// the forward function. On failure every problem found has been reported,
/// at its location, and `func` is left in an unspecified state (discard it).
mlir::FailureOr<Gradients> differentiateInPlace(mlir::func::FuncOp func);

/// A detached copy of a forward function, differentiated in place.
struct DifferentiatedCopy {
  mlir::func::FuncOp func;
  Gradients gradients;
};

/// Differentiates a detached copy of `forward` (under the forward
/// function's name, which diagnostics use) for a new function `name`.
/// Fails after a diagnostic when `symbols` has `name` already or the
/// differentiation fails (the copy is then erased).
mlir::FailureOr<DifferentiatedCopy>
differentiateCopy(mlir::func::FuncOp forward, llvm::StringRef name,
                  mlir::SymbolTable &symbols);

} // namespace loom

#endif // LOOM_PASSES_AUTODIFF_H
