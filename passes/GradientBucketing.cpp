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

#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <tuple>

namespace loom {
#define GEN_PASS_DEF_GRADIENTBUCKETINGPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct Bucket {
  SmallVector<hspmd::AllReduceOp> members;
  int64_t bytes = 0;
};

/// All-reduces that may share a collective: same reduction, sub-groups and
/// element type.
using BucketKey =
    std::tuple<int, std::vector<int64_t>, std::vector<int64_t>, const void *>;

BucketKey getKey(hspmd::AllReduceOp op) {
  return {static_cast<int>(op.getReduction()),
          std::vector<int64_t>(op.getAxes().begin(), op.getAxes().end()),
          std::vector<int64_t>(op.getMesh().begin(), op.getMesh().end()),
          op.getType().getElementType().getAsOpaquePointer()};
}

/// The bytes of a statically shaped tensor, or -1.
int64_t getByteSize(RankedTensorType type) {
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return -1;
  return type.getNumElements() *
         ((type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// Replaces the members of `bucket` by one all-reduce of their flattened,
/// concatenated buffers, built before `point`; whether it fused any.
bool issue(Bucket &bucket, Operation *point) {
  if (bucket.members.size() < 2) {
    bucket = {};
    return false;
  }
  hspmd::AllReduceOp first = bucket.members.front();
  OpBuilder builder(point);
  Location loc = builder.getFusedLoc(llvm::to_vector(llvm::map_range(
      bucket.members, [](hspmd::AllReduceOp op) { return op.getLoc(); })));
  Type element = first.getType().getElementType();
  SmallVector<Value> flat;
  SmallVector<int64_t> counts;
  int64_t total = 0;
  for (hspmd::AllReduceOp member : bucket.members) {
    int64_t count = member.getType().getNumElements();
    counts.push_back(count);
    total += count;
    flat.push_back(nn::ReshapeOp::create(
        builder, member.getLoc(), RankedTensorType::get({count}, element),
        member.getInput()));
  }
  auto bufferType = RankedTensorType::get({total}, element);
  Value buffer =
      nn::ConcatOp::create(builder, loc, bufferType, flat, uint64_t{0});
  Value reduced = hspmd::AllReduceOp::create(
      builder, loc, bufferType, buffer, first.getReductionAttr(),
      first.getAxesAttr(), first.getMeshAttr(), /*from=*/nullptr,
      /*to=*/nullptr);
  int64_t offset = 0;
  for (auto [member, count] : llvm::zip_equal(bucket.members, counts)) {
    Value piece = nn::SliceOp::create(
        builder, member.getLoc(), RankedTensorType::get({count}, element),
        reduced, builder.getDenseI64ArrayAttr({offset}),
        builder.getDenseI64ArrayAttr({count}),
        builder.getDenseI64ArrayAttr({1}));
    offset += count;
    Value shaped = nn::ReshapeOp::create(builder, member.getLoc(),
                                         member.getType(), piece);
    member.getResult().replaceAllUsesWith(shaped);
    member.erase();
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
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      // Issue every bucket whose result this op needs.
      for (Value operand : op.getOperands()) {
        auto it = pending.find(operand);
        if (it == pending.end())
          continue;
        Bucket &bucket = open[it->second];
        for (hspmd::AllReduceOp member : bucket.members)
          pending.erase(member.getResult());
        numBuckets += issue(bucket, &op);
      }
      auto allReduce = dyn_cast<hspmd::AllReduceOp>(&op);
      if (!allReduce || allReduce.getFrom())
        continue;
      int64_t bytes = getByteSize(allReduce.getType());
      if (bytes < 0)
        continue;
      BucketKey key = getKey(allReduce);
      Bucket &bucket = open[key];
      if (!bucket.members.empty() && bucket.bytes + bytes > bucketBytes) {
        for (hspmd::AllReduceOp member : bucket.members)
          pending.erase(member.getResult());
        numBuckets += issue(bucket, &op);
      }
      bucket.members.push_back(allReduce);
      bucket.bytes += bytes;
      pending[allReduce.getResult()] = key;
    }
    Operation *end = func.getBody().front().getTerminator();
    // Buckets nobody reads (dead results) still go before the return.
    for (auto &[key, bucket] : open)
      numBuckets += issue(bucket, end);
  }
};

} // namespace
