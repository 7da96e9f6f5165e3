//===- Simulator.h - N ranks in one process on the interpreter -*- C++ -*-===//
//
// Runs a local-view program (one device's buffers, collectives over mesh
// sub-groups: after specialisation) on N simulated ranks in one process:
// one reference Interpreter per rank, each on its own thread, sharing the
// module. The simulator itself carries out the hspmd collectives, in a fixed
// order (reductions sum rank 0, 1, ... of each sub-group), so a run is
// bitwise deterministic whatever the threads do, and counts the bytes each
// rank sends and receives.
//
// What a collective moves, per rank (k = sub-group size, B = the rank's
// buffer bytes; this is what the communication report counts too):
//   all_gather      sends B to each of the k - 1 others
//   reduce_scatter  sends block j (B / k) to rank j, for every j != own
//   all_reduce      a reduce-scatter of the flattened buffer cut into k
//                   near-equal chunks (chunk j is reduced at rank j; the
//                   first N mod k chunks have one element more), then an
//                   all-gather of the reduced chunks: chunk-bytes of every
//                   other chunk, plus (k - 1) times its own chunk
//   all_to_all      sends block j (B / k) to rank j, for every j != own
//   permute         sends B to its destination unless that is itself
//   local_slice     nothing
//   make_partial    nothing
//
// Errors never hang: a rank that fails aborts the run (waiting ranks wake
// and fail), ranks that disagree on a collective are reported with both
// ops, and a collective that can no longer complete (every rank is waiting
// or finished) is reported as a deadlock naming who is missing.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SIMULATOR_SIMULATOR_H
#define LOOM_RUNTIME_SIMULATOR_SIMULATOR_H

#include "runtime/interpreter/Interpreter.h"
#include "runtime/interpreter/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::sim {

/// Communication of one rank, per collective kind (`all_reduce`, ...).
struct CommStats {
  struct Entry {
    int64_t calls = 0;
    int64_t bytesSent = 0;
    int64_t bytesReceived = 0;
  };
  std::map<std::string, Entry> byKind;

  int64_t getBytesSent() const;
  int64_t getBytesReceived() const;
};

class Simulator {
public:
  /// Simulates `numRanks` ranks, rank r being index r of the device group
  /// the program's collectives run in.
  Simulator(mlir::ModuleOp module, int64_t numRanks,
            interp::InterpreterOptions options = {});
  ~Simulator();

  /// Runs `func` on every rank, rank r on `args[r]`, and returns each
  /// rank's results. On failure the problems have been emitted as
  /// diagnostics (collective problems name the ranks). Statistics add up
  /// over runs.
  mlir::FailureOr<std::vector<std::vector<interp::Tensor>>>
  run(llvm::StringRef func, std::vector<std::vector<interp::Tensor>> args);
  /// Same, rank r running function `funcs[r]` (MPMD: one function per
  /// group role).
  mlir::FailureOr<std::vector<std::vector<interp::Tensor>>>
  run(llvm::ArrayRef<std::string> funcs,
      std::vector<std::vector<interp::Tensor>> args);

  int64_t getNumRanks() const;
  const CommStats &getStats(int64_t rank) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace loom::sim

#endif // LOOM_RUNTIME_SIMULATOR_SIMULATOR_H
