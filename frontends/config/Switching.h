//===- Switching.h - The run configuration's strategy switching -*- C++ -*-===//
//
// What `switching` in a run configuration (loom_config.proto) means: the
// strategy sets it puts on the forward function's arguments, the planner's
// problem it describes (runtime/switching/StepPlanner.h), and its checks.
// See docs/switching.md.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_CONFIG_SWITCHING_H
#define LOOM_FRONTENDS_CONFIG_SWITCHING_H

#include "frontends/config/loom_config.pb.h"
#include "runtime/switching/StepPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace loom::config {

/// Checks `switching` (names, layouts, cost models, buckets, batches); every
/// problem goes to `report`; the devices its layouts use are added to
/// `used`. Layouts are parsed in `context`.
void checkSwitching(const Switching &switching, const Cluster &cluster,
                    mlir::MLIRContext *context, std::set<int64_t> &used,
                    const std::function<void(const std::string &)> &report);

/// The planner's strategies and options of `switching` (already checked).
void getPlannerProblem(const Switching &switching,
                       std::vector<switching::Strategy> &strategies,
                       switching::PlannerOptions &options);

/// Puts one strategy set on every argument of `forward` that a strategy's
/// layouts name (see loom_config.proto). Fails with `error` for a layout
/// that does not parse or a pattern that matches no argument.
mlir::LogicalResult applySwitching(mlir::func::FuncOp forward,
                                   const Switching &switching,
                                   std::string &error);

} // namespace loom::config

#endif // LOOM_FRONTENDS_CONFIG_SWITCHING_H
