//===- NNDialect.cpp - The nn dialect -------------------------------------===//
//
// Dialect registration, the enumeration attributes, and the checks on the
// role attributes of function arguments (`nn.param`, `nn.data`, `nn.state`,
// `nn.step`) and results (`nn.loss`, `nn.updates`).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace loom::nn;

#include "dialects/nn/IR/NNDialect.cpp.inc"

#include "dialects/nn/IR/NNEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/IR/NNAttrs.cpp.inc"

void NNDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/nn/IR/NNOps.cpp.inc"
      >();
}

void NNDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/nn/IR/NNAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

/// The attributes that give a function argument its role; an argument has
/// at most one.
static constexpr StringLiteral kArgRoleAttrs[] = {
    NNDialect::getParamAttrName(), NNDialect::getDataAttrName(),
    NNDialect::getStateAttrName(), NNDialect::getStepAttrName()};

/// The attributes that give a function result its role.
static constexpr StringLiteral kResultRoleAttrs[] = {
    NNDialect::getLossAttrName(), NNDialect::getUpdatesAttrName(),
    NNDialect::getGradNormAttrName()};

static bool isArgRoleAttr(StringRef name) {
  return llvm::is_contained(kArgRoleAttrs, name);
}

static bool isResultRoleAttr(StringRef name) {
  return llvm::is_contained(kResultRoleAttrs, name);
}

/// Whether `type` is a 0-d i64 tensor (a step counter).
static bool isI64Scalar(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0 &&
         tensor.getElementType().isSignlessInteger(64);
}

/// Checks `nn.state = <index>` on argument `argIndex` of `func`: the index
/// names a parameter of the same type.
static LogicalResult verifyStateAttr(FunctionOpInterface func,
                                     unsigned argIndex, IntegerAttr attr) {
  ArrayRef<Type> argTypes = func.getArgumentTypes();
  int64_t param = attr.getValue().getSExtValue();
  if (param < 0 || param >= static_cast<int64_t>(argTypes.size()))
    return func->emitOpError()
           << "argument #" << argIndex << " is optimizer state of argument #"
           << param << ", but the function has " << argTypes.size()
           << " arguments";
  if (!func.getArgAttr(param, NNDialect::getParamAttrName()))
    return func->emitOpError()
           << "argument #" << argIndex << " is optimizer state of argument #"
           << param << ", which is not a parameter (marked 'nn.param')";
  // In a specialised function the arguments are blocks of the global
  // tensors (`hspmd.global_layout`): a parameter and its state may be laid
  // out differently (ZeRO), so only their element types must agree there.
  StringRef globalLayout =
      loom::hspmd::HSPMDDialect::getGlobalLayoutAttrName();
  bool blocks = func.getArgAttr(param, globalLayout) ||
                func.getArgAttr(argIndex, globalLayout);
  auto paramType = dyn_cast<ShapedType>(argTypes[param]);
  auto stateType = dyn_cast<ShapedType>(argTypes[argIndex]);
  if (blocks && paramType && stateType &&
      paramType.getElementType() == stateType.getElementType() &&
      paramType.getRank() == stateType.getRank())
    return success();
  if (argTypes[param] != argTypes[argIndex])
    return func->emitOpError()
           << "argument #" << argIndex << " of type " << argTypes[argIndex]
           << " is optimizer state of parameter #" << param << " of type "
           << argTypes[param] << "; they must have the same type";
  return success();
}

LogicalResult NNDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned /*regionIndex*/,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == getNameAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty())
      return op->emitOpError()
             << "argument #" << argIndex << " attribute '" << name
             << "' must be a non-empty string, got " << attr.getValue();
    return success();
  }
  // The expert counts a rollout recorded (hspmd-moe-placement), with the
  // replica slots of a device or nothing.
  if (name == "nn.moe_forecast") {
    auto slots = dyn_cast<IntegerAttr>(attr.getValue());
    if (isa<UnitAttr>(attr.getValue()) || (slots && slots.getInt() > 0))
      return success();
    return op->emitOpError()
           << "argument #" << argIndex << " attribute '" << name
           << "' must be a positive integer (replica slots a device) or "
              "unit, got "
           << attr.getValue();
  }
  if (isResultRoleAttr(name))
    return op->emitOpError()
           << "carries '" << name << "' on argument #" << argIndex
           << ", but it is only valid on function results";
  if (!isArgRoleAttr(name))
    return op->emitOpError()
           << "has unknown nn argument attribute '" << name << "' on argument #"
           << argIndex
           << " (expected 'nn.param', 'nn.data', 'nn.state', 'nn.step', "
              "'nn.name' or 'nn.moe_forecast')";
  bool isState = name == getStateAttrName();
  if (isState && !isa<IntegerAttr>(attr.getValue()))
    return op->emitOpError()
           << "argument #" << argIndex << " attribute '" << name
           << "' must be an integer (the argument index of its parameter), "
              "got "
           << attr.getValue();
  if (!isState && !isa<UnitAttr>(attr.getValue()))
    return op->emitOpError()
           << "argument #" << argIndex << " attribute '" << name
           << "' must be a unit attribute, got " << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitOpError() << "carries '" << name
                             << "' on a region argument, but it is only "
                                "valid on function arguments";
  ArrayRef<Type> argTypes = func.getArgumentTypes();
  if (argIndex >= argTypes.size())
    return op->emitOpError()
           << "carries '" << name << "' on argument #" << argIndex
           << ", but the function has only " << argTypes.size() << " arguments";
  Type type = argTypes[argIndex];
  if (name == getStepAttrName()) {
    if (!isI64Scalar(type))
      return op->emitOpError()
             << "argument #" << argIndex << " of type " << type
             << " is marked 'nn.step', which requires a 0-d i64 tensor";
  } else if (!isa<TensorType>(type)) {
    return op->emitOpError()
           << "argument #" << argIndex << " of type " << type << " is marked '"
           << name << "', which requires a tensor-typed argument";
  }
  // Several roles: report once, from the check of the last one listed.
  for (StringRef other : kArgRoleAttrs) {
    if (other == name)
      break;
    if (func.getArgAttr(argIndex, other))
      return op->emitOpError()
             << "argument #" << argIndex << " is marked both '" << other
             << "' and '" << name
             << "'; an argument has one role (parameter, data, optimizer "
                "state or step counter) at most";
  }
  if (isState)
    return verifyStateAttr(func, argIndex, cast<IntegerAttr>(attr.getValue()));
  return success();
}

LogicalResult NNDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned /*regionIndex*/,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (isArgRoleAttr(name))
    return op->emitOpError()
           << "carries '" << name << "' on result #" << resultIndex
           << ", but it is only valid on function arguments";
  if (!isResultRoleAttr(name))
    return op->emitOpError()
           << "has unknown nn result attribute '" << name << "' on result #"
           << resultIndex
           << " (expected 'nn.loss', 'nn.updates' or 'nn.grad_norm')";
  bool isUpdates = name == getUpdatesAttrName();
  if (isUpdates && !isa<IntegerAttr>(attr.getValue()))
    return op->emitOpError()
           << "result #" << resultIndex << " attribute '" << name
           << "' must be an integer (the index of the argument it updates), "
              "got "
           << attr.getValue();
  if (!isUpdates && !isa<UnitAttr>(attr.getValue()))
    return op->emitOpError()
           << "result #" << resultIndex << " attribute '" << name
           << "' must be a unit attribute, got " << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitOpError() << "carries '" << name
                             << "' on a region result, but it is only valid "
                                "on function results";
  ArrayRef<Type> resultTypes = func.getResultTypes();
  if (resultIndex >= resultTypes.size())
    return op->emitOpError() << "carries '" << name << "' on result #"
                             << resultIndex << ", but the function has only "
                             << resultTypes.size() << " results";
  Type type = resultTypes[resultIndex];
  if (!isUpdates) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 0 ||
        !isa<FloatType>(tensor.getElementType()))
      return op->emitOpError()
             << "result #" << resultIndex << " of type " << type
             << " is marked '" << name
             << "', which requires a 0-d float tensor";
    return success();
  }
  ArrayRef<Type> argTypes = func.getArgumentTypes();
  int64_t arg = cast<IntegerAttr>(attr.getValue()).getValue().getSExtValue();
  if (arg < 0 || arg >= static_cast<int64_t>(argTypes.size()))
    return op->emitOpError()
           << "result #" << resultIndex << " updates argument #" << arg
           << ", but the function has " << argTypes.size() << " arguments";
  if (!func.getArgAttr(arg, getParamAttrName()) &&
      !func.getArgAttr(arg, getStateAttrName()))
    return op->emitOpError()
           << "result #" << resultIndex << " updates argument #" << arg
           << ", which is neither a parameter nor optimizer state";
  if (argTypes[arg] != type)
    return op->emitOpError()
           << "result #" << resultIndex << " of type " << type
           << " updates argument #" << arg << " of type " << argTypes[arg]
           << "; they must have the same type";
  return success();
}

LogicalResult NNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (isArgRoleAttr(name))
    return op->emitOpError() << "carries '" << name
                             << "' as an op attribute, but it is only valid "
                                "on function arguments";
  if (isResultRoleAttr(name))
    return op->emitOpError() << "carries '" << name
                             << "' as an op attribute, but it is only valid "
                                "on function results";
  if (name == getPrefixDedupAttrName()) {
    auto info = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !info)
      return op->emitOpError()
             << "carries '" << name
             << "', which must be a dictionary on a function";
    for (StringRef key : {"batch", "bins", "capacity", "seq"})
      if (!info.get(key))
        return op->emitOpError() << "'" << name << "' lacks '" << key << "'";
    for (NamedAttribute entry : info) {
      StringRef key = entry.getName().strref();
      auto value = dyn_cast<IntegerAttr>(entry.getValue());
      if (!llvm::is_contained({StringRef("batch"), StringRef("bins"),
                               StringRef("capacity"), StringRef("seq"),
                               StringRef("vocab")},
                              key))
        return op->emitOpError()
               << "'" << name << "' has unknown entry '" << key << "'";
      if (!value || !value.getValue().isStrictlyPositive() ||
          value.getValue().getActiveBits() > 62)
        return op->emitOpError() << "'" << name << "' entry '" << key
                                 << "' must be a positive integer below 2^62";
    }
    return success();
  }
  if (name == getTokensAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !value ||
        !value.getType().isSignlessInteger() ||
        !value.getValue().isStrictlyPositive() ||
        value.getValue().getActiveBits() > 62)
      return op->emitOpError()
             << "carries '" << name
             << "', which must be a positive integer below 2^62 on a "
                "function";
    return success();
  }
  if (name == getMoeReplicasAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<EmbeddingOp, GatherGradOp>(op) || !value ||
        value.getValue().isNegative())
      return op->emitOpError()
             << "carries '" << name
             << "', which must be a non-negative integer on an nn.embedding "
                "or nn.gather_grad";
    return success();
  }
  return op->emitOpError() << "has unknown nn attribute '" << name << "'";
}
