//===- TrainingStep.cpp - Forward, backward and optimizer update ----------===//
//
// nn-training-step: for a forward function returning a scalar loss, creates
// a function that computes the loss and its gradients (differentiateInPlace,
// the code nn-autodiff runs) and updates every parameter with SGD or AdamW,
// returning the loss, the new parameters and the new optimizer state. The
// roles of arguments and results are attributes of the nn dialect (nn.param,
// nn.state, nn.step, nn.data; nn.loss, nn.updates), so that a driver knows
// which result feeds which argument of the next step.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff.h"
#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

#define DEBUG_TYPE "nn-training-step"

namespace loom {
#define GEN_PASS_DEF_TRAININGSTEPPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using nn::NNDialect;

namespace {

/// One argument of the training step: its type, attributes, location and,
/// for arguments of the forward function, the forward argument it replaces.
struct StepArg {
  Type type;
  DictionaryAttr attrs;
  Location loc;
  std::optional<unsigned> forwardIndex;
};

struct TrainingStepPass : loom::impl::TrainingStepPassBase<TrainingStepPass> {
  using TrainingStepPassBase::TrainingStepPassBase;

  void runOnOperation() override {
    if (failed(forEachForwardFunction(
            getOperation(), func,
            [&](func::FuncOp forward, SymbolTable &symbols) {
              return createTrainingStep(forward, symbols);
            })))
      signalPassFailure();
  }

  /// The number of optimizer state tensors per parameter.
  unsigned numStates() const {
    return optimizer == OptimizerKind::SGD ? 1 : 2;
  }

  LogicalResult createTrainingStep(func::FuncOp forward, SymbolTable &symbols) {
    std::string name = (forward.getSymName() + "_train_step").str();
    FailureOr<DifferentiatedCopy> grad =
        differentiateCopy(forward, name, symbols);
    if (failed(grad))
      return failure();
    const Gradients &gradients = grad->gradients;
    func::FuncOp step = buildStep(forward, grad->func, gradients, name);
    grad->func.erase();
    if (failed(verify(step))) {
      step.erase();
      return failure();
    }
    symbols.insert(step, std::next(Block::iterator(forward)));
    ++numFunctions;
    numParams += gradients.paramArgs.size();
    return success();
  }

  /// Moves the body of `grad` (differentiated forward function) into a new
  /// function with the training step's signature and adds the updates.
  func::FuncOp buildStep(func::FuncOp forward, func::FuncOp grad,
                         const Gradients &gradients, StringRef name) {
    MLIRContext *context = &getContext();
    Builder b(context);
    Location loc = forward.getLoc();
    ArrayRef<unsigned> params = gradients.paramArgs;
    unsigned numParams = params.size();

    // Arguments: params..., state..., [step,] data...
    SmallVector<StepArg> args;
    for (unsigned index : params)
      args.push_back({forward.getArgumentTypes()[index],
                      forward.getArgAttrDict(index),
                      forward.getArgument(index).getLoc(), index});
    // Optimizer state: named after its parameter where that has a name
    // (`w.momentum`; `w.m` and `w.v`, AdamW's first and second moments).
    for (unsigned kind = 0; kind < numStates(); ++kind)
      for (unsigned k = 0; k < numParams; ++k) {
        SmallVector<NamedAttribute, 2> attrs{b.getNamedAttr(
            NNDialect::getStateAttrName(), b.getI64IntegerAttr(k))};
        if (auto paramName = forward.getArgAttrOfType<StringAttr>(
                params[k], NNDialect::getNameAttrName())) {
          StringRef suffix = optimizer == OptimizerKind::SGD ? ".momentum"
                             : kind == 0                     ? ".m"
                                                             : ".v";
          attrs.push_back(
              b.getNamedAttr(NNDialect::getNameAttrName(),
                             b.getStringAttr(paramName.getValue() + suffix)));
        }
        args.push_back(
            {args[k].type, b.getDictionaryAttr(attrs), loc, std::nullopt});
      }
    std::optional<unsigned> stepIndex;
    if (optimizer == OptimizerKind::AdamW) {
      stepIndex = args.size();
      args.push_back({RankedTensorType::get({}, b.getI64Type()),
                      b.getDictionaryAttr(
                          b.getNamedAttr(NNDialect::getStepAttrName(),
                                         b.getUnitAttr())),
                      loc, std::nullopt});
    }
    for (unsigned index = 0; index < forward.getNumArguments(); ++index)
      if (!llvm::is_contained(params, index))
        args.push_back({forward.getArgumentTypes()[index],
                        forward.getArgAttrDict(index),
                        forward.getArgument(index).getLoc(), index});

    auto step = func::FuncOp::create(
        loc, name,
        FunctionType::get(context,
                          llvm::map_to_vector(args,
                                              [](const StepArg &arg) {
                                                return arg.type;
                                              }),
                          {}));
    Block *entry = new Block();
    step.getBody().push_back(entry);
    Block &body = grad.getBody().front();
    // Attributes set at once (one by one rebuilds the array each time).
    SmallVector<DictionaryAttr> argAttrs;
    for (const StepArg &arg : args) {
      BlockArgument newArg = entry->addArgument(arg.type, arg.loc);
      argAttrs.push_back(arg.attrs ? arg.attrs
                                   : DictionaryAttr::get(context, {}));
      if (arg.forwardIndex)
        body.getArgument(*arg.forwardIndex).replaceAllUsesWith(newArg);
    }
    step.setAllArgAttrs(argAttrs);
    entry->getOperations().splice(entry->end(), body.getOperations());
    // The loss may be an argument itself (a parameter returned as is).
    auto remap = [&](Value value) -> Value {
      if (auto arg = dyn_cast<BlockArgument>(value))
        if (arg.getOwner() == &body)
          for (auto [index, stepArg] : llvm::enumerate(args))
            if (stepArg.forwardIndex == arg.getArgNumber())
              return entry->getArgument(index);
      return value;
    };

    // The loss and the gradients, as the differentiated body returns them.
    Operation *ret = entry->getTerminator();
    OpBuilder builder = OpBuilder::atBlockTerminator(entry);
    SmallVector<Value> newParams, newStates(numStates() * numParams);
    for (unsigned k = 0; k < numParams; ++k) {
      Value param = entry->getArgument(k);
      Value paramGrad = remap(gradients.paramGrads[k]);
      Value first = entry->getArgument(numParams + k);
      if (optimizer == OptimizerKind::SGD) {
        auto update = nn::SgdUpdateOp::create(
            builder, loc, param, paramGrad, first, b.getF64FloatAttr(lr),
            b.getF64FloatAttr(momentum), b.getF64FloatAttr(weightDecay),
            nesterov ? b.getUnitAttr() : UnitAttr());
        newParams.push_back(update.getNewParam());
        newStates[k] = update.getNewMomentumBuffer();
        continue;
      }
      Value second = entry->getArgument(2 * numParams + k);
      auto update = nn::AdamWUpdateOp::create(
          builder, loc, param, paramGrad, first, second,
          entry->getArgument(*stepIndex), b.getF64FloatAttr(lr),
          b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
          b.getF64FloatAttr(eps), b.getF64FloatAttr(weightDecay));
      newParams.push_back(update.getNewParam());
      newStates[k] = update.getNewM();
      newStates[numParams + k] = update.getNewV();
    }

    // Results: loss, new params..., new state..., each saying which
    // argument it becomes next step.
    SmallVector<Value> results{remap(gradients.loss)};
    SmallVector<DictionaryAttr> resultAttrs{b.getDictionaryAttr(
        b.getNamedAttr(NNDialect::getLossAttrName(), b.getUnitAttr()))};
    auto updates = [&](unsigned argIndex) {
      return b.getDictionaryAttr(b.getNamedAttr(
          NNDialect::getUpdatesAttrName(), b.getI64IntegerAttr(argIndex)));
    };
    for (auto [k, value] : llvm::enumerate(newParams)) {
      results.push_back(value);
      resultAttrs.push_back(updates(k));
    }
    for (auto [j, value] : llvm::enumerate(newStates)) {
      results.push_back(value);
      resultAttrs.push_back(updates(numParams + j));
    }
    func::ReturnOp::create(builder, ret->getLoc(), results);
    ret->erase();
    step.setFunctionType(FunctionType::get(
        context, step.getArgumentTypes(),
        llvm::map_to_vector(results, [](Value v) { return v.getType(); })));
    step.setAllResultAttrs(resultAttrs);
    return step;
  }
};

} // namespace
