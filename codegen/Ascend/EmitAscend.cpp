//===- EmitAscend.cpp - Final emission of the call layer for Ascend -------===//
//
// The Ascend target (runtime/ascend/Program.h): `loom.kernel.<op>` and
// `loom.comm.<op>` calls name `loom::ascend::<op>` (aclnn operators called
// in two phases, HCCL collectives), the arena is device memory from
// aclrtMalloc, communicators are HCCL's. Only ops with an Ascend kernel
// (runtime/ascend/AscendKernels.h) can be emitted; any other is an error at
// the op.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Emission.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "llvm/ADT/StringSet.h"

namespace loom::codegen {
#define GEN_PASS_DEF_EMITASCENDPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom::codegen;

namespace {

/// The kernels of runtime/ascend/AscendKernels.h.
const llvm::StringSet<> &ascendKernels() {
  static const llvm::StringSet<> kernels = {"copy",
                                            "reshape",
                                            "fill",
                                            "matmul",
                                            "add",
                                            "sub",
                                            "mul",
                                            "div",
                                            "maximum",
                                            "minimum",
                                            "neg",
                                            "exp",
                                            "log",
                                            "sqrt",
                                            "rsqrt",
                                            "tanh",
                                            "relu",
                                            "silu",
                                            "sin",
                                            "cos",
                                            "gelu",
                                            "gelu_grad",
                                            "reduce",
                                            "broadcast",
                                            "transpose",
                                            "slice",
                                            "concat",
                                            "softmax",
                                            "log_softmax",
                                            "layer_norm",
                                            "layer_norm_grad",
                                            "attention",
                                            "attention_grad",
                                            "cross_entropy",
                                            "cross_entropy_grad",
                                            "embedding",
                                            "gather_grad",
                                            "iota",
                                            "adamw_update",
                                            "sgd_update",
                                            "compare",
                                            "cast",
                                            "clamp",
                                            "select",
                                            "slice_grad",
                                            "gather",
                                            "dropout",
                                            "rms_norm",
                                            "rms_norm_grad",
                                            "rope"};
  return kernels;
}

struct EmitAscendPass
    : loom::codegen::impl::EmitAscendPassBase<EmitAscendPass> {
  void runOnOperation() override {
    if (failed(checkAscendKernels(getOperation())) ||
        failed(emitForTarget(getOperation(), ascendSpelling())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult loom::codegen::checkAscendKernels(Operation *scope) {
  bool unsupported = false, reportedF64 = false;
  scope->walk([&](emitc::CallOpaqueOp call) {
    StringRef op = call.getCallee();
    bool kernel = op.consume_front("loom.kernel.");
    // No f64 on Ascend hardware: aclnnMatmul and HCCL's reductions take
    // f32, f16 and bf16 (Atlas A2/A3). Reported once, at the first op.
    if ((kernel || op.starts_with("loom.comm.")) && !reportedF64 &&
        llvm::any_of(call.getOperandTypes(), [](Type type) {
          auto pointer = dyn_cast<emitc::PointerType>(type);
          return pointer && pointer.getPointee().isF64();
        })) {
      call.emitError() << "the Ascend target has no f64 (aclnnMatmul and "
                          "HCCL's reductions take f32, f16 and bf16 on Atlas "
                          "A2/A3); build the model in f32";
      unsupported = reportedF64 = true;
      return;
    }
    if (!kernel || ascendKernels().contains(op))
      return;
    call.emitError() << "the Ascend target has no kernel for nn." << op
                     << " yet (supported: matmul, element-wise ops, "
                        "reductions, data movement, softmax, norms, "
                        "attention, cross-entropy, embeddings, optimizer "
                        "updates; see runtime/ascend/AscendKernels.h)";
    unsupported = true;
  });
  return failure(unsupported);
}
