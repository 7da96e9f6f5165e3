//===- NNGradients.cpp - Gradients of the nn ops --------------------------===//
//
// GradientOpInterface for every forward nn op: given the gradient of each
// result, build the gradient of each operand from nn ops. The formulas are
// exact (no approximation beyond the rounding of the ops themselves) and
// are documented on each op, in NNOps.td; the backward ops they use are in
// NNBackwardOps.td.
//
// Shapes: broadcasting ops sum an operand's gradient over the dimensions the
// operand was broadcast along. Where a dynamic size leaves open whether a
// dimension was broadcast, the op reports it instead of guessing.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/NNShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace loom;
using namespace loom::nn;
using namespace loom::nn::shapes;

namespace {

/// Builds the ops of one gradient, all at the location of the forward op.
class GradBuilder {
public:
  GradBuilder(OpBuilder &builder, Operation *op)
      : b(builder), loc(op->getLoc()) {}

  OpBuilder &builder() { return b; }
  Location location() const { return loc; }

  /// A 0-d tensor of `elementType` holding `value`; it broadcasts in every
  /// element-wise op.
  Value scalar(Type elementType, double value) {
    return FillOp::create(b, loc, RankedTensorType::get({}, elementType),
                          b.getF64FloatAttr(value));
  }
  Value scalarLike(Value like, double value) {
    return scalar(getElementTypeOrSelf(like.getType()), value);
  }

  Value add(Value l, Value r) { return AddOp::create(b, loc, l, r); }
  Value sub(Value l, Value r) { return SubOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return MulOp::create(b, loc, l, r); }
  Value div(Value l, Value r) { return DivOp::create(b, loc, l, r); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value exp(Value x) { return ExpOp::create(b, loc, x); }
  Value sin(Value x) { return SinOp::create(b, loc, x); }
  Value cos(Value x) { return CosOp::create(b, loc, x); }
  Value compare(ComparePredicate predicate, Value l, Value r) {
    return CompareOp::create(b, loc, predicate, l, r);
  }
  Value select(Value condition, Value t, Value f) {
    return SelectOp::create(b, loc, condition, t, f);
  }
  Value matmul(Value l, Value r, bool transposeLhs, bool transposeRhs) {
    return MatmulOp::create(b, loc, l, r, transposeLhs, transposeRhs);
  }
  /// The sum over `dims` (nothing to do when `dims` is empty).
  Value sum(Value x, ArrayRef<int64_t> dims, bool keepDims) {
    if (dims.empty())
      return x;
    return ReduceOp::create(b, loc,
                            ReduceKindAttr::get(b.getContext(), ReduceKind::Sum),
                            x, b.getDenseI64ArrayAttr(dims),
                            keepDims ? b.getUnitAttr() : UnitAttr());
  }
  /// `x` with the type `type` (same elements, another shape).
  Value reshape(Value x, Type type) {
    if (x.getType() == type)
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }
  /// `x` broadcast with numpy rules to `type`.
  Value broadcast(Value x, Type type) {
    if (x.getType() == type)
      return x;
    return BroadcastOp::create(b, loc, type, x, DenseI64ArrayAttr());
  }

private:
  OpBuilder &b;
  Location loc;
};

/// The type of `type` with the dimensions in `dims` set to 1 (a reduction
/// with `keep_dims`).
RankedTensorType keepDimsType(RankedTensorType type, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t dim : dims)
    shape[dim] = 1;
  return RankedTensorType::get(shape, type.getElementType());
}

/// Sums `grad`, the gradient of a broadcast result, down to `target`, the
/// type of an operand that took part in the broadcast with operands of the
/// shapes `others` (all aligned at their last dimension). Reports on `op`
/// and fails when a dynamic size leaves open whether the operand was
/// broadcast along a dimension.
FailureOr<Value> sumToShape(GradBuilder &g, Operation *op, unsigned operand,
                            Value grad, RankedTensorType target,
                            ArrayRef<ArrayRef<int64_t>> others) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  if (gradType == target)
    return grad;
  int64_t rank = gradType.getRank(), targetRank = target.getRank();
  if (targetRank > rank) {
    op->emitOpError("gradient of rank ")
        << rank << " cannot be summed to operand #" << operand
        << " of rank " << targetRank;
    return failure();
  }
  int64_t lead = rank - targetRank;
  SmallVector<int64_t> dims;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim < lead) {
      dims.push_back(dim);
      continue;
    }
    int64_t size = target.getDimSize(dim - lead);
    if (size == 1) {
      if (gradType.getDimSize(dim) != 1)
        dims.push_back(dim);
      continue;
    }
    if (!ShapedType::isDynamic(size))
      continue;
    // A dynamic size: the operand was not broadcast along this dimension if
    // no other operand is larger than 1 there.
    for (ArrayRef<int64_t> other : others) {
      int64_t otherDim = static_cast<int64_t>(other.size()) - (rank - dim);
      if (otherDim < 0 || other[otherDim] == 1)
        continue;
      op->emitOpError("cannot differentiate: operand #")
          << operand << " of type " << target << " has dynamic dimension "
          << dim - lead
          << ", so whether it was broadcast is unknown; autodiff needs static "
             "sizes where broadcasting may happen";
      return failure();
    }
  }
  return g.reshape(g.sum(grad, dims, /*keepDims=*/false), target);
}

/// The gradient of an element-wise operand: `grad` summed to the operand's
/// shape, or null when the operand carries no gradient.
FailureOr<Value> operandGrad(GradBuilder &g, Operation *op, unsigned operand,
                             Value grad) {
  Value value = op->getOperand(operand);
  if (!isDifferentiableType(value.getType()))
    return Value();
  SmallVector<ArrayRef<int64_t>> others;
  for (auto [index, other] : llvm::enumerate(op->getOperands()))
    if (index != operand)
      others.push_back(cast<RankedTensorType>(other.getType()).getShape());
  return sumToShape(g, op, operand, grad,
                    cast<RankedTensorType>(value.getType()), others);
}

/// Appends the gradients `grads` of the operands of an element-wise op, each
/// summed to its operand's shape.
LogicalResult appendOperandGrads(GradBuilder &g, Operation *op,
                                 ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &operandGrads) {
  for (auto [operand, grad] : llvm::enumerate(grads)) {
    if (!grad) {
      operandGrads.push_back(Value());
      continue;
    }
    FailureOr<Value> summed = operandGrad(g, op, operand, grad);
    if (failed(summed))
      return failure();
    operandGrads.push_back(*summed);
  }
  return success();
}

/// Appends a null gradient for every operand of `op`.
LogicalResult noGradients(Operation *op, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append(op->getNumOperands(), Value());
  return success();
}

/// Sums `grad` over its leading dimensions down to `target` (the trailing
/// shape of a normalisation's scale or bias).
Value sumLeading(GradBuilder &g, Value grad, RankedTensorType target) {
  auto type = cast<RankedTensorType>(grad.getType());
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, lead));
  return g.reshape(g.sum(grad, dims, /*keepDims=*/false), target);
}

} // namespace

//===----------------------------------------------------------------------===//
// Constants and linear algebra
//===----------------------------------------------------------------------===//

LogicalResult FillOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                     SmallVectorImpl<Value> &operandGrads) {
  return noGradients(getOperation(), operandGrads);
}

LogicalResult MatmulOp::buildGradients(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0];
  Value a = getLhs(), b = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  // With A = op(lhs), B = op(rhs): dA = dy B^T and dB = A^T dy, read back
  // into the stored layouts of lhs and rhs.
  Value da = ta ? g.matmul(b, dy, /*transposeLhs=*/tb, /*transposeRhs=*/true)
                : g.matmul(dy, b, false, /*transposeRhs=*/!tb);
  Value db = tb ? g.matmul(dy, a, /*transposeLhs=*/true, /*transposeRhs=*/ta)
                : g.matmul(a, dy, /*transposeLhs=*/!ta, false);
  // Batch dimensions broadcast; the matrix dimensions never do.
  auto batchOf = [](Value v) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(v.getType()).getShape().drop_back(2));
    shape.append({1, 1});
    return shape;
  };
  SmallVector<int64_t> aBatch = batchOf(a), bBatch = batchOf(b);
  FailureOr<Value> sa = sumToShape(g, getOperation(), 0, da,
                                   getLhs().getType(), {ArrayRef(bBatch)});
  if (failed(sa))
    return failure();
  FailureOr<Value> sb = sumToShape(g, getOperation(), 1, db,
                                   getRhs().getType(), {ArrayRef(aBatch)});
  if (failed(sb))
    return failure();
  operandGrads.append({*sa, *sb});
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise binary ops
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0];
  return appendOperandGrads(g, getOperation(), {dy, dy}, operandGrads);
}

LogicalResult SubOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0];
  FailureOr<Value> dl = operandGrad(g, getOperation(), 0, dy);
  FailureOr<Value> dr = failed(dl) ? dl : operandGrad(g, getOperation(), 1, dy);
  if (failed(dr))
    return failure();
  // Negate after summing: fewer elements.
  operandGrads.append({*dl, g.neg(*dr)});
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0];
  return appendOperandGrads(g, getOperation(),
                            {g.mul(dy, getRhs()), g.mul(dy, getLhs())},
                            operandGrads);
}

LogicalResult DivOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  // d(l / r) = dy / r for l and -(dy / r) * (l / r) for r.
  Value dyOverR = g.div(resultGrads[0], getRhs());
  Value dr = g.neg(g.mul(dyOverR, getResult()));
  return appendOperandGrads(g, getOperation(), {dyOverR, dr}, operandGrads);
}

/// minimum and maximum: `dy` goes to the operand that `lhsWins` /
/// `rhsWins` select; ties split it evenly; NaN gives none.
static LogicalResult buildMinMaxGradients(Operation *op, OpBuilder &builder,
                                          Value dy, ComparePredicate lhsWins,
                                          ComparePredicate rhsWins,
                                          SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, op);
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Value zero = g.scalarLike(dy, 0.0);
  Value half = g.mul(dy, g.scalarLike(dy, 0.5));
  Value tie = g.select(g.compare(ComparePredicate::EQ, lhs, rhs), half, zero);
  Value dl = g.select(g.compare(lhsWins, lhs, rhs), dy, tie);
  Value dr = g.select(g.compare(rhsWins, lhs, rhs), dy, tie);
  return appendOperandGrads(g, op, {dl, dr}, operandGrads);
}

LogicalResult MinimumOp::buildGradients(OpBuilder &builder,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return buildMinMaxGradients(getOperation(), builder, resultGrads[0],
                              ComparePredicate::LT, ComparePredicate::GT,
                              operandGrads);
}

LogicalResult MaximumOp::buildGradients(OpBuilder &builder,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return buildMinMaxGradients(getOperation(), builder, resultGrads[0],
                              ComparePredicate::GT, ComparePredicate::LT,
                              operandGrads);
}

//===----------------------------------------------------------------------===//
// Element-wise unary ops
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  operandGrads.push_back(g.neg(resultGrads[0]));
  return success();
}

LogicalResult ExpOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  operandGrads.push_back(g.mul(resultGrads[0], getResult()));
  return success();
}

LogicalResult LogOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  operandGrads.push_back(g.div(resultGrads[0], getInput()));
  return success();
}

LogicalResult SqrtOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0];
  operandGrads.push_back(
      g.mul(g.div(dy, getResult()), g.scalarLike(dy, 0.5)));
  return success();
}

LogicalResult RsqrtOp::buildGradients(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], y = getResult();
  // d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3.
  Value cube = g.mul(g.mul(y, y), y);
  operandGrads.push_back(g.mul(g.mul(dy, cube), g.scalarLike(dy, -0.5)));
  return success();
}

LogicalResult TanhOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], y = getResult();
  operandGrads.push_back(
      g.mul(dy, g.sub(g.scalarLike(dy, 1.0), g.mul(y, y))));
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], x = getInput();
  Value zero = g.scalarLike(dy, 0.0);
  operandGrads.push_back(
      g.select(g.compare(ComparePredicate::GT, x, zero), dy, zero));
  return success();
}

LogicalResult SiluOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], x = getInput(), y = getResult();
  Value one = g.scalarLike(dy, 1.0);
  // s = sigmoid(x); d(x s) = s + x s (1 - s) = s + y (1 - s).
  Value s = g.div(one, g.add(one, g.exp(g.neg(x))));
  operandGrads.push_back(g.mul(dy, g.add(s, g.mul(y, g.sub(one, s)))));
  return success();
}

LogicalResult SinOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  operandGrads.push_back(g.mul(resultGrads[0], g.cos(getInput())));
  return success();
}

LogicalResult CosOp::buildGradients(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  operandGrads.push_back(g.neg(g.mul(resultGrads[0], g.sin(getInput()))));
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GeluGradOp::create(builder, getLoc(), resultGrads[0],
                                            getInput(), getApproximateAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Comparison, selection, clamping, casts
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                        SmallVectorImpl<Value> &operandGrads) {
  return noGradients(getOperation(), operandGrads);
}

LogicalResult SelectOp::buildGradients(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], condition = getCondition();
  Value zero = g.scalarLike(dy, 0.0);
  return appendOperandGrads(g, getOperation(),
                            {Value(), g.select(condition, dy, zero),
                             g.select(condition, zero, dy)},
                            operandGrads);
}

LogicalResult ClampOp::buildGradients(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], x = getInput();
  auto scalarType =
      RankedTensorType::get({}, getElementTypeOrSelf(x.getType()));
  Value lo = FillOp::create(builder, getLoc(), scalarType, getMinAttr());
  Value hi = FillOp::create(builder, getLoc(), scalarType, getMaxAttr());
  Value zero = g.scalarLike(dy, 0.0);
  // Inclusive bounds; NaN fails both comparisons.
  Value inside = g.select(g.compare(ComparePredicate::LE, x, hi), dy, zero);
  operandGrads.push_back(
      g.select(g.compare(ComparePredicate::GE, x, lo), inside, zero));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Type inputType = getInput().getType();
  if (!isDifferentiableType(inputType) ||
      !isDifferentiableType(getResult().getType()))
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(
      CastOp::create(builder, getLoc(), inputType, resultGrads[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::buildGradients(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value x = getInput();
  auto inputType = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> dims = getDims();
  RankedTensorType keepType = keepDimsType(inputType, dims);
  // The result gradient with the reduced dimensions kept as 1.
  Value dy = g.reshape(resultGrads[0], keepType);
  switch (getKind()) {
  case ReduceKind::Sum:
    operandGrads.push_back(g.broadcast(dy, inputType));
    return success();
  case ReduceKind::Mean: {
    int64_t count = 1;
    for (int64_t dim : dims) {
      int64_t size = inputType.getDimSize(dim);
      std::optional<int64_t> product =
          ShapedType::isDynamic(size) ? std::nullopt
                                      : llvm::checkedMul(count, size);
      if (!product)
        return emitOpError("cannot differentiate a mean over dimension ")
               << dim << " of " << formatShape(inputType.getShape())
               << ": the number of elements averaged must be static";
      count = *product;
    }
    Value share = g.div(dy, g.scalarLike(dy, static_cast<double>(count)));
    operandGrads.push_back(g.broadcast(share, inputType));
    return success();
  }
  case ReduceKind::Max: {
    // Split dy evenly among the elements equal to the maximum.
    Value y = g.reshape(getResult(), keepType);
    Value isMax = g.compare(ComparePredicate::EQ, x, y);
    Value zero = g.scalarLike(dy, 0.0);
    Value ones = g.select(isMax, g.scalarLike(dy, 1.0), zero);
    Value count = g.sum(ones, dims, /*keepDims=*/true);
    operandGrads.push_back(g.select(isMax, g.div(dy, count), zero));
    return success();
  }
  }
  return emitOpError("has an unknown reduction kind");
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::buildGradients(OpBuilder &builder,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (!isDifferentiableType(inputType))
    return noGradients(getOperation(), operandGrads);
  GradBuilder g(builder, getOperation());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  int64_t inRank = inputType.getRank(), outRank = resultType.getRank();
  SmallVector<int64_t> mapping;
  if (std::optional<ArrayRef<int64_t>> dims = getBroadcastDims())
    mapping.assign(dims->begin(), dims->end());
  else
    mapping.append(llvm::to_vector(llvm::seq<int64_t>(outRank - inRank,
                                                      outRank)));
  // Sum over the new dimensions and over those that grew from 1.
  SmallVector<bool> summed(outRank, true);
  for (auto [inDim, outDim] : llvm::enumerate(mapping)) {
    int64_t size = inputType.getDimSize(inDim);
    int64_t outSize = resultType.getDimSize(outDim);
    if (size == 1) {
      summed[outDim] = outSize != 1;
      continue;
    }
    if (ShapedType::isDynamic(size) && outSize != 1 &&
        (ShapedType::isDynamic(outSize) || outSize != size))
      return emitOpError("cannot differentiate: operand dimension ")
             << inDim
             << " is dynamic, so whether it was broadcast is unknown; "
                "autodiff needs static sizes where broadcasting may happen";
    summed[outDim] = false;
  }
  SmallVector<int64_t> dims;
  for (int64_t dim = 0; dim < outRank; ++dim)
    if (summed[dim])
      dims.push_back(dim);
  operandGrads.push_back(
      g.reshape(g.sum(resultGrads[0], dims, /*keepDims=*/false), inputType));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &builder,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (!isDifferentiableType(getInput().getType()))
    return noGradients(getOperation(), operandGrads);
  GradBuilder g(builder, getOperation());
  operandGrads.push_back(g.reshape(resultGrads[0], getInput().getType()));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &builder,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  if (!isDifferentiableType(getInput().getType()))
    return noGradients(getOperation(), operandGrads);
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [index, dim] : llvm::enumerate(permutation))
    inverse[dim] = index;
  operandGrads.push_back(
      TransposeOp::create(builder, getLoc(), resultGrads[0], inverse));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  if (!isDifferentiableType(getInput().getType()))
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(SliceGradOp::create(builder, getLoc(),
                                             getInput().getType(),
                                             resultGrads[0], getOffsetsAttr(),
                                             getStridesAttr()));
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  int64_t dim = getDim();
  int64_t offset = 0;
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    if (!type.hasStaticShape())
      return emitOpError("cannot differentiate a concatenation of dynamic "
                         "shape: operand of type ")
             << type << " needs static sizes to slice its gradient";
    if (!isDifferentiableType(type)) {
      operandGrads.push_back(Value());
    } else {
      SmallVector<int64_t> offsets(type.getRank(), 0);
      offsets[dim] = offset;
      SmallVector<int64_t> strides(type.getRank(), 1);
      operandGrads.push_back(SliceOp::create(
          builder, getLoc(), resultGrads[0], offsets, type.getShape(), strides));
    }
    offset += type.getDimSize(dim);
  }
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (!isDifferentiableType(getInput().getType()))
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(GatherGradOp::create(builder, getLoc(),
                                              getInput().getType(),
                                              resultGrads[0], getIndices(),
                                              /*offset=*/Value(),
                                              getDimAttr()));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult IotaOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                     SmallVectorImpl<Value> &operandGrads) {
  return noGradients(getOperation(), operandGrads);
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(OpBuilder &builder,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], y = getResult();
  int64_t dim = getDim();
  Value dot = g.sum(g.mul(dy, y), {dim}, /*keepDims=*/true);
  operandGrads.push_back(g.mul(y, g.sub(dy, dot)));
  return success();
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &builder,
                                           ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], y = getResult();
  int64_t dim = getDim();
  Value total = g.sum(dy, {dim}, /*keepDims=*/true);
  operandGrads.push_back(g.sub(dy, g.mul(g.exp(y), total)));
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &builder,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], x = getInput();
  operandGrads.push_back(LayerNormGradOp::create(
      builder, getLoc(), dy, x, getScale(), getNormalizedDimsAttr(),
      getEpsilonAttr()));
  if (Value scale = getScale()) {
    Value xhat = LayerNormOp::create(builder, getLoc(), x, Value(), Value(),
                                     getNormalizedDimsAttr(), getEpsilonAttr());
    operandGrads.push_back(sumLeading(
        g, g.mul(dy, xhat), cast<RankedTensorType>(scale.getType())));
  }
  if (Value bias = getBias())
    operandGrads.push_back(
        sumLeading(g, dy, cast<RankedTensorType>(bias.getType())));
  return success();
}

LogicalResult RmsNormOp::buildGradients(OpBuilder &builder,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], x = getInput();
  operandGrads.push_back(RmsNormGradOp::create(builder, getLoc(), dy, x,
                                               getScale(),
                                               getNormalizedDimsAttr(),
                                               getEpsilonAttr()));
  if (Value scale = getScale()) {
    Value xhat = RmsNormOp::create(builder, getLoc(), x, Value(),
                                   getNormalizedDimsAttr(), getEpsilonAttr());
    operandGrads.push_back(sumLeading(
        g, g.mul(dy, xhat), cast<RankedTensorType>(scale.getType())));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Transformer building blocks
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::buildGradients(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(RopeOp::create(
      builder, getLoc(), resultGrads[0], getPositions(), getThetaAttr(),
      getInverse() ? UnitAttr() : builder.getUnitAttr()));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &builder,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(DropoutOp::create(
      builder, getLoc(), resultGrads[0].getType(), resultGrads[0], getOffset(),
      getStarts(), getRateAttr(), getSeedAttr(), getGlobalShapeAttr()));
  // None for the offset and the starts.
  operandGrads.append(getNumOperands() - 1, Value());
  return success();
}

LogicalResult EmbeddingOp::buildGradients(OpBuilder &builder,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  if (getOffset())
    return emitOpError("has no gradient with an offset (a block of a "
                       "vocabulary-split table); differentiate the global "
                       "program before specialisation");
  GradBuilder g(builder, getOperation());
  auto tableType = cast<RankedTensorType>(getTable().getType());
  auto idsType = cast<RankedTensorType>(getIds().getType());
  int64_t tokens = idsType.hasStaticShape() ? idsType.getNumElements()
                                            : ShapedType::kDynamic;
  // dtable = scatter-add of dy's rows into the rows named by ids: a
  // gather_grad along dimension 0 of [tokens, row...] with each id repeated
  // across its row (a row's dimensions kept: a split of them stays one).
  SmallVector<int64_t> rowsShape{tokens}, idShape{tokens};
  llvm::append_range(rowsShape, tableType.getShape().drop_front());
  idShape.append(tableType.getRank() - 1, 1);
  Value ids = g.reshape(
      getIds(), RankedTensorType::get(idShape, idsType.getElementType()));
  ids = g.broadcast(ids,
                    RankedTensorType::get(rowsShape, idsType.getElementType()));
  Value rows = g.reshape(
      resultGrads[0],
      RankedTensorType::get(rowsShape, tableType.getElementType()));
  auto grad = GatherGradOp::create(builder, getLoc(), tableType, rows, ids,
                                   /*offset=*/Value(),
                                   builder.getI64IntegerAttr(0));
  // A placed MoE layer's replicas' lookup passes its mark on.
  if (Attribute mark = (*this)->getAttr(NNDialect::getMoeReplicasAttrName()))
    grad->setAttr(NNDialect::getMoeReplicasAttrName(), mark);
  operandGrads.push_back(grad);
  operandGrads.push_back(Value());
  return success();
}

LogicalResult AttentionOp::buildGradients(OpBuilder &builder,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  auto grad = AttentionGradOp::create(
      builder, getLoc(), resultGrads[0], getQuery(), getKey(), getValue(),
      getSubtreeEnd(), getPositions(), getMaskAttr(), getScaleAttr());
  operandGrads.append({grad.getDquery(), grad.getDkey(), grad.getDvalue()});
  // No gradient for subtree_end and positions.
  operandGrads.append(getNumOperands() - 3, Value());
  return success();
}

LogicalResult CrossEntropyOp::buildGradients(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getOperation());
  Value dy = resultGrads[0], logits = getLogits();
  operandGrads.push_back(CrossEntropyGradOp::create(
      builder, getLoc(), dy, logits, getLabels(), getWeights(),
      getNormalizerValue(), getNormalizerAttr()));
  operandGrads.push_back(Value()); // labels
  Value normalizer = getNormalizerValue();
  if (!normalizer)
    normalizer = FillOp::create(builder, getLoc(),
                                RankedTensorType::get({}, getElementTypeOrSelf(
                                                              dy.getType())),
                                getNormalizerAttr());
  if (Value weights = getWeights()) {
    // dweights[n] = dy * l[n] / N, l[n] = -log_softmax(logits[n])[labels[n]].
    auto logitsType = cast<RankedTensorType>(logits.getType());
    auto labelsType = cast<RankedTensorType>(getLabels().getType());
    int64_t last = logitsType.getRank() - 1;
    SmallVector<int64_t> pickedShape(labelsType.getShape());
    pickedShape.push_back(1);
    Value logProbs = LogSoftmaxOp::create(builder, getLoc(), logits, last);
    Value labels = g.reshape(
        getLabels(),
        RankedTensorType::get(pickedShape, labelsType.getElementType()));
    Value picked = GatherOp::create(builder, getLoc(), logProbs, labels, last);
    Value tokenLoss = g.neg(g.reshape(
        picked, RankedTensorType::get(labelsType.getShape(),
                                      logitsType.getElementType())));
    operandGrads.push_back(g.div(g.mul(tokenLoss, dy), normalizer));
  }
  if (getNormalizerValue())
    operandGrads.push_back(
        g.neg(g.div(g.mul(dy, getResult()), normalizer)));
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult TopkOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                     SmallVectorImpl<Value> &operandGrads) {
  return noGradients(getOperation(), operandGrads);
}

LogicalResult MoeRouteOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                         SmallVectorImpl<Value> &operandGrads) {
  return noGradients(getOperation(), operandGrads);
}

LogicalResult MoePlanOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                        SmallVectorImpl<Value> &operandGrads) {
  return noGradients(getOperation(), operandGrads);
}

/// The static row count of `buffer` (dimension 0), or an error on `op`: the
/// dispatch that is the gradient of a combine or slot dot needs it.
static FailureOr<int64_t> staticRows(Operation *op, Value buffer) {
  int64_t rows = cast<RankedTensorType>(buffer.getType()).getDimSize(0);
  if (ShapedType::isDynamic(rows))
    return op->emitOpError("needs a buffer with a static number of rows to "
                           "build its gradient (a dispatch of that many rows)");
  return rows;
}

LogicalResult MoeDispatchOp::buildGradients(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(MoeCombineOp::create(builder, getLoc(), dy,
                                              getSlots(), getWeights()));
  operandGrads.push_back(Value()); // slots
  if (getWeights())
    operandGrads.push_back(
        MoeSlotDotOp::create(builder, getLoc(), dy, getInput(), getSlots()));
  return success();
}

LogicalResult MoeCombineOp::buildGradients(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  FailureOr<int64_t> rows = staticRows(getOperation(), getInput());
  if (failed(rows))
    return failure();
  operandGrads.push_back(MoeDispatchOp::create(
      builder, getLoc(), dy, getSlots(), getWeights(),
      builder.getI64IntegerAttr(*rows)));
  operandGrads.push_back(Value()); // slots
  if (getWeights())
    operandGrads.push_back(
        MoeSlotDotOp::create(builder, getLoc(), getInput(), dy, getSlots()));
  return success();
}

LogicalResult MoeSlotDotOp::buildGradients(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  FailureOr<int64_t> rows = staticRows(getOperation(), getBuffer());
  if (failed(rows))
    return failure();
  operandGrads.push_back(
      MoeDispatchOp::create(builder, getLoc(), getTokens(), getSlots(), dy,
                            builder.getI64IntegerAttr(*rows)));
  operandGrads.push_back(
      MoeCombineOp::create(builder, getLoc(), getBuffer(), getSlots(), dy));
  operandGrads.push_back(Value()); // slots
  return success();
}

LogicalResult GroupedMatmulOp::buildGradients(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  bool transposed = getTransposeRhs();
  // y_e = x_e W_e (or x_e W_e^T): dx_e = dy_e W_e^T (or dy_e W_e), and
  // dW_e = x_e^T dy_e (or dy_e^T x_e).
  // (The blocks, if any, group the gradients' rows as the input's.)
  uint64_t blocks = getBlocks();
  operandGrads.push_back(GroupedMatmulOp::create(
      builder, getLoc(), dy, getWeight(), getCounts(), !transposed, blocks));
  operandGrads.push_back(
      transposed ? GroupedMatmulGradOp::create(builder, getLoc(), dy,
                                               getInput(), getCounts(), blocks)
                 : GroupedMatmulGradOp::create(builder, getLoc(), getInput(),
                                               dy, getCounts(), blocks));
  operandGrads.push_back(Value()); // counts
  return success();
}

LogicalResult GroupedMatmulGradOp::buildGradients(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  // out_e = lhs_e^T rhs_e: dlhs_e = rhs_e dy_e^T, drhs_e = lhs_e dy_e.
  operandGrads.push_back(GroupedMatmulOp::create(builder, getLoc(), getRhs(),
                                                 dy, getCounts(),
                                                 /*transpose_rhs=*/true,
                                                 getBlocks()));
  operandGrads.push_back(GroupedMatmulOp::create(builder, getLoc(), getLhs(),
                                                 dy, getCounts(),
                                                 /*transpose_rhs=*/false,
                                                 getBlocks()));
  operandGrads.push_back(Value()); // counts
  return success();
}
