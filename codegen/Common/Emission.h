//===- Emission.h - Final emission of the call layer for a target -*- C++
//-*-===//
//
// The call layer (--loom-lower-to-calls) is target-neutral; a target's
// final emission only spells it: the namespace of its kernels and runtime,
// the header generated code includes, the type of a communicator. Every
// target's runtime provides the same names in its namespace: `Arena`,
// `at<T>(arena, offset)`, `subgroup(devices, mesh, axes)`, `ExchangePlan`,
// `tracePhaseBegin/End`, `createProgram<...>`, one function per kernel and
// collective.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_EMISSION_H
#define LOOM_CODEGEN_COMMON_EMISSION_H

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace loom::codegen {

struct TargetSpelling {
  /// The target's name in options and messages ("host", "cuda", "ascend").
  std::string name;
  /// The namespace of its runtime and kernels ("loom::host").
  std::string ns;
  /// The one header generated code includes.
  std::string header;
  /// The C++ type of a communicator field.
  std::string commType;
};

/// Spells the call layer in `module` for `target`, adding the header and
/// `main`. Fails, after a diagnostic, when the module is not a call layer.
mlir::LogicalResult emitForTarget(mlir::ModuleOp module,
                                  const TargetSpelling &target);

/// The same with each program (class) spelled for its own target, as
/// `targetOf` says (null: fail, it has reported why). Programs of different
/// targets share the device driver (runtime/host/DeviceSupport.h), given
/// each program's target; the headers of every target are included.
mlir::LogicalResult emitForTargets(
    mlir::ModuleOp module,
    llvm::function_ref<const TargetSpelling *(mlir::emitc::ClassOp)> targetOf);

/// Reports, at the op, every kernel call in `scope` that `target` has no
/// kernel for: an op its kernel contract does not list the target for, or
/// an element type it lists no kernels of (KernelContract.h), once per op
/// and element type; fails if there is one. emitForTargets checks every
/// program against its target.
mlir::LogicalResult checkKernels(mlir::Operation *scope,
                                 const TargetSpelling &target);

/// Reports the first collective in `scope` on f64, which HCCL does not
/// reduce (EmitAscend.cpp); fails if there is one.
mlir::LogicalResult checkAscendCollectives(mlir::Operation *scope);

/// The target that runs devices of `kind` (a cluster description's device
/// kind: "cpu", "h200", "910b", ...), or null.
const TargetSpelling *targetOfKind(llvm::StringRef kind);

/// The spellings of the targets.
const TargetSpelling &hostSpelling();
const TargetSpelling &cudaSpelling();
const TargetSpelling &ascendSpelling();

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_EMISSION_H
