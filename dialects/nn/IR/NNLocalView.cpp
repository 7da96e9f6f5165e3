//===- NNLocalView.cpp - Local forms of position-dependent nn ops ---------===//
//
// LocalViewOpInterface for the nn ops whose local op must know where its
// part sits in the global tensors. Each method works on the local clone
// and asks the view for block starts; the view (one per partitioning pass)
// decides how a start is built. See LocalViewOpInterface.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace loom;
using namespace loom::nn;

namespace {

/// Makes `offset` (a 0-d i64 operand, possibly absent) count from the
/// global start of the local block along `dim` of the op's result (operand)
/// `index`, after what it counted from before. The old value (a group's
/// constant start folded into a block start) is noted for the pass to
/// erase once nothing uses it.
LogicalResult shiftOffset(OpBuilder &builder, LocalView &view, bool isResult,
                          unsigned index, int64_t dim,
                          MutableOperandRange offset) {
  Value old = offset.empty() ? Value() : offset[0].get();
  FailureOr<Value> start =
      isResult ? view.getResultStart(builder, index, dim, old)
               : view.getOperandStart(builder, index, dim, old);
  if (failed(start))
    return failure();
  if (*start == old)
    return success();
  offset.assign(*start);
  view.noteReplaced(old);
  return success();
}

/// Positions of queries split along the sequence (context parallelism):
/// masked attention without explicit positions gets an iota from the block's
/// start, so the local queries sit at their global positions among the
/// (whole) keys.
LogicalResult addQueryPositions(OpBuilder &builder, LocalView &view,
                                OpOperand &query, MaskKind mask,
                                MutableOperandRange positions) {
  if (mask == MaskKind::None || !positions.empty())
    return success();
  FailureOr<Value> start =
      view.getOperandStart(builder, query.getOperandNumber(), 1);
  if (failed(start) || !*start)
    return failure(failed(start));
  auto type = cast<RankedTensorType>(query.get().getType());
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(view.getLocalOp());
  Value iota = IotaOp::create(
      builder, view.getLocalOp()->getLoc(),
      RankedTensorType::get({type.getDimSize(0), type.getDimSize(1)},
                            builder.getI64Type()),
      *start, builder.getI64IntegerAttr(1));
  positions.assign(iota);
  return success();
}

} // namespace

/// An iota along a split dimension counts from its block's global start
/// (after its own offset).
LogicalResult IotaOp::localize(OpBuilder &builder, LocalView &view) {
  return shiftOffset(builder, view, /*isResult=*/true, 0,
                     static_cast<int64_t>(getDim()), getOffsetMutable());
}

/// A split dropout draws the mask of its block's global elements: the
/// local op gets every dimension's block start and the global shape.
LogicalResult DropoutOp::localize(OpBuilder &builder, LocalView &view) {
  if (!view.isOperandSplit(0))
    return success();
  auto globalType =
      cast<RankedTensorType>(view.getGlobalOp()->getOperand(0).getType());
  int64_t rank = globalType.getRank();
  if (!globalType.hasStaticShape() && !getGlobalShape())
    return view.emitError("its input is split and has a dynamic shape: the "
                          "mask's global indices need the global shape");
  SmallVector<Value> starts;
  Value zero;
  for (int64_t d = 0; d < rank; ++d) {
    Value existing = getStarts().empty() ? Value() : getStarts()[d];
    FailureOr<Value> start = view.getOperandStart(builder, 0, d, existing);
    if (failed(start))
      return failure();
    if (!*start) {
      if (!zero) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPoint(*this);
        zero = arith::ConstantOp::create(
            builder, getLoc(),
            DenseIntElementsAttr::get(
                RankedTensorType::get({}, builder.getI64Type()),
                ArrayRef<int64_t>{0}));
      }
      *start = zero;
    }
    starts.push_back(*start);
  }
  for (Value value : getStarts())
    view.noteReplaced(value);
  getStartsMutable().assign(starts);
  if (!getGlobalShape())
    setGlobalShape(globalType.getShape());
  return success();
}

/// A table split along the vocabulary: the local lookup reads the ids in
/// its block's rows (shifted by the block's start) and zeros for the
/// others; the partial results sum to the lookup.
LogicalResult EmbeddingOp::localize(OpBuilder &builder, LocalView &view) {
  return shiftOffset(builder, view, /*isResult=*/false,
                     getTableMutable().getOperandNumber(), 0,
                     getOffsetMutable());
}

/// A scatter-add into a result split along the scattered dimension (the
/// gradient of a vocabulary-split table): the local op adds the indices
/// that fall in its block, shifted by the block's start.
LogicalResult GatherGradOp::localize(OpBuilder &builder, LocalView &view) {
  return shiftOffset(builder, view, /*isResult=*/true, 0,
                     static_cast<int64_t>(getDim()), getOffsetMutable());
}

LogicalResult AttentionOp::localize(OpBuilder &builder, LocalView &view) {
  return addQueryPositions(builder, view, getQueryMutable(), getMask(),
                           getPositionsMutable());
}

LogicalResult AttentionGradOp::localize(OpBuilder &builder, LocalView &view) {
  return addQueryPositions(builder, view, getQueryMutable(), getMask(),
                           getPositionsMutable());
}

/// A mean over split dimensions: the local mean divided the local sum by
/// the local count; scaled by local / global count, the contributions add
/// up to the global mean (over unequal shares too: never an average of
/// averages).
LogicalResult ReduceOp::localize(OpBuilder &builder, LocalView &view) {
  if (getKind() != ReduceKind::Mean)
    return success();
  double share = view.getOperandShare(0, getDims());
  if (share == 1.0)
    return success();
  auto type = cast<RankedTensorType>(getType());
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value factor = FillOp::create(builder, getLoc(), scalar,
                                builder.getF64FloatAttr(share));
  Value scaled = MulOp::create(builder, getLoc(), type, getResult(), factor);
  view.replaceResult(0, scaled);
  return success();
}

/// A dimension the slice takes whole (its factor rule's parallel ones) may
/// be split: the local slice takes the local block whole.
LogicalResult SliceOp::localize(OpBuilder &builder, LocalView &view) {
  auto global = cast<SliceOp>(view.getGlobalOp());
  auto input = cast<RankedTensorType>(global.getInput().getType());
  auto localInput = cast<RankedTensorType>(getInput().getType());
  SmallVector<int64_t> sizes(getSizes());
  bool changed = false;
  for (int64_t dim = 0; dim < input.getRank(); ++dim) {
    bool whole = global.getOffsets()[dim] == 0 &&
                 global.getStrides()[dim] == 1 &&
                 global.getSizes()[dim] == input.getDimSize(dim);
    if (whole && sizes[dim] != localInput.getDimSize(dim)) {
      sizes[dim] = localInput.getDimSize(dim);
      changed = true;
    }
  }
  if (changed)
    setSizes(sizes);
  return success();
}

/// A grouped matmul (or its weight gradient) with blocks, split along them:
/// the local op has the local blocks, each with its own experts and rows
/// (the block factor is the only one of the experts' dimension that may be
/// split; nn.moe_route ... blocks = B).
static LogicalResult localizeBlocks(Operation *local, Operation *global,
                                    int64_t localExperts, int64_t globalExperts,
                                    uint64_t blocks) {
  if (blocks <= 1)
    return success();
  // (The factor rule splits the blocks only where the sizes are static; a
  // dynamic one here would leave the local op with the global blocks.)
  if (ShapedType::isDynamic(localExperts) ||
      ShapedType::isDynamic(globalExperts))
    return global->emitOpError()
           << "with blocks = " << blocks
           << " needs a static number of experts to localize";
  if (localExperts == globalExperts)
    return success();
  int64_t perBlock = globalExperts / static_cast<int64_t>(blocks);
  if (perBlock < 1 || localExperts % perBlock != 0)
    return global->emitOpError()
           << "holds " << localExperts << " of " << globalExperts
           << " experts locally, not whole blocks of " << perBlock;
  local->setAttr("blocks", Builder(local->getContext())
                               .getI64IntegerAttr(localExperts / perBlock));
  return success();
}

LogicalResult GroupedMatmulOp::localize(OpBuilder &, LocalView &view) {
  auto global = cast<GroupedMatmulOp>(view.getGlobalOp());
  return localizeBlocks(
      *this, global,
      cast<RankedTensorType>(getWeight().getType()).getDimSize(0),
      cast<RankedTensorType>(global.getWeight().getType()).getDimSize(0),
      global.getBlocks());
}

LogicalResult GroupedMatmulGradOp::localize(OpBuilder &, LocalView &view) {
  auto global = cast<GroupedMatmulGradOp>(view.getGlobalOp());
  return localizeBlocks(
      *this, global, cast<RankedTensorType>(getType()).getDimSize(0),
      cast<RankedTensorType>(global.getType()).getDimSize(0),
      global.getBlocks());
}
