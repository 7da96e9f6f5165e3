//===- OverlapFetches.cpp - Weight fetches started ahead of their use ------===//
//
// Expert placement fetches each micro-step's replica weights from their
// home devices (an `hspmd.sparse_all_gather` of a weight argument, named by
// the micro-step's plan, which hspmd-moe-sparse-exchange marks
// `hspmd.weight_fetch`). The plan comes from the forecast and the master
// weights do not change before the step's end, so the fetch of micro-step
// m + 1 could start long before micro-step m ends; as one collective the
// program waits for it where micro-step m + 1 begins. This pass, on local
// programs, splits every marked fetch into
//
//   %pending = hspmd.sparse_all_gather_start %w rows %ids ...
//   ... the ops before the fetch ...
//   %full = hspmd.wait %pending keep(%w, %ids : ...)
//
// with the start as early as it can go: right after the previous fetch of
// the same weight completes (so at most one fetch of a weight is in
// flight: one more buffer of its table at a time), or at the function's
// start for the first, and after the starts of the fetches before it
// (the runtimes run started collectives in order). The ops the ids are computed by move up with it,
// in their order, where they are nn ops without effects or local hspmd
// ops (the plan, its comparison with the previous one, the selection of
// the ids, local slices); any other op (a collective, an op with effects,
// an op of another dialect) holds the start below it. The wait stays where
// the fetch was. A fetch with nothing to overlap is split all the same,
// its start right before its wait: the runtimes run every started
// collective over the same duplicate communicators, so every function that
// shares a sub-group must split the same fetches.
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

/// Whether `op` may move up past others: an nn op without effects, or an
/// hspmd op that moves no data between devices.
bool isMovable(Operation *op) {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return false;
  if (op->getDialect() && isa<nn::NNDialect>(op->getDialect()))
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
      if (fetch->hasAttr(hspmd::HSPMDDialect::getWeightFetchAttrName()))
        fetches.push_back(fetch);
    // The wait of the latest fetch of each weight, and the latest start:
    // starts keep the fetches' order (the runtimes run them in it).
    DenseMap<Value, Operation *> lastWait;
    Operation *lastStart = nullptr;
    for (hspmd::SparseAllGatherOp fetch : fetches) {
      Value weight = fetch.getInput();
      Operation *floor = lastWait.lookup(weight);
      if (lastStart && (!floor || floor->isBeforeInBlock(lastStart)))
        floor = lastStart;
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
      // The ids' ops move up, in order, before the first op after the
      // floor they do not include (the fetch itself when nothing is left
      // to overlap); the start follows them.
      Operation *anchor = floor ? floor->getNextNode() : &block.front();
      while (llvm::is_contained(slice, anchor))
        anchor = anchor->getNextNode();
      for (Operation *op : slice)
        if (anchor->isBeforeInBlock(op))
          op->moveBefore(anchor);
      OpBuilder builder(anchor);
      auto start = hspmd::SparseAllGatherStartOp::create(
          builder, fetch.getLoc(), fetch.getType(), fetch.getInput(),
          fetch.getRows(), fetch.getAxes(), fetch.getMesh());
      // Its group (in a program merged from several groups' ops) and its
      // mark.
      start->setDiscardableAttrs(fetch->getDiscardableAttrDictionary());
      builder.setInsertionPoint(fetch);
      auto wait = hspmd::WaitOp::create(builder, fetch.getLoc(),
                                        fetch.getType(), start.getResult(),
                                        start->getOperands());
      fetch.replaceAllUsesWith(wait.getResult());
      fetch.erase();
      lastWait[weight] = wait;
      lastStart = start;
      if (start->getNextNode() != wait.getOperation())
        ++numOverlapped;
    }
  }
};

} // namespace
