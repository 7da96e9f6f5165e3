//===- SwitchPlans.cpp - Print the switch plans of a strategy set ---------===//
//
// For every function whose parameters carry strategy sets, the plan of each
// switch between two of its strategies (layout::planSwitch over the whole
// parameter set), printed with its volume and bounds.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"
#include "runtime/layout/Switch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace loom {
#define GEN_PASS_DEF_SWITCHPLANSPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// `'wq'` (its nn.name) or `#3`.
std::string argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(
          i, nn::NNDialect::getNameAttrName()))
    return ("'" + name.getValue() + "'").str();
  return "#" + std::to_string(i);
}

std::string quotedNames(StrategySetAttr set) {
  std::string text;
  for (StringAttr name : set.getNames())
    text += (text.empty() ? "\"" : ", \"") + name.getValue().str() + "\"";
  return text;
}

/// The parameter set of `func` under its strategies: for every argument
/// with a strategy set, its shape, element size and one layout per
/// strategy. Fails, with a diagnostic at the argument, where the sets
/// disagree (names, optimizer), a parameter has none while others do, or a
/// layout does not fit its argument.
struct ParameterSet {
  StrategySetAttr first;
  std::vector<unsigned> args;
  std::vector<layout::SwitchTensor> tensors; // `to` unset
  std::vector<std::vector<layout::Layout>> layouts; // per argument, per strategy
};

FailureOr<ParameterSet> collect(func::FuncOp func) {
  ParameterSet set;
  int64_t firstArg = -1;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto strategies = func.getArgAttrOfType<StrategySetAttr>(
        i, HSPMDDialect::getLayoutAttrName());
    if (!strategies)
      continue;
    Location loc = func.getArgument(i).getLoc();
    if (!set.first) {
      set.first = strategies;
      firstArg = i;
    } else if (strategies.getNames() != set.first.getNames()) {
      return emitError(loc) << "the strategy set of " << argName(func, i)
                            << " names " << quotedNames(strategies)
                            << " but that of " << argName(func, firstArg)
                            << " names " << quotedNames(set.first)
                            << "; every parameter takes the same strategies",
             failure();
    } else if (strategies.getOptimizerIndex() !=
               set.first.getOptimizerIndex()) {
      return emitError(loc)
                 << "the strategy set of " << argName(func, i)
                 << " keeps its optimizer state under \""
                 << strategies.getNames()[strategies.getOptimizerIndex()]
                        .getValue()
                 << "\" but that of " << argName(func, firstArg)
                 << " under \""
                 << set.first.getNames()[set.first.getOptimizerIndex()]
                        .getValue()
                 << "\"; a parameter set has one optimizer strategy",
             failure();
    }
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type || !type.hasStaticShape() ||
        !type.getElementType().isIntOrFloat())
      return emitError(loc) << "argument " << argName(func, i)
                            << " with a strategy set must be a tensor of "
                               "static shape, not "
                            << func.getArgument(i).getType(),
             failure();
    layout::SwitchTensor tensor;
    tensor.name = argName(func, i);
    if (tensor.name.front() == '\'')
      tensor.name = tensor.name.substr(1, tensor.name.size() - 2);
    tensor.shape.assign(type.getShape().begin(), type.getShape().end());
    tensor.elementBytes =
        std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
    std::vector<layout::Layout> layouts;
    for (auto [name, union_] :
         llvm::zip_equal(strategies.getNames(), strategies.getLayouts())) {
      layout::Layout core = toLayoutCore(union_);
      if (absl::Status status = layout::checkLayout(core, tensor.shape);
          !status.ok())
        return emitError(loc) << "strategy \"" << name.getValue() << "\" of "
                              << argName(func, i) << ": layout " << union_
                              << " does not fit " << type << ": "
                              << status.message(),
               failure();
      layouts.push_back(std::move(core));
    }
    set.args.push_back(i);
    set.tensors.push_back(std::move(tensor));
    set.layouts.push_back(std::move(layouts));
  }
  if (!set.first)
    return set;
  // Every parameter switches: one without a set would stay behind.
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, nn::NNDialect::getParamAttrName()) &&
        !func.getArgAttrOfType<StrategySetAttr>(
            i, HSPMDDialect::getLayoutAttrName()))
      return emitError(func.getArgument(i).getLoc())
                 << "parameter " << argName(func, i)
                 << " has no strategy set while " << argName(func, firstArg)
                 << " has one; every parameter of a switching program needs "
                    "a layout per strategy",
             failure();
  return set;
}

struct SwitchPlansPass : loom::impl::SwitchPlansPassBase<SwitchPlansPass> {
  using SwitchPlansPassBase::SwitchPlansPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    layout::Topology topology;
    if (auto cluster = module->getAttrOfType<ClusterAttr>(
            HSPMDDialect::getClusterAttrName()))
      for (DeviceAttr device : cluster.getDevices()) {
        topology.nodeOf[device.getId()] = device.getNode();
        topology.kindOf[device.getId()] = device.getKind().str();
      }
    layout::SwitchOptions options;
    options.relabel = relabel;
    llvm::raw_ostream &os = llvm::outs();
    // Whether some function has the strategy `from` names.
    bool found = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      FailureOr<ParameterSet> set = collect(func);
      if (failed(set))
        return signalPassFailure();
      if (!set->first)
        continue;
      StrategySetAttr strategies = set->first;
      if (!from.empty() && !strategies.lookup(from))
        continue;
      found = true;
      os << "switch plans @" << func.getSymName() << ": "
         << set->tensors.size() << " tensors, strategies "
         << quotedNames(strategies) << " (optimizer \""
         << strategies.getNames()[strategies.getOptimizerIndex()].getValue()
         << "\")\n";
      int64_t n = strategies.getNumStrategies();
      for (int64_t a = 0; a < n; ++a) {
        StringRef source = strategies.getNames()[a].getValue();
        if (!from.empty() && source != from)
          continue;
        for (int64_t b = 0; b < n; ++b) {
          if (a == b)
            continue;
          std::vector<layout::SwitchTensor> tensors = set->tensors;
          for (size_t t = 0; t < tensors.size(); ++t) {
            tensors[t].from = set->layouts[t][a];
            tensors[t].to = set->layouts[t][b];
          }
          absl::StatusOr<layout::SwitchPlan> plan =
              layout::planSwitch(tensors, topology, options);
          if (!plan.ok()) {
            func.emitError("switch \"")
                << source << "\" -> \""
                << strategies.getNames()[b].getValue()
                << "\": " << plan.status().message();
            return signalPassFailure();
          }
          os << "switch \"" << source << "\" -> \""
             << strategies.getNames()[b].getValue() << "\"\n";
          SmallVector<StringRef> lines;
          std::string text = layout::describeSwitch(*plan);
          StringRef(text).rtrim('\n').split(lines, '\n');
          for (StringRef line : lines)
            os << "  " << line << '\n';
        }
      }
    }
    if (!from.empty() && !found) {
      module.emitError("no function has a strategy \"") << from
                                                         << "\" to switch from";
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
