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
                                            "sgd_update"};
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
  bool unsupported = false;
  scope->walk([&](emitc::CallOpaqueOp call) {
    StringRef op = call.getCallee();
    if (!op.consume_front("loom.kernel.") || ascendKernels().contains(op))
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
