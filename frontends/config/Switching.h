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

/// The step shapes of `switching`'s length buckets for `forward`: a step
/// of the forward's T tokens (rows x length of its data arguments of rank
/// 2 or more, which share both) runs at bucket L as T / L rows of L
/// positions. One micro-batch composition "<T/L>x<L>" per bucket, in the
/// buckets' order (none without buckets); fails with `error` for a forward
/// without such data, data of other rows or lengths, or a bucket that does
/// not divide T.
mlir::LogicalResult getBucketShapes(mlir::func::FuncOp forward,
                                    const Switching &switching,
                                    std::vector<std::string> &shapes,
                                    std::string &error);

/// The bucket a batch of `lengths` runs at: the smallest at least as long
/// as its longest sequence; -1 where none is.
int64_t getBatchBucket(const Switching &switching,
                       const std::vector<int64_t> &lengths);

} // namespace loom::config

#endif // LOOM_FRONTENDS_CONFIG_SWITCHING_H
