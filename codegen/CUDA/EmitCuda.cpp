//===- EmitCuda.cpp - Final emission of the call layer for CUDA -----------===//
//
// The CUDA target (runtime/cuda/Program.h): `loom.kernel.<op>` and
// `loom.comm.<op>` calls name `loom::cuda::<op>` (Loom's CUDA kernels,
// cuBLAS, NCCL), the arena is device memory, communicators are NCCL's.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Emission.h"
#include "codegen/Passes.h"

namespace loom::codegen {
#define GEN_PASS_DEF_EMITCUDAPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom::codegen;

namespace {

struct EmitCudaPass : loom::codegen::impl::EmitCudaPassBase<EmitCudaPass> {
  void runOnOperation() override {
    if (failed(emitForTarget(getOperation(), cudaSpelling())))
      signalPassFailure();
  }
};

} // namespace
