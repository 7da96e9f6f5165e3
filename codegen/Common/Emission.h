//===- Emission.h - Final emission of the call layer for a target -*- C++
//-*-===//
//
// The call layer (--loom-lower-to-calls) is target-neutral; a target's
// final emission only spells it: the namespace of its kernels and runtime,
// the header generated code includes, the type of a communicator. Every
// target's runtime provides the same names in its namespace: `Arena`,
// `at<T>(arena, offset)`, `subgroup(devices, mesh, axes)`, `ExchangePlan`,
// `tracePhaseBegin/End`, `runPrograms<...>`, one function per kernel and
// collective.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_EMISSION_H
#define LOOM_CODEGEN_COMMON_EMISSION_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace loom::codegen {

struct TargetSpelling {
  /// The target's name in options and messages ("host", "cuda").
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

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_EMISSION_H
