//===- loom-translate.cpp - Loom programs to C++ --------------------------===//
//
// `--loom-to-host-cpp` / `--loom-to-cuda-cpp` / `--loom-to-ascend-cpp` /
// `--loom-to-cluster-cpp`: runs the compile pipeline (codegen/Pipelines.h) on
// the local programs of a training step (after --loom-partition-pipeline, or
// a single-device step) and prints C++; `--loom-entry NAME` picks the step
// when the module has several. Arguments keep the source file's names
// (`nn.name`, the generated buffers' names) as loom-opt records them.
// `--mlir-to-cpp` prints a module that is already in the emitc dialect.
//
//===----------------------------------------------------------------------===//

#include "codegen/Pipelines.h"
#include "dialects/InitAllDialects.h"
#include "passes/ArgumentNames.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinOps.h"
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
  // One translation per target: the compile pipeline, then C++.
  auto registerTarget = [](llvm::StringRef name, llvm::StringRef description,
                           loom::codegen::Target target) {
    TranslateFromMLIRRegistration(
        name, description,
        [target](Operation *op, raw_ostream &output) -> LogicalResult {
          auto module = dyn_cast<ModuleOp>(op);
          if (!module)
            return op->emitError() << "expected a module";
          // The source's argument names, as loom-opt records them.
          loom::nameArgumentsFromSourceFiles(module);
          loom::codegen::CompileOptions options;
          options.target = target;
          options.entry = entryName;
          return loom::codegen::emitTargetSources(module, options, output);
        },
        [](DialectRegistry &registry) {
          loom::registerAllDialects(registry);
          registry.insert<emitc::EmitCDialect>();
        });
  };
  registerTarget(
      "loom-to-host-cpp",
      "Emit a training step's per-group programs as C++ for the host target",
      loom::codegen::Target::Host);
  registerTarget(
      "loom-to-cuda-cpp",
      "Emit a training step's per-group programs as C++ for the CUDA target",
      loom::codegen::Target::Cuda);
  registerTarget(
      "loom-to-ascend-cpp",
      "Emit a training step's per-group programs as C++ for the Ascend target",
      loom::codegen::Target::Ascend);
  registerTarget(
      "loom-to-cluster-cpp",
      "Emit a training step's per-group programs as C++, each for the target "
      "of its devices' kind (hspmd.cluster)",
      loom::codegen::Target::Cluster);
  return failed(mlirTranslateMain(argc, argv, "Loom translation driver\n"));
}
