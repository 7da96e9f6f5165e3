//===- ConfigRun.h - loom-run --config: a run from a configuration -*- C++
//-*-===//
//
// `loom-run --config RUN.txtpb MODEL.mlir`: the model's forward function,
// the configuration's layouts applied to its arguments by name, built into
// a training step (the configuration's optimizer), partitioned per device
// group, compiled for the configured target and trained on its ranks for its
// steps (frontends/config/loom_config.proto).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_RUN_CONFIGRUN_H
#define LOOM_TOOLS_LOOM_RUN_CONFIGRUN_H

#include "frontends/config/Config.h"
#include "tools/loom-run/HostLaunch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace loom::interp {

/// Parses the file in `sourceMgr` and records every function argument's
/// source name as `nn.name` (where it has none). Null after a diagnostic.
mlir::OwningOpRef<mlir::ModuleOp>
parseWithArgumentNames(llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context);

/// Runs `config` on the model in `sourceMgr`; `train` and `host` carry the
/// command line's other options (output folder, JSON, work folder, ...).
/// Returns the exit code.
int runFromConfig(const config::Config &config, llvm::SourceMgr &sourceMgr,
                  TrainOptions train, HostLaunchOptions host);

} // namespace loom::interp

#endif // LOOM_TOOLS_LOOM_RUN_CONFIGRUN_H
