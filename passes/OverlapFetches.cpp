//===- OverlapFetches.cpp - Weight fetches started ahead of their use ------===//
//
// Expert placement fetches each micro-step's replica weights from their
// home devices (`hspmd.sparse_all_gather` of a weight argument, named by
// the micro-step's plan). The plan comes from the forecast and the master
// weights do not change before the step's end, so the fetch of micro-step
// m + 1 could start long before micro-step m ends; as one collective the
// program waits for it where micro-step m + 1 begins. This pass, on local
// programs, splits such a fetch into
//
//   %pending = hspmd.sparse_all_gather_start %w rows %ids ...
//   ... the ops before the fetch ...
//   %full = hspmd.wait %pending keep(%w, %ids : ...)
//
// with the start as early as it can go: right after the previous fetch of
// the same weight completes (so at most one fetch of a weight is in
// flight: one more buffer of its table at a time), or at the function's
// start for the first. The side-effect-free, non-communicating ops the
// ids are computed by (the plan, its comparison with the previous one,
// the selection of the ids, local slices) move up with it, in their
// order; an op that communicates or has effects stops the start below it.
// The wait stays where the fetch was. A fetch with nothing left to
// overlap (no op between where its start could go and its use) stays as
// it is.
//
// Values and bytes are unchanged: the start is the same collective. What
// the runtimes do with it is theirs (the host's runs it on a
// communication thread; see hspmd.sparse_all_gather_start).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace loom {
#define GEN_PASS_DEF_OVERLAPFETCHESPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// Whether `op` may move up past others: it has no effects and moves no
/// data between devices (nn ops; the local hspmd ops).
bool isMovable(Operation *op) {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return false;
  if (isa<nn::NNDialect>(op->getDialect()))
    return true;
  return isa<hspmd::LocalSliceOp, hspmd::AxisIndexOp, hspmd::AnnotateOp>(op);
}

/// The ops strictly after `floor` (null: the block's start) that `fetch`
/// depends on, in program order.
SmallVector<Operation *> sliceAfter(Operation *fetch, Operation *floor) {
  llvm::SetVector<Operation *> found;
  SmallVector<Value> work(fetch->getOperands());
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || (floor && !floor->isBeforeInBlock(def)) ||
        !found.insert(def))
      continue;
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ordered(found.begin(), found.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return ordered;
}

struct OverlapFetchesPass
    : loom::impl::OverlapFetchesPassBase<OverlapFetchesPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        return;
      overlap(func.getBody().front());
    });
  }

  void overlap(Block &block) {
    SmallVector<hspmd::SparseAllGatherOp> fetches;
    for (auto fetch : block.getOps<hspmd::SparseAllGatherOp>())
      // A weight's fetch: its table is an argument of the step.
      if (isa<BlockArgument>(fetch.getInput()))
        fetches.push_back(fetch);
    // The wait of the latest fetch of each weight.
    DenseMap<Value, Operation *> lastWait;
    for (hspmd::SparseAllGatherOp fetch : fetches) {
      Value weight = fetch.getInput();
      Operation *floor = lastWait.lookup(weight);
      SmallVector<Operation *> slice;
      // Below the last op the ids need that cannot move.
      while (true) {
        slice = sliceAfter(fetch, floor);
        auto fixed = llvm::find_if(llvm::reverse(slice),
                                   [](Operation *op) { return !isMovable(op); });
        if (fixed == llvm::reverse(slice).end())
          break;
        floor = *fixed;
      }
      // What the fetch would overlap: the ops between its start and its
      // use that it does not need.
      Operation *first = floor ? floor->getNextNode() : &block.front();
      int64_t overlapped = 0;
      for (Operation *op = first; op != fetch.getOperation();
           op = op->getNextNode())
        overlapped += !llvm::is_contained(slice, op);
      if (overlapped == 0) {
        lastWait[weight] = fetch;
        continue;
      }
      // The ids' ops move up, in order, before the first op they do not
      // include; the start follows them.
      Operation *anchor = first;
      while (llvm::is_contained(slice, anchor))
        anchor = anchor->getNextNode();
      for (Operation *op : slice)
        if (anchor->isBeforeInBlock(op))
          op->moveBefore(anchor);
      OpBuilder builder(anchor);
      auto start = hspmd::SparseAllGatherStartOp::create(
          builder, fetch.getLoc(), fetch.getType(), fetch.getInput(),
          fetch.getRows(), fetch.getAxes(), fetch.getMesh());
      builder.setInsertionPoint(fetch);
      auto wait = hspmd::WaitOp::create(builder, fetch.getLoc(),
                                        fetch.getType(), start.getResult(),
                                        start->getOperands());
      fetch.replaceAllUsesWith(wait.getResult());
      fetch.erase();
      lastWait[weight] = wait;
      ++numOverlapped;
    }
  }
};

} // namespace
