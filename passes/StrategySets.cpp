//===- StrategySets.cpp - The strategy sets of a function -----------------===//

#include "passes/StrategySets.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/nn/IR/NNDialect.h"

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

/// `'wq'` (its nn.name) or `#3`.
std::string loom::describeArgument(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(
          i, nn::NNDialect::getNameAttrName()))
    return ("'" + name.getValue() + "'").str();
  return "#" + std::to_string(i);
}

std::string loom::quotedNames(StrategySetAttr set) {
  std::string text;
  for (StringAttr name : set.getNames())
    text += (text.empty() ? "\"" : ", \"") + name.getValue().str() + "\"";
  return text;
}

FailureOr<StrategySets> loom::collectStrategySets(func::FuncOp func) {
  StrategySets set;
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
      return emitError(loc) << "the strategy set of " << describeArgument(func, i)
                            << " names " << quotedNames(strategies)
                            << " but that of " << describeArgument(func, firstArg)
                            << " names " << quotedNames(set.first)
                            << "; every parameter takes the same strategies",
             failure();
    } else if (strategies.getOptimizerIndex() !=
               set.first.getOptimizerIndex()) {
      return emitError(loc)
                 << "the strategy set of " << describeArgument(func, i)
                 << " keeps its optimizer state under \""
                 << strategies.getNames()[strategies.getOptimizerIndex()]
                        .getValue()
                 << "\" but that of " << describeArgument(func, firstArg)
                 << " under \""
                 << set.first.getNames()[set.first.getOptimizerIndex()]
                        .getValue()
                 << "\"; a parameter set has one optimizer strategy",
             failure();
    }
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type || !type.hasStaticShape() ||
        !type.getElementType().isIntOrFloat())
      return emitError(loc) << "argument " << describeArgument(func, i)
                            << " with a strategy set must be a tensor of "
                               "static shape, not "
                            << func.getArgument(i).getType(),
             failure();
    layout::SwitchTensor tensor;
    tensor.name = describeArgument(func, i);
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
                              << describeArgument(func, i) << ": layout " << union_
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
  return set;
}

