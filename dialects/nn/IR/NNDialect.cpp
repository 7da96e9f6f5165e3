//===- NNDialect.cpp - The nn dialect -------------------------------------===//
//
// Dialect registration, the enumeration attributes, and the checks on the
// `nn.param` / `nn.data` function argument attributes.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
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

/// Whether `name` is one of the argument classification attributes.
static bool isArgClassAttr(StringRef name) {
  return name == NNDialect::getParamAttrName() ||
         name == NNDialect::getDataAttrName();
}

LogicalResult NNDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned /*regionIndex*/,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (!isArgClassAttr(name))
    return op->emitOpError()
           << "has unknown nn argument attribute '" << name << "' on argument #"
           << argIndex << " (expected 'nn.param' or 'nn.data')";
  if (!isa<UnitAttr>(attr.getValue()))
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
  if (!isa<TensorType>(type))
    return op->emitOpError()
           << "argument #" << argIndex << " of type " << type << " is marked '"
           << name << "', which requires a tensor-typed argument";
  // Both attributes present: report once, from the check of `nn.data`.
  if (name == getDataAttrName() &&
      func.getArgAttr(argIndex, getParamAttrName()))
    return op->emitOpError() << "argument #" << argIndex
                             << " is marked both 'nn.param' and 'nn.data'; "
                                "an argument is a parameter or data, not both";
  return success();
}

LogicalResult NNDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned /*regionIndex*/,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (isArgClassAttr(name))
    return op->emitOpError()
           << "carries '" << name << "' on result #" << resultIndex
           << ", but it is only valid on function arguments";
  return op->emitOpError() << "has unknown nn result attribute '" << name
                           << "' on result #" << resultIndex;
}

LogicalResult NNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (isArgClassAttr(name))
    return op->emitOpError() << "carries '" << name
                             << "' as an op attribute, but it is only valid "
                                "on function arguments";
  return op->emitOpError() << "has unknown nn attribute '" << name << "'";
}
