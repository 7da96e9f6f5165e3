//===- loom-opt.cpp - Loom's optimizer driver -----------------------------===//
//
// An mlir-opt for Loom: Loom's dialects and passes plus the upstream dialects
// Loom programs use.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"
#include "dialects/InitAllDialects.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  loom::registerAllDialects(registry);
  loom::registerLoomPasses();
  loom::registerLoomPipelines();
  loom::codegen::registerLoomCodegenPasses();
  // Generic upstream transforms (canonicalize, cse, inline, ...); no
  // dialect-specific upstream passes, in particular none of `shard`'s.
  mlir::registerTransformsPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
