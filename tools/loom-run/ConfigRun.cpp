//===- ConfigRun.cpp - loom-run --config ----------------------------------===//

#include "tools/loom-run/ConfigRun.h"

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
  // The configuration's cluster, where the model has none: the cluster
  // target picks each group's target from its devices' kinds.
  if (!(*module)->hasAttr(hspmd::HSPMDDialect::getClusterAttrName()) &&
      config.cluster().devices_size() > 0) {
    SmallVector<hspmd::DeviceAttr> devices;
    for (const config::Device &device : config.cluster().devices())
      devices.push_back(hspmd::DeviceAttr::get(
          &context, device.id(), device.kind(), llvm::APFloat(device.speed()),
          static_cast<int64_t>(std::ceil(device.memory_gib())), device.node()));
    (*module)->setAttr(hspmd::HSPMDDialect::getClusterAttrName(),
                       hspmd::ClusterAttr::get(&context, devices));
  }

  // The forward function: the one with parameters that is not a step.
  SmallVector<func::FuncOp> forwards;
  for (func::FuncOp func : module->getOps<func::FuncOp>()) {
    bool hasParam = false, isStep = false;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      hasParam |= !!func.getArgAttr(i, nn::NNDialect::getParamAttrName());
    for (unsigned r = 0; r < func.getNumResults(); ++r)
      isStep |= !!func.getResultAttr(r, nn::NNDialect::getLossAttrName());
    if (hasParam && !isStep && !func.isExternal())
      forwards.push_back(func);
  }
  if (forwards.size() != 1)
    return fail("--config needs a model with one forward function (nn.param "
                "arguments, returning the loss); found " +
                llvm::Twine(forwards.size()));
  func::FuncOp forward = forwards.front();

  // Layouts by argument name: the first pattern that matches wins; a
  // pattern that matches nothing is an error (a typo, most likely).
  for (const config::Layout &layout : config.layouts()) {
    Attribute attr = parseAttribute(layout.layout(), &context);
    auto unionAttr = dyn_cast_or_null<hspmd::UnionAttr>(attr);
    if (!unionAttr)
      return fail("layout for '" + layout.match() + "' is not an " +
                  "#hspmd.union<...>: " + layout.layout());
    unsigned matched = 0;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto name = forward.getArgAttrOfType<StringAttr>(
          i, nn::NNDialect::getNameAttrName());
      if (!name || !config::matchGlob(layout.match(), name.getValue()))
        continue;
      ++matched;
      if (!getArgLayoutAttr(forward, i))
        setArgLayout(forward, i, unionAttr);
    }
    if (!matched)
      return fail("layout pattern '" + layout.match() +
                  "' matches no argument of @" + forward.getSymName());
  }

  // The step, partitioned.
  PassManager pm(&context);
  TrainingOptions options;
  options.optimizer =
      run.optimizer() == "sgd" ? OptimizerKind::SGD : OptimizerKind::AdamW;
  options.lr = run.learning_rate() > 0 ? run.learning_rate() : 1e-2;
  buildTrainingPipeline(pm, options);
  buildPartitionPipeline(pm, PartitionOptions());
  if (failed(pm.run(*module)))
    return 1;

  train.entry = (forward.getSymName() + "_train_step").str();
  if (run.steps() > 0)
    train.steps = run.steps();
  if (run.seed() != 0) // (proto3: 0 is also "not set"; --seed then counts)
    train.seed = run.seed();
  if (!run.data().empty() && run.data() != "synthetic")
    train.dataDir = run.data();
  if (run.ranks() > 0)
    host.ranks = run.ranks();
  if (!run.trace().empty())
    host.trace = run.trace();
  Interpreter interpreter(*module);
  return runOnHostRanks(*module, interpreter, train, host);
}
