//===- loom-opt.cpp - Loom's optimizer driver -----------------------------===//
//
// An mlir-opt for Loom: Loom's dialects and passes plus the upstream dialects
// Loom programs use. Unlike mlir-opt, it records the source's names of
// function arguments (`%tokens`) as `nn.name` before the command line's
// pipeline runs (passes/ArgumentNames.h), so `loom-run --data DIR` and run
// configurations find the arguments of what it writes by name.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"
#include "codegen/Pipelines.h"
#include "dialects/InitAllDialects.h"
#include "passes/ArgumentNames.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  DialectRegistry registry;
  loom::registerAllDialects(registry);
  loom::registerLoomPasses();
  loom::registerLoomPipelines();
  loom::registerNameArgumentsFromSourcePass();
  loom::codegen::registerLoomCodegenPasses();
  loom::codegen::registerLoomCodegenPipelines();
  // Generic upstream transforms (canonicalize, cse, inline, ...); no
  // dialect-specific upstream passes, in particular none of `shard`'s.
  registerTransformsPasses();

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "Loom optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldListPasses()) {
    printRegisteredPasses();
    return EXIT_SUCCESS;
  }
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return EXIT_SUCCESS;
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }

  // The source names, read from the whole input (split chunks keep the
  // input's line numbers), then the command line's pipeline.
  llvm::SourceMgr source;
  source.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(input->getMemBufferRef(),
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  MlirOptMainConfig commandLine = config;
  config.setPassPipelineSetupFn([&](PassManager &pm) {
    pm.addPass(loom::createNameArgumentsFromSourcePass(source));
    return commandLine.setupPassPipeline(pm);
  });
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
