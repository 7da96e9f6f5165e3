//===- Pipelines.cpp - Loom's code-generation pipeline --------------------===//

#include "codegen/Pipelines.h"

#include "codegen/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace loom::codegen;

std::optional<Target> loom::codegen::parseTarget(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Target>>(name)
      .Case("host", Target::Host)
      .Case("cuda", Target::Cuda)
      .Case("ascend", Target::Ascend)
      .Case("cluster", Target::Cluster)
      .Default(std::nullopt);
}

llvm::StringRef loom::codegen::getTargetName(Target target) {
  switch (target) {
  case Target::Host:
    return "host";
  case Target::Cuda:
    return "cuda";
  case Target::Ascend:
    return "ascend";
  case Target::Cluster:
    return "cluster";
  }
  llvm_unreachable("unknown target");
}

void loom::codegen::buildCompilePipeline(OpPassManager &pm,
                                         const CompileOptions &options) {
  LowerToCallsPassOptions lowerOptions;
  lowerOptions.entry = options.entry;
  pm.addPass(createLowerToCallsPass(lowerOptions));
  switch (options.target) {
  case Target::Host:
    pm.addPass(createEmitHostPass());
    break;
  case Target::Cuda:
    pm.addPass(createEmitCudaPass());
    break;
  case Target::Ascend:
    pm.addPass(createEmitAscendPass());
    break;
  case Target::Cluster:
    pm.addPass(createEmitClusterPass());
    break;
  }
}

LogicalResult loom::codegen::emitTargetSources(ModuleOp module,
                                               const CompileOptions &options,
                                               llvm::raw_ostream &os) {
  PassManager pm(module.getContext());
  buildCompilePipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  return emitc::translateToCpp(module, os);
}

void loom::codegen::registerLoomCodegenPipelines() {
  // Once per process, whoever asks.
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  PassPipelineRegistration<CompileOptions>(
      "loom-compile-pipeline",
      "Compiles a partitioned training step's local programs for a target "
      "(host, cuda, ascend or cluster): the call layer, then the target's "
      "emission",
      buildCompilePipeline);
}
