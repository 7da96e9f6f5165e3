//===- Train.h - loom-run --train: a training loop on the interpreter -*- C++
//-*-===//
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
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  /// Where to read the data from instead of the task (empty: the task):
  /// DIR/<name>.npy for every nn.data argument (its nn.name), the batches
  /// of all steps stacked along a leading dimension; or, where DIR/step1
  /// exists, DIR/step<n>/<name>.npy, one batch per step (n from 1; the
  /// steps' shapes may differ: each runs the variant its shapes fit).
  std::string dataDir;
  /// A step specialised to strategies (hspmd-specialize-strategies): the
  /// strategy of each step in turn, step n running entry (n - 1) mod size
  /// (with per-step folders: folder n's, where it has no `strategy` file).
  std::vector<std::string> strategies;

};

/// What a training run feeds the step: the role of every argument, the
/// current arguments (initial parameters, zero state, the step counter and
/// the seeded data of the current step), the loss and the feedback map.
struct TrainingSetup {
  TrainOptions options;
  mlir::func::FuncOp func;
  std::vector<mlir::RankedTensorType> argTypes;
  std::vector<ElementKind> argKinds;
  std::vector<unsigned> params, states, steps, data;
  std::optional<unsigned> lossIndex;
  /// The nn.grad_norm result (the gradients' global norm), if any.
  std::optional<unsigned> gradNormIndex;
  /// (result, argument) pairs: result r becomes argument i.
  std::vector<std::pair<unsigned, unsigned>> feedback;
  std::vector<Tensor> args;
  std::string task;
  std::optional<unsigned> inputArg, targetArg;
  int64_t affineIn = 0, affineOut = 0, rows = 0;
  std::vector<double> affineA, affineC;
  int64_t tokensPerStep = 0;
  /// The same per variant (`variants`).
  std::vector<int64_t> variantTokens;
  /// The model FLOPs of one step of each variant (nn::countModelFlops).
  std::vector<double> variantFlops;
  /// With a data folder, per data argument: its batches ([count, ...]).
  std::map<unsigned, Tensor> dataFiles;
  /// The training steps that can run: `func` and the variants of it (the
  /// same arguments and results but for the shapes of the data; e.g. one
  /// per shape bucket, nn-prefix-dedup buckets=), in module order.
  std::vector<mlir::func::FuncOp> variants;
  /// With per-step data folders: per folder (step n reads folder (n - 1)
  /// % size), its data arguments' batches and the variant they fit.
  struct StepData {
    std::map<unsigned, Tensor> batches;
    unsigned variant = 0;
  };
  std::vector<StepData> stepData;
  /// Without per-step folders, with TrainOptions::strategies: the variant
  /// of each entry.
  std::vector<unsigned> scheduleVariants;
  /// The variant of the step fillStepArguments last filled (an index into
  /// `variants`).
  unsigned current = 0;
};

/// Finds the step, checks it and fills `setup` with the initial arguments;
/// returns the exit code (0, or 1 after a diagnostic).
int prepareTraining(mlir::ModuleOp module, Interpreter &interpreter,
                    const TrainOptions &options, TrainingSetup &setup);

/// Sets the step counter and draws the data of step `step` into
/// `setup.args` (a pure function of the seed and the step), and the
/// variant that runs it into `setup.current`.
void fillStepArguments(TrainingSetup &setup, int64_t step);

/// Runs the training loop; returns the exit code (0, or 1 after a
/// diagnostic).
int runTraining(mlir::ModuleOp module, Interpreter &interpreter,
                const TrainOptions &options);

/// Integer data drawn from [0, vocab) must index whatever it directly
/// feeds in `func` (an embedding table's rows, cross-entropy's classes):
/// an error at that op otherwise.
mlir::LogicalResult checkVocabulary(mlir::func::FuncOp func, int64_t vocab);

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_TRAIN_H
