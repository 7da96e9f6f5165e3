//===- RunMain.cpp - The loom-run driver ----------------------------------===//
//
// loom-run --interpret FILE.mlir [--entry NAME] [--input X.npy ...]
//          [--random-inputs [--seed N] [--int-range LO,HI]]
//          [--output-dir DIR] [--print] [--repeat N]
// loom-run --interpret FILE.mlir --simulate N [--entry LOCAL] --global-entry F
//          [--input ...] [--random-inputs] [--tolerance T] [--comm-stats]
// loom-run --interpret FILE.mlir --simulate N [--entry NAME] [--input ...]
//          [--random-inputs [--seed S]] [--output-dir DIR] [--print]
//          [--comm-stats]
// loom-run --interpret FILE.mlir --train [--entry NAME] [--steps N]
//          [--seed S] [--vocab V] [--data-task auto|tokens|affine|classes]
//          [--json]
//          [--init-npy DIR] [--output-dir DIR]
//
// Inputs fill the entry function's arguments in order: first the --input
// files, then, with --random-inputs, random tensors for the rest (see
// makeRandomTensor). Results go to DIR/result_<i>.npy and, with --print, to
// stdout as `result #i: tensor<...> = [...]`. --repeat N calls the function N
// more times, checks that every call gives the same bits, and prints the
// wall time per call (for benchmarks; the first call is not timed).
//
//===----------------------------------------------------------------------===//

#include "tools/loom-run/RunMain.h"
#include "frontends/config/Config.h"
#include "runtime/interpreter/Blas.h"
#include "runtime/interpreter/Interpreter.h"
#include "runtime/interpreter/Npy.h"
#include "runtime/interpreter/TensorIO.h"
#include "runtime/interpreter/Train.h"
#include "runtime/simulator/Sharding.h"
#include "runtime/simulator/Simulator.h"
#include "tools/loom-run/ConfigRun.h"
#include "tools/loom-run/HostLaunch.h"
#include "passes/Partitioning/Attributes.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace loom::interp;

namespace {

constexpr llvm::StringLiteral kTool = "loom-run";

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kTool) << message << "\n";
  return 1;
}

/// Picks the function to run: `requested`, else @main, else the only
/// function with a body.
func::FuncOp chooseEntry(ModuleOp module, Interpreter &interpreter,
                         llvm::StringRef requested) {
  if (!requested.empty())
    return interpreter.lookupFunction(requested);
  if (module.lookupSymbol<func::FuncOp>("main"))
    return interpreter.lookupFunction("main");
  llvm::SmallVector<func::FuncOp> defined;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      defined.push_back(func);
  if (defined.size() == 1)
    return defined.front();
  InFlightDiagnostic diag = emitError(module.getLoc());
  if (defined.empty()) {
    diag << "the module defines no function to run";
  } else {
    diag << "the module defines " << defined.size()
         << " functions and none is called @main; choose one with --entry";
  }
  return {};
}

} // namespace

namespace {

struct SimulationOptions {
  int64_t ranks;
  std::string outputDir;
  bool print;
  bool commStats;
};

/// Writes `tensors` as DIR/<prefix>_<i>.npy.
int writeAll(llvm::StringRef dir, llvm::StringRef prefix,
             llvm::ArrayRef<Tensor> tensors) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create '" + dir + "': " + ec.message());
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, prefix + "_" + llvm::Twine(index) + ".npy");
    if (llvm::Error err = writeNpyFile(path, tensor))
      return fail(llvm::toString(std::move(err)));
  }
  return 0;
}

/// --simulate: runs `func` on N ranks; rank r's arguments come from
/// `argsOf(r)`. With an output directory, rank r's arguments and results go
/// to DIR/rank_<r>/arg_<i>.npy and result_<i>.npy.
int runSimulation(ModuleOp module, func::FuncOp func,
                  llvm::ArrayRef<Tensor> rank0Args,
                  llvm::function_ref<std::vector<Tensor>(int64_t)> argsOf,
                  const SimulationOptions &options) {
  if (options.ranks < 1 || options.ranks > 4096)
    return fail("--simulate expects 1 to 4096 ranks, got " +
                llvm::Twine(options.ranks));
  std::vector<std::vector<Tensor>> args;
  args.push_back(rank0Args);
  for (int64_t r = 1; r < options.ranks; ++r)
    args.push_back(argsOf(r));
  loom::sim::Simulator simulator(module, options.ranks);
  auto results = simulator.run(func.getSymName(), args);
  if (failed(results))
    return 1;
  for (int64_t r = 0; r < options.ranks; ++r) {
    if (!options.outputDir.empty()) {
      llvm::SmallString<128> dir(options.outputDir);
      llvm::sys::path::append(dir, "rank_" + llvm::Twine(r));
      if (int code = writeAll(dir, "arg", args[r]))
        return code;
      if (int code = writeAll(dir, "result", (*results)[r]))
        return code;
    }
    if (options.print)
      for (auto [index, result] : llvm::enumerate((*results)[r])) {
        llvm::outs() << "rank " << r << " result #" << index << ": "
                     << result.getTypeString() << " = ";
        printTensorValues(llvm::outs(), result);
        llvm::outs() << "\n";
      }
    if (options.commStats)
      for (const auto &[kind, entry] : simulator.getStats(r).byKind)
        llvm::outs() << "rank " << r << " " << kind << ": calls " << entry.calls
                     << ", bytes sent " << entry.bytesSent << ", received "
                     << entry.bytesReceived << "\n";
  }
  llvm::outs().flush();
  return 0;
}

/// ||got - want||_2 / ||want||_2 over all elements (0 when both are 0;
/// infinite when a value is NaN or Inf or the norms overflow).
double normwiseRelativeError(const Tensor &got, const Tensor &want) {
  double diff = 0, norm = 0;
  for (int64_t i = 0, e = want.getNumElements(); i < e; ++i) {
    double w = want.getDouble(i), d = got.getDouble(i) - w;
    diff += d * d;
    norm += w * w;
  }
  if (norm == 0)
    return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  double error = std::sqrt(diff / norm);
  // NaN anywhere, an Inf, or a sum of squares that overflowed: no bound
  // holds.
  if (!std::isfinite(error) || !std::isfinite(norm))
    return std::numeric_limits<double>::infinity();
  return error;
}

/// --global-entry: runs `global` on the interpreter and `local` sharded on
/// N ranks from the same global arguments, and compares the results.
int runShardedCheck(ModuleOp module, Interpreter &interpreter,
                    ArrayRef<func::FuncOp> locals, func::FuncOp global,
                    llvm::ArrayRef<Tensor> args,
                    const SimulationOptions &options, double tolerance) {
  if (options.ranks < 1 || options.ranks > 4096)
    return fail("--simulate expects 1 to 4096 ranks, got " +
                llvm::Twine(options.ranks));
  FailureOr<std::vector<Tensor>> want =
      interpreter.call(global.getSymName(), args);
  if (failed(want))
    return 1;
  loom::sim::Simulator simulator(module, options.ranks);
  FailureOr<std::vector<Tensor>> got =
      loom::sim::runSharded(simulator, locals, global, args);
  if (failed(got))
    return 1;
  bool ok = true;
  for (auto [index, pair] : llvm::enumerate(llvm::zip_equal(*got, *want))) {
    auto &[g, w] = pair;
    double error = normwiseRelativeError(g, w);
    bool pass = g.getKind() == w.getKind() && g.getShape() == w.getShape() &&
                error <= tolerance;
    ok &= pass;
    llvm::outs() << "result #" << index << ": " << w.getTypeString()
                 << llvm::format(" norm-wise relative error %.3e", error)
                 << (pass ? "" : " FAIL") << "\n";
    if (options.print) {
      llvm::outs() << "  sharded = ";
      printTensorValues(llvm::outs(), g);
      llvm::outs() << "\n";
    }
  }
  if (!options.outputDir.empty())
    if (int code = writeAll(options.outputDir, "result", *got))
      return code;
  if (options.commStats)
    for (int64_t r = 0; r < options.ranks; ++r)
      for (const auto &[kind, entry] : simulator.getStats(r).byKind)
        llvm::outs() << "rank " << r << " " << kind << ": calls " << entry.calls
                     << ", bytes sent " << entry.bytesSent << ", received "
                     << entry.bytesReceived << "\n";
  llvm::outs().flush();
  if (!ok)
    return fail("the sharded run of @" +
                func::FuncOp(locals.front()).getSymName() + " differs from @" +
                global.getSymName() + " by more than " +
                llvm::formatv("{0:e}", tolerance).str());
  return 0;
}

} // namespace

int loom::interp::loomRunMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::OptionCategory category("loom-run options");
  llvm::cl::opt<bool> interpret(
      "interpret",
      llvm::cl::desc("Evaluate the program with the reference interpreter "
                     "(the only mode so far)"),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> inputFile(
      llvm::cl::Positional, llvm::cl::desc("<input .mlir file>"),
      llvm::cl::init("-"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> entry(
      "entry",
      llvm::cl::desc("Function to run (default: @main, or the only function)"),
      llvm::cl::value_desc("name"), llvm::cl::cat(category));
  llvm::cl::list<std::string> inputs(
      "input",
      llvm::cl::desc("A .npy file for the next argument, in argument order "
                     "(repeat the flag)"),
      llvm::cl::value_desc("path.npy"), llvm::cl::cat(category));
  llvm::cl::opt<bool> randomInputs(
      "random-inputs",
      llvm::cl::desc("Generate the arguments not given with --input: floats "
                     "uniform in [-1, 1), integers uniform in --int-range, "
                     "i1 fair coins"),
      llvm::cl::cat(category));
  llvm::cl::opt<uint64_t> seed("seed",
                               llvm::cl::desc("Seed of --random-inputs"),
                               llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<std::string> intRange(
      "int-range",
      llvm::cl::desc("Range [LO, HI) of random integer inputs (default 0,8)"),
      llvm::cl::value_desc("LO,HI"), llvm::cl::init("0,8"),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> outputDir(
      "output-dir",
      llvm::cl::desc("Write result #i to DIR/result_<i>.npy (created if "
                     "missing)"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  llvm::cl::opt<bool> print(
      "print",
      llvm::cl::desc("Print every result as `result #i: <type> = [...]`"),
      llvm::cl::cat(category));
  llvm::cl::opt<int64_t> repeat(
      "repeat",
      llvm::cl::desc("Call the function N more times, check that the results "
                     "are the same bits, and print the time per call"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<int64_t> simulate(
      "simulate",
      llvm::cl::desc("Run the function on N simulated ranks (a local-view "
                     "program whose hspmd collectives the simulator carries "
                     "out); rank r's random inputs use seed + r"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<std::string> globalEntry(
      "global-entry",
      llvm::cl::desc(
          "--simulate: the inputs are this function's (global "
          "tensors); --entry is its specialisation, whose "
          "arguments and results carry hspmd.global_layout. Cuts the "
          "inputs into shards, runs the ranks, puts the results "
          "back and compares them with this function's"),
      llvm::cl::init(""), llvm::cl::cat(category));
  llvm::cl::opt<double> tolerance(
      "tolerance",
      llvm::cl::desc("--global-entry: the largest norm-wise relative error "
                     "accepted per result (default 1e-10)"),
      llvm::cl::init(1e-10), llvm::cl::cat(category));
  llvm::cl::opt<bool> commStats(
      "comm-stats",
      llvm::cl::desc("--simulate: print each rank's calls and bytes per "
                     "collective kind"),
      llvm::cl::init(false), llvm::cl::cat(category));
  llvm::cl::opt<bool> commCalls(
      "comm-calls",
      llvm::cl::desc("--train on a device target: print every device "
                     "library call (NCCL, HCCL) of every rank and step, as "
                     "the runtime recorded it at the call site (compare "
                     "with --hspmd-comm-report=calls=1)"),
      llvm::cl::init(false), llvm::cl::cat(category));
  llvm::cl::opt<bool> train(
      "train",
      llvm::cl::desc("Run a training step (a function with an nn.loss "
                     "result) for --steps steps, feeding nn.updates results "
                     "back and printing the loss of every step (see "
                     "runtime/interpreter/Train.cpp)"),
      llvm::cl::cat(category));
  llvm::cl::opt<int64_t> trainSteps(
      "steps", llvm::cl::desc("Number of --train steps (default 100)"),
      llvm::cl::init(100), llvm::cl::cat(category));
  llvm::cl::opt<int64_t> vocab(
      "vocab",
      llvm::cl::desc("--train: integer data is drawn from [0, V) (default 64)"),
      llvm::cl::value_desc("V"), llvm::cl::init(64), llvm::cl::cat(category));
  llvm::cl::opt<std::string> dataTask(
      "data-task",
      llvm::cl::desc("--train: the synthetic task, auto, tokens (target = "
                     "(7 * token + 3) mod V), affine (target = x A + c) or "
                     "classes (label = argmax of x A + c over V classes)"),
      llvm::cl::init("auto"), llvm::cl::cat(category));
  llvm::cl::opt<bool> json(
      "json", llvm::cl::desc("--train: print one JSON object per step"),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> initNpy(
      "init-npy",
      llvm::cl::desc("--train: read the k-th parameter from "
                     "DIR/param_<k>.npy"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> target(
      "target",
      llvm::cl::desc("--train: where the steps run: interpreter (default, one "
                     "process), host (the step's per-group programs "
                     "compiled to C++ and run on --ranks MPI ranks under "
                     "mpirun), cuda (the same on GPUs, one per rank) or "
                     "ascend (the same on Ascend NPUs through CANN) or "
                     "cluster (each device group for the target of its "
                     "devices' kind in hspmd.cluster: cpu host, NVIDIA GPUs "
                     "cuda, Ascend NPUs ascend)"),
      llvm::cl::init("interpreter"), llvm::cl::cat(category));
  llvm::cl::opt<int64_t> ranks(
      "ranks",
      llvm::cl::desc("--target host: the number of ranks (one per device the "
                     "programs use)"),
      llvm::cl::init(1), llvm::cl::cat(category));
  llvm::cl::opt<std::string> workDir(
      "work-dir",
      llvm::cl::desc("--target host: keep the generated C++, the program "
                     "library, the global arrays in and out and the ranks' "
                     "outputs in DIR"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> hostfile(
      "hostfile",
      llvm::cl::desc("--target host: an MPI hostfile (multi-node runs)"),
      llvm::cl::value_desc("file"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> mpirun(
      "mpirun", llvm::cl::desc("--target host: the mpirun to launch with"),
      llvm::cl::init("mpirun"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> emitLibrary(
      "emit-library",
      llvm::cl::desc("--target host|cuda|ascend|cluster: build the programs "
                     "as a shared library with the C ABI of "
                     "include/loom-c/Program.h at this path instead of "
                     "training"),
      llvm::cl::value_desc("path"), llvm::cl::init(""),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> emitExecutable(
      "emit-executable",
      llvm::cl::desc("--target host|cuda|ascend|cluster: build the programs "
                     "as a program executable for mpirun at this path "
                     "(runtime/driver/Driver.h: --steps, --in, --out) "
                     "instead of training"),
      llvm::cl::value_desc("path"), llvm::cl::init(""),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> library(
      "library",
      llvm::cl::desc("--target host|cuda|ascend|cluster: run this program "
                     "library, built before from the same program "
                     "(--emit-library, or program.so in --work-dir), "
                     "instead of compiling"),
      llvm::cl::value_desc("path"), llvm::cl::cat(category));
  llvm::cl::opt<bool> ascendDouble(
      "ascend-double",
      llvm::cl::desc("--target ascend or cluster: run Ascend programs on "
                     "Loom's CPU test double of the "
                     "CANN libraries (ACL, aclnn, HCCL; heap memory, host "
                     "kernels, MPI) instead of Ascend hardware: for testing "
                     "where there is none"),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> dataDir(
      "data",
      llvm::cl::desc("--train: read every nn.data argument's batches from "
                     "DIR/<name>.npy (all steps stacked along a leading "
                     "dimension) instead of the synthetic task"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  llvm::cl::list<std::string> strategySchedule(
      "strategies",
      llvm::cl::desc("--train on a step specialised to strategies "
                     "(hspmd-specialize-strategies): the strategy of each "
                     "step, in turn (step n runs entry (n - 1) mod count; "
                     "with per-step folders, folder n's entry, and its "
                     "'strategy' file comes first); the "
                     "host target moves the parameters and state between "
                     "them in one exchange per switch"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("name,..."),
      llvm::cl::cat(category));
  llvm::cl::opt<std::string> traceFile(
      "trace",
      llvm::cl::desc("--target host: write a Chrome trace (JSON, for "
                     "Perfetto) of every rank's step phases and collectives"),
      llvm::cl::value_desc("file.json"), llvm::cl::cat(category));
  llvm::cl::opt<std::string> configFile(
      "config",
      llvm::cl::desc("A run configuration in protobuf text format "
                     "(frontends/config/loom_config.proto)"),
      llvm::cl::value_desc("file"), llvm::cl::cat(category));
  llvm::cl::opt<bool> checkConfigOnly(
      "check-config",
      llvm::cl::desc("With --config: parse and check it, print a summary, "
                     "and stop"),
      llvm::cl::cat(category));
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "Loom program runner: evaluates nn programs on the host\n");

  if (checkConfigOnly) {
    if (configFile.empty())
      return fail("--check-config needs --config FILE");
    std::string error;
    FailureOr<loom::config::Config> config =
        loom::config::loadConfig(configFile, error);
    if (failed(config))
      return fail(error);
    MLIRContext context;
    context.loadDialect<loom::hspmd::HSPMDDialect>();
    std::vector<std::string> problems;
    if (failed(loom::config::checkConfig(*config, &context, problems))) {
      for (const std::string &problem : problems)
        llvm::errs() << configFile << ": " << problem << "\n";
      return fail(configFile + ": " + std::to_string(problems.size()) +
                  " problem(s)");
    }
    llvm::outs() << "config " << configFile << ": "
                 << loom::config::summarize(*config) << "\n";
    return 0;
  }
  auto commonTrainOptions = [&] {
    TrainOptions options;
    options.entry = entry;
    options.steps = trainSteps;
    options.seed = seed;
    options.vocab = vocab;
    options.dataTask = dataTask;
    options.json = json;
    options.initDir = initNpy;
    options.outputDir = outputDir;
    options.dataDir = dataDir;
    options.strategies.assign(strategySchedule.begin(), strategySchedule.end());
    return options;
  };
  auto hostOptions = [&] {
    HostLaunchOptions host;
    host.ranks = ranks;
    host.workDir = workDir;
    host.hostfile = hostfile;
    host.mpirun = mpirun;
    host.library = library;
    host.emitLibrary = emitLibrary;
    host.emitExecutable = emitExecutable;
    host.commStats = commStats;
    host.commCalls = commCalls;
    host.trace = traceFile;
    host.ascendDouble = ascendDouble;
    return host;
  };
  if (!configFile.empty()) {
    // A run from the configuration: the model is a forward function.
    std::string error;
    FailureOr<loom::config::Config> config =
        loom::config::loadConfig(configFile, error);
    if (failed(config))
      return fail(error);
    std::string errorMessage;
    std::unique_ptr<llvm::MemoryBuffer> file =
        openInputFile(inputFile, &errorMessage);
    if (!file)
      return fail(errorMessage);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    return runFromConfig(*config, sourceMgr, commonTrainOptions(),
                         hostOptions());
  }

  if (!interpret)
    return fail("pass --interpret: running on the reference interpreter is "
                "the only mode loom-run has so far");

  RandomSpec spec;
  spec.seed = seed;
  {
    auto [low, high] = llvm::StringRef(intRange).split(',');
    if (low.trim().getAsInteger(10, spec.intLow) ||
        high.trim().getAsInteger(10, spec.intHigh) ||
        spec.intLow >= spec.intHigh)
      return fail("--int-range expects LO,HI with LO < HI, got '" + intRange +
                  "'");
  }

  // The dialects the interpreter has kernels for; interfaces that passes
  // attach (InitAllDialects.h) are not needed to evaluate a program.
  DialectRegistry registry;
  registry
      .insert<loom::nn::NNDialect, loom::hspmd::HSPMDDialect,
              arith::ArithDialect, func::FuncDialect, tensor::TensorDialect>();
  MLIRContext context(registry);
  context.allowUnregisteredDialects(false);
  // Diagnostics point at the source line; the op printout would repeat it.
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFile, &errorMessage);
  if (!file)
    return fail(errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module = parseWithArgumentNames(sourceMgr, &context);
  if (!module)
    return 1;

  Interpreter interpreter(*module);
  if (train) {
    if (!inputs.empty() || randomInputs || print || repeat ||
        simulate.getNumOccurrences())
      return fail("--train generates its own arguments and prints losses; "
                  "it does not take --input, --random-inputs, --print, "
                  "--repeat or --simulate");
    TrainOptions options = commonTrainOptions();
    if (ascendDouble && target != "ascend" && target != "cluster")
      return fail("--ascend-double applies with --target ascend or cluster");
    if (target == "host" || target == "cuda" || target == "ascend" ||
        target == "cluster") {
      HostLaunchOptions host = hostOptions();
      host.target = target;
      if (commCalls && target == "host")
        return fail("--comm-calls: the host target calls no device library "
                    "(its collectives are MPI messages, which --comm-stats "
                    "counts)");
      if (options.entry.empty())
        options.entry = globalEntry;
      return runOnHostRanks(*module, interpreter, options, host);
    }
    if (target != "interpreter")
      return fail("--target must be interpreter, host, cuda, ascend or "
                  "cluster, got '" +
                  target + "'");
    if (commStats)
      return fail("--comm-stats applies with --simulate or --target host");
    if (commCalls)
      return fail("--comm-calls applies with --train on a compiled target "
                  "(--target cuda, ascend or cluster)");
    return runTraining(*module, interpreter, options);
  }
  if (json || !initNpy.empty() || trainSteps.getNumOccurrences() ||
      vocab.getNumOccurrences() || dataTask.getNumOccurrences())
    return fail("--steps, --vocab, --data-task, --json and --init-npy only "
                "apply with --train");
  if (!emitExecutable.empty())
    return fail("--emit-executable builds a training step's program "
                "executable; it needs --train");
  if (!emitLibrary.empty()) {
    // A forward (inference, rollout) program as a library: no training.
    if (!inputs.empty() || randomInputs || print || repeat ||
        simulate.getNumOccurrences())
      return fail("--emit-library builds the program and stops; it does not "
                  "take --input, --random-inputs, --print, --repeat or "
                  "--simulate");
    if (target != "host" && target != "cuda" && target != "ascend" &&
        target != "cluster")
      return fail("--emit-library needs --target host, cuda, ascend or "
                  "cluster");
    return emitForwardLibrary(*module, globalEntry.empty() ? entry
                                                           : globalEntry,
                              target, emitLibrary);
  }
  // With --global-entry, the arguments are @global's (global tensors) and
  // the --entry function is its specialisation, run sharded.
  // Without --entry, every specialisation of @global runs, each on its
  // group's devices (rank d is device d).
  SmallVector<func::FuncOp> localFuncs;
  if (!globalEntry.empty()) {
    if (!simulate.getNumOccurrences())
      return fail("--global-entry needs --simulate N (and --entry naming the "
                  "specialised function, or none to run every group's)");
    if (!entry.empty()) {
      func::FuncOp local = interpreter.lookupFunction(entry);
      if (!local)
        return 1;
      localFuncs.push_back(local);
    } else {
      for (auto candidate : module->getOps<func::FuncOp>())
        if (FlatSymbolRefAttr of = loom::getSpecializes(candidate);
            of && of.getValue() == globalEntry)
          localFuncs.push_back(candidate);
      if (localFuncs.empty())
        return fail("no function specialises @" + globalEntry +
                    "; run --hspmd-specialize, or name one with --entry");
    }
  }
  func::FuncOp func = globalEntry.empty()
                          ? chooseEntry(*module, interpreter, entry)
                          : interpreter.lookupFunction(globalEntry);
  if (!func)
    return 1;
  FunctionType type = func.getFunctionType();

  std::vector<Tensor> args;
  std::vector<std::string> sources;
  if (inputs.size() > type.getNumInputs())
    return fail("got " + llvm::Twine(inputs.size()) + " --input files but @" +
                func.getSymName() + " takes " +
                llvm::Twine(type.getNumInputs()) + " arguments");
  for (const std::string &path : inputs) {
    llvm::Expected<Tensor> tensor = readNpyFile(path);
    if (!tensor)
      return fail("input for argument #" + llvm::Twine(args.size()) + " of @" +
                  func.getSymName() + ": " +
                  llvm::toString(tensor.takeError()));
    args.push_back(std::move(*tensor));
    sources.push_back(path);
  }
  // Random arguments after the --input ones, from `rankSpec`.
  auto appendRandom = [&](std::vector<Tensor> &into,
                          const RandomSpec &rankSpec) -> int {
    for (unsigned i = into.size(); i < type.getNumInputs(); ++i) {
      auto ranked = dyn_cast<RankedTensorType>(type.getInput(i));
      std::optional<ElementKind> kind =
          ranked ? getElementKind(ranked.getElementType()) : std::nullopt;
      if (!kind || !ranked.hasStaticShape())
        return fail("cannot generate argument #" + llvm::Twine(i) + " of @" +
                    func.getSymName() +
                    ": random inputs need a static tensor type of f32, f64, "
                    "bf16, i1, i32 or i64; give it with --input");
      std::optional<int64_t> count = getCheckedNumElements(ranked.getShape());
      if (!count || static_cast<uint64_t>(*count) * getElementSize(*kind) >
                        interpreter.getOptions().maxTensorBytes)
        return fail("argument #" + llvm::Twine(i) + " of @" +
                    func.getSymName() + " is too large to generate");
      into.push_back(makeRandomTensor(*kind, ranked.getShape(), rankSpec, i));
      if (&into == &args)
        sources.push_back("random");
    }
    return 0;
  };
  if (randomInputs)
    if (int code = appendRandom(args, spec))
      return code;
  if (failed(Interpreter::checkArguments(func, args, sources)))
    return 1;
  if (commStats && !simulate.getNumOccurrences())
    return fail("--comm-stats only applies with --simulate");
  if (commCalls)
    return fail("--comm-calls applies with --train on a compiled target "
                "(--target cuda, ascend or cluster)");
  if (simulate.getNumOccurrences() && repeat)
    return fail("--repeat times the single-device interpreter; it does not "
                "combine with --simulate");
  if (!localFuncs.empty())
    return runShardedCheck(*module, interpreter, localFuncs, func, args,
                           {simulate, outputDir, print, commStats}, tolerance);
  if (simulate.getNumOccurrences())
    return runSimulation(
        *module, func, args,
        [&](int64_t rank) {
          std::vector<Tensor> rankArgs(args.begin(),
                                       args.begin() + inputs.size());
          RandomSpec rankSpec = spec;
          rankSpec.seed = spec.seed + static_cast<uint64_t>(rank);
          if (randomInputs)
            (void)appendRandom(rankArgs, rankSpec); // checked on rank 0's
          return rankArgs;
        },
        {simulate, outputDir, print, commStats});

  FailureOr<std::vector<Tensor>> results =
      interpreter.call(func.getSymName(), args);
  if (failed(results))
    return 1;
  if (repeat < 0)
    return fail("--repeat expects N >= 0, got " + llvm::Twine(repeat));
  if (repeat > 0) {
    std::vector<double> seconds;
    for (int64_t i = 0; i < repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      FailureOr<std::vector<Tensor>> again =
          interpreter.call(func.getSymName(), args);
      seconds.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      if (failed(again))
        return 1;
      for (auto [index, result] : llvm::enumerate(*again))
        if (!result.bitwiseEqual((*results)[index]))
          return fail("--repeat: call " + llvm::Twine(i + 2) + " of @" +
                      func.getSymName() + " gave other bits in result #" +
                      llvm::Twine(index) + " than the first");
    }
    std::sort(seconds.begin(), seconds.end());
    llvm::outs() << llvm::format(
        "timing: %lld calls of @%s, min %.6f s, median %.6f s per call\n",
        static_cast<long long>(repeat), func.getSymName().str().c_str(),
        seconds.front(), seconds[seconds.size() / 2]);
    llvm::outs() << "blas: " << getBlasDescription() << "\n";
  }

  if (!outputDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("cannot create '" + outputDir + "': " + ec.message());
    for (auto [index, result] : llvm::enumerate(*results)) {
      llvm::SmallString<128> path(outputDir);
      llvm::sys::path::append(path, "result_" + llvm::Twine(index) + ".npy");
      if (llvm::Error err = writeNpyFile(path, result))
        return fail(llvm::toString(std::move(err)));
    }
  }
  if (print) {
    for (auto [index, result] : llvm::enumerate(*results)) {
      llvm::outs() << "result #" << index << ": " << result.getTypeString()
                   << " = ";
      printTensorValues(llvm::outs(), result);
      llvm::outs() << "\n";
    }
  }
  llvm::outs().flush();
  return 0;
}
