//===- HostLaunch.h - loom-run --train --target host -----------*- C++ -*-===//
//
// Trains a partitioned training step on real MPI ranks, as a thin driver
// over the compiled program as a library: compiles the step's per-group
// programs to C++ (codegen/, for the target), builds them as a program
// library (include/loom-c/Program.h), writes the global arrays of the
// initial parameters and of each step's synthetic data (the same data as
// `loom-run --interpret --train`), and launches `mpirun` of loom-rank, the
// driver every compiled program shares (runtime/driver/Driver.h), which
// cuts them into each rank's shard and puts the losses and the trained
// parameters back together through the library.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_RUN_HOSTLAUNCH_H
#define LOOM_TOOLS_LOOM_RUN_HOSTLAUNCH_H

#include "runtime/interpreter/Train.h"

#include <string>

namespace loom::interp {

struct HostLaunchOptions {
  /// The target the programs are compiled for: "host", "cuda" (where this
  /// build has the CUDA runtime) or "ascend".
  std::string target = "host";
  /// --target ascend: run on Loom's CPU test double of the CANN libraries
  /// (runtime/ascend/double) instead of the installed CANN.
  bool ascendDouble = false;
  /// Ranks to launch (must be one per device the programs use).
  int64_t ranks = 1;
  /// Where the C++, the program library, the arrays and the ranks' outputs
  /// go (default: a fresh temporary folder, removed when the run ends; the
  /// folder must be visible to every node of a multi-node run).
  std::string workDir;
  /// An MPI hostfile for multi-node runs.
  std::string hostfile;
  /// The mpirun to use.
  std::string mpirun = "mpirun";
  /// A program library built before from the same program (skips
  /// compiling).
  std::string library;
  /// Build the programs as a shared library (runtime/host/ProgramLibrary.h)
  /// at this path, and stop.
  std::string emitLibrary;
  /// Build them as a program executable (the same C ABI, with a `main`
  /// running the driver, runtime/driver/Driver.h) at this path, and stop.
  std::string emitExecutable;
  /// Print every rank's calls and bytes per collective kind.
  bool commStats = false;
  /// The peak FLOP/s of the devices the ranks drive, summed (from the
  /// cluster description); 0: unknown, no utilisation printed.
  double peakFlops = 0;
  /// Print every device library call (NCCL, HCCL) each rank made, per
  /// step, as its runtime recorded it at the call site.
  bool commCalls = false;
  /// Write a Chrome trace of every rank's phases and collectives here.
  std::string trace;
};

/// Prints `loom-run: error: <message>`; returns 1, the exit code.
int reportError(const llvm::Twine &message);

/// Builds the partitioned function `entry` (any function, not only a
/// training step: a forward, inference or rollout program) for `target` as
/// a program library at `output` (loom-run --emit-library without --train).
int emitForwardLibrary(mlir::ModuleOp module, const std::string &entry,
                       const std::string &target, const std::string &output);

/// Runs the training; returns the exit code (0, or 1 after an error).
int runOnHostRanks(mlir::ModuleOp module, Interpreter &interpreter,
                   const TrainOptions &train, const HostLaunchOptions &host);

} // namespace loom::interp

#endif // LOOM_TOOLS_LOOM_RUN_HOSTLAUNCH_H
