//===- Pipelines.h - Loom's pass pipelines ----------------------*- C++ -*-===//
//
// Pipelines as named C++ functions, which the CLI (`loom-opt`), the C API and
// Python all call, each with its options as a struct.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PIPELINES_H
#define LOOM_PASSES_PIPELINES_H

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace loom {

/// Options of the training pipeline: those of nn-training-step.
struct TrainingOptions : public mlir::PassPipelineOptions<TrainingOptions> {
  Option<std::string> func{
      *this, "func",
      llvm::cl::desc("The forward function (default: every function with "
                     "nn.param arguments that returns a 0-d float tensor)"),
      llvm::cl::init("")};
  Option<OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("The optimizer"),
      llvm::cl::init(OptimizerKind::AdamW),
      llvm::cl::values(clEnumValN(OptimizerKind::SGD, "sgd",
                                  "SGD with momentum (nn.sgd_update)"),
                       clEnumValN(OptimizerKind::AdamW, "adamw",
                                  "AdamW with bias correction "
                                  "(nn.adamw_update)"))};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(1.0e-3)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD: Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> beta1{*this, "beta1",
                       llvm::cl::desc("AdamW: decay of the first moment"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2",
                       llvm::cl::desc("AdamW: decay of the second moment"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps",
                     llvm::cl::desc("AdamW: added to the root of the second "
                                    "moment"),
                     llvm::cl::init(1.0e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (coupled for SGD, decoupled for AdamW)"),
      llvm::cl::init(0.0)};
  Option<int64_t> warmupSteps{
      *this, "warmup-steps",
      llvm::cl::desc("Learning-rate schedule: linear warm-up steps"),
      llvm::cl::init(0)};
  Option<std::string> decay{
      *this, "decay",
      llvm::cl::desc("Learning-rate decay after the warm-up: constant, "
                     "linear or cosine"),
      llvm::cl::init("constant")};
  Option<int64_t> decaySteps{
      *this, "decay-steps",
      llvm::cl::desc("Learning-rate schedule: the length of the decay"),
      llvm::cl::init(0)};
  Option<double> minLr{
      *this, "min-lr",
      llvm::cl::desc("Learning-rate schedule: the floor the decay ends at"),
      llvm::cl::init(0.0)};
  Option<std::string> paramGroups{
      *this, "param-groups",
      llvm::cl::desc("Parameter groups: PATTERN[,PATTERN...]:KEY=VALUE[ "
                     "KEY=VALUE...] separated by ';'"),
      llvm::cl::init("")};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Micro-batches per step (gradients accumulated, one "
                     "update)"),
      llvm::cl::init(1)};
  Option<std::string> microBatchShapes{
      *this, "micro-batch-shapes",
      llvm::cl::desc("Micro-batches of their own shapes: "
                     "ROWSxLENGTH[*COUNT],..."),
      llvm::cl::init("")};
  Option<double> clipNorm{
      *this, "clip-norm",
      llvm::cl::desc("Clip the gradients' global norm to this (0: none)"),
      llvm::cl::init(0.0)};
  Option<bool> moeResident{
      *this, "moe-resident",
      llvm::cl::desc("Keep placed MoE replicas resident from micro-step to "
                     "micro-step (hspmd-moe-resident-replicas)"),
      llvm::cl::init(true)};

  /// The options of the nn-training-step pass these amount to.
  TrainingStepPassOptions getTrainingStepOptions() const;
};

/// A training step from a forward function: hspmd-expert-blocks,
/// hspmd-moe-placement, nn-training-step (forward, backward through
/// nn-autodiff's code, optimizer update), hspmd-moe-resident-replicas
/// unless `moe-resident=false`, then CSE, which merges the constants and
/// recomputations that gradients repeat.
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingOptions &options);

/// Options of the partition pipeline: which optional steps run, and the
/// options of its passes that users set.
struct PartitionOptions : public mlir::PassPipelineOptions<PartitionOptions> {
  Option<bool> selectShares{
      *this, "select-shares",
      llvm::cl::desc("First choose the shares of splits across device groups "
                     "from the module's cluster (hspmd-select-shares)"),
      llvm::cl::init(false)};
  Option<int64_t> alignment{
      *this, "alignment",
      llvm::cl::desc("hspmd-select-shares: shares are multiples of this many "
                     "units of the split dimension"),
      llvm::cl::init(1)};
  Option<double> reservedGib{
      *this, "reserved-gib",
      llvm::cl::desc("hspmd-select-shares: memory per device kept for other "
                     "uses, in GiB"),
      llvm::cl::init(0.0)};
  Option<bool> moeSparse{
      *this, "moe-sparse",
      llvm::cl::desc("Send an MoE dispatch's routed rows alone to their "
                     "experts' devices (hspmd-moe-sparse-exchange)"),
      llvm::cl::init(true)};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("Start the weight fetches of placed MoE layers early, "
                     "to overlap the compute before them "
                     "(hspmd-overlap-fetches)"),
      llvm::cl::init(true)};
  Option<bool> bucket{
      *this, "bucket",
      llvm::cl::desc("Finally fuse the local programs' collectives into "
                     "buckets (hspmd-bucket-gradients)"),
      llvm::cl::init(true)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("hspmd-bucket-gradients: the largest bucket, in bytes"),
      llvm::cl::init(26214400)};

  /// The options of the passes these amount to.
  SelectSharesPassOptions getSelectSharesOptions() const;
  GradientBucketingPassOptions getGradientBucketingOptions() const;
};

/// One local program per device group from a global-view training step with
/// layouts on its arguments: [hspmd-select-shares when `select-shares`],
/// hspmd-propagate-layouts, hspmd-insert-reshards, hspmd-lower-reshards,
/// hspmd-specialize, [hspmd-moe-sparse-exchange unless `moe-sparse=false`],
/// [hspmd-bucket-gradients unless `bucket=false`].
void buildPartitionPipeline(mlir::OpPassManager &pm,
                            const PartitionOptions &options);

/// Registers Loom's pipelines with the command line:
/// `--loom-training-pipeline` and `--loom-partition-pipeline`.
void registerLoomPipelines();

} // namespace loom

#endif // LOOM_PASSES_PIPELINES_H
