//===- SwitchPlans.cpp - Print the switch plans of a strategy set ---------===//
//
// For every function whose parameters carry strategy sets, the plan of each
// switch between two of its strategies (layout::planSwitch over the whole
// parameter set), printed with its volume and bounds.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/StrategySets.h"
#include "passes/Partitioning/Attributes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"
#include "runtime/layout/Switch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

namespace loom {
#define GEN_PASS_DEF_SWITCHPLANSPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// Plans the switch of `tensors` and prints it under `switch "a" -> "b"`;
/// fails, at `func`, where it cannot be planned.
LogicalResult printSwitch(func::FuncOp func, StringRef source, StringRef target,
                          const std::vector<layout::SwitchTensor> &tensors,
                          const layout::Topology &topology,
                          const layout::SwitchOptions &options,
                          llvm::raw_ostream &os) {
  absl::StatusOr<layout::SwitchPlan> plan =
      layout::planSwitch(tensors, topology, options);
  if (!plan.ok())
    return func.emitError("switch \"")
           << source << "\" -> \"" << target
           << "\": " << plan.status().message();
  os << "switch \"" << source << "\" -> \"" << target << "\"\n";
  SmallVector<StringRef> lines;
  std::string text = layout::describeSwitch(*plan);
  StringRef(text).rtrim('\n').split(lines, '\n');
  for (StringRef line : lines)
    os << "  " << line << '\n';
  return success();
}

/// The functions of one step specialised to its strategies
/// (hspmd-specialize-strategies: `@<step>_<strategy>`, hspmd.strategy), by
/// step, in module order.
llvm::MapVector<StringRef, SmallVector<func::FuncOp>>
strategyFunctions(ModuleOp module) {
  llvm::MapVector<StringRef, SmallVector<func::FuncOp>> steps;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto strategy = func->getAttrOfType<StringAttr>(
        HSPMDDialect::getStrategyAttrName());
    StringRef name = func.getSymName();
    if (!strategy || !name.consume_back(("_" + strategy.getValue()).str()))
      continue;
    steps[name].push_back(func);
  }
  return steps;
}

/// The parameters and optimizer state of `func` (what a switch carries) as
/// switch tensors with their `from` layouts; fails, at the argument, where
/// one has no layout or not one union of static shape.
FailureOr<std::vector<layout::SwitchTensor>>
carriedTensors(ModuleOp module, func::FuncOp func,
               SmallVectorImpl<unsigned> &indices) {
  // (Its specialisations, one per device group, name the layout of the
  // whole where the step's own arguments have none, as the programs'
  // interface tables do: codegen/Common/LowerToCalls.cpp.)
  SmallVector<func::FuncOp> parts;
  for (auto other : module.getOps<func::FuncOp>())
    if (FlatSymbolRefAttr of = getSpecializes(other);
        of && of.getValue() == func.getSymName())
      parts.push_back(other);
  std::vector<layout::SwitchTensor> tensors;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    // (What the driver carries: every argument but the data and the step
    // counters, runtime/driver/Driver.cpp.)
    if (func.getArgAttr(i, nn::NNDialect::getDataAttrName()) ||
        func.getArgAttr(i, nn::NNDialect::getStepAttrName()))
      continue;
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    // (In the programs' order: a part's whole layout first, then the
    // step's own.)
    UnionAttr layout;
    for (func::FuncOp part : parts)
      if (!layout)
        layout = part.getArgAttrOfType<UnionAttr>(
            i, HSPMDDialect::getGlobalLayoutAttrName());
    if (!layout)
      layout = func.getArgAttrOfType<UnionAttr>(
          i, HSPMDDialect::getLayoutAttrName());
    if (!layout || !type || !type.hasStaticShape() ||
        !type.getElementType().isIntOrFloat())
      return emitError(func.getArgument(i).getLoc())
                 << "argument " << describeArgument(func, i) << " of @"
                 << func.getSymName()
                 << " needs a layout (one union) and a static shape to be "
                    "switched; run hspmd-switch-plans on the strategies' "
                    "functions after loom-partition-pipeline",
             failure();
    layout::SwitchTensor tensor;
    tensor.name = describeArgument(func, i);
    tensor.shape.assign(type.getShape().begin(), type.getShape().end());
    tensor.elementBytes =
        std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
    tensor.from = toLayoutCore(layout);
    tensors.push_back(std::move(tensor));
    indices.push_back(i);
  }
  return tensors;
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
      FailureOr<StrategySets> set = collectStrategySets(func);
      if (failed(set))
        return signalPassFailure();
      if (!set->first)
        continue;
      StrategySetAttr strategies = set->first;
      if (!from.empty() && !strategies.lookup(from))
        continue;
      found = true;
      size_t moved = 0;
      for (unsigned arg : set->args)
        moved += !func.getArgAttr(arg, nn::NNDialect::getDataAttrName());
      os << "switch plans @" << func.getSymName() << ": " << moved
         << " tensors, strategies "
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
          // The parameters move; the data of the next step is loaded
          // under its new layout.
          std::vector<layout::SwitchTensor> tensors;
          for (size_t t = 0; t < set->tensors.size(); ++t) {
            if (func.getArgAttr(set->args[t],
                                nn::NNDialect::getDataAttrName()))
              continue;
            tensors.push_back(set->tensors[t]);
            tensors.back().from = set->layouts[t][a];
            tensors.back().to = set->layouts[t][b];
          }
          if (failed(printSwitch(func, source,
                                 strategies.getNames()[b].getValue(), tensors,
                                 topology, options, os)))
            return signalPassFailure();
        }
      }
    }
    // The compiled strategies of a step: every parameter and state, from
    // one function's layouts to the other's (what a run moves).
    for (auto &[step, funcs] : strategyFunctions(module)) {
      if (funcs.size() < 2)
        continue;
      auto strategyName = [](func::FuncOp f) {
        return f->getAttrOfType<StringAttr>(HSPMDDialect::getStrategyAttrName())
            .getValue();
      };
      if (!from.empty() && llvm::none_of(funcs, [&](func::FuncOp f) {
            return strategyName(f) == from;
          }))
        continue;
      found = true;
      std::vector<std::vector<layout::SwitchTensor>> carried;
      std::vector<SmallVector<unsigned>> indices(funcs.size());
      std::string names;
      for (auto [k, f] : llvm::enumerate(funcs)) {
        FailureOr<std::vector<layout::SwitchTensor>> tensors =
            carriedTensors(module, f, indices[k]);
        if (failed(tensors))
          return signalPassFailure();
        if (indices[k] != indices.front()) {
          f.emitError("@") << f.getSymName() << " carries other parameters "
                           << "and state than @" << funcs.front().getSymName()
                           << "; the strategies of a step carry the same";
          return signalPassFailure();
        }
        for (size_t t = 0; k > 0 && t < tensors->size(); ++t)
          if ((*tensors)[t].shape != carried.front()[t].shape ||
              (*tensors)[t].elementBytes != carried.front()[t].elementBytes) {
            f.emitError("argument ")
                << (*tensors)[t].name << " of @" << f.getSymName()
                << " has another type than in @"
                << funcs.front().getSymName();
            return signalPassFailure();
          }
        carried.push_back(*std::move(tensors));
        names += (names.empty() ? "\"" : ", \"") + strategyName(f).str() + "\"";
      }
      os << "switch plans @" << step << " (compiled): "
         << carried.front().size() << " tensors, strategies " << names << "\n";
      for (size_t a = 0; a < funcs.size(); ++a) {
        if (!from.empty() && strategyName(funcs[a]) != from)
          continue;
        for (size_t b = 0; b < funcs.size(); ++b) {
          if (a == b)
            continue;
          std::vector<layout::SwitchTensor> tensors = carried[a];
          for (size_t t = 0; t < tensors.size(); ++t)
            tensors[t].to = carried[b][t].from;
          // (A run does not relabel: rank r runs device r's program; the
          // relabelled minimum is reported all the same.)
          layout::SwitchOptions compiled = options;
          compiled.relabel = false;
          if (failed(printSwitch(funcs[a], strategyName(funcs[a]),
                                 strategyName(funcs[b]), tensors, topology,
                                 compiled, os)))
            return signalPassFailure();
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
