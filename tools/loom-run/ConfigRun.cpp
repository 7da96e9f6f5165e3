//===- ConfigRun.cpp - loom-run --config ----------------------------------===//

#include "tools/loom-run/ConfigRun.h"
#include "lib/CAPI/RunConfig.h"
#include "frontends/config/Switching.h"
#include "runtime/interpreter/Npy.h"

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
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <map>
#include <random>

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
  // (What the bucketed steps' data look like, before the pipeline replaces
  // the forward by one per strategy.)
  struct DataArg {
    std::string name;
    ElementKind kind;
    std::vector<int64_t> trailing; // the dimensions after rows x length
  };
  std::vector<DataArg> dataArgs;
  int64_t stepTokens = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    auto name = forward.getArgAttrOfType<StringAttr>(
        i, nn::NNDialect::getNameAttrName());
    std::optional<ElementKind> kind =
        type ? getElementKind(type.getElementType()) : std::nullopt;
    if (!forward.getArgAttr(i, nn::NNDialect::getDataAttrName()) || !name ||
        !kind || type.getRank() < 2 || !type.hasStaticShape())
      continue;
    dataArgs.push_back({name.getValue().str(), *kind,
                        std::vector<int64_t>(type.getShape().begin() + 2,
                                             type.getShape().end())});
    stepTokens = type.getDimSize(0) * type.getDimSize(1);
  }
  std::string pipeline = capi::getConfigPipeline(config, forward);

  // The step, partitioned.
  registerLoomPasses();
  registerLoomPipelines();
  PassManager pm(&context);
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    return fail("cannot build the configuration's pipeline");
  if (failed(pm.run(*module)))
    return 1;

  // (Several compositions of micro-batch shapes: the step's variants, each
  // step run on the one its data fit.)
  if (run.seed() != 0) // (proto3: 0 is also "not set"; --seed then counts)
    train.seed = run.seed();
  // Synthetic data of bucketed steps, one folder per step (removed at the
  // end unless it is in --work-dir).
  bool buckets = config.has_switching() && config.switching().buckets_size();
  bool synthetic = run.data().empty() || run.data() == "synthetic";
  std::string stepDir;
  bool removeStepDir = false;
  llvm::scope_exit cleanup([&] {
    if (removeStepDir)
      llvm::sys::fs::remove_directories(stepDir);
  });
  if (buckets && synthetic) {
    if (!host.workDir.empty()) {
      stepDir = host.workDir + "/switching-steps";
    } else {
      llvm::SmallString<128> path;
      if (std::error_code ec =
              llvm::sys::fs::createUniqueDirectory("loom-switching", path))
        return fail("cannot create a folder for the steps' data: " +
                    ec.message());
      stepDir = path.str().str();
      removeStepDir = true;
    }
  }
  if (run.micro_batch_shapes_size() <= 1 && !config.has_switching())
    train.entry = (forward.getSymName() + "_train_step").str();
  if (run.steps() > 0)
    train.steps = run.steps();
  // Dynamic graph switching: the planner picks each step's strategy from
  // its batch's sequence lengths (docs/switching.md).
  if (config.has_switching()) {
    std::vector<switching::Strategy> strategies;
    switching::PlannerOptions options;
    config::getPlannerProblem(config.switching(), strategies, options);
    const config::Switching &plan = config.switching();
    train.strategies.clear();
    // (One plan per batch of the configuration; steps cycle through them.)
    std::map<int64_t, absl::StatusOr<switching::StepPlan>> plans;
    for (int64_t step = 1; step <= train.steps; ++step) {
      int64_t index = (step - 1) % plan.batches_size();
      const config::Batch &batch = plan.batches(static_cast<int>(index));
      std::vector<int64_t> lengths(batch.lengths().begin(),
                                   batch.lengths().end());
      auto found = plans.find(index);
      if (found == plans.end())
        found = plans
                    .emplace(index,
                             switching::planStep(strategies, lengths, options))
                    .first;
      const absl::StatusOr<switching::StepPlan> &chosen = found->second;
      if (!chosen.ok())
        return fail("step " + llvm::Twine(step) + ": " +
                    std::string(chosen.status().message()));
      const switching::Strategy &picked = strategies[chosen->strategy];
      train.strategies.push_back(picked.name);
      llvm::outs() << "plan step " << step << ": " << lengths.size()
                   << " sequences, strategy " << picked.name << ", makespan "
                   << llvm::format("%.4g", chosen->makespan) << " s (";
      for (auto [k, strategy] : llvm::enumerate(strategies))
        llvm::outs() << (k ? ", " : "") << strategy.name << " "
                     << llvm::format("%.4g", chosen->makespans[k]);
      llvm::outs() << ")";
      if (buckets) {
        // The step runs at its batch's bucket: T / L sequences of L.
        int64_t bucket = config::getBatchBucket(plan, lengths);
        int64_t longest = *std::max_element(lengths.begin(), lengths.end());
        if (bucket < 0)
          return fail("step " + llvm::Twine(step) + ": batch " +
                      llvm::Twine(index) + " holds a sequence of " +
                      llvm::Twine(longest) + ", longer than every bucket");
        int64_t rows = stepTokens / bucket;
        if (static_cast<int64_t>(lengths.size()) > rows)
          return fail("step " + llvm::Twine(step) + ": batch " +
                      llvm::Twine(index) + " has " +
                      llvm::Twine(lengths.size()) +
                      " sequences, but a step at bucket " +
                      llvm::Twine(bucket) + " holds " + llvm::Twine(rows) +
                      " (" + llvm::Twine(stepTokens) + " tokens)");
        llvm::outs() << ", bucket " << bucket << " (" << rows << "x" << bucket
                     << ")";
        if (!stepDir.empty()) {
          std::string folder = stepDir + "/step" + std::to_string(step);
          if (std::error_code ec = llvm::sys::fs::create_directories(folder))
            return fail("cannot create '" + folder + "': " + ec.message());
          // Integers in [0, vocab), floats in [-1, 1), from the run's seed.
          std::mt19937_64 random(train.seed * 1000003 + step);
          for (const DataArg &arg : dataArgs) {
            std::vector<int64_t> shape = {rows, bucket};
            shape.insert(shape.end(), arg.trailing.begin(), arg.trailing.end());
            Tensor tensor(arg.kind, shape);
            for (int64_t e = 0, n = tensor.getNumElements(); e < n; ++e)
              tensor.setDouble(
                  e, isFloatKind(arg.kind)
                         ? std::uniform_real_distribution<double>(-1, 1)(random)
                         : static_cast<double>(random() % std::max<int64_t>(
                                                              train.vocab, 1)));
            std::string path = folder + "/" + arg.name + "_" +
                               std::to_string(rows) + "x" +
                               std::to_string(bucket) + ".npy";
            if (llvm::Error error = writeNpyFile(path, tensor))
              return fail(llvm::toString(std::move(error)));
          }
          std::error_code ec;
          llvm::raw_fd_ostream file(folder + "/strategy", ec,
                                    llvm::sys::fs::OF_Text);
          if (ec)
            return fail("cannot write '" + folder + "/strategy': " +
                        ec.message());
          file << picked.name << "\n";
        }
      }
      llvm::outs() << "\n";
    }
  }
  if (!synthetic)
    train.dataDir = run.data();
  else if (!stepDir.empty())
    train.dataDir = stepDir;
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
