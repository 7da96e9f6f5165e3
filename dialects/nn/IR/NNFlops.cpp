//===- NNFlops.cpp - The model FLOPs of a step ----------------------------===//
//
// The analytic FLOP count behind loom-run's FLOP/s and utilisation: the
// products that dominate a training step, as utilisation figures of
// production stacks count them (PaLM's and Megatron's "model FLOPs": every
// multiply-add of a matrix product counts two; the attention's two products
// count over every query-key pair, masked or not; elementwise work, norms
// and losses count nothing).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace loom;
using namespace loom::nn;

static double numElements(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  double n = 1;
  for (int64_t size : type.getShape())
    n *= static_cast<double>(size);
  return n;
}

/// 2 * (query-key pairs) * head size per head, for one of the attention's
/// products, from query [B, S, H, D] and key [B, Sk, Hk, D].
static double attentionProduct(Value query, Value key) {
  auto q = dyn_cast<RankedTensorType>(query.getType());
  auto k = dyn_cast<RankedTensorType>(key.getType());
  if (!q || !k || q.getRank() != 4 || k.getRank() != 4 ||
      !q.hasStaticShape() || !k.hasStaticShape())
    return 0;
  return 2.0 * numElements(query) * static_cast<double>(k.getDimSize(1));
}

double loom::nn::getModelFlops(Operation *op) {
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
    if (!lhs.hasStaticShape() || lhs.getRank() < 1)
      return 0;
    int64_t contracted = matmul.getTransposeLhs()
                             ? lhs.getDimSize(lhs.getRank() - 2)
                             : lhs.getDimSize(lhs.getRank() - 1);
    return 2.0 * numElements(matmul.getResult()) *
           static_cast<double>(contracted);
  }
  // Forward: scores (Q K^T) and the weighted values (P V).
  if (auto attention = dyn_cast<AttentionOp>(op))
    return 2 * attentionProduct(attention.getQuery(), attention.getKey());
  // Backward: the gradients of both products (dP = dO V^T, dV = P^T dO,
  // dQ = dS K, dK = dS^T Q), twice the forward.
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return 4 * attentionProduct(grad.getQuery(), grad.getKey());
  return 0;
}

double loom::nn::countModelFlops(Operation *root) {
  double flops = 0;
  root->walk([&](Operation *op) { flops += getModelFlops(op); });
  return flops;
}
