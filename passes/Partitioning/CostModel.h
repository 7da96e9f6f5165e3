//===- CostModel.h - How layout propagation scores choices ------*- C++ -*-===//
//
// Layout propagation (LayoutPropagation.cpp) gives each mesh axis of an op
// one factor to split, or none, or passes partial sums through a linear
// group. Which candidate wins is the cost model's: what a tensor weighs,
// what a reshard between two roles costs, what a result left partial or
// split still owes, how two scored candidates compare, and the least
// priority a role derived onto an argument gets. The default model is the
// one docs/rationale/partitioning.md describes; a strategy or placement
// search subclasses it and passes it to propagateWithinGroup (or the
// partitioning entry points) without touching the propagation loop.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PARTITIONING_COSTMODEL_H
#define LOOM_PASSES_PARTITIONING_COSTMODEL_H

#include "dialects/hspmd/IR/HSPMDMesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Types.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace loom {

/// Where a role came from; higher wins:
///
///   User    hspmd.annotate / hspmd.reshard results, hspmd.layout arguments
///   Param   derived onto an nn.param argument
///   Data    derived onto an nn.data argument
///   Derived anything else (and what an annotation or a function result
///           asks of the value it takes, which is only a hint)
enum class PropagationPriority : uint8_t { None, Derived, Data, Param, User };
inline constexpr size_t kNumPropagationPriorities = 5;

/// How one candidate choice for one mesh axis of an op scored.
struct CandidateScore {
  /// The candidate: -1 splits no factor; 0 .. F-1 splits that factor of the
  /// op's rule (F factors); F + g passes partial sums through linear group g.
  int64_t factor = -1;
  /// The bytes each device receives for the reshards the choice makes
  /// (or leaves owed), indexed by the priority of the layout that asks for
  /// them.
  std::array<double, kNumPropagationPriorities> cost{};
  /// How many tensor layouts disagree with the choice.
  int64_t disagreements = 0;
};

/// The scores and priorities layout propagation chooses by. Every hook is
/// virtual; the default implementations are the documented model.
class PropagationCostModel {
public:
  virtual ~PropagationCostModel();

  /// The model propagation uses unless given another.
  static const PropagationCostModel &getDefault();

  /// The least priority a role derived onto argument `index` of `func`
  /// gets: Param for an `nn.param` argument, Data for an `nn.data` one,
  /// None otherwise.
  virtual PropagationPriority getArgumentFloor(mlir::func::FuncOp func,
                                               unsigned index) const;

  /// The bytes of a ranked tensor of `type` (dynamic sizes count as 1).
  virtual double getTensorBytes(mlir::Type type) const;

  /// The bytes each device receives to turn role `from` into role `to` on
  /// a mesh axis of `size` devices, for a block of `block` bytes (the
  /// tensor divided by the splits of its other mesh axes):
  ///
  ///   split -> duplicate       all-gather       block * (m - 1) / m
  ///   partial -> duplicate     all-reduce       2 * block * (m - 1) / m
  ///   partial -> split         reduce-scatter   block * (m - 1) / m
  ///   split d -> split e       all-to-all       block * (m - 1) / m^2
  ///   duplicate -> anything    local slice      0
  ///   split -> partial         zero-fill        0
  virtual double getReshardBytes(const hspmd::MeshRole &from,
                                 const hspmd::MeshRole &to, int64_t size,
                                 double block) const;

  /// What a result of role `role` (left partial by a pass-through, or
  /// split by a split the op invents) still owes further on when no
  /// consumer takes it as it is: by default making it whole (an all-reduce
  /// or an all-gather). Propagation charges what this exceeds the
  /// reshards the candidate pays for the result already.
  virtual double getOwedBytes(const hspmd::MeshRole &role, int64_t size,
                              double block) const;

  /// Whether candidate `lhs` is preferred over `rhs`. By default: the
  /// smaller cost at the highest priority (costs compared level by level,
  /// User first), then fewer disagreements, then the lower `factor`
  /// ("none", -1, before every factor, factors in index order).
  virtual bool isBetter(const CandidateScore &lhs,
                        const CandidateScore &rhs) const;
};

} // namespace loom

#endif // LOOM_PASSES_PARTITIONING_COSTMODEL_H
