//===- ReshardPlanner.h - A reshard as a chain of collectives --*- C++ -*-===//
//
// Plans the collectives that turn one layout of a device group into another
// (hspmd-lower-reshards and its numeric tests use it). Both layouts are
// read on their common mesh; the plan is a cheapest path through the mesh
// layouts that have a #hspmd.states spelling and fit the tensor, where a
// step is one collective over one or several mesh axes (HSPMDTransitions.h)
// and costs the bytes a rank sends (the simulator's accounting), ties going
// to fewer steps. Rules on top of what the collectives can do:
//
// * a pending reduction is only ever reduced (all_reduce, reduce_scatter),
//   never moved (no permute or all_to_all touches a partial axis) and never
//   created: a target with a partial axis the source lacks has no plan;
// * meshes of more than 5 axes try contiguous runs of axes and exchanges
//   of two axes only, and the search gives up (an error) after 20000
//   layouts, so large groups stay cheap to plan;
// * steps over several mesh axes at once are candidates like any other, so
//   equal changes on several axes become one op whenever that is no dearer
//   (it saves a step; for all-reduce it also sends less).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_RESHARDPLANNER_H
#define LOOM_PASSES_RESHARDPLANNER_H

#include "dialects/hspmd/IR/HSPMDTransitions.h"

#include <string>

namespace loom {

struct ReshardPlan {
  /// The common mesh of the two layouts.
  hspmd::Mesh mesh;
  /// The collectives, in order.
  llvm::SmallVector<hspmd::CollectiveStep> steps;
  /// layouts[0] is the source, layouts[i + 1] the layout after steps[i].
  llvm::SmallVector<hspmd::MeshLayout> layouts;
  /// The planner's cost: bytes sent by rank 0 (a permute counts its whole
  /// buffer).
  int64_t bytes = 0;
};

/// The plan from `from` to `to` (states of one group) for a tensor of
/// static `shape` with `elementBytes`-byte elements, or failure with `why`
/// (no common mesh, a partial the source lacks, nothing reaches the target).
mlir::FailureOr<ReshardPlan> planReshard(hspmd::DistStatesAttr from,
                                         hspmd::DistStatesAttr to,
                                         llvm::ArrayRef<int64_t> shape,
                                         int64_t elementBytes,
                                         std::string &why);

/// The bytes of the block one device holds under `layout` on `mesh`.
int64_t getLocalBytes(const hspmd::MeshLayout &layout, const hspmd::Mesh &mesh,
                      llvm::ArrayRef<int64_t> shape, int64_t elementBytes);

} // namespace loom

#endif // LOOM_PASSES_RESHARDPLANNER_H
