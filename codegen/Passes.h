//===- Passes.h - Loom's code-generation passes -----------------*- C++ -*-===//

#ifndef LOOM_CODEGEN_PASSES_H
#define LOOM_CODEGEN_PASSES_H

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace loom::codegen {

#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"

} // namespace loom::codegen

#endif // LOOM_CODEGEN_PASSES_H
