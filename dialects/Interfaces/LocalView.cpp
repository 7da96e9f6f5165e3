//===- LocalView.cpp - Where a local part sits in the global tensors ------===//

#include "dialects/Interfaces/LocalView.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace loom;

#include "dialects/Interfaces/LocalViewOpInterface.cpp.inc"

LocalView::~LocalView() = default;

static int64_t dimSize(Value value, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || dim < 0 || dim >= type.getRank())
    return ShapedType::kDynamic;
  return type.getDimSize(dim);
}

static bool isSplit(Value global, Value local, int64_t dim) {
  int64_t whole = dimSize(global, dim), part = dimSize(local, dim);
  return !ShapedType::isDynamic(whole) && !ShapedType::isDynamic(part) &&
         part < whole;
}

static bool anySplit(Value global, Value local) {
  auto type = dyn_cast<RankedTensorType>(global.getType());
  if (!type)
    return false;
  for (int64_t d = 0, e = type.getRank(); d < e; ++d)
    if (isSplit(global, local, d))
      return true;
  return false;
}

bool LocalView::isOperandSplit(unsigned index, int64_t dim) const {
  return isSplit(global->getOperand(index), local->getOperand(index), dim);
}
bool LocalView::isResultSplit(unsigned index, int64_t dim) const {
  return isSplit(global->getResult(index), local->getResult(index), dim);
}
bool LocalView::isOperandSplit(unsigned index) const {
  return anySplit(global->getOperand(index), local->getOperand(index));
}
bool LocalView::isResultSplit(unsigned index) const {
  return anySplit(global->getResult(index), local->getResult(index));
}

FailureOr<Value> LocalView::getStart(OpBuilder &builder, bool isResult,
                                     unsigned index, int64_t dim,
                                     Value offset) {
  bool split = isResult ? isResultSplit(index, dim) : isOperandSplit(index, dim);
  if (!split)
    return offset;
  int64_t base = 0;
  if (offset) {
    DenseIntElementsAttr constant;
    if (!matchPattern(offset, m_Constant(&constant)) ||
        constant.getNumElements() != 1)
      return emitError(Twine("its ") + (isResult ? "result" : "operand") +
                       " #" + Twine(index) + " is split along dimension " +
                       Twine(dim) +
                       " and the block's start would have to be added to an "
                       "offset computed at run time, which is not supported");
    base = (*constant.value_begin<APInt>()).getSExtValue();
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(local);
  return createStart(builder, isResult, index, dim, base);
}

FailureOr<Value> LocalView::getOperandStart(OpBuilder &builder,
                                            unsigned index, int64_t dim,
                                            Value offset) {
  return getStart(builder, /*isResult=*/false, index, dim, offset);
}
FailureOr<Value> LocalView::getResultStart(OpBuilder &builder, unsigned index,
                                           int64_t dim, Value offset) {
  return getStart(builder, /*isResult=*/true, index, dim, offset);
}

double LocalView::getOperandShare(unsigned index,
                                  ArrayRef<int64_t> dims) const {
  // One division of the two counts: (N / D) / N rounds to the same double
  // as 1 / D.
  int64_t part = 1, whole = 1;
  for (int64_t dim : dims) {
    part *= dimSize(local->getOperand(index), dim);
    whole *= dimSize(global->getOperand(index), dim);
  }
  return static_cast<double>(part) / static_cast<double>(whole);
}

InFlightDiagnostic LocalView::emitError(const Twine &why) const {
  return global->emitError() << "cannot be localised for its layouts "
                             << describeLayouts() << ": " << why;
}

LogicalResult loom::localizeOp(OpBuilder &builder, LocalView &view) {
  auto op = dyn_cast<LocalViewOpInterface>(view.getLocalOp());
  if (!op)
    return success();
  return op.localize(builder, view);
}
