//===- Passes.h - Loom's passes ---------------------------------*- C++ -*-===//

#ifndef LOOM_PASSES_PASSES_H
#define LOOM_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace loom {

/// The optimizer of a training step (nn-training-step).
enum class OptimizerKind { SGD, AdamW };

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_PASSES_H
