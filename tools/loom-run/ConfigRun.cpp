//===- ConfigRun.cpp - loom-run --config ----------------------------------===//

#include "tools/loom-run/ConfigRun.h"
#include "lib/CAPI/RunConfig.h"
#include "frontends/config/Switching.h"
#include "runtime/interpreter/Npy.h"
#include "runtime/layout/Layout.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"

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

/// A data argument of the forward, as a bucketed step's synthetic data
/// needs it.
struct DataArg {
  std::string name;
  ElementKind kind;
  std::vector<int64_t> shape;
};

/// The forward's data arguments, or why a bucketed run cannot make their
/// data (`error`).
std::vector<DataArg> getDataArgs(func::FuncOp forward, std::string &error) {
  std::vector<DataArg> args;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, nn::NNDialect::getDataAttrName()))
      continue;
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    auto name = forward.getArgAttrOfType<StringAttr>(
        i, nn::NNDialect::getNameAttrName());
    std::optional<ElementKind> kind =
        type ? getElementKind(type.getElementType()) : std::nullopt;
    if (!name || !kind || !type.hasStaticShape()) {
      error = "switching.buckets: data argument #" + std::to_string(i) +
              " of @" + forward.getSymName().str() +
              (!name ? " has no name" : " is not a static tensor of a kind "
                                        "loom-run can generate") +
              "; the bucketed steps' synthetic data need both";
      return {};
    }
    args.push_back({name.getValue().str(), *kind,
                    std::vector<int64_t>(type.getShape().begin(),
                                         type.getShape().end())});
  }
  return args;
}

/// The rows of a step of `rows` x `bucket` that each replica of `strategy`
/// runs: the shard of the data argument `rowsArg` (renamed for the bucket
/// by the micro-batch split) its devices hold in the compiled step of that
/// strategy. Every device of a replica must hold the same rows, and the
/// replicas together every row. Fails with `error` otherwise, or where no
/// such step or argument is.
FailureOr<std::vector<int64_t>>
getReplicaRows(ModuleOp module, const config::Strategy &strategy,
               const std::string &rowsArg, int64_t rows, int64_t bucket,
               std::string &error) {
  std::string name = rowsArg + "_" + std::to_string(rows) + "x" +
                     std::to_string(bucket);
  std::string where = "strategy '" + strategy.name() + "', '" + name + "'";
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    auto strategyName = func->getAttrOfType<StringAttr>(
        hspmd::HSPMDDialect::getStrategyAttrName());
    if (!strategyName || strategyName.getValue() != strategy.name() ||
        getSpecializes(func))
      continue;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto argName = func.getArgAttrOfType<StringAttr>(
          i, nn::NNDialect::getNameAttrName());
      auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
      if (!argName || argName.getValue() != name || !type ||
          type.getRank() < 1 || type.getDimSize(0) != rows)
        continue;
      auto layoutAttr = func.getArgAttrOfType<hspmd::UnionAttr>(
          i, hspmd::HSPMDDialect::getLayoutAttrName());
      if (!layoutAttr) {
        error = where + ": the compiled step's argument has no layout";
        return failure();
      }
      layout::Layout core = hspmd::toLayoutCore(layoutAttr);
      std::vector<int64_t> shape(type.getShape().begin(),
                                 type.getShape().end());
      std::vector<int64_t> replicaRows;
      std::vector<bool> covered(static_cast<size_t>(rows), false);
      for (int r = 0; r < strategy.replicas_size(); ++r) {
        const config::Replica &replica = strategy.replicas(r);
        std::string at = where + ", replica " + std::to_string(r);
        if (replica.devices_size() == 0) {
          error = at + ": no devices";
          return failure();
        }
        int64_t offset = -1, size = -1;
        for (int32_t device : replica.devices()) {
          absl::StatusOr<layout::Shard> shard =
              layout::getShard(core, shape, device);
          int64_t thisOffset = 0, thisSize = 0;
          if (shard.ok() && !shard->sizes.empty()) {
            thisOffset = shard->offsets[0];
            thisSize = shard->sizes[0];
          } else if (!shard.ok() && !absl::IsNotFound(shard.status())) {
            error = at + ", device " + std::to_string(device) + ": " +
                    std::string(shard.status().message());
            return failure();
          }
          if (size >= 0 && (thisOffset != offset || thisSize != size)) {
            error = at + ": its devices hold different rows of the step (" +
                    std::to_string(size) + " from " + std::to_string(offset) +
                    " and " + std::to_string(thisSize) + " from " +
                    std::to_string(thisOffset) +
                    "); a replica's devices share its rows";
            return failure();
          }
          offset = thisOffset;
          size = thisSize;
        }
        for (int64_t row = offset; row < offset + size && row < rows; ++row)
          covered[static_cast<size_t>(row)] = true;
        replicaRows.push_back(size);
      }
      for (int64_t row = 0; row < rows; ++row)
        if (!covered[static_cast<size_t>(row)]) {
          error = where + ": row " + std::to_string(row) +
                  " of the step is on no replica the configuration lists "
                  "(each replica's devices, their costs, must cover the "
                  "step's devices)";
          return failure();
        }
      return replicaRows;
    }
  }
  error = "no compiled step of strategy '" + strategy.name() +
          "' takes '" + name + "' (the bucket's rows of '" + rowsArg + "')";
  return failure();
}

/// Writes one bucketed step's synthetic data (every data argument at the
/// step's `rows` x `bucket`, named as the micro-batch split names them;
/// integers in [0, vocab), floats in [-1, 1)) and its strategy into
/// `folder`, which it empties first. Returns the empty string or why not.
std::string writeStepFolder(const std::string &folder,
                            const std::vector<DataArg> &args, int64_t rows,
                            int64_t bucket, uint64_t seed, int64_t vocab,
                            const std::string &strategy) {
  llvm::sys::fs::remove_directories(folder);
  if (std::error_code ec = llvm::sys::fs::create_directories(folder))
    return "cannot create '" + folder + "': " + ec.message();
  std::mt19937_64 random(seed);
  std::string suffix =
      "_" + std::to_string(rows) + "x" + std::to_string(bucket);
  for (const DataArg &arg : args) {
    // Rows x length x the rest; a rank-1 argument has the rows only; a
    // scalar keeps its name and shape.
    std::vector<int64_t> shape = arg.shape;
    if (!shape.empty())
      shape[0] = rows;
    if (shape.size() >= 2)
      shape[1] = bucket;
    Tensor tensor(arg.kind, shape);
    for (int64_t e = 0, n = tensor.getNumElements(); e < n; ++e)
      tensor.setDouble(
          e, isFloatKind(arg.kind)
                 ? std::uniform_real_distribution<double>(-1, 1)(random)
                 : static_cast<double>(random() %
                                       static_cast<uint64_t>(vocab)));
    std::string path =
        folder + "/" + arg.name + (shape.empty() ? "" : suffix) + ".npy";
    if (llvm::Error error = writeNpyFile(path, tensor))
      return llvm::toString(std::move(error));
  }
  std::error_code ec;
  llvm::raw_fd_ostream file(folder + "/strategy", ec, llvm::sys::fs::OF_Text);
  if (ec)
    return "cannot write '" + folder + "/strategy': " + ec.message();
  file << strategy << "\n";
  return "";
}

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
  // the forward by one per strategy: every data argument, the first of rank
  // 2 or more giving the rows and the tokens.)
  bool buckets = config.has_switching() && config.switching().buckets_size();
  std::vector<DataArg> dataArgs;
  std::string rowsArg;
  int64_t stepTokens = 0;
  if (buckets) {
    std::string error;
    dataArgs = getDataArgs(forward, error);
    if (!error.empty())
      return fail(error);
    for (const DataArg &arg : dataArgs)
      if (arg.shape.size() >= 2 && rowsArg.empty()) {
        rowsArg = arg.name;
        stepTokens = arg.shape[0] * arg.shape[1];
      }
  }
  // (Integer data loom-run draws from --vocab for bucketed steps must fit
  // what it indexes; checked on the forward, where it feeds that directly.)
  if (buckets && (run.data().empty() || run.data() == "synthetic") &&
      failed(checkVocabulary(forward, train.vocab)))
    return 1;
  std::string pipeline = capi::getConfigPipeline(config, forward);

  // The step, partitioned.
  registerLoomPasses();
  registerLoomPipelines();
  PassManager pm(&context);
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    return fail("cannot build the configuration's pipeline");
  if (failed(pm.run(*module)))
    return 1;

  if (run.seed() != 0) // (proto3: 0 is also "not set"; --seed then counts)
    train.seed = run.seed();
  // Synthetic data of bucketed steps, one folder per step (removed at the
  // end unless it is in --work-dir; emptied before it is written).
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
      llvm::sys::fs::remove_directories(stepDir);
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
  if (buckets && !synthetic &&
      !llvm::sys::fs::is_directory(run.data() + "/step1"))
    return fail("switching.buckets with data: '" + run.data() +
                "': bucketed steps read per-step folders (step1/, step2/, "
                "... holding <name>_<rows>x<length>.npy), which it lacks");
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
    // (One plan per batch of the configuration; steps cycle through them.
    // With buckets, the rows of each replica per strategy and bucket.)
    std::map<int64_t, absl::StatusOr<switching::StepPlan>> plans;
    std::map<int64_t, std::vector<std::vector<int64_t>>> rowsAt;
    for (int64_t step = 1; step <= train.steps; ++step) {
      int64_t index = (step - 1) % plan.batches_size();
      const config::Batch &batch = plan.batches(static_cast<int>(index));
      std::vector<int64_t> lengths(batch.lengths().begin(),
                                   batch.lengths().end());
      // With buckets the step runs every sequence padded to its batch's
      // bucket, T / L rows of L, in the rows the strategy's data layout
      // gives each replica: the strategy is chosen for that.
      int64_t bucket = 0, rows = 0;
      if (buckets) {
        bucket = config::getBatchBucket(plan, lengths);
        int64_t longest = *std::max_element(lengths.begin(), lengths.end());
        if (bucket < 0)
          return fail("step " + llvm::Twine(step) + ": batch " +
                      llvm::Twine(index) + " holds a sequence of " +
                      llvm::Twine(longest) + ", longer than every bucket");
        rows = stepTokens / bucket;
        if (static_cast<int64_t>(lengths.size()) > rows)
          return fail("step " + llvm::Twine(step) + ": batch " +
                      llvm::Twine(index) + " has " +
                      llvm::Twine(lengths.size()) +
                      " sequences, but a step at bucket " +
                      llvm::Twine(bucket) + " holds " + llvm::Twine(rows) +
                      " (" + llvm::Twine(stepTokens) + " tokens)");
        if (!rowsAt.count(bucket)) {
          std::vector<std::vector<int64_t>> all;
          for (const config::Strategy &strategy : plan.strategies()) {
            std::string error;
            FailureOr<std::vector<int64_t>> replicaRows = getReplicaRows(
                *module, strategy, rowsArg, rows, bucket, error);
            if (failed(replicaRows))
              return fail(error);
            all.push_back(*replicaRows);
          }
          rowsAt[bucket] = std::move(all);
        }
      }
      auto found = plans.find(index);
      if (found == plans.end())
        found = plans
                    .emplace(index,
                             buckets ? switching::planFixedStep(
                                           strategies, rowsAt[bucket], bucket)
                                     : switching::planStep(strategies,
                                                           lengths, options))
                    .first;
      const absl::StatusOr<switching::StepPlan> &chosen = found->second;
      if (!chosen.ok())
        return fail("step " + llvm::Twine(step) + ": " +
                    std::string(chosen.status().message()));
      const switching::Strategy &picked = strategies[chosen->strategy];
      train.strategies.push_back(picked.name);
      llvm::outs() << "plan step " << step << ": " << lengths.size()
                   << " sequences";
      if (buckets)
        llvm::outs() << ", bucket " << bucket << " (" << rows << "x" << bucket
                     << ")";
      llvm::outs() << ", strategy " << picked.name << ", makespan "
                   << llvm::format("%.4g", chosen->makespan) << " s (";
      for (auto [k, strategy] : llvm::enumerate(strategies))
        llvm::outs() << (k ? ", " : "") << strategy.name << " "
                     << llvm::format("%.4g", chosen->makespans[k]);
      llvm::outs() << ")\n";
      if (!stepDir.empty()) {
        std::string why = writeStepFolder(
            stepDir + "/step" + std::to_string(step), dataArgs, rows, bucket,
            train.seed * 1000003 + static_cast<uint64_t>(step),
            std::max<int64_t>(train.vocab, 1), picked.name);
        if (!why.empty())
          return fail(why);
      }
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
