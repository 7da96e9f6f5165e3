//===- Pipelines.h - Loom's code-generation pipeline ------------*- C++ -*-===//
//
// Compiling a partitioned training step (after `--loom-partition-pipeline`,
// or a single-device step) to one target's sources, as a named pipeline
// (`--loom-compile-pipeline`) and as the function every tool calls
// (emitTargetSources: loom-translate, loom-run). It lives with the code
// generator, not in passes/, because LoomPasses does not link LoomCodegen.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_PIPELINES_H
#define LOOM_CODEGEN_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace loom::codegen {

/// The targets whose sources Loom emits.
enum class Target { Host, Cuda, Ascend, Cluster };

/// `host`, `cuda`, `ascend` or `cluster` as a target; none for other names.
std::optional<Target> parseTarget(llvm::StringRef name);
/// The target's name, as parseTarget reads it.
llvm::StringRef getTargetName(Target target);

/// Options of the compile pipeline.
struct CompileOptions : public mlir::PassPipelineOptions<CompileOptions> {
  Option<Target> target{
      *this, "target", llvm::cl::desc("The target to emit for"),
      llvm::cl::init(Target::Host),
      llvm::cl::values(
          clEnumValN(Target::Host, "host",
                     "CPU ranks: Loom's kernels, cblas, MPI "
                     "(runtime/host/Program.h)"),
          clEnumValN(Target::Cuda, "cuda",
                     "NVIDIA GPUs: CUDA kernels, cuBLAS, NCCL "
                     "(runtime/cuda/Program.h)"),
          clEnumValN(Target::Ascend, "ascend",
                     "Ascend NPUs: aclnn operators, HCCL "
                     "(runtime/ascend/Program.h)"),
          clEnumValN(Target::Cluster, "cluster",
                     "each program for the target of its devices' kind "
                     "(hspmd.cluster)"))};
  Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("The training step whose programs to compile (default: "
                     "the only function with an nn.loss result that "
                     "specialises nothing)"),
      llvm::cl::init("")};
};

/// The sources of a training step's local programs for one target: the
/// call layer (loom-lower-to-calls, for `entry`), then the target's emission
/// (loom-emit-host, -cuda, -ascend or -cluster). The result is in the emitc
/// dialect; `emitc::translateToCpp` prints it (emitTargetSources).
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompileOptions &options);

/// Runs the compile pipeline on `module` (in place) and prints the result as
/// C++ to `os`. Fails after a diagnostic.
mlir::LogicalResult emitTargetSources(mlir::ModuleOp module,
                                      const CompileOptions &options,
                                      llvm::raw_ostream &os);

/// Registers `--loom-compile-pipeline` with the command line.
void registerLoomCodegenPipelines();

} // namespace loom::codegen

#endif // LOOM_CODEGEN_PIPELINES_H
