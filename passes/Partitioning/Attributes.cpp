//===- Attributes.cpp - Typed access to partitioning attributes -----------===//

#include "passes/Partitioning/Attributes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

static StringLiteral layoutName() { return HSPMDDialect::getLayoutAttrName(); }
static StringLiteral operandLayoutsName() {
  return HSPMDDialect::getOperandLayoutsAttrName();
}
static StringLiteral resultLayoutsName() {
  return HSPMDDialect::getResultLayoutsAttrName();
}

static IntegerAttr getI64(MLIRContext *context, int64_t value) {
  return IntegerAttr::get(IntegerType::get(context, 64), value);
}

//===----------------------------------------------------------------------===//
// Function argument and result layouts
//===----------------------------------------------------------------------===//

Attribute loom::getArgLayoutAttr(func::FuncOp func, unsigned index) {
  return func.getArgAttr(index, layoutName());
}

Attribute loom::getResultLayoutAttr(func::FuncOp func, unsigned index) {
  return func.getResultAttr(index, layoutName());
}

UnionAttr loom::getArgLayout(func::FuncOp func, unsigned index) {
  return func.getArgAttrOfType<UnionAttr>(index, layoutName());
}

UnionAttr loom::getResultLayout(func::FuncOp func, unsigned index) {
  return func.getResultAttrOfType<UnionAttr>(index, layoutName());
}

void loom::setArgLayout(func::FuncOp func, unsigned index, Attribute layout) {
  func.setArgAttr(index, layoutName(), layout);
}

void loom::setResultLayout(func::FuncOp func, unsigned index,
                           Attribute layout) {
  func.setResultAttr(index, layoutName(), layout);
}

bool loom::hasArgOrResultLayouts(func::FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgLayoutAttr(func, i))
      return true;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (getResultLayoutAttr(func, i))
      return true;
  return false;
}

Attribute loom::getLayout(const NamedAttrList &attrs) {
  return attrs.get(layoutName());
}

void loom::setLayout(NamedAttrList &attrs, Attribute layout) {
  attrs.set(layoutName(), layout);
}

Attribute loom::eraseLayout(NamedAttrList &attrs) {
  return attrs.erase(layoutName());
}

/// The attribute lists of `count` arguments or results (`get`), each
/// rewritten by `update`.
static SmallVector<DictionaryAttr>
updateAll(MLIRContext *context, unsigned count,
          function_ref<DictionaryAttr(unsigned)> get,
          function_ref<void(unsigned, NamedAttrList &)> update) {
  SmallVector<DictionaryAttr> dicts;
  for (unsigned i = 0; i < count; ++i) {
    NamedAttrList list(get(i));
    update(i, list);
    dicts.push_back(list.getDictionary(context));
  }
  return dicts;
}

void loom::updateAllArgAttrs(
    func::FuncOp func, function_ref<void(unsigned, NamedAttrList &)> update) {
  func.setAllArgAttrs(updateAll(
      func.getContext(), func.getNumArguments(),
      [&](unsigned i) { return func.getArgAttrDict(i); }, update));
}

void loom::updateAllResultAttrs(
    func::FuncOp func, function_ref<void(unsigned, NamedAttrList &)> update) {
  func.setAllResultAttrs(updateAll(
      func.getContext(), func.getNumResults(),
      [&](unsigned i) { return func.getResultAttrDict(i); }, update));
}

//===----------------------------------------------------------------------===//
// Op layouts
//===----------------------------------------------------------------------===//

unsigned loom::countTensors(ValueRange values) {
  return llvm::count_if(values.getTypes(),
                        [](Type type) { return isa<RankedTensorType>(type); });
}

unsigned loom::getTensorResultIndex(OpResult result) {
  return countTensors(
      result.getOwner()->getResults().take_front(result.getResultNumber()));
}

ArrayAttr loom::getOperandLayoutsAttr(Operation *op) {
  return op->getAttrOfType<ArrayAttr>(operandLayoutsName());
}

ArrayAttr loom::getResultLayoutsAttr(Operation *op) {
  return op->getAttrOfType<ArrayAttr>(resultLayoutsName());
}

bool loom::hasOpLayouts(Operation *op) {
  return op->hasAttr(operandLayoutsName()) || op->hasAttr(resultLayoutsName());
}

static FailureOr<SmallVector<UnionAttr>> toUnions(ArrayAttr array) {
  if (!array)
    return failure();
  SmallVector<UnionAttr> layouts;
  for (Attribute attr : array) {
    auto layout = dyn_cast<UnionAttr>(attr);
    if (!layout)
      return failure();
    layouts.push_back(layout);
  }
  return layouts;
}

FailureOr<SmallVector<UnionAttr>> loom::getOperandLayouts(Operation *op) {
  return toUnions(getOperandLayoutsAttr(op));
}

FailureOr<SmallVector<UnionAttr>> loom::getResultLayouts(Operation *op) {
  return toUnions(getResultLayoutsAttr(op));
}

static UnionAttr entryOf(ArrayAttr array, unsigned index) {
  if (!array || index >= array.size())
    return {};
  return dyn_cast<UnionAttr>(array[index]);
}

UnionAttr loom::getOperandLayout(Operation *op, unsigned tensorIndex) {
  return entryOf(getOperandLayoutsAttr(op), tensorIndex);
}

UnionAttr loom::getResultLayout(Operation *op, unsigned tensorIndex) {
  return entryOf(getResultLayoutsAttr(op), tensorIndex);
}

static ArrayAttr toArray(MLIRContext *context, ArrayRef<UnionAttr> layouts) {
  SmallVector<Attribute> attrs(layouts.begin(), layouts.end());
  return ArrayAttr::get(context, attrs);
}

void loom::setOperandLayouts(Operation *op, ArrayRef<UnionAttr> layouts) {
  setOperandLayoutsAttr(op, toArray(op->getContext(), layouts));
}

void loom::setResultLayouts(Operation *op, ArrayRef<UnionAttr> layouts) {
  setResultLayoutsAttr(op, toArray(op->getContext(), layouts));
}

void loom::setOperandLayoutsAttr(Operation *op, ArrayAttr layouts) {
  op->setAttr(operandLayoutsName(), layouts);
}

void loom::setResultLayoutsAttr(Operation *op, ArrayAttr layouts) {
  op->setAttr(resultLayoutsName(), layouts);
}

void loom::removeOpLayouts(Operation *op) {
  op->removeAttr(resultLayoutsName());
  op->removeAttr(operandLayoutsName());
}

UnionAttr loom::getProducedLayout(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast_or_null<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getBody().front())
      return {};
    return getArgLayout(func, arg.getArgNumber());
  }
  auto result = cast<OpResult>(value);
  return getResultLayout(result.getOwner(), getTensorResultIndex(result));
}

//===----------------------------------------------------------------------===//
// Partitioning across device groups
//===----------------------------------------------------------------------===//

bool loom::isPartitioned(func::FuncOp func) {
  return func->hasAttr(HSPMDDialect::getPartsAttrName());
}

void loom::setParts(func::FuncOp func, ArrayRef<func::FuncOp> parts) {
  SmallVector<Attribute> refs =
      llvm::map_to_vector(parts, [](func::FuncOp part) -> Attribute {
        return FlatSymbolRefAttr::get(part);
      });
  func->setAttr(HSPMDDialect::getPartsAttrName(),
                ArrayAttr::get(func.getContext(), refs));
}

bool loom::isPart(func::FuncOp func) {
  return func->hasAttr(HSPMDDialect::getPartOfAttrName());
}

FlatSymbolRefAttr loom::getPartOf(func::FuncOp part) {
  return part->getAttrOfType<FlatSymbolRefAttr>(
      HSPMDDialect::getPartOfAttrName());
}

std::optional<int64_t> loom::getPartIndex(func::FuncOp part) {
  if (auto index =
          part->getAttrOfType<IntegerAttr>(HSPMDDialect::getPartAttrName()))
    return index.getInt();
  return std::nullopt;
}

void loom::setPartOf(func::FuncOp part, func::FuncOp whole, int64_t index) {
  part->setAttr(HSPMDDialect::getPartOfAttrName(),
                FlatSymbolRefAttr::get(whole));
  part->setAttr(HSPMDDialect::getPartAttrName(),
                getI64(part.getContext(), index));
}

void loom::setWholeLayout(NamedAttrList &attrs, UnionAttr layout) {
  attrs.set(HSPMDDialect::getWholeLayoutAttrName(), layout);
}

Attribute loom::eraseWholeLayout(NamedAttrList &attrs) {
  return attrs.erase(HSPMDDialect::getWholeLayoutAttrName());
}

//===----------------------------------------------------------------------===//
// Specialisation
//===----------------------------------------------------------------------===//

UnionAttr loom::getArgGlobalLayout(func::FuncOp func, unsigned index) {
  return func.getArgAttrOfType<UnionAttr>(
      index, HSPMDDialect::getGlobalLayoutAttrName());
}

UnionAttr loom::getResultGlobalLayout(func::FuncOp func, unsigned index) {
  return func.getResultAttrOfType<UnionAttr>(
      index, HSPMDDialect::getGlobalLayoutAttrName());
}

void loom::setGlobalLayout(NamedAttrList &attrs, Attribute layout) {
  attrs.set(HSPMDDialect::getGlobalLayoutAttrName(), layout);
}

DeviceGroupAttr loom::getGroup(Operation *op) {
  return op->getAttrOfType<DeviceGroupAttr>(HSPMDDialect::getGroupAttrName());
}

void loom::setGroup(Operation *op, DeviceGroupAttr group) {
  op->setAttr(HSPMDDialect::getGroupAttrName(), group);
}

SmallVector<int64_t> loom::getRunningDevices(func::FuncOp func) {
  if (auto devices = func->getAttrOfType<DenseI64ArrayAttr>(
          HSPMDDialect::getDevicesAttrName()))
    return SmallVector<int64_t>(devices.asArrayRef());
  if (DeviceGroupAttr group = getGroup(func))
    return SmallVector<int64_t>(group.getDevices());
  return {};
}

void loom::setRunningDevices(func::FuncOp func, ArrayRef<int64_t> devices) {
  func->setAttr(HSPMDDialect::getDevicesAttrName(),
                DenseI64ArrayAttr::get(func.getContext(), devices));
}

FlatSymbolRefAttr loom::getSpecializes(func::FuncOp func) {
  return func->getAttrOfType<FlatSymbolRefAttr>(
      HSPMDDialect::getSpecializesAttrName());
}

void loom::setSpecializes(func::FuncOp local, func::FuncOp reference) {
  local->setAttr(HSPMDDialect::getSpecializesAttrName(),
                 FlatSymbolRefAttr::get(reference));
}

bool loom::isSpecialization(func::FuncOp func) {
  return func->hasAttr(HSPMDDialect::getSpecializesAttrName());
}

//===----------------------------------------------------------------------===//
// Merge tags
//===----------------------------------------------------------------------===//

void loom::setStageSeq(Operation *op, int64_t seq) {
  op->setAttr(kStageSeqAttrName, getI64(op->getContext(), seq));
}

void loom::setExchangePair(Operation *op, int64_t pair) {
  op->setAttr(kExchangePairAttrName, getI64(op->getContext(), pair));
}

std::optional<int64_t> loom::getExchangePair(Operation *op) {
  if (auto pair = op->getAttrOfType<IntegerAttr>(kExchangePairAttrName))
    return pair.getInt();
  return std::nullopt;
}

void loom::removeMergeTags(Operation *op) {
  op->removeAttr(kStageSeqAttrName);
  op->removeAttr(kExchangePairAttrName);
}
