//===- loom-run.cpp - Runs Loom programs ----------------------------------===//
//
// `loom-run --interpret FILE.mlir ...` evaluates an nn program with the
// reference interpreter; see tools/loom-run/RunMain.cpp for the flags.
//
//===----------------------------------------------------------------------===//

#include "tools/loom-run/RunMain.h"

int main(int argc, char **argv) {
  return loom::interp::loomRunMain(argc, argv);
}
