//===- SpecializeStrategies.cpp - One function per strategy ---------------===//
//
// Graph switching's compile step (docs/switching.md): a function whose
// arguments carry strategy sets becomes one function per strategy, each
// with every set replaced by that strategy's layout and the optimizer
// state laid out as the optimizer strategy lays out its parameter.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/StrategySets.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace loom {
#define GEN_PASS_DEF_SPECIALIZESTRATEGIESPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// Whether `name` can end a symbol name: letters, digits, '_'.
bool isSymbolSafe(StringRef name) {
  return !name.empty() &&
         llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// Replaces every strategy set inside `func` (annotations of values) by its
/// layout under `strategy`; fails, at the op, for a set of other strategies.
LogicalResult specializeBody(func::FuncOp func, StrategySetAttr strategies,
                             StringRef strategy) {
  WalkResult walked = func.walk([&](AnnotateOp op) {
    auto set = dyn_cast<StrategySetAttr>(op.getLayout());
    if (!set)
      return WalkResult::advance();
    if (set.getNames() != strategies.getNames()) {
      op.emitError("the strategy set of this annotation names ")
          << quotedNames(set) << " but the function's arguments name "
          << quotedNames(strategies)
          << "; a program switches between one list of strategies";
      return WalkResult::interrupt();
    }
    op.setLayoutAttr(set.lookup(strategy));
    return WalkResult::advance();
  });
  return failure(walked.wasInterrupted());
}

/// `layout`, one device group, respelled over `groups` (the device groups
/// of a strategy that is a union of several): every device holding the
/// same shard, or null where no spelling tried does. Tried: every group
/// replicating the whole (`replicated: {g: [D:n]}, ...`), and dimension `d`
/// cut among the groups in the order of their devices, each cutting its
/// part again (`split(d) shares [n, ...]: {g: [Sd:n]}, ...`).
UnionAttr regroup(UnionAttr layout, ArrayRef<DeviceGroupAttr> groups,
                  RankedTensorType type) {
  MLIRContext *context = layout.getContext();
  auto spell = [&](StringRef head, std::string axis) {
    std::string text = "#hspmd.union<" + head.str();
    for (auto [k, group] : llvm::enumerate(groups)) {
      text += k ? ", {[" : "{[";
      for (auto [j, device] : llvm::enumerate(group.getDevices()))
        text += (j ? ", " : "") + std::to_string(device);
      int64_t n = group.size();
      text += "]: [" + (n == 1 ? std::string() : axis + std::to_string(n)) +
              "]}";
    }
    return text + ">";
  };
  auto equivalent = [&](const std::string &text) -> UnionAttr {
    auto candidate = dyn_cast_or_null<UnionAttr>(parseAttribute(text, context));
    if (candidate && areEquivalent(candidate, layout, type.getShape()))
      return candidate;
    return {};
  };
  if (UnionAttr replicated = equivalent(spell("replicated: ", "D:")))
    return replicated;
  std::string shares;
  for (DeviceGroupAttr group : groups)
    shares += (shares.empty() ? "" : ", ") + std::to_string(group.size());
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (UnionAttr split =
            equivalent(spell(("split(" + llvm::Twine(d) + ") shares [" +
                              shares + "]: ")
                                 .str(),
                             "S" + std::to_string(d) + ":")))
      return split;
  return {};
}

/// Where `func` (one strategy's) has layouts over several device groups,
/// respells every layout of one group on the same devices over those
/// groups (propagation takes one set of groups per function); optimizer
/// state given the optimizer strategy's layout that cannot be respelled
/// is left to propagation (`inherited`).
void regroupArguments(func::FuncOp func, const DenseSet<unsigned> &inherited) {
  StringRef layoutName = HSPMDDialect::getLayoutAttrName();
  ArrayRef<DeviceGroupAttr> groups;
  for (unsigned i = 0; i < func.getNumArguments() && groups.empty(); ++i)
    if (auto layout = func.getArgAttrOfType<UnionAttr>(i, layoutName);
        layout && layout.getNumGroups() > 1)
      groups = layout.getGroups();
  if (groups.empty())
    return;
  llvm::SmallDenseSet<int64_t> devices;
  for (DeviceGroupAttr group : groups)
    devices.insert(group.getDevices().begin(), group.getDevices().end());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto layout = func.getArgAttrOfType<UnionAttr>(i, layoutName);
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!layout || layout.getNumGroups() != 1 || !type ||
        !type.hasStaticShape())
      continue;
    ArrayRef<int64_t> own = layout.getGroups().front().getDevices();
    if (own.size() != devices.size() ||
        !llvm::all_of(own, [&](int64_t d) { return devices.contains(d); }))
      continue;
    if (UnionAttr respelled = regroup(layout, groups, type))
      func.setArgAttr(i, layoutName, respelled);
    else if (inherited.contains(i))
      func.removeArgAttr(i, layoutName);
  }
}

struct SpecializeStrategiesPass
    : loom::impl::SpecializeStrategiesPassBase<SpecializeStrategiesPass> {
  using SpecializeStrategiesPassBase::SpecializeStrategiesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    StringRef layoutName = HSPMDDialect::getLayoutAttrName();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      FailureOr<StrategySets> sets = collectStrategySets(func);
      if (failed(sets))
        return signalPassFailure();
      StrategySetAttr strategies = sets->first;
      if (!strategies)
        continue;
      if (strategies.getNumStrategies() > static_cast<int64_t>(maxStrategies)) {
        func.emitError("@")
            << func.getSymName() << " has " << strategies.getNumStrategies()
            << " strategies; at most " << static_cast<int64_t>(maxStrategies)
            << " (max-strategies): each is a step compiled on its own";
        return signalPassFailure();
      }
      // (It is replaced by its strategies' functions: nothing may refer to
      // it by name.)
      if (std::optional<SymbolTable::UseRange> uses =
              SymbolTable::getSymbolUses(func, module);
          uses && !uses->empty()) {
        InFlightDiagnostic diag =
            func.emitError("@")
            << func.getSymName()
            << " has strategy sets and is used by name; it becomes one "
               "function per strategy, so nothing may call or name it";
        diag.attachNote(uses->begin()->getUser()->getLoc()) << "used here";
        return signalPassFailure();
      }
      // The optimizer strategy's layout of every parameter with a set.
      DenseMap<unsigned, UnionAttr> optimizerLayout;
      for (unsigned arg : sets->args)
        optimizerLayout[arg] =
            func.getArgAttrOfType<StrategySetAttr>(arg, layoutName)
                .getOptimizerLayout();
      Operation *after = func;
      for (StringAttr name : strategies.getNames()) {
        StringRef strategy = name.getValue();
        if (!isSymbolSafe(strategy)) {
          func.emitError("strategy \"")
              << strategy
              << "\" cannot name a function (@" << func.getSymName() << "_"
              << strategy << "): strategy names are letters, digits and '_'";
          return signalPassFailure();
        }
        std::string cloneName = (func.getSymName() + "_" + strategy).str();
        if (symbols.lookup(cloneName)) {
          func.emitError("the function of strategy \"")
              << strategy << "\" would be @" << cloneName
              << ", which the module already has";
          return signalPassFailure();
        }
        func::FuncOp clone = func.clone();
        clone.setSymName(cloneName);
        clone->setAttr(HSPMDDialect::getStrategyAttrName(), name);
        for (unsigned arg : sets->args)
          clone.setArgAttr(arg, layoutName,
                           func.getArgAttrOfType<StrategySetAttr>(arg,
                                                                  layoutName)
                               .lookup(strategy));
        // Optimizer state: the optimizer strategy's layout of its
        // parameter, where the state has none of its own.
        DenseSet<unsigned> inherited;
        for (unsigned i = 0; i < func.getNumArguments(); ++i) {
          auto of = func.getArgAttrOfType<IntegerAttr>(
              i, nn::NNDialect::getStateAttrName());
          if (!of || func.getArgAttr(i, layoutName))
            continue;
          auto it = optimizerLayout.find(
              static_cast<unsigned>(of.getValue().getZExtValue()));
          if (it != optimizerLayout.end()) {
            clone.setArgAttr(i, layoutName, it->second);
            inherited.insert(i);
          }
        }
        regroupArguments(clone, inherited);
        // Results with strategy sets: the strategy's layout.
        for (unsigned r = 0; r < func.getNumResults(); ++r) {
          auto set = func.getResultAttrOfType<StrategySetAttr>(r, layoutName);
          if (!set)
            continue;
          if (set.getNames() != strategies.getNames()) {
            func.emitError("the strategy set of result #")
                << r << " names " << quotedNames(set)
                << " but the arguments name " << quotedNames(strategies)
                << "; a program switches between one list of strategies";
            clone.erase();
            return signalPassFailure();
          }
          clone.setResultAttr(r, layoutName, set.lookup(strategy));
        }
        if (failed(specializeBody(clone, strategies, strategy))) {
          clone.erase();
          return signalPassFailure();
        }
        module.getBody()->getOperations().insertAfter(after->getIterator(),
                                                      clone);
        symbols.insert(clone);
        after = clone;
      }
      symbols.erase(func);
    }
  }
};

} // namespace
