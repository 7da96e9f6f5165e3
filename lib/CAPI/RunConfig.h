//===- RunConfig.h - Applying a run configuration to a model ---*- C++ -*-===//
//
// What a run configuration (frontends/config) says about the model itself:
// its cluster, where the model has none, and the layouts of the forward
// function's arguments by name pattern. loom-run --config and the C API
// (loom_module_apply_config) both apply it this way.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_CAPI_RUNCONFIG_H
#define LOOM_LIB_CAPI_RUNCONFIG_H

#include "frontends/config/Config.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace loom::capi {

/// Applies `config` to `module` and returns its forward function (the one
/// function with nn.param arguments that is not a training step). Layouts:
/// for every argument, the first pattern that matches its name (nn.name)
/// sets its layout unless it has one; a pattern that matches nothing is an
/// error. Failure with `error` set.
mlir::FailureOr<mlir::func::FuncOp> applyRunConfig(mlir::ModuleOp module,
                                                   const config::Config &config,
                                                   std::string &error);

/// The training and partitioning pipelines a configuration asks for, as a
/// pass pipeline (`loom-training-pipeline{...},loom-partition-pipeline`).
/// With `forward` (applyRunConfig's) and switching buckets, one
/// micro-batch composition per bucket (config::getBucketShapes).
std::string getConfigPipeline(const config::Config &config,
                              mlir::func::FuncOp forward = {});

} // namespace loom::capi

#endif // LOOM_LIB_CAPI_RUNCONFIG_H
