//===- EmitHost.cpp - Final emission of the call layer for the host -------===//
//
// The host target (runtime/host/Program.h): `loom.kernel.<op>` and
// `loom.comm.<op>` calls name `loom::host::<op>` (Loom's CPU kernels, MPI
// collectives), the arena is host memory, communicators come from the MPI
// runtime's cache.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Emission.h"
#include "codegen/Passes.h"

namespace loom::codegen {
#define GEN_PASS_DEF_EMITHOSTPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom::codegen;

namespace {

struct EmitHostPass : loom::codegen::impl::EmitHostPassBase<EmitHostPass> {
  void runOnOperation() override {
    if (failed(emitForTarget(getOperation(), hostSpelling())))
      signalPassFailure();
  }
};

} // namespace
