//===- ReshardInsertion.cpp - Reshards where layouts disagree -------------===//
//
// After layout propagation every op says what it needs of each tensor
// operand (hspmd.operand_layouts) and what it produces (hspmd.result_layouts);
// where the two sides of a use differ, an hspmd.reshard goes in between, so
// that every consumer sees exactly the layout it needs.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Attributes.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

#define DEBUG_TYPE "hspmd-insert-reshards"

namespace loom {
#define GEN_PASS_DEF_RESHARDINSERTIONPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

bool isTensor(Value value) { return isa<RankedTensorType>(value.getType()); }

class FunctionInsertion {
public:
  FunctionInsertion(func::FuncOp func) : func(func) {}

  /// Whether propagation wrote anything into the function.
  bool isLaidOut();
  LogicalResult run(int64_t &inserted, int64_t &erased);

private:
  /// The layout `value` is produced with, or null after an error at `user`.
  UnionAttr getProduced(Value value, Operation *user);
  /// `value` laid out as `needed` for `user`: itself or a reshard of it.
  FailureOr<Value> convert(Value value, UnionAttr needed, Operation *user,
                           int64_t &inserted);
  /// The union entry `index` of `op`'s layout array `list` (the attribute
  /// `name`), which must have `count` entries; null after an error.
  UnionAttr getEntry(Operation *op, ArrayAttr list, StringRef name,
                     unsigned index, unsigned count);

  func::FuncOp func;
  llvm::DenseMap<std::pair<Value, Attribute>, Value> reshards;
};

bool FunctionInsertion::isLaidOut() {
  if (hasArgOrResultLayouts(func))
    return true;
  return func
      .walk([](Operation *op) {
        return hasOpLayouts(op) ? WalkResult::interrupt()
                                : WalkResult::advance();
      })
      .wasInterrupted();
}

UnionAttr FunctionInsertion::getEntry(Operation *op, ArrayAttr list,
                                      StringRef name, unsigned index,
                                      unsigned count) {
  if (!list) {
    op->emitError() << "has no " << name
                    << "; run hspmd-propagate-layouts before "
                       "hspmd-insert-reshards";
    return nullptr;
  }
  if (list.size() != count) {
    op->emitError() << name << " has " << list.size() << " entries for "
                    << count << " ranked tensors";
    return nullptr;
  }
  auto layout = dyn_cast<UnionAttr>(list[index]);
  if (!layout)
    op->emitError() << name << " entry " << index << " is " << list[index]
                    << ", not a #hspmd.union";
  return layout;
}

UnionAttr FunctionInsertion::getProduced(Value value, Operation *user) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner() != &func.getBody().front()) {
      user->emitError() << "operand is a block argument of a nested block, "
                           "which has no layout";
      return nullptr;
    }
    Attribute attr = getArgLayoutAttr(func, arg.getArgNumber());
    auto layout = dyn_cast_or_null<UnionAttr>(attr);
    if (!layout)
      user->emitError() << "argument #" << arg.getArgNumber() << " of @"
                        << func.getSymName()
                        << (attr ? " is not laid out by a #hspmd.union"
                                 : " has no hspmd.layout")
                        << "; run hspmd-propagate-layouts before "
                           "hspmd-insert-reshards";
    return layout;
  }
  auto result = cast<OpResult>(value);
  Operation *producer = result.getOwner();
  return getEntry(producer, getResultLayoutsAttr(producer),
                  HSPMDDialect::getResultLayoutsAttrName(),
                  getTensorResultIndex(result),
                  countTensors(producer->getResults()));
}

FailureOr<Value> FunctionInsertion::convert(Value value, UnionAttr needed,
                                            Operation *user,
                                            int64_t &inserted) {
  UnionAttr produced = getProduced(value, user);
  if (!produced)
    return failure();
  auto type = cast<RankedTensorType>(value.getType());
  if (produced == needed || areEquivalent(produced, needed, type.getShape()))
    return value;
  for (auto [role, layout] : {std::pair{"needed", needed}, {"produced", produced}})
    if (failed(verifyLayoutForShape(layout, type.getShape(), [&, role = role] {
          InFlightDiagnostic diag = user->emitError();
          diag << role << " layout of " << type << ": ";
          return diag;
        })))
      return failure();
  auto key = std::make_pair(value, Attribute(needed));
  if (Value existing = reshards.lookup(key))
    return existing;
  OpBuilder builder(user->getContext());
  builder.setInsertionPointAfterValue(value);
  auto reshard =
      ReshardOp::create(builder, user->getLoc(), type, value, produced, needed);
  setOperandLayouts(reshard, {produced});
  setResultLayouts(reshard, {needed});
  ++inserted;
  reshards[key] = reshard.getResult();
  return reshard.getResult();
}

LogicalResult FunctionInsertion::run(int64_t &inserted, int64_t &erased) {
  // Annotations first: each becomes a reshard from its input's layout or
  // disappears.
  SmallVector<AnnotateOp> annotations;
  func.walk([&](AnnotateOp op) { annotations.push_back(op); });
  for (AnnotateOp annotate : annotations) {
    auto layout = dyn_cast<UnionAttr>(annotate.getLayout());
    if (!layout)
      return annotate.emitError()
             << "annotates a strategy set; reshard insertion handles unions "
                "(graph switching handles strategy sets)";
    FailureOr<Value> converted =
        convert(annotate.getInput(), layout, annotate, inserted);
    if (failed(converted))
      return failure();
    if (*converted == annotate.getInput())
      ++erased;
    else // The reshard takes the annotation's location.
      converted->getDefiningOp()->setLoc(annotate.getLoc());
    annotate.getResult().replaceAllUsesWith(*converted);
    annotate.erase();
  }

  SmallVector<Operation *> users;
  func.walk([&](Operation *op) {
    if (op != func.getOperation() && llvm::any_of(op->getOperands(), isTensor))
      users.push_back(op);
  });
  for (Operation *op : users) {
    // Reshards written by the user or inserted here already convert.
    if (isa<ReshardOp>(op) && !getOperandLayoutsAttr(op))
      continue;
    unsigned count = llvm::count_if(op->getOperands(), isTensor);
    unsigned index = 0;
    bool isReturn = isa<func::ReturnOp>(op) && op->getParentOp() == func;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isTensor(operand.get()))
        continue;
      UnionAttr needed;
      if (isReturn) {
        Attribute attr = getResultLayoutAttr(func, operand.getOperandNumber());
        needed = dyn_cast_or_null<UnionAttr>(attr);
        if (attr && !needed)
          return op->emitError()
                 << "result #" << operand.getOperandNumber() << " of @"
                 << func.getSymName() << " is not laid out by a #hspmd.union";
      }
      if (!needed)
        needed = getEntry(op, getOperandLayoutsAttr(op),
                          HSPMDDialect::getOperandLayoutsAttrName(), index,
                          count);
      if (!needed)
        return failure();
      FailureOr<Value> converted =
          convert(operand.get(), needed, op, inserted);
      if (failed(converted))
        return failure();
      operand.set(*converted);
      ++index;
    }
  }
  return success();
}

struct ReshardInsertionPass
    : loom::impl::ReshardInsertionPassBase<ReshardInsertionPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      // A function partitioned across groups stays the reference; its
      // parts are laid out.
      if (func.isExternal() || isPartitioned(func))
        continue;
      FunctionInsertion insertion(func);
      if (!insertion.isLaidOut())
        continue;
      int64_t inserted = 0, erased = 0;
      if (failed(insertion.run(inserted, erased)))
        return signalPassFailure();
      numInserted += inserted;
      numAnnotationsErased += erased;
    }
  }
};

} // namespace
