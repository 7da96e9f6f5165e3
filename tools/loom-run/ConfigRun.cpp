//===- ConfigRun.cpp - loom-run --config ----------------------------------===//

#include "tools/loom-run/ConfigRun.h"
#include "lib/CAPI/RunConfig.h"

#include "dialects/InitAllDialects.h"
#include "passes/ArgumentNames.h"
#include "passes/Passes.h"
#include "passes/Partitioning/Attributes.h"
#include "passes/Pipelines.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/WithColor.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::interp;

namespace {

int fail(const llvm::Twine &message) { return reportError(message); }

} // namespace

OwningOpRef<ModuleOp>
loom::interp::parseWithArgumentNames(llvm::SourceMgr &sourceMgr,
                                     MLIRContext *context) {
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(context));
  if (module)
    nameArgumentsFromSource(*module, sourceMgr);
  return module;
}

int loom::interp::runFromConfig(const config::Config &config,
                                llvm::SourceMgr &sourceMgr, TrainOptions train,
                                HostLaunchOptions host) {
  const config::Run &run = config.run();
  std::string target = run.target().empty() ? "host" : run.target();
  if (host.ascendDouble && target != "ascend" && target != "cluster")
    return fail("--ascend-double applies to the ascend target, not '" + target +
                "'");
  host.target = target;

  DialectRegistry registry;
  loom::registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::vector<std::string> problems;
  if (failed(config::checkConfig(config, &context, problems))) {
    for (const std::string &problem : problems)
      llvm::errs() << "config: " << problem << "\n";
    return fail(std::to_string(problems.size()) +
                " problem(s) in the configuration");
  }
  OwningOpRef<ModuleOp> module = parseWithArgumentNames(sourceMgr, &context);
  if (!module)
    return 1;
  std::string problem;
  FailureOr<func::FuncOp> found =
      capi::applyRunConfig(*module, config, problem);
  if (failed(found))
    return fail(problem);
  func::FuncOp forward = *found;

  // The step, partitioned.
  registerLoomPasses();
  registerLoomPipelines();
  PassManager pm(&context);
  if (failed(parsePassPipeline(capi::getConfigPipeline(config), pm,
                               llvm::errs())))
    return fail("cannot build the configuration's pipeline");
  if (failed(pm.run(*module)))
    return 1;

  // (Several compositions of micro-batch shapes: the step's variants, each
  // step run on the one its data fit.)
  if (run.micro_batch_shapes_size() <= 1)
    train.entry = (forward.getSymName() + "_train_step").str();
  if (run.steps() > 0)
    train.steps = run.steps();
  if (run.seed() != 0) // (proto3: 0 is also "not set"; --seed then counts)
    train.seed = run.seed();
  if (!run.data().empty() && run.data() != "synthetic")
    train.dataDir = run.data();
  if (run.ranks() > 0)
    host.ranks = run.ranks();
  // The peaks of the devices the ranks drive (rank r drives device r), if
  // every one is known.
  double peak = 0;
  bool known = true;
  for (int64_t rank = 0; rank < host.ranks; ++rank) {
    const config::Device *device = nullptr;
    for (const config::Device &candidate : config.cluster().devices())
      if (candidate.id() == rank)
        device = &candidate;
    known &= device && device->peak_tflops() > 0;
    if (device)
      peak += device->peak_tflops() * 1e12;
  }
  if (known)
    host.peakFlops = peak;
  if (!run.trace().empty())
    host.trace = run.trace();
  Interpreter interpreter(*module);
  return runOnHostRanks(*module, interpreter, train, host);
}
