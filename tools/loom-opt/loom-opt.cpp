//===- loom-opt.cpp - Loom's optimizer driver -----------------------------===//
//
// An mlir-opt for Loom: Loom's dialects and passes plus the upstream dialects
// Loom programs use.
//
//===----------------------------------------------------------------------===//

#include "dialects/InitAllDialects.h"
#include "passes/Passes.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  loom::registerAllDialects(registry);
  loom::registerLoomPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
