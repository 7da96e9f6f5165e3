//===- HostLaunch.cpp - loom-run --train --target host --------------------===//

#include "tools/loom-run/HostLaunch.h"
#include "tools/loom-run/HostToolchain.h"
#include "lib/CAPI/ProgramBuild.h"
#ifdef LOOM_HAVE_CUDA_TOOLCHAIN
#include "tools/loom-run/CudaToolchain.h"
#endif

#include "codegen/Pipelines.h"
#include "passes/Partitioning/Attributes.h"
#include "runtime/interpreter/Npy.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace loom;
using namespace loom::interp;

namespace {

/// Planted faults, for the tests that prove the end-to-end checks bite:
/// LOOM_TEST_FAULT names one fault loom-run plants in what it reports of a
/// run on ranks (never set outside those tests):
///   nan-param    element 0 of the first parameter written is NaN;
///   loss-1e-6    every step's loss is reported 1e-6 (relative) too high;
///   miscount     rank 0's first counted collective sent one byte more.
bool plantedFault(llvm::StringRef fault) {
  const char *value = std::getenv("LOOM_TEST_FAULT");
  return value && fault == value;
}

int fail(const llvm::Twine &message) { return reportError(message); }

/// One local program and the devices that run it.
struct Program {
  func::FuncOp func;
  std::vector<int64_t> devices;
};

bool writeRaw(const std::string &path, const Tensor &tensor,
              std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path + "': " + ec.message();
    return false;
  }
  os.write(reinterpret_cast<const char *>(tensor.rawData()),
           tensor.getByteSize());
  return true;
}

FailureOr<std::string> readFile(const std::string &path, std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return failure();
  }
  return (*buffer)->getBuffer().str();
}

/// A tensor of `type` from `bytes` at `offset`.
FailureOr<Tensor> tensorFrom(RankedTensorType type, const std::string &bytes,
                             size_t offset, std::string &error) {
  std::optional<ElementKind> kind = getElementKind(type.getElementType());
  Tensor tensor(*kind, type.getShape());
  size_t size = static_cast<size_t>(tensor.getByteSize());
  if (offset + size > bytes.size()) {
    error = "a rank's output is shorter than expected";
    return failure();
  }
  std::memcpy(tensor.rawData(), bytes.data() + offset, size);
  return tensor;
}

int run(llvm::ArrayRef<std::string> command, const std::string &what,
        std::optional<llvm::ArrayRef<llvm::StringRef>> env = std::nullopt) {
  llvm::ErrorOr<std::string> program =
      llvm::sys::findProgramByName(command.front());
  if (!program)
    return fail(what + ": cannot find '" + command.front() + "'");
  SmallVector<llvm::StringRef> args(command.begin(), command.end());
  std::string message;
  int status =
      llvm::sys::ExecuteAndWait(*program, args, env, {}, 0, 0, &message);
  if (status != 0)
    return fail(what + " failed (exit status " + llvm::Twine(status) + ")" +
                (message.empty() ? "" : ": " + message) + ": " +
                llvm::join(command, " "));
  return 0;
}

} // namespace

int loom::interp::reportError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "loom-run") << message << "\n";
  return 1;
}

/// Compiles `entry` of `module` for `target` to C++ at `source` and builds
/// it at `output`: a program library, or a program executable.
static int buildProgram(ModuleOp module, const std::string &entry,
                        const std::string &targetName,
                        const std::string &source, const std::string &output,
                        bool library) {
  std::optional<codegen::Target> target = codegen::parseTarget(targetName);
  if (!target)
    return fail("unknown target '" + targetName +
                "' (host, cuda, ascend or cluster)");
#ifndef LOOM_CUDA_LIBS
  if (*target == codegen::Target::Cuda)
    return fail("this build has no CUDA target (configure with "
                "LOOM_ENABLE_CUDA where nvcc, cuBLAS and NCCL are installed)");
#endif
  codegen::CompileOptions compile;
  compile.target = *target;
  compile.entry = entry;
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    if (failed(codegen::emitTargetSources(module, compile, os)))
      return 1;
    std::error_code ec;
    llvm::raw_fd_ostream file(source, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail("cannot write '" + source + "': " + ec.message());
    file << text;
  }
  capi::BuildKind kind = capi::getBuildKind(text, library);
#ifndef LOOM_CUDA_LIBS
  if (kind.cuda)
    return fail("the cluster has CUDA devices but this build has no CUDA "
                "target (configure with LOOM_ENABLE_CUDA where nvcc, "
                "cuBLAS and NCCL are installed)");
#endif
  return run(capi::getCompileCommand(source, output, kind),
             "compiling the generated C++");
}

int loom::interp::emitForwardLibrary(ModuleOp module,
                                     const std::string &entry,
                                     const std::string &target,
                                     const std::string &output) {
  func::FuncOp func = module.lookupSymbol<func::FuncOp>(entry);
  if (entry.empty() || !func)
    return fail(entry.empty()
                    ? llvm::Twine("--emit-library without --train builds the "
                                  "function --global-entry (or --entry) "
                                  "names; name one")
                    : "no function @" + entry + " to build");
  bool partitioned = llvm::any_of(module.getOps<func::FuncOp>(),
                                  [&](func::FuncOp candidate) {
                                    FlatSymbolRefAttr of =
                                        getSpecializes(candidate);
                                    return of && of.getValue() == entry;
                                  });
  if (!partitioned)
    return fail("@" + entry + " has no per-device programs; partition it "
                "first (loom-opt --loom-partition-pipeline)");
  llvm::SmallString<128> source;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("loom-program", "cpp", source))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::scope_exit remove([&] { llvm::sys::fs::remove(source); });
  return buildProgram(module, entry, target, source.str().str(), output,
                      /*library=*/true);
}

int loom::interp::runOnHostRanks(ModuleOp module, Interpreter &interpreter,
                                 const TrainOptions &train,
                                 const HostLaunchOptions &host) {
  TrainingSetup setup;
  if (int code = prepareTraining(module, interpreter, train, setup))
    return code;
  func::FuncOp global = setup.func;
  llvm::StringRef name = global.getSymName();
  size_t numVariants = setup.variants.size();
  // The variants the steps run, each built once, in order: library[v] is
  // variant built[v]'s, libraryOf[variant] its index.
  std::vector<size_t> built;
  std::map<size_t, size_t> libraryOf;
  if (numVariants == 1) {
    built.push_back(0);
  } else {
    std::set<size_t> used;
    for (const TrainingSetup::StepData &step : setup.stepData)
      used.insert(step.variant);
    if (setup.stepData.empty())
      used.insert(setup.scheduleVariants.begin(), setup.scheduleVariants.end());
    if (used.empty())
      used.insert(0);
    built.assign(used.begin(), used.end());
  }
  for (auto [k, v] : llvm::enumerate(built))
    libraryOf[v] = k;

  // The programs and their devices (of every variant of the step: the
  // same devices).
  std::map<int64_t, size_t> programOf;
  // (Per variant: its programs, and the program of each device.)
  std::vector<std::vector<Program>> variantPrograms;
  std::vector<std::map<int64_t, size_t>> variantProgramOf;
  for (func::FuncOp variant : setup.variants) {
    llvm::StringRef variantName = variant.getSymName();
    std::vector<Program> found;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      FlatSymbolRefAttr of = getSpecializes(func);
      if (!of || of.getValue() != variantName)
        continue;
      hspmd::DeviceGroupAttr group = getGroup(func);
      if (!group)
        return fail("@" + func.getSymName() + " specialises @" + variantName +
                    " but has no hspmd.group");
      SmallVector<int64_t> devices = getRunningDevices(func);
      found.push_back({func, std::vector<int64_t>(devices.begin(),
                                                  devices.end())});
    }
    if (found.empty())
      found.push_back({variant, {0}});
    std::map<int64_t, size_t> of;
    for (auto [index, program] : llvm::enumerate(found))
      for (int64_t device : program.devices)
        of[device] = index;
    variantPrograms.push_back(found);
    variantProgramOf.push_back(of);
    if (variant == global)
      programOf = of;
    else if (llvm::to_vector(llvm::make_first_range(of)) !=
             llvm::to_vector(llvm::make_first_range(programOf)))
      return fail("the variants @" + name + " and @" + variantName +
                  " run on different devices");
  }
  int64_t needed = static_cast<int64_t>(programOf.size());
  if (programOf.rbegin()->first + 1 != needed || host.ranks != needed) {
    std::string devices;
    for (auto [device, index] : programOf)
      devices += (devices.empty() ? "" : ", ") + std::to_string(device);
    return fail("the programs of @" + name + " run on devices {" + devices +
                "}, one rank each, but --ranks is " + llvm::Twine(host.ranks) +
                (programOf.rbegin()->first + 1 != needed
                     ? " (and the devices are not 0 .. N-1)"
                     : ""));
  }

  // The work folder (a temporary one is removed however the run ends).
  std::string work = host.workDir;
  bool removeWork = false;
  llvm::scope_exit cleanup([&] {
    if (removeWork)
      llvm::sys::fs::remove_directories(work);
  });
  if (work.empty()) {
    llvm::SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("loom-run", path))
      return fail("cannot create a work folder: " + ec.message());
    work = path.str().str();
    removeWork = true;
  } else if (std::error_code ec = llvm::sys::fs::create_directories(work)) {
    return fail("cannot create '" + work + "': " + ec.message());
  }

  // 1. The C++ of every program, built as a program library (one per
  // variant of the step).
  std::string library = host.library;
  std::vector<std::string> libraries;
  bool emitOnly = !host.emitLibrary.empty() || !host.emitExecutable.empty();
  if (!host.emitLibrary.empty() && !host.emitExecutable.empty())
    return fail("--emit-library and --emit-executable: one build at a time");
  if (emitOnly && !library.empty())
    return fail("--emit-library and --emit-executable build from the "
                "program; they do not take --library");
  if (numVariants > 1 && (emitOnly || !library.empty()))
    return fail("--library, --emit-library and --emit-executable take one "
                "program; @" + name + " has " + llvm::Twine(numVariants) +
                " variants: choose one with --entry");
  if (!library.empty())
    libraries.push_back(library);
  for (size_t k = 0; k < built.size() && library.empty(); ++k) {
    llvm::StringRef variantName = setup.variants[built[k]].getSymName();
    std::string suffix = k ? std::to_string(k) : "";
    OwningOpRef<ModuleOp> copy = module.clone();
    std::string output = !host.emitLibrary.empty()      ? host.emitLibrary
                        : !host.emitExecutable.empty() ? host.emitExecutable
                                                       : work + "/program" +
                                                             suffix + ".so";
    if (int code = buildProgram(*copy, variantName.str(), host.target,
                                work + "/program" + suffix + ".cpp", output,
                                /*library=*/host.emitExecutable.empty()))
      return code;
    if (emitOnly)
      return 0;
    libraries.push_back(output);
  }

  // 2. The global arrays: initial parameters and state, then each step's
  // data (the library sets the step counters itself); each rank keeps its
  // shard.
  std::string in = work + "/in", out = work + "/out";
  std::vector<bool> perStep(global.getNumArguments(), false);
  for (unsigned i : setup.data)
    perStep[i] = true;
  for (unsigned i : setup.steps)
    perStep[i] = true;
  auto writeArrays = [&](const std::string &dir, bool stepArgs) -> int {
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return fail("cannot create '" + dir + "': " + ec.message());
    for (unsigned i = 0; i < global.getNumArguments(); ++i) {
      if (perStep[i] != stepArgs || llvm::is_contained(setup.steps, i))
        continue;
      std::string error;
      if (!writeRaw(dir + "/arg" + std::to_string(i) + ".bin", setup.args[i],
                    error))
        return fail(error);
    }
    return 0;
  };
  if (int code = writeArrays(in, false))
    return code;
  std::vector<unsigned> stepVariants;
  for (int64_t step = 1; step <= train.steps; ++step) {
    fillStepArguments(setup, step);
    stepVariants.push_back(setup.current);
    std::string dir = in + "/step" + std::to_string(step);
    if (int code = writeArrays(dir, true))
      return code;
    {
      // The variant of the step (runtime/driver/Driver.h; written for one
      // too, so that a reused work folder holds no stale one).
      std::error_code ec;
      llvm::raw_fd_ostream file(dir + "/variant", ec, llvm::sys::fs::OF_Text);
      if (ec)
        return fail("cannot write '" + dir + "/variant': " + ec.message());
      file << libraryOf.at(setup.current) << "\n";
    }
  }

  // 3. The ranks.
  std::vector<std::string> command = {
      host.mpirun, "-np", std::to_string(host.ranks), "--oversubscribe"};
  if (::geteuid() == 0)
    command.push_back("--allow-run-as-root");
  if (!host.hostfile.empty()) {
    command.push_back("--hostfile");
    command.push_back(host.hostfile);
  }
  ::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  // Debian's OpenBLAS (0.3.21) does not recognise some newer or virtualised
  // CPUs and falls back to generic (Prescott) GEMM kernels, about half the
  // speed; unless told otherwise, name the kernel family the CPU supports.
  // (Only on one node: other nodes' CPUs may differ.)
  if (!::getenv("OPENBLAS_CORETYPE") && host.hostfile.empty()) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    else if (__builtin_cpu_supports("avx2"))
      ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  }
  ::setenv("LOOM_COLLECTIVE_TIMEOUT_S", "30", /*overwrite=*/0);
  // The Ascend target finds CANN on the library path (its set_env.sh); the
  // test double comes first on it when asked for.
  std::vector<const char *> forwarded = {"OPENBLAS_NUM_THREADS",
                                         "OPENBLAS_CORETYPE",
                                         "LOOM_COLLECTIVE_TIMEOUT_S",
                                         "ASAN_OPTIONS",
                                         "UBSAN_OPTIONS",
                                         "LOOM_TEST_HANG",
                                         "LOOM_TEST_FAULT",
                                         "LOOM_TEST_SHORT_COUNT",
                                         "LOOM_MPI_MESSAGE_LIMIT",
                                         "LOOM_ASCEND_DOUBLE_LOG",
                                         "LOOM_DEVICE_STEP_TIMEOUT_S"};
  if (host.target == "ascend" || host.target == "cluster") {
    if (host.ascendDouble) {
      std::string path = LOOM_ASCEND_DOUBLE_DIR;
      if (const char *old = ::getenv("LD_LIBRARY_PATH"))
        path += std::string(":") + old;
      ::setenv("LD_LIBRARY_PATH", path.c_str(), 1);
      llvm::errs() << "loom-run: the Ascend target runs on Loom's CPU test "
                      "double of ACL/aclnn/HCCL (no Ascend hardware)\n";
    }
    forwarded.push_back("LD_LIBRARY_PATH");
  }
  // Threads where they pay: on one node with at least 4 cores per rank,
  // those cores go to the rank's GEMMs (LOOM_HOST_THREADS,
  // runtime/kernels/Blas.cpp); with fewer, ranks and threads would only
  // contend (on 2 cores a 2-thread rank measured no faster).
  if (!::getenv("LOOM_HOST_THREADS") && host.hostfile.empty()) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    int64_t perRank = cores / std::max<int64_t>(1, host.ranks);
    ::setenv("LOOM_HOST_THREADS",
             std::to_string(perRank >= 4 ? perRank : 1).c_str(), 1);
  }
  // MPI keeps memory until the process ends: no leak checks in the ranks.
  std::string asan = ::getenv("ASAN_OPTIONS") ? ::getenv("ASAN_OPTIONS") : "";
  ::setenv("ASAN_OPTIONS",
           (asan + (asan.empty() ? "" : ":") + "detect_leaks=0").c_str(), 1);
  // The ranks (on every node) get these variables where they are set.
  for (const char *var : forwarded) {
    if (!::getenv(var))
      continue;
    command.push_back("-x");
    command.push_back(var);
  }
  command.push_back(LOOM_RANK_TOOL);
  command.insert(command.end(), libraries.begin(), libraries.end());
  command.insert(command.end(), {"--steps", std::to_string(train.steps),
                                 "--in", in, "--out", out});
  if (!train.outputDir.empty())
    command.push_back("--save-args");
  if (!host.trace.empty())
    command.push_back("--trace");
  if (host.commCalls)
    command.push_back("--calls");
  if (int code = run(command, "the ranks (mpirun)"))
    return code;

  // 4. Losses per step (rank 0 wrote the global loss of each); the step
  // time is the slowest rank's.
  std::map<int64_t, std::vector<double>> times;
  for (auto [device, index] : programOf) {
    std::string error;
    FailureOr<std::string> timeText =
        readFile(out + "/rank" + std::to_string(device) + "/times.txt", error);
    if (failed(timeText))
      return fail(error);
    SmallVector<llvm::StringRef> lines;
    llvm::StringRef(*timeText).split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines) {
      double seconds = 0;
      line.getAsDouble(seconds);
      times[device].push_back(seconds);
    }
  }
  // The switches between variants (runtime/driver/Driver.h): per step,
  // the bytes every rank sent (summed), the plan's volume and the slowest
  // rank's seconds; per rank, its totals.
  struct SwitchFigures {
    int64_t sent = 0, planned = -1;
    double seconds = 0;
  };
  std::map<int64_t, SwitchFigures> switchAt;
  std::map<int64_t, std::array<int64_t, 3>> switchOf; // count, sent, received
  for (auto [device, index] : programOf) {
    std::string error;
    FailureOr<std::string> text = readFile(
        out + "/rank" + std::to_string(device) + "/switch.txt", error);
    if (failed(text))
      return fail(error);
    SmallVector<llvm::StringRef> lines;
    llvm::StringRef(*text).split(lines, '\n', -1, false);
    std::array<int64_t, 3> &totals = switchOf[device];
    totals = {0, 0, 0};
    for (llvm::StringRef line : lines) {
      SmallVector<llvm::StringRef> words;
      line.split(words, ' ');
      int64_t step = 0, sent = 0, received = 0, planned = 0;
      double seconds = 0;
      if (words.size() != 8 || words[0].getAsInteger(10, step) ||
          words[3].getAsInteger(10, sent) ||
          words[4].getAsInteger(10, received) ||
          words[6].getAsInteger(10, planned) ||
          words[7].getAsDouble(seconds))
        return fail("rank " + llvm::Twine(device) +
                    " wrote a switch record loom-run cannot read: '" + line +
                    "'");
      SwitchFigures &figures = switchAt[step];
      if (figures.planned >= 0 && figures.planned != planned)
        return fail("the ranks recorded different plans of the switch "
                    "before step " +
                    llvm::Twine(step) + " (" + llvm::Twine(figures.planned) +
                    " and " + llvm::Twine(planned) + " bytes)");
      figures.sent += sent;
      figures.planned = planned;
      figures.seconds = std::max(figures.seconds, seconds);
      totals[0] += 1;
      totals[1] += sent;
      totals[2] += received;
    }
  }
  std::string error;
  FailureOr<std::string> losses = readFile(out + "/loss.bin", error);
  if (failed(losses))
    return fail(error);
  if (losses->size() != static_cast<size_t>(train.steps) * sizeof(double))
    return fail("the ranks wrote " + llvm::Twine(losses->size()) +
                " bytes of losses for " + llvm::Twine(train.steps) +
                " steps");
  auto lossType = cast<RankedTensorType>(
      global.getFunctionType().getResult(*setup.lossIndex));
  // And the gradients' global norm of each, where the step computes it.
  std::string norms;
  if (setup.gradNormIndex) {
    FailureOr<std::string> text = readFile(out + "/grad_norm.bin", error);
    if (failed(text))
      return fail(error);
    if (text->size() != static_cast<size_t>(train.steps) * sizeof(double))
      return fail("the ranks wrote " + llvm::Twine(text->size()) +
                  " bytes of gradient norms for " + llvm::Twine(train.steps) +
                  " steps");
    norms = std::move(*text);
  }
  llvm::raw_ostream &os = llvm::outs();
  for (int64_t step = 1; step <= train.steps; ++step) {
    double value = 0;
    std::memcpy(&value, losses->data() + (step - 1) * sizeof(double),
                sizeof(double));
    double seconds = 0;
    for (auto &[device, list] : times)
      if (step - 1 < static_cast<int64_t>(list.size()))
        seconds = std::max(seconds, list[step - 1]);
    double tokensPerSecond =
        seconds > 0 ? static_cast<double>(
                          setup.variantTokens[stepVariants[step - 1]]) /
                          seconds
                    : 0;
    double flopsPerSecond =
        seconds > 0 ? setup.variantFlops[stepVariants[step - 1]] / seconds
                    : 0;
    auto g4 = [](double value) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.4g", value);
      return std::string(text);
    };
    std::string throughput = g4(flopsPerSecond);
    std::string utilisation;
    if (host.peakFlops > 0)
      utilisation = g4(flopsPerSecond / host.peakFlops);
    if (plantedFault("loss-1e-6"))
      value *= 1 + 1e-6;
    const char *format =
        lossType.getElementType().isF64() ? "%.17g" : "%.9g";
    std::string variant =
        numVariants > 1
            ? setup.variants[stepVariants[step - 1]].getSymName().str()
            : "";
    // (A switching run's strategy, and the switch before the step.)
    std::string strategy, switched, switchedJson;
    if (auto name = setup.variants[stepVariants[step - 1]]
                        ->getAttrOfType<StringAttr>(
                            hspmd::HSPMDDialect::getStrategyAttrName()))
      strategy = name.getValue().str();
    if (auto it = switchAt.find(step); it != switchAt.end()) {
      if (it->second.sent != it->second.planned)
        return fail("the switch before step " + llvm::Twine(step) +
                    " moved " + llvm::Twine(it->second.sent) +
                    " bytes but its plan " + llvm::Twine(it->second.planned));
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.3g", it->second.seconds);
      switched = " switch " + std::to_string(it->second.sent) + " bytes " +
                 seconds + " s";
      switchedJson = ",\"switch_bytes\":" + std::to_string(it->second.sent) +
                     ",\"switch_s\":" + seconds;
    }
    std::string norm;
    if (!norms.empty()) {
      double normValue = 0;
      std::memcpy(&normValue, norms.data() + (step - 1) * sizeof(double),
                  sizeof(double));
      if (!std::isfinite(normValue))
        return fail("the gradient norm is not finite at step " +
                    llvm::Twine(step));
      auto normType = cast<RankedTensorType>(
          global.getFunctionType().getResult(*setup.gradNormIndex));
      char text[32];
      std::snprintf(text, sizeof(text),
                    normType.getElementType().isF64() ? "%.17g" : "%.9g",
                    normValue);
      norm = text;
    }
    if (train.json)
      os << "{\"step\":" << step << ",\"loss\":" << llvm::format(format, value)
         << (norm.empty() ? "" : ",\"grad_norm\":" + norm)
         << ",\"tokens\":" << setup.variantTokens[stepVariants[step - 1]]
         << ",\"tokens_per_s\":" << llvm::format("%.1f", tokensPerSecond)
         << ",\"flops_per_s\":" << throughput
         << (utilisation.empty() ? "" : ",\"utilisation\":" + utilisation)
         << (variant.empty() ? "" : ",\"variant\":\"" + variant + "\"")
         << (strategy.empty() ? "" : ",\"strategy\":\"" + strategy + "\"")
         << switchedJson << "}\n";
    else
      os << "step " << step << " loss " << llvm::format(format, value)
         << (norm.empty() ? "" : " grad_norm " + norm)
         << " tokens/s " << llvm::format("%.1f", tokensPerSecond)
         << " flop/s " << throughput
         << (utilisation.empty() ? "" : " utilisation " + utilisation)
         << (variant.empty() ? "" : " variant @" + variant)
         << (strategy.empty() ? "" : " strategy " + strategy) << switched
         << "\n";
  }

  // 5. Communication per rank.
  if (host.commStats)
    for (auto [device, index] : programOf) {
      std::string error;
      FailureOr<std::string> text =
          readFile(out + "/rank" + std::to_string(device) + "/comm.txt", error);
      if (failed(text))
        return fail(error);
      SmallVector<llvm::StringRef> lines;
      llvm::StringRef(*text).split(lines, '\n', -1, false);
      for (auto [n, line] : llvm::enumerate(lines)) {
        SmallVector<llvm::StringRef> words;
        line.split(words, ' ');
        if (words.size() != 4)
          continue;
        std::string sent = words[2].str();
        uint64_t bytes = 0;
        if (device == 0 && n == 0 && plantedFault("miscount") &&
            !words[2].getAsInteger(10, bytes))
          sent = std::to_string(bytes + 1);
        os << "rank " << device << " " << words[0] << ": calls " << words[1]
           << ", bytes sent " << sent << ", received " << words[3] << "\n";
      }
      // (The switches between strategies, apart from the steps' traffic.)
      if (const std::array<int64_t, 3> &totals = switchOf[device]; totals[0])
        os << "rank " << device << " switch: switches " << totals[0]
           << ", bytes sent " << totals[1] << ", received " << totals[2]
           << "\n";
    }

  // 5b. Device library calls per rank and step, as recorded:
  //   call rank R step S #C COLLECTIVE: PRIMITIVE DTYPE x COUNT over {G}
  // (send: `to P`, recv: `from P`), as --hspmd-comm-report=calls=1 prints
  // its prediction (without the step).
  if (host.commCalls)
    for (auto [device, index] : programOf) {
      std::string error;
      FailureOr<std::string> text = readFile(
          out + "/rank" + std::to_string(device) + "/calls.txt", error);
      if (failed(text))
        return fail(error);
      SmallVector<llvm::StringRef> lines;
      llvm::StringRef(*text).split(lines, '\n', -1, false);
      for (llvm::StringRef line : lines) {
        SmallVector<llvm::StringRef> words;
        line.split(words, ' ');
        if (words.size() != 8)
          return fail("rank " + llvm::Twine(device) +
                      ": a malformed line in calls.txt: '" + line + "'");
        SmallVector<llvm::StringRef> members;
        words[7].split(members, ',');
        os << "call rank " << device << " step " << words[0] << " #"
           << words[1] << " " << words[2] << ": " << words[3] << " "
           << words[4] << " x " << words[5] << " over {"
           << llvm::join(members, ", ") << "}";
        if (words[6] != "-1")
          os << (words[3] == "recv" ? " from " : " to ") << words[6];
        os << "\n";
      }
    }

  // 6. One trace of all ranks: a process per rank (named after its
  // program), compute and communication threads.
  if (!host.trace.empty()) {
    std::string json = "{\"traceEvents\": [\n";
    bool first = true;
    // (The trace is the last step's variant's: Driver.h.)
    std::vector<Program> &programs =
        variantPrograms[stepVariants.back()];
    for (auto [device, index] : variantProgramOf[stepVariants.back()]) {
      std::string error;
      FailureOr<std::string> events = readFile(
          out + "/rank" + std::to_string(device) + "/trace.json", error);
      if (failed(events))
        return fail(error);
      llvm::StringRef body = llvm::StringRef(*events).trim();
      body = body.drop_front().drop_back().trim(); // the array's brackets
      std::string pid = std::to_string(device);
      std::string meta =
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"args\":{\"name\":\"rank " + pid + " (@" +
          programs[index].func.getSymName().str() + ")\"}},\n" +
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"tid\":0,\"args\":{\"name\":\"compute\"}},\n" +
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"tid\":1,\"args\":{\"name\":\"communication\"}},\n" +
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"tid\":2,\"args\":{\"name\":\"communication (started "
          "ahead)\"}}";
      json += (first ? "" : ",\n") + meta;
      if (!body.empty())
        json += ",\n" + body.str();
      first = false;
    }
    json += "\n]}\n";
    std::error_code ec;
    llvm::raw_fd_ostream os(host.trace, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail("cannot write '" + host.trace + "': " + ec.message());
    os << json;
  }

  // 7. The final parameters, put back together by the ranks.
  if (!train.outputDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(train.outputDir))
      return fail("cannot create '" + train.outputDir + "': " + ec.message());
    // Which argument each parameter is (the driver's arg<i>.bin in the
    // work folder's out/; scripts/device-bundle.sh reads it).
    std::string manifest;
    for (auto [k, i] : llvm::enumerate(setup.params))
      manifest += std::to_string(k) + " " + std::to_string(i) + "\n";
    {
      std::error_code ec;
      llvm::raw_fd_ostream file(train.outputDir + "/params.txt", ec,
                                llvm::sys::fs::OF_Text);
      if (ec)
        return fail("cannot write '" + train.outputDir +
                    "/params.txt': " + ec.message());
      file << manifest;
    }
    for (auto [k, i] : llvm::enumerate(setup.params)) {
      auto type = cast<RankedTensorType>(global.getArgumentTypes()[i]);
      FailureOr<std::string> bytes =
          readFile(out + "/arg" + std::to_string(i) + ".bin", error);
      if (failed(bytes))
        return fail(error);
      FailureOr<Tensor> whole = tensorFrom(type, *bytes, 0, error);
      if (failed(whole))
        return fail("parameter " + llvm::Twine(k) + " (argument #" +
                    llvm::Twine(i) + "): " + error);
      if (k == 0 && plantedFault("nan-param") && whole->getNumElements() > 0)
        whole->setDouble(0, std::numeric_limits<double>::quiet_NaN());
      llvm::SmallString<128> path(train.outputDir);
      llvm::sys::path::append(path, "param_" + llvm::Twine(k) + ".npy");
      if (llvm::Error err = writeNpyFile(path, *whole))
        return fail(llvm::toString(std::move(err)));
    }
  }
  return 0;
}
