//===- EmitAscend.cpp - Final emission of the call layer for Ascend -------===//
//
// The Ascend target (runtime/ascend/Program.h): `loom.kernel.<op>` and
// `loom.comm.<op>` calls name `loom::ascend::<op>` (aclnn operators called
// in two phases, HCCL collectives), the arena is device memory from
// aclrtMalloc, communicators are HCCL's. Only ops and element types with an
// Ascend kernel (the ops' kernel contracts, checkKernels) can be emitted;
// any other is an error at the op, as is a collective on f64.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Emission.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"

namespace loom::codegen {
#define GEN_PASS_DEF_EMITASCENDPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom::codegen;

namespace {

struct EmitAscendPass
    : loom::codegen::impl::EmitAscendPassBase<EmitAscendPass> {
  void runOnOperation() override {
    if (failed(checkAscendCollectives(getOperation())) ||
        failed(emitForTarget(getOperation(), ascendSpelling())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult loom::codegen::checkAscendCollectives(Operation *scope) {
  // No f64 on Ascend hardware: HCCL's reductions take f32, f16 and bf16
  // (Atlas A2/A3). Reported once, at the first collective. (Kernels on f64
  // are reported by checkKernels: the ops' Ascend kernel types have none.)
  WalkResult result = scope->walk([&](emitc::CallOpaqueOp call) {
    if (!call.getCallee().starts_with("loom.comm.") ||
        !llvm::any_of(call.getOperandTypes(), [](Type type) {
          auto pointer = dyn_cast<emitc::PointerType>(type);
          return pointer && pointer.getPointee().isF64();
        }))
      return WalkResult::advance();
    call.emitError() << "the Ascend target has no f64 collectives (HCCL's "
                        "reductions take f32, f16 and bf16 on Atlas A2/A3); "
                        "build the model in f32";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
