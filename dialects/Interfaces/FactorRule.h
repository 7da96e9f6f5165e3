//===- FactorRule.h - How layouts flow through an op -----------*- C++ -*-===//
//
// A factor rule describes an op's iteration space as a list of factors and
// says, for every dimension of every operand and result, which factors it is
// made of. Layout propagation reasons about factors, not dimensions: a split
// of an operand dimension is a split of its (major) factor, and the factor
// carries the split to every other tensor that has it. What a split of a
// factor means depends on its kind:
//
//   parallel     the factor appears in the results; splitting it splits
//                every tensor that has it, with no communication. Operands
//                without it (broadcast) are duplicated along the split.
//   reduction    the factor is summed over in (some) results (a
//                contraction, a sum over a dimension); splitting it splits
//                the tensors that have it and leaves every result without
//                it a partial value, pending a reduction of the factor's
//                kind. (`nn.attention_grad`: the query sequence is a
//                dimension of dquery but summed over in dkey and dvalue.)
//   replicated   the factor must not be split (a softmax or norm axis, the
//                key sequence of attention): tensors with it are gathered
//                along it before the op.
//
// Example: `nn.matmul` of [8, 16] x [16, 4] has factors i (8, parallel),
// k (16, reduction sum), j (4, parallel); operand 0 is [[i], [k]], operand 1
// [[k], [j]], the result [[i], [j]]. `nn.reshape` [8, 32] -> [8, 4, 8] has
// factors a (8), h (4), d (8), all parallel: the operand is [[a], [h, d]]
// (dimension 1 is h major, d minor), the result [[a], [h], [d]].
//
// A rule may also say in which operands the op is linear (`addLinearGroup`):
// a partial sum then passes through it. `nn.add` is linear in its two
// operands jointly (a partial plus a partial is a partial of the sum),
// `nn.matmul` in each operand separately (a partial times a whole is a
// partial), `nn.reshape` in its operand. Propagation uses this to keep a
// value partial until something non-linear needs it whole, so partials
// that meet are reduced once (Megatron's backward: the input gradients of
// the Q, K and V projections are added before their one all-reduce).
//
// The rule is dialect-neutral (no hspmd types): propagation maps the
// partial kinds to hspmd reductions.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_INTERFACES_FACTORRULE_H
#define LOOM_DIALECTS_INTERFACES_FACTORRULE_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace loom {

enum class FactorKind : uint8_t { Parallel, Reduction, Replicated };

/// The reduction a split reduction factor leaves pending in the results.
enum class PartialKind : uint8_t { Sum, Max, Min };

struct Factor {
  /// The factor's extent; mlir::ShapedType::kDynamic when unknown.
  int64_t size = 1;
  FactorKind kind = FactorKind::Parallel;
  /// For reduction factors: how the partial results combine.
  PartialKind partial = PartialKind::Sum;
};

/// The factors of one dimension, major first: the dimension's size is their
/// product. Empty: no factor maps to the dimension (a broadcast dimension of
/// size 1); such a dimension is never split.
using DimFactors = llvm::SmallVector<int64_t, 2>;
/// The factors of every dimension of one tensor.
using TensorFactors = llvm::SmallVector<DimFactors, 4>;

class FactorRule {
public:
  /// Adds a factor and returns its index.
  int64_t addFactor(int64_t size, FactorKind kind,
                    PartialKind partial = PartialKind::Sum);
  /// Describes the next operand / result (call once per operand and per
  /// result, in order; non-tensor operands get an empty TensorFactors).
  void addOperand(TensorFactors dims) { operands.push_back(std::move(dims)); }
  void addResult(TensorFactors dims) { results.push_back(std::move(dims)); }

  /// Declares that the op is linear in `operands` jointly, the other
  /// operands held fixed: with each of them a partial sum (every device
  /// holding a term) and every other tensor operand whole, the op applied
  /// on each device gives terms that sum to the results. Only ops without
  /// constant terms qualify (`x + 1` is not linear in x).
  void addLinearGroup(llvm::ArrayRef<unsigned> group) {
    linearGroups.emplace_back(group.begin(), group.end());
  }
  /// Every group of operands the op is linear in, in declaration order.
  llvm::ArrayRef<llvm::SmallVector<unsigned, 2>> getLinearGroups() const {
    return linearGroups;
  }

  llvm::ArrayRef<Factor> getFactors() const { return factors; }
  const Factor &getFactor(int64_t index) const { return factors[index]; }
  llvm::ArrayRef<TensorFactors> getOperands() const { return operands; }
  llvm::ArrayRef<TensorFactors> getResults() const { return results; }

  /// Checks the rule against `op`: one entry per operand and result, one
  /// DimFactors per dimension of each ranked tensor, factor indices in
  /// range, each factor at most once per tensor, static dimension sizes
  /// equal to the product of their factors' sizes, every factor used by
  /// some tensor, reduction factors absent from some result. Reports the
  /// first problem on `op` (a bug in the op's rule, not in user input).
  mlir::LogicalResult verify(mlir::Operation *op) const;

  /// A compact spelling for tests and diagnostics, e.g.
  /// `([i, k], [k, j]) -> ([i, j]) {i = 8, j = 4, k = 16 reduction(sum)}`;
  /// a dimension of several factors prints as `h*d`, one of none as `1`,
  /// replicated factors as `k = 16 replicated`, linear groups after the
  /// factors as ` linear [0, 1]` (one per group). Factors are named i, j, k,
  /// l, ... in index order (then f14, f15, ...).
  std::string str() const;

private:
  llvm::SmallVector<Factor> factors;
  llvm::SmallVector<TensorFactors> operands;
  llvm::SmallVector<TensorFactors> results;
  llvm::SmallVector<llvm::SmallVector<unsigned, 2>> linearGroups;
};

} // namespace loom

#endif // LOOM_DIALECTS_INTERFACES_FACTORRULE_H
