//===- Pipelines.cpp - Loom's pass pipelines ------------------------------===//

#include "passes/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace loom;

TrainingStepPassOptions TrainingOptions::getTrainingStepOptions() const {
  TrainingStepPassOptions options;
  options.func = func;
  options.optimizer = optimizer;
  options.lr = lr;
  options.momentum = momentum;
  options.nesterov = nesterov;
  options.beta1 = beta1;
  options.beta2 = beta2;
  options.eps = eps;
  options.weightDecay = weightDecay;
  options.warmupSteps = warmupSteps;
  options.decay = decay;
  options.decaySteps = decaySteps;
  options.minLr = minLr;
  options.paramGroups = paramGroups;
  options.microBatches = microBatches;
  options.microBatchShapes = microBatchShapes;
  options.clipNorm = clipNorm;
  return options;
}

void loom::buildTrainingPipeline(OpPassManager &pm,
                                 const TrainingOptions &options) {
  // (Expert blocks before autodiff, which carries them to the backward.)
  pm.addPass(createExpertBlocksPass());
  pm.addPass(createMoePlacementPass());
  pm.addPass(createTrainingStepPass(options.getTrainingStepOptions()));
  if (options.moeResident)
    pm.addPass(createMoeResidentReplicasPass());
  pm.addPass(createCSEPass());
}

SelectSharesPassOptions PartitionOptions::getSelectSharesOptions() const {
  SelectSharesPassOptions options;
  options.alignment = alignment;
  options.reservedGib = reservedGib;
  return options;
}

GradientBucketingPassOptions
PartitionOptions::getGradientBucketingOptions() const {
  GradientBucketingPassOptions options;
  options.bucketBytes = bucketBytes;
  return options;
}

void loom::buildPartitionPipeline(OpPassManager &pm,
                                  const PartitionOptions &options) {
  pm.addPass(createSpecializeStrategiesPass());
  if (options.selectShares)
    pm.addPass(createSelectSharesPass(options.getSelectSharesOptions()));
  pm.addPass(createLayoutPropagationPass());
  pm.addPass(createReshardInsertionPass());
  pm.addPass(createReshardLoweringPass());
  pm.addPass(createSpecializationPass());
  if (options.moeSparse)
    pm.addPass(createMoeSparseExchangePass());
  if (options.bucket)
    pm.addPass(
        createGradientBucketingPass(options.getGradientBucketingOptions()));
  if (options.overlap)
    pm.addPass(createOverlapFetchesPass());
}

void loom::registerLoomPipelines() {
  // Once per process, whoever asks (the tools, the C API, more than once).
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  PassPipelineRegistration<TrainingOptions>(
      "loom-training-pipeline",
      "Builds a training step (forward, backward, optimizer update) from a "
      "forward function returning a scalar loss",
      buildTrainingPipeline);
  PassPipelineRegistration<PartitionOptions>(
      "loom-partition-pipeline",
      "Partitions a global-view training step into one local program per "
      "device group: propagate layouts, insert and lower reshards, "
      "specialise, send MoE dispatches' routed rows alone, bucket "
      "collectives, start weight fetches early",
      buildPartitionPipeline);
}
