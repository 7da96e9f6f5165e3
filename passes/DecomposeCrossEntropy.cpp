//===- DecomposeCrossEntropy.cpp - Cross-entropy as primitive ops ---------===//
//
// Rewrites nn.cross_entropy and nn.cross_entropy_grad into the reductions
// and element-wise ops they are made of, so that layout propagation can
// split the classes: a vocabulary-parallel loss then moves three [tokens]
// all-reduces (the max, the sum of exponentials and the label's logit),
// not the logits. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <numeric>

namespace loom {
#define GEN_PASS_DEF_DECOMPOSECROSSENTROPYPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::nn;

namespace {

/// The pieces both the loss and its gradient are made of, for logits
/// `[..., C]` and labels `[...]`. Built identically for the two ops, so CSE
/// merges what a training step computes twice.
struct SoftmaxParts {
  /// `[..., 1]`: the row maximum and the sum of exp(logits - max).
  Value max, sumExp;
  /// `[..., C]`: logits - max, exp of it, and whether the class is the
  /// label (i1).
  Value shifted, exps, isLabel;
};

class Decomposer {
public:
  Decomposer(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  SoftmaxParts parts(Value logits, Value labels) {
    auto logitsType = cast<RankedTensorType>(logits.getType());
    auto labelsType = cast<RankedTensorType>(labels.getType());
    int64_t last = logitsType.getRank() - 1;
    SoftmaxParts p;
    p.max = reduce(ReduceKind::Max, logits, {last});
    p.shifted = SubOp::create(b, loc, logits, p.max);
    p.exps = ExpOp::create(b, loc, p.shifted);
    p.sumExp = reduce(ReduceKind::Sum, p.exps, {last});
    // Class ids along the last dimension against each token's label: on a
    // split vocabulary the iota counts from the block's start.
    auto classesType = RankedTensorType::get(logitsType.getShape(),
                                             labelsType.getElementType());
    Value classes = IotaOp::create(b, loc, classesType, Value(),
                                   static_cast<uint64_t>(last));
    SmallVector<int64_t> column(labelsType.getShape());
    column.push_back(1);
    Value label = ReshapeOp::create(
        b, loc, RankedTensorType::get(column, labelsType.getElementType()),
        labels);
    p.isLabel = CompareOp::create(b, loc, ComparePredicate::EQ, classes, label);
    return p;
  }

  Value reduce(ReduceKind kind, Value x, ArrayRef<int64_t> dims,
               bool keepDims = true) {
    return ReduceOp::create(b, loc, ReduceKindAttr::get(b.getContext(), kind),
                            x, b.getDenseI64ArrayAttr(dims),
                            keepDims ? b.getUnitAttr() : UnitAttr());
  }
  /// `x * weights`, with exact zeros where a weight is zero whatever `x`
  /// holds there (a padding token's logits may be anything, -inf
  /// included: it contributes nothing, as in the fused ops).
  Value weigh(Value x, Value weights) {
    Type element = getElementTypeOrSelf(weights.getType());
    Value zero = scalar(element, 0.0);
    Value ignored =
        CompareOp::create(b, loc, ComparePredicate::EQ, weights, zero);
    Value weighted = MulOp::create(b, loc, x, weights);
    return SelectOp::create(b, loc, ignored, zero, weighted);
  }
  Value scalar(Type elementType, double value) {
    return FillOp::create(b, loc, RankedTensorType::get({}, elementType),
                          b.getF64FloatAttr(value));
  }
  /// The normaliser: the operand, or a 0-d fill of the attribute.
  Value normalizer(Value operand, FloatAttr attr, Type elementType) {
    if (operand)
      return operand;
    return scalar(elementType, attr ? attr.getValueAsDouble() : 1.0);
  }

  OpBuilder &b;
  Location loc;
};

/// loss = sum over tokens of w * (log(sumExp) + max - logit[label]) / N,
/// written as log(sumExp) - (logits - max)[label] per token.
void decompose(CrossEntropyOp op) {
  OpBuilder builder(op);
  Decomposer d(builder, op.getLoc());
  auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
  Type element = logitsType.getElementType();
  int64_t last = logitsType.getRank() - 1;
  SoftmaxParts p = d.parts(op.getLogits(), op.getLabels());
  Value logSum = LogOp::create(builder, op.getLoc(), p.sumExp);
  Value picked = SelectOp::create(builder, op.getLoc(), p.isLabel, p.shifted,
                                  d.scalar(element, 0.0));
  Value labelLogit = d.reduce(ReduceKind::Sum, picked, {last});
  Value tokenLoss = SubOp::create(builder, op.getLoc(), logSum, labelLogit);
  auto labelsType = cast<RankedTensorType>(op.getLabels().getType());
  tokenLoss = ReshapeOp::create(
      builder, op.getLoc(),
      RankedTensorType::get(labelsType.getShape(), element), tokenLoss);
  if (Value weights = op.getWeights())
    tokenLoss = d.weigh(tokenLoss, weights);
  Value total = tokenLoss;
  if (labelsType.getRank() > 0) {
    SmallVector<int64_t> all(labelsType.getRank());
    std::iota(all.begin(), all.end(), 0);
    total = d.reduce(ReduceKind::Sum, tokenLoss, all, /*keepDims=*/false);
  }
  Value loss = DivOp::create(
      builder, op.getLoc(), total,
      d.normalizer(op.getNormalizerValue(), op.getNormalizerAttr(), element));
  op.getResult().replaceAllUsesWith(loss);
  op.erase();
}

/// dlogits = (exps / sumExp - onehot(label)) * dy / N (* w per token).
void decompose(CrossEntropyGradOp op) {
  OpBuilder builder(op);
  Decomposer d(builder, op.getLoc());
  auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
  Type element = logitsType.getElementType();
  SoftmaxParts p = d.parts(op.getLogits(), op.getLabels());
  Value probs = DivOp::create(builder, op.getLoc(), p.exps, p.sumExp);
  Value onehot =
      SelectOp::create(builder, op.getLoc(), p.isLabel, d.scalar(element, 1.0),
                       d.scalar(element, 0.0));
  Value diff = SubOp::create(builder, op.getLoc(), probs, onehot);
  Value scale = DivOp::create(
      builder, op.getLoc(), op.getGrad(),
      d.normalizer(op.getNormalizerValue(), op.getNormalizerAttr(), element));
  Value grad = MulOp::create(builder, op.getLoc(), diff, scale);
  if (Value weights = op.getWeights()) {
    auto weightsType = cast<RankedTensorType>(weights.getType());
    SmallVector<int64_t> column(weightsType.getShape());
    column.push_back(1);
    Value perToken = ReshapeOp::create(
        builder, op.getLoc(), RankedTensorType::get(column, element), weights);
    grad = d.weigh(grad, perToken);
  }
  op.getResult().replaceAllUsesWith(grad);
  op.erase();
}

struct DecomposeCrossEntropyPass
    : loom::impl::DecomposeCrossEntropyPassBase<DecomposeCrossEntropyPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (!cast<RankedTensorType>(
               op->getOperand(isa<CrossEntropyOp>(op) ? 0 : 1).getType())
               .hasStaticShape()) {
        op->emitError("has dynamic shapes; the decomposition needs static "
                      "ones (its iota and reshapes)");
        return signalPassFailure();
      }
      if (auto loss = dyn_cast<CrossEntropyOp>(op))
        decompose(loss);
      else
        decompose(cast<CrossEntropyGradOp>(op));
      ++numDecomposed;
    }
  }
};

} // namespace
