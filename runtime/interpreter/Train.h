//===- Train.h - loom-run --train: a training loop on the interpreter -*- C++ -*-===//
//
// Runs a training-step function (what nn-training-step generates) for a
// number of steps, feeding every result marked `nn.updates = i` back to
// argument i, generating the `nn.data` arguments of each step from a seed
// with a synthetic task and printing the loss. See docs in Train.cpp and
// runtime/README.md ("Training with loom-run").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_TRAIN_H
#define LOOM_RUNTIME_INTERPRETER_TRAIN_H

#include "runtime/interpreter/Interpreter.h"

#include <cstdint>
#include <string>

namespace loom::interp {

struct TrainOptions {
  /// The training step to run; empty: the only function with an nn.loss
  /// result.
  std::string entry;
  int64_t steps = 100;
  uint64_t seed = 0;
  /// Integer data is drawn from [0, vocab).
  int64_t vocab = 64;
  /// `auto`, `tokens` or `affine`.
  std::string dataTask = "auto";
  bool json = false;
  /// Where to read param_<i>.npy initial parameters from (empty: seeded
  /// initialisation).
  std::string initDir;
  /// Where to write the final parameters as param_<i>.npy (empty: nowhere).
  std::string outputDir;
};

/// Runs the training loop; returns the exit code (0, or 1 after a
/// diagnostic).
int runTraining(mlir::ModuleOp module, Interpreter &interpreter,
                const TrainOptions &options);

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_TRAIN_H
