//===- loom-run.cpp - Runs Loom programs ----------------------------------===//
//
// `loom-run --interpret FILE.mlir ...` evaluates an nn program with the
// reference interpreter; see runtime/interpreter/RunMain.cpp for the flags.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/RunMain.h"

int main(int argc, char **argv) { return loom::interp::loomRunMain(argc, argv); }
