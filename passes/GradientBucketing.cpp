//===- GradientBucketing.cpp - Fuse all-reduces into buckets --------------===//
//
// In a local-view function (after specialisation) every all-reduce of the
// same kind over the same sub-groups can share one collective: the buffers
// are flattened and concatenated, reduced once, and sliced back. Each
// element is still reduced over the same ranks in the same order, so the
// results are bitwise those of the separate all-reduces; what changes is
// the number of collectives (latency) and nothing else.
//
// Buckets are formed in program order: an all-reduce joins the open bucket
// of its kind unless that would exceed `bucket-bytes`, and a bucket is
// issued just before the first op that needs one of its results (or before
// the return). In a training step the gradient all-reduces of the backward
// pass are only read by the optimizer updates after it, so they end up in
// one bucket per `bucket-bytes`; an activation all-reduce (tensor
// parallelism) is read right away and stays alone.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Utils.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace loom {
#define GEN_PASS_DEF_GRADIENTBUCKETINGPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct Bucket {
  SmallVector<Operation *> members;
  int64_t bytes = 0;
};

/// Collectives that may share one: same kind, reduction, sub-groups and
/// element type.
/// Kind, reduction, axes, mesh, element type, and the group the collective
/// runs over when it says (in a program merging several groups' ops).
using BucketKey = std::tuple<const void *, int, std::vector<int64_t>,
                             std::vector<int64_t>, const void *, const void *>;

/// The bytes of a statically shaped tensor, or -1.
int64_t getByteSize(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return -1;
  return tensor.getNumElements() *
         ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// Whether `op` can join a bucket: a local-view all-reduce, or a
/// reduce-scatter or all-gather along dimension 0 (whose blocks are
/// contiguous rows of the flattened buffer), on a static buffer.
bool isBucketable(Operation *op) {
  std::optional<CollectiveView> view = getCollectiveView(op);
  if (!view || view->from || getByteSize(op->getOperand(0).getType()) < 0)
    return false;
  if (isa<hspmd::AllReduceOp>(op))
    return true;
  if (auto scatter = dyn_cast<hspmd::ReduceScatterOp>(op))
    return scatter.getDim() == 0;
  if (auto gather = dyn_cast<hspmd::AllGatherOp>(op))
    return gather.getDim() == 0;
  return false;
}

BucketKey getKey(Operation *op) {
  CollectiveView view = *getCollectiveView(op);
  ArrayRef<int64_t> axes = view.axes, mesh = view.mesh;
  int reduction = -1;
  if (auto reduce = dyn_cast<hspmd::AllReduceOp>(op))
    reduction = static_cast<int>(reduce.getReduction());
  if (auto scatter = dyn_cast<hspmd::ReduceScatterOp>(op))
    reduction = static_cast<int>(scatter.getReduction());
  return {
      op->getName().getAsOpaquePointer(), reduction,
      std::vector<int64_t>(axes.begin(), axes.end()),
      std::vector<int64_t>(mesh.begin(), mesh.end()),
      cast<RankedTensorType>(op->getOperand(0).getType())
          .getElementType()
          .getAsOpaquePointer(),
      getGroup(op).getAsOpaquePointer()};
}

/// Replaces the members of `bucket` by one collective of their buffers,
/// built before `point`; whether it fused any. Each buffer is seen as a
/// [rows, columns] matrix, rows being the sub-group size where the
/// collective cuts or stacks dimension 0 (the operand of a reduce-scatter,
/// the result of an all-gather) and 1 otherwise; the matrices are
/// concatenated along columns, the collective runs once on the result, and
/// each member's columns are sliced back. Every element meets the same
/// ranks in the same order as before, so the results are bitwise the same.
bool issue(Bucket &bucket, Operation *point) {
  if (bucket.members.size() < 2) {
    // A lone collective stays as it is, but goes before `point` if it was
    // deferred past a bucket it reads (which is issued just before it).
    for (Operation *member : bucket.members)
      if (llvm::any_of(member->getOperands(), [&](Value operand) {
            Operation *def = operand.getDefiningOp();
            return def && def->getBlock() == member->getBlock() &&
                   member->isBeforeInBlock(def);
          }))
        member->moveBefore(point);
    bucket = {};
    return false;
  }
  Operation *first = bucket.members.front();
  OpBuilder builder(point);
  Location loc = builder.getFusedLoc(llvm::to_vector(llvm::map_range(
      bucket.members, [](Operation *op) { return op->getLoc(); })));
  auto firstType = cast<RankedTensorType>(first->getOperand(0).getType());
  Type element = firstType.getElementType();
  int64_t k = 1;
  CollectiveView view = *getCollectiveView(first);
  for (int64_t axis : view.axes)
    k *= view.mesh[axis];
  int64_t rowsIn = isa<hspmd::ReduceScatterOp>(first) ? k : 1;
  int64_t rowsOut = isa<hspmd::AllGatherOp>(first) ? k : 1;
  SmallVector<Value> matrices;
  SmallVector<int64_t> columns;
  int64_t total = 0;
  for (Operation *member : bucket.members) {
    auto type = cast<RankedTensorType>(member->getOperand(0).getType());
    int64_t count = type.getNumElements() / rowsIn;
    columns.push_back(count);
    total += count;
    matrices.push_back(
        nn::ReshapeOp::create(builder, member->getLoc(),
                              RankedTensorType::get({rowsIn, count}, element),
                              member->getOperand(0)));
  }
  Value buffer = nn::ConcatOp::create(
      builder, loc, RankedTensorType::get({rowsIn, total}, element), matrices,
      uint64_t{1});
  Operation *fused = builder.clone(*first);
  fused->setLoc(loc);
  fused->setOperand(0, buffer);
  fused->getResult(0).setType(RankedTensorType::get({rowsOut, total}, element));
  int64_t offset = 0;
  for (auto [member, count] : llvm::zip_equal(bucket.members, columns)) {
    Value piece = nn::SliceOp::create(
        builder, member->getLoc(),
        RankedTensorType::get({rowsOut, count}, element), fused->getResult(0),
        builder.getDenseI64ArrayAttr({0, offset}),
        builder.getDenseI64ArrayAttr({rowsOut, count}),
        builder.getDenseI64ArrayAttr({1, 1}));
    offset += count;
    Value shaped = nn::ReshapeOp::create(builder, member->getLoc(),
                                         member->getResult(0).getType(), piece);
    member->getResult(0).replaceAllUsesWith(shaped);
    member->erase();
  }
  bucket = {};
  return true;
}

struct GradientBucketingPass
    : loom::impl::GradientBucketingPassBase<GradientBucketingPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketBytes < 1) {
      emitError(getOperation().getLoc())
          << "bucket-bytes must be at least 1, got "
          << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock())
        bucketFunction(func);
  }

  void bucketFunction(func::FuncOp func) {
    std::map<BucketKey, Bucket> open;
    llvm::DenseMap<Value, BucketKey> pending; // member result -> its bucket
    // A bucket whose members read results of another open bucket (a
    // reshard chain: all-reduce over one mesh axis, then all-gather over
    // another) is issued after it: chained collectives do not cut each
    // other's buckets short.
    std::map<BucketKey, std::set<BucketKey>> dependsOn;
    // Issues `key`'s bucket, and first the buckets it reads, before `point`.
    std::function<void(const BucketKey &, Operation *)> issueAt =
        [&](const BucketKey &key, Operation *point) {
          auto deps = dependsOn.find(key);
          if (deps != dependsOn.end()) {
            std::set<BucketKey> before = std::move(deps->second);
            dependsOn.erase(deps);
            for (const BucketKey &dep : before)
              issueAt(dep, point);
          }
          Bucket &bucket = open[key];
          for (Operation *member : bucket.members)
            pending.erase(member->getResult(0));
          numBuckets += issue(bucket, point);
        };
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      bool joins =
          isa<hspmd::AllReduceOp, hspmd::ReduceScatterOp, hspmd::AllGatherOp>(
              op) &&
          isBucketable(&op);
      // Issue every bucket whose result this op needs, unless the op is a
      // collective that joins a bucket of its own: that bucket then goes
      // after the one it reads.
      for (Value operand : op.getOperands()) {
        auto it = pending.find(operand);
        if (it == pending.end())
          continue;
        BucketKey read = it->second;
        if (joins && read != getKey(&op)) {
          dependsOn[getKey(&op)].insert(read);
          continue;
        }
        issueAt(read, &op);
      }
      if (!joins)
        continue;
      int64_t bytes = getByteSize(op.getOperand(0).getType());
      BucketKey key = getKey(&op);
      Bucket &bucket = open[key];
      if (!bucket.members.empty() && bucket.bytes + bytes > bucketBytes)
        issueAt(key, &op);
      open[key].members.push_back(&op);
      open[key].bytes += bytes;
      pending[op.getResult(0)] = key;
    }
    Operation *end = func.getBody().front().getTerminator();
    // Buckets nobody reads (dead results) still go before the return.
    std::vector<BucketKey> keys;
    for (auto &[key, bucket] : open)
      keys.push_back(key);
    for (const BucketKey &key : keys)
      issueAt(key, end);
  }
};

} // namespace
