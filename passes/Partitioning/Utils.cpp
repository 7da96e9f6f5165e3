//===- Utils.cpp - What the partitioning passes share ---------------------===//

#include "passes/Partitioning/Utils.h"

#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

LogicalResult loom::forEachUserLayout(
    func::FuncOp func,
    function_ref<LogicalResult(Attribute, Type, Location, Operation *)>
        visit) {
  auto add = [&](Attribute attr, Type type, Location loc,
                 Operation *owner) -> LogicalResult {
    return attr ? visit(attr, type, loc, owner) : success();
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (failed(add(getArgLayoutAttr(func, i), func.getArgument(i).getType(),
                   func.getArgument(i).getLoc(), func)))
      return failure();
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (failed(add(getResultLayoutAttr(func, i), func.getResultTypes()[i],
                   func.getLoc(), func)))
      return failure();
  WalkResult walk = func.walk([&](Operation *op) {
    LogicalResult result = success();
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      result = add(annotate.getLayout(), annotate.getType(), op->getLoc(), op);
    else if (auto reshard = dyn_cast<ReshardOp>(op))
      result = succeeded(add(reshard.getSource(), reshard.getType(),
                             op->getLoc(), op))
                   ? add(reshard.getTarget(), reshard.getType(), op->getLoc(),
                         op)
                   : failure();
    return failed(result) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void loom::rewriteUserLayouts(func::FuncOp func,
                              function_ref<Attribute(Attribute)> rewrite) {
  auto rewriteLayout = [&](unsigned, NamedAttrList &attrs) {
    if (Attribute attr = getLayout(attrs))
      setLayout(attrs, rewrite(attr));
  };
  updateAllArgAttrs(func, rewriteLayout);
  updateAllResultAttrs(func, rewriteLayout);
  func.walk([&](Operation *op) {
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      annotate.setLayoutAttr(rewrite(annotate.getLayout()));
    if (auto reshard = dyn_cast<ReshardOp>(op)) {
      reshard.setSourceAttr(rewrite(reshard.getSource()));
      reshard.setTargetAttr(rewrite(reshard.getTarget()));
    }
  });
}

LogicalResult loom::collectUserUnions(func::FuncOp func,
                                      SmallVectorImpl<UserUnion> &out,
                                      bool diagnose) {
  return forEachUserLayout(
      func,
      [&](Attribute attr, Type, Location loc, Operation *) -> LogicalResult {
        auto layout = dyn_cast<UnionAttr>(attr);
        if (!layout && !diagnose)
          return failure();
        if (!layout)
          return emitError(loc) << "layout " << attr
                                << " is a strategy set; layout propagation "
                                   "handles one union per value";
        out.push_back({layout, loc});
        return success();
      });
}

std::string loom::getPartName(func::FuncOp func, int64_t index) {
  return (func.getSymName() + "_part" + Twine(index)).str();
}

FailureOr<func::FuncOp>
loom::createPart(OpBuilder &builder, func::FuncOp func, int64_t index,
                 FunctionType type, ArrayRef<DictionaryAttr> argAttrs,
                 ArrayRef<DictionaryAttr> resultAttrs, Operation *insertAfter,
                 StringRef what) {
  std::string name = getPartName(func, index);
  if (SymbolTable::lookupNearestSymbolFrom(
          func, StringAttr::get(func.getContext(), name)))
    return func.emitError()
           << what << ": a symbol @" << name << " exists already";
  builder.setInsertionPointAfter(insertAfter);
  auto part = func::FuncOp::create(builder, func.getLoc(), name, type);
  part.setAllArgAttrs(argAttrs);
  part.setAllResultAttrs(resultAttrs);
  setPartOf(part, func, index);
  builder.setInsertionPointToStart(part.addEntryBlock());
  return part;
}

void loom::finishPartition(func::FuncOp func, ArrayRef<func::FuncOp> parts,
                           ArrayRef<UnionAttr> argWholes,
                           ArrayRef<UnionAttr> resultWholes) {
  for (func::FuncOp part : parts) {
    updateAllArgAttrs(part, [&](unsigned i, NamedAttrList &attrs) {
      if (argWholes[i])
        setWholeLayout(attrs, argWholes[i]);
    });
    updateAllResultAttrs(part, [&](unsigned i, NamedAttrList &attrs) {
      if (resultWholes[i])
        setWholeLayout(attrs, resultWholes[i]);
    });
  }
  setParts(func, parts);
}

void loom::eraseUnused(ArrayRef<Value> values) {
  // One erase per producer, however many of its results are listed.
  llvm::SetVector<Operation *> producers;
  for (Value value : values)
    if (Operation *producer = value.getDefiningOp())
      producers.insert(producer);
  for (Operation *producer : llvm::reverse(producers))
    if (isOpTriviallyDead(producer))
      producer->erase();
}

Value loom::createEmptyTensor(OpBuilder &builder, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  auto empty = tensor.getRank() == 0
                   ? tensor
                   : tensor.clone(SmallVector<int64_t>(tensor.getRank(), 0));
  // A 0-d tensor cannot be empty: a zero stands in for it.
  DenseElementsAttr value =
      empty.getRank() == 0
          ? DenseElementsAttr::get(empty,
                                   builder.getZeroAttr(empty.getElementType()))
      : isa<FloatType>(empty.getElementType())
          ? DenseElementsAttr::get(empty, ArrayRef<APFloat>{})
          : DenseElementsAttr::get(empty, ArrayRef<APInt>{});
  return arith::ConstantOp::create(builder, loc, value).getResult();
}

