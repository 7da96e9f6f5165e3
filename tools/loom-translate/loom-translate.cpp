//===- loom-translate.cpp - Loom programs to C++ --------------------------===//
//
// `--loom-to-host-cpp` / `--loom-to-cuda-cpp` / `--loom-to-ascend-cpp`:
// lowers the local programs
// of a training step (after --hspmd-specialize, or a single-device step) to
// the call layer, emits them for the target and prints C++; `--loom-entry NAME`
// picks the step when the module has several. `--mlir-to-cpp` prints a module
// that is already in the emitc dialect.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"
#include "dialects/InitAllDialects.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;

namespace mlir {
// Defined by MLIRTargetCpp (declared in mlir/InitAllTranslations.h, which
// would register every translation).
void registerToCppTranslation();
} // namespace mlir

static llvm::cl::opt<std::string>
    entryName("loom-entry",
              llvm::cl::desc("The training step to emit (default: the only "
                             "function with an nn.loss result)"),
              llvm::cl::init(""));

int main(int argc, char **argv) {
  registerToCppTranslation();
  // One translation per target: the call layer, then the target's emission.
  auto registerTarget = [](llvm::StringRef name, llvm::StringRef description,
                           auto createEmission) {
    TranslateFromMLIRRegistration(
        name, description,
        [createEmission](Operation *op, raw_ostream &output) -> LogicalResult {
          auto module = dyn_cast<ModuleOp>(op);
          if (!module)
            return op->emitError() << "expected a module";
          PassManager pm(op->getContext());
          loom::codegen::LowerToCallsPassOptions options;
          options.entry = entryName;
          pm.addPass(loom::codegen::createLowerToCallsPass(options));
          pm.addPass(createEmission());
          if (failed(pm.run(module)))
            return failure();
          return emitc::translateToCpp(module, output);
        },
        [](DialectRegistry &registry) {
          loom::registerAllDialects(registry);
          registry.insert<emitc::EmitCDialect>();
        });
  };
  registerTarget(
      "loom-to-host-cpp",
      "Emit a training step's per-group programs as C++ for the host target",
      [] { return loom::codegen::createEmitHostPass(); });
  registerTarget(
      "loom-to-cuda-cpp",
      "Emit a training step's per-group programs as C++ for the CUDA target",
      [] { return loom::codegen::createEmitCudaPass(); });
  registerTarget(
      "loom-to-ascend-cpp",
      "Emit a training step's per-group programs as C++ for the Ascend target",
      [] { return loom::codegen::createEmitAscendPass(); });
  registerTarget(
      "loom-to-cluster-cpp",
      "Emit a training step's per-group programs as C++, each for the target "
      "of its devices' kind (hspmd.cluster)",
      [] { return loom::codegen::createEmitClusterPass(); });
  return failed(mlirTranslateMain(argc, argv, "Loom translation driver\n"));
}
