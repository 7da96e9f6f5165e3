//===- Autodiff.cpp - Reverse-mode differentiation of forward functions ---===//
//
// nn-autodiff: for a forward function returning a scalar loss, creates a
// function returning the loss and its gradients with respect to the
// `nn.param` arguments.
//
// The work is in differentiateInPlace, shared with nn-training-step:
//
// 1. Checks the function's shape: one block, one 0-d float result, at least
//    one parameter.
// 2. Activity analysis: a value is *varied* if it depends on a parameter and
//    *useful* if the loss depends on it, both through differentiable
//    operands and results only (GradientOpInterface says which; by default
//    the float tensors). An op with a varied and useful result lies on a path
//    from a parameter to the loss and must provide its gradient. Every such
//    op that cannot, and every parameter the loss does not depend on, is
//    reported before anything is built.
// 3. The reverse sweep: from the loss's seed (1), each op on the path, last
//    first, turns its result gradients into operand gradients; several
//    contributions to one value add up with nn.add.
// 4. The function returns (loss, gradients...) and loses the ops nothing
//    needs.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff.h"
#include "passes/Passes.h"

#include "dialects/Interfaces/GradientOpInterface.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#define DEBUG_TYPE "nn-autodiff"

namespace loom {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

//===----------------------------------------------------------------------===//
// Checks and activity analysis
//===----------------------------------------------------------------------===//

/// Whether `type` is a 0-d tensor of a float type that nn ops compute in,
/// the type of a loss.
static bool isScalarLossType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != 0)
    return false;
  Type element = tensor.getElementType();
  return element.isF32() || element.isF64() || element.isBF16();
}

static bool isParam(func::FuncOp func, unsigned index) {
  return static_cast<bool>(
      func.getArgAttr(index, nn::NNDialect::getParamAttrName()));
}

bool loom::isForwardFunction(func::FuncOp func) {
  if (func.isExternal() || func.getNumResults() != 1 ||
      !isScalarLossType(func.getResultTypes().front()))
    return false;
  return llvm::any_of(llvm::seq<unsigned>(0, func.getNumArguments()),
                      [&](unsigned i) { return isParam(func, i); });
}

LogicalResult
loom::collectForwardFunctions(ModuleOp module, StringRef name,
                              SmallVectorImpl<func::FuncOp> &functions) {
  if (name.empty()) {
    for (auto func : module.getOps<func::FuncOp>())
      if (isForwardFunction(func))
        functions.push_back(func);
    return success();
  }
  auto func = dyn_cast_or_null<func::FuncOp>(
      SymbolTable::lookupSymbolIn(module, name));
  if (!func)
    return module.emitError("no function named @") << name;
  functions.push_back(func);
  return success();
}

LogicalResult loom::forEachForwardFunction(
    ModuleOp module, StringRef name,
    function_ref<LogicalResult(func::FuncOp, SymbolTable &)> create) {
  SmallVector<func::FuncOp> targets;
  if (failed(collectForwardFunctions(module, name, targets)))
    return failure();
  SymbolTable symbols(module);
  bool ok = true;
  for (func::FuncOp forward : targets)
    ok &= succeeded(create(forward, symbols));
  return success(ok);
}

FailureOr<DifferentiatedCopy>
loom::differentiateCopy(func::FuncOp forward, StringRef name,
                        SymbolTable &symbols) {
  if (symbols.lookup(name))
    return forward.emitError("cannot create @")
           << name << ": the module already has a symbol of that name";
  auto copy = cast<func::FuncOp>(forward->clone());
  FailureOr<Gradients> gradients = differentiateInPlace(copy);
  if (failed(gradients)) {
    copy.erase();
    return failure();
  }
  return DifferentiatedCopy{copy, std::move(*gradients)};
}

namespace {

/// Which operands and results of an op gradients flow through: what its
/// GradientOpInterface says, and for an op without one, the float tensors
/// (so that such an op on a path from a parameter to the loss is found and
/// reported, not skipped).
bool flowsThroughOperand(Operation *op, unsigned index) {
  if (auto gradient = dyn_cast<GradientOpInterface>(op))
    return gradient.isDifferentiableOperand(index);
  return isDifferentiableType(op->getOperand(index).getType());
}

bool flowsFromResult(Operation *op, unsigned index) {
  if (auto gradient = dyn_cast<GradientOpInterface>(op))
    return gradient.isDifferentiableResult(index);
  return isDifferentiableType(op->getResult(index).getType());
}

/// The values defined outside `op` that ops nested in its regions use: data
/// that flows into the op without being an operand.
SmallVector<Value> getCapturedValues(Operation *op) {
  SmallVector<Value> captured;
  if (op->getNumRegions() == 0)
    return captured;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Region *region = operand.getParentRegion();
      if (!region || !op->isAncestor(region->getParentOp()))
        captured.push_back(operand);
    }
  });
  return captured;
}

/// The activity of the values of one block.
struct Activity {
  /// Values that depend on a parameter, mapped to the (first) parameter
  /// argument they depend on.
  DenseMap<Value, unsigned> varied;
  /// Values the loss depends on.
  DenseSet<Value> useful;

  bool isActive(Value value) const {
    return varied.count(value) && useful.count(value);
  }
  /// Whether `op` lies on a path from a parameter to the loss.
  bool isActive(Operation *op) const {
    return llvm::any_of(op->getResults(),
                        [&](Value result) { return isActive(result); });
  }
};

Activity analyze(Block &block, ArrayRef<unsigned> paramArgs, Value loss) {
  Activity activity;
  for (unsigned index : paramArgs)
    activity.varied.try_emplace(block.getArgument(index), index);
  for (Operation &op : block.without_terminator()) {
    std::optional<unsigned> source;
    auto consider = [&](Value input) {
      auto it = activity.varied.find(input);
      if (it != activity.varied.end() && (!source || it->second < *source))
        source = it->second;
    };
    for (auto [index, operand] : llvm::enumerate(op.getOperands()))
      if (flowsThroughOperand(&op, index))
        consider(operand);
    for (Value captured : getCapturedValues(&op))
      if (isDifferentiableType(captured.getType()))
        consider(captured);
    if (!source)
      continue;
    for (auto [index, result] : llvm::enumerate(op.getResults()))
      if (flowsFromResult(&op, index))
        activity.varied.try_emplace(result, *source);
  }

  activity.useful.insert(loss);
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    bool usefulResult = false;
    for (auto [index, result] : llvm::enumerate(op.getResults()))
      usefulResult |=
          activity.useful.count(result) && flowsFromResult(&op, index);
    if (!usefulResult)
      continue;
    for (auto [index, operand] : llvm::enumerate(op.getOperands()))
      if (flowsThroughOperand(&op, index))
        activity.useful.insert(operand);
    for (Value captured : getCapturedValues(&op))
      if (isDifferentiableType(captured.getType()))
        activity.useful.insert(captured);
  }
  return activity;
}

/// `parameter #2 (%arg2)`.
std::string describeParam(Block &block, unsigned index) {
  return "parameter #" + std::to_string(index) + " (" +
         formatValueName(block.getArgument(index)) + ")";
}

/// Reports every problem that keeps `func` from being differentiated. On
/// success, sets the loss and the parameter arguments.
LogicalResult checkFunction(func::FuncOp func, Value &loss,
                            SmallVectorImpl<unsigned> &paramArgs,
                            Activity &activity) {
  if (func.isExternal())
    return func.emitError("cannot differentiate @")
           << func.getSymName() << ": it has no body";
  Region &body = func.getBody();
  if (!body.hasOneBlock())
    return func.emitError("expected a function body with a single block, "
                          "got ")
           << body.getBlocks().size()
           << " blocks; autodiff does not differentiate control flow yet";
  Block &block = body.front();
  auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret)
    return block.getTerminator()->emitOpError(
        "ends the body of a function to differentiate; expected func.return");
  if (ret.getNumOperands() != 1)
    return ret.emitError("expected @")
           << func.getSymName() << " to return one value, the loss, got "
           << ret.getNumOperands();
  loss = ret.getOperand(0);
  if (!isScalarLossType(loss.getType()))
    return ret.emitError("expected the loss to be a 0-d float tensor (f32, "
                         "f64 or bf16), got ")
           << loss.getType();
  for (unsigned index = 0; index < func.getNumArguments(); ++index)
    if (isParam(func, index))
      paramArgs.push_back(index);
  if (paramArgs.empty())
    return func.emitError("@")
           << func.getSymName()
           << " has no nn.param argument, so there is nothing to "
              "differentiate; mark the parameters with {nn.param}";

  activity = analyze(block, paramArgs, loss);
  bool ok = true;
  for (Operation &op : block.without_terminator()) {
    if (isa<GradientOpInterface>(op) || !activity.isActive(&op))
      continue;
    ok = false;
    unsigned source = 0;
    for (Value result : op.getResults())
      if (activity.isActive(result))
        source = activity.varied.lookup(result);
    if (auto call = dyn_cast<CallOpInterface>(op)) {
      InFlightDiagnostic diag = op.emitOpError("calls ");
      if (auto callee = dyn_cast_if_present<SymbolRefAttr>(
              call.getCallableForCallee()))
        diag << callee;
      else
        diag << "a function";
      diag << " on the path from " << describeParam(block, source)
           << " to the loss; autodiff does not differentiate across calls "
              "yet, inline the callee first (--inline)";
      continue;
    }
    op.emitOpError("has no gradient (it does not implement "
                   "GradientOpInterface), but it lies on the path from ")
        << describeParam(block, source) << " to the loss";
  }
  for (unsigned index : paramArgs) {
    BlockArgument arg = block.getArgument(index);
    if (activity.useful.count(arg))
      continue;
    ok = false;
    emitError(arg.getLoc())
        << describeParam(block, index)
        << " does not reach the loss: the returned value does not depend on "
           "it through differentiable ops";
  }
  return success(ok);
}

/// Erases the ops of `block` whose results nothing uses and that have no
/// effect, last first, so that whole dead chains go.
void eraseDeadOps(Block &block) {
  Operation *op = block.empty() ? nullptr : &block.back();
  while (op) {
    Operation *previous = op->getPrevNode();
    if (isOpTriviallyDead(op))
      op->erase();
    op = previous;
  }
}

/// Returns `grad`, the gradient computed for `value`, with `value`'s type:
/// where they differ only in which sizes are static, through nn.reshape.
/// Reports on `op` and fails when the types do not match.
FailureOr<Value> matchGradType(OpBuilder &builder, Operation *op,
                               unsigned operand, Value value, Value grad) {
  if (grad.getType() == value.getType())
    return grad;
  auto expected = dyn_cast<RankedTensorType>(value.getType());
  auto actual = dyn_cast<RankedTensorType>(grad.getType());
  if (expected && actual &&
      expected.getElementType() == actual.getElementType() &&
      succeeded(verifyCompatibleShape(expected, actual)))
    return nn::ReshapeOp::create(builder, op->getLoc(), expected, grad)
        .getResult();
  op->emitOpError("built a gradient of type ")
      << grad.getType() << " for operand #" << operand << " of type "
      << value.getType();
  return failure();
}

} // namespace

//===----------------------------------------------------------------------===//
// Differentiation
//===----------------------------------------------------------------------===//

FailureOr<Gradients> loom::differentiateInPlace(func::FuncOp func) {
  Gradients result;
  Activity activity;
  if (failed(checkFunction(func, result.loss, result.paramArgs, activity)))
    return failure();
  Block &block = func.getBody().front();
  Operation *ret = block.getTerminator();
  SmallVector<Operation *> forwardOps = llvm::map_to_vector(
      block.without_terminator(), [](Operation &op) { return &op; });
  SmallPtrSet<Operation *, 32> forward(forwardOps.begin(), forwardOps.end());

  OpBuilder builder(ret);
  DenseMap<Value, Value> grads;
  auto lossType = cast<RankedTensorType>(result.loss.getType());
  grads[result.loss] = nn::FillOp::create(builder, ret->getLoc(), lossType,
                                          builder.getF64FloatAttr(1.0));

  for (Operation *op : llvm::reverse(forwardOps)) {
    if (!activity.isActive(op))
      continue;
    SmallVector<Value> resultGrads;
    for (Value value : op->getResults())
      resultGrads.push_back(activity.isActive(value) ? grads.lookup(value)
                                                     : Value());
    if (llvm::all_of(resultGrads, [](Value grad) { return !grad; }))
      continue;
    SmallVector<Value> operandGrads;
    // Ops without the interface on the path were reported by checkFunction.
    if (failed(cast<GradientOpInterface>(op).buildGradients(
            builder, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("built ")
             << operandGrads.size() << " operand gradients for "
             << op->getNumOperands() << " operands";
    for (auto [index, operand, grad] :
         llvm::enumerate(op->getOperands(), operandGrads)) {
      if (!grad || !activity.isActive(operand))
        continue;
      FailureOr<Value> typed =
          matchGradType(builder, op, index, operand, grad);
      if (failed(typed))
        return failure();
      Value &total = grads[operand];
      total = total ? nn::AddOp::create(builder, op->getLoc(), total, *typed)
                          .getResult()
                    : *typed;
    }
  }

  SmallVector<Value> results{result.loss};
  for (unsigned index : result.paramArgs) {
    Value grad = grads.lookup(block.getArgument(index));
    if (!grad)
      return emitError(block.getArgument(index).getLoc())
             << "no gradient reached " << describeParam(block, index);
    result.paramGrads.push_back(grad);
    results.push_back(grad);
  }
  func::ReturnOp::create(builder, ret->getLoc(), results);
  ret->erase();

  // The signature: the loss keeps its result attributes; the gradients have
  // the parameters' types.
  SmallVector<Type> resultTypes{lossType};
  for (unsigned index : result.paramArgs)
    resultTypes.push_back(func.getArgumentTypes()[index]);
  DictionaryAttr lossAttrs = func.getResultAttrDict(0);
  func.setFunctionType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(),
                        resultTypes));
  SmallVector<DictionaryAttr> resultAttrs(resultTypes.size());
  resultAttrs.front() = lossAttrs;
  func.setAllResultAttrs(resultAttrs);

  eraseDeadOps(block);
  for (Operation &op : block.without_terminator())
    if (!forward.contains(&op))
      ++result.numGradientOps;
  return result;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

struct AutodiffPass : loom::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    if (failed(forEachForwardFunction(
            getOperation(), func,
            [&](func::FuncOp forward, SymbolTable &symbols) {
              return createGradientFunction(forward, symbols);
            })))
      signalPassFailure();
  }

  LogicalResult createGradientFunction(func::FuncOp forward,
                                       SymbolTable &symbols) {
    std::string name = (forward.getSymName() + "_grad").str();
    // The differentiated copy joins the module once complete.
    FailureOr<DifferentiatedCopy> grad =
        differentiateCopy(forward, name, symbols);
    if (failed(grad))
      return failure();
    grad->func.setSymName(name);
    symbols.insert(grad->func, std::next(Block::iterator(forward)));
    ++numFunctions;
    numGradientOps += grad->gradients.numGradientOps;
    return success();
  }
};

} // namespace
