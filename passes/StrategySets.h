//===- StrategySets.h - The strategy sets of a function ---------*- C++ -*-===//
//
// What the graph-switching passes (hspmd-specialize-strategies,
// hspmd-switch-plans) read of a function whose arguments carry
// `#hspmd.strategies` layouts, checked once for both.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_STRATEGYSETS_H
#define LOOM_PASSES_STRATEGYSETS_H

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "runtime/layout/Switch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace loom {

/// The arguments of a function with strategy sets: their indices, each
/// one's shape and element size (a SwitchTensor without layouts, named by
/// its nn.name or `#i`) and its layout per strategy, in the set's order.
/// `first` is null where no argument has a strategy set.
struct StrategySets {
  hspmd::StrategySetAttr first;
  std::vector<unsigned> args;
  std::vector<layout::SwitchTensor> tensors;
  std::vector<std::vector<layout::Layout>> layouts;
};

/// The strategy sets of `func`'s arguments. Fails, with a diagnostic at the
/// argument, where two sets name other strategies or another optimizer
/// strategy, an argument with a set has no static shape, a layout does not
/// fit its argument. (A parameter without a set is laid out by propagation
/// in each strategy's function; its switch is planned at run time from the
/// compiled programs' layouts.)
mlir::FailureOr<StrategySets> collectStrategySets(mlir::func::FuncOp func);

/// `"a", "b"`: the names of the set's strategies, quoted.
std::string quotedNames(hspmd::StrategySetAttr set);

/// `'wq'` (the argument's nn.name) or `#3`.
std::string describeArgument(mlir::func::FuncOp func, unsigned index);

} // namespace loom

#endif // LOOM_PASSES_STRATEGYSETS_H
