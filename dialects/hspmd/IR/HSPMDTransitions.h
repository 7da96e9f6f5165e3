//===- HSPMDTransitions.h - Collectives as layout transitions --*- C++ -*-===//
//
// What a collective does to a tensor's layout, read on the group's mesh:
// every collective over mesh axes A changes the roles of the axes in A and
// keeps the others. Its local-view semantics (concatenate / cut blocks in
// sub-group rank order, the rank being the mixed-radix number of the digits
// of A) fix which changes it can make:
//
//   all_reduce(k) over A          P(k) -> D on A
//   reduce_scatter(k) dim d       P(k) -> S(d) on A
//   all_gather dim d              S(d) -> D on A
//   local_slice dim d             D -> S(d) on A
//   make_partial [dim d]          S(d) (or D without dim) -> P(sum) on A
//   all_to_all split s concat c   S(c) -> S(s) on A
//   permute perm                  the role of axis A[i] moves to A[perm[i]]
//
// A split of dimension d by several mesh axes numbers its blocks by the
// mixed radix of their digits in mesh order, so cutting a device's block
// further, or concatenating the blocks of a sub-group, is only a change of
// layout when the axes in A come after every other axis that splits d (the
// gathered blocks are contiguous, the cut blocks nest). A permute must keep
// the mesh order of the axes that split one dimension (and of the partial
// axes), or the blocks would be renumbered.
//
// The verifier of the global-view collectives and the reshard planner both
// ask this header, so what the planner emits is what the verifier accepts.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSITIONS_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSITIONS_H

#include "dialects/hspmd/IR/HSPMDMesh.h"

#include "mlir/IR/Operation.h"

#include <string>

namespace loom::hspmd {

enum class CollectiveKind {
  AllReduce,
  ReduceScatter,
  AllGather,
  LocalSlice,
  MakePartial,
  AllToAll,
  Permute
};

/// `all_reduce`, `reduce_scatter`, ... (the op mnemonics).
llvm::StringRef getCollectiveName(CollectiveKind kind);

/// One collective, independent of the IR: its kind, the mesh axes it runs
/// over (strictly increasing) and its attributes.
struct CollectiveStep {
  CollectiveKind kind = CollectiveKind::AllReduce;
  llvm::SmallVector<int64_t> axes;
  /// all_gather, local_slice, reduce_scatter, make_partial: the dimension
  /// (make_partial: -1 from a duplicate); all_to_all: the split dimension.
  int64_t dim = -1;
  /// all_to_all: the concat dimension.
  int64_t concatDim = -1;
  /// all_reduce, reduce_scatter.
  ReductionKind reduction = ReductionKind::Sum;
  /// permute: one entry per axis in `axes`.
  llvm::SmallVector<int64_t> perm;

  /// `all_gather dim 0 over [1]`.
  std::string str() const;
};

/// The step an hspmd collective op performs; failure for other ops.
mlir::FailureOr<CollectiveStep> getCollectiveStep(mlir::Operation *op);

/// The layout that `step` makes of `from` on `mesh`, or failure with `why`
/// saying which axis does not fit (e.g. "mesh axis 1 is D, not S0").
mlir::FailureOr<MeshLayout> applyCollective(const CollectiveStep &step,
                                            const MeshLayout &from,
                                            const Mesh &mesh,
                                            std::string &why);

/// The bytes one rank sends in `step` when its buffer has `bytes` bytes of
/// `elementBytes`-byte elements (the simulator's accounting, see
/// runtime/simulator/Simulator.h), for the rank at position `rank` of its
/// sub-group:
///   all_gather (k-1)B; reduce_scatter, all_to_all (B/k)(k-1);
///   all_reduce B - c_r + (k-1) c_r with c_r the bytes of chunk r of the
///   flattened buffer cut into k near-equal chunks (the first n mod k one
///   element longer); permute B unless the rank keeps its buffer (in the
///   planner's cost: B); local_slice, make_partial 0.
int64_t getStepBytesSent(const CollectiveStep &step, const Mesh &mesh,
                         int64_t bytes, int64_t elementBytes, int64_t rank);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSITIONS_H
