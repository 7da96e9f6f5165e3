//===- loom-tblgen.cpp - Loom's TableGen backends -------------------------===//
//
// mlir-tblgen's driver with Loom's own backends (KernelContractGen.cpp):
// what the nn ops' kernel contracts generate.
//
//===----------------------------------------------------------------------===//

#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
