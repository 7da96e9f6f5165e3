//===- AttentionMask.h - Mask operands of the attention kernels -*- C++ -*-===//
//
// nn.attention and nn.attention_grad share their mask semantics (none,
// causal, tree with subtree ends; optional query positions) and scale; both
// kernels check and read them through this header.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_ATTENTIONMASK_H
#define LOOM_RUNTIME_INTERPRETER_ATTENTIONMASK_H

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>

namespace loom::interp {

/// The checked mask operands and scale of one attention op.
struct AttentionMask {
  nn::MaskKind kind = nn::MaskKind::None;
  const Tensor *subtreeEnd = nullptr;
  const Tensor *positions = nullptr;
  int64_t seqQ = 0, seqK = 0;
  double scale = 1.0;

  /// The key index query `i` of batch `b` sits at.
  int64_t positionOf(int64_t b, int64_t i) const {
    return positions ? readIndex(*positions, b * seqQ + i) : i;
  }
  /// Whether key `j` of batch `b` is visible to a query at key index `p`.
  bool sees(int64_t b, int64_t j, int64_t p) const {
    switch (kind) {
    case nn::MaskKind::None:
      return true;
    case nn::MaskKind::Causal:
      return j <= p;
    case nn::MaskKind::Tree:
      return j <= p && p <= readIndex(*subtreeEnd, b * seqK + j);
    }
    return false;
  }
};

/// Reads and checks the mask operands of `op` (nn.attention or
/// nn.attention_grad) for the given sizes; reports problems on `call`.
template <typename OpT>
mlir::FailureOr<AttentionMask>
getAttentionMask(const KernelCall &call, OpT op, int64_t batch, int64_t seqQ,
                 int64_t seqK, int64_t headDim) {
  AttentionMask mask;
  mask.kind = op.getMask();
  mask.seqQ = seqQ;
  mask.seqK = seqK;
  if (op.getSubtreeEnd())
    mask.subtreeEnd = call.operandFor(op.getSubtreeEnd());
  if (op.getPositions())
    mask.positions = call.operandFor(op.getPositions());
  if ((mask.kind == nn::MaskKind::Tree) != (mask.subtreeEnd != nullptr))
    return call.emitError() << "subtree_end must be given exactly for a tree "
                               "mask";
  if (mask.subtreeEnd &&
      (failed(checkIndexTensor(call, *mask.subtreeEnd, "subtree_end")) ||
       failed(checkShape(call, "subtree_end", mask.subtreeEnd->getShape(),
                         {batch, seqK}, "[batch, seq_k]"))))
    return mlir::failure();
  if (mask.positions &&
      (failed(checkIndexTensor(call, *mask.positions, "positions")) ||
       failed(checkShape(call, "positions", mask.positions->getShape(),
                         {batch, seqQ}, "[batch, seq_q]"))))
    return mlir::failure();
  if (mask.kind != nn::MaskKind::None && !mask.positions && seqQ != seqK)
    return call.emitError() << "a masked attention without positions needs "
                               "seq_q == seq_k, got "
                            << seqQ << " and " << seqK;
  mask.scale = op.getScale() ? op.getScale()->convertToDouble()
                             : 1.0 / std::sqrt(static_cast<double>(headDim));
  return mask;
}

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_ATTENTIONMASK_H
