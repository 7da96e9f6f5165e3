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

static Value tensorOf(Operation *op, bool isResult, unsigned index) {
  return isResult ? op->getResult(index) : op->getOperand(index);
}

bool LocalView::isSplit(bool isResult, unsigned index, int64_t dim) const {
  int64_t whole = dimSize(tensorOf(global, isResult, index), dim);
  int64_t part = dimSize(tensorOf(local, isResult, index), dim);
  return !ShapedType::isDynamic(whole) && !ShapedType::isDynamic(part) &&
         part < whole;
}

std::pair<int64_t, int64_t> LocalView::getShare(bool isResult, unsigned index,
                                                int64_t dim) const {
  return {dimSize(tensorOf(local, isResult, index), dim),
          dimSize(tensorOf(global, isResult, index), dim)};
}

bool LocalView::isOperandSplit(unsigned index) const {
  auto type = dyn_cast<RankedTensorType>(global->getOperand(index).getType());
  for (int64_t d = 0, e = type ? type.getRank() : 0; d < e; ++d)
    if (isOperandSplit(index, d))
      return true;
  return false;
}
bool LocalView::isResultSplit(unsigned index) const {
  auto type = dyn_cast<RankedTensorType>(global->getResult(index).getType());
  for (int64_t d = 0, e = type ? type.getRank() : 0; d < e; ++d)
    if (isResultSplit(index, d))
      return true;
  return false;
}

FailureOr<Value> LocalView::getStart(OpBuilder &builder, bool isResult,
                                     unsigned index, int64_t dim,
                                     Value offset) {
  if (!isSplit(isResult, index, dim))
    return offset;
  if (ShapedType::isDynamic(dimSize(tensorOf(local, isResult, index), dim)))
    return emitError(Twine("its ") + (isResult ? "result" : "operand") + " #" +
                     Twine(index) + " is split along dimension " + Twine(dim) +
                     ", whose size is dynamic: the block's start needs a "
                     "static block size");
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
    if (!isOperandSplit(index, dim))
      continue;
    auto [p, w] = getShare(/*isResult=*/false, index, dim);
    part *= p;
    whole *= w;
  }
  return static_cast<double>(part) / static_cast<double>(whole);
}

InFlightDiagnostic LocalView::emitError(const Twine &why) const {
  return global->emitOpError() << "cannot be localised for its layouts "
                             << describeLayouts() << ": " << why;
}

LogicalResult loom::localizeOp(OpBuilder &builder, LocalView &view) {
  auto op = dyn_cast<LocalViewOpInterface>(view.getLocalOp());
  if (!op)
    return success();
  return op.localize(builder, view);
}
