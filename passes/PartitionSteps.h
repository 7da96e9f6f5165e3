//===- PartitionSteps.h - Steps the partitioning passes share ---*- C++ -*-===//
//
// Internal to passes/: the steps of hspmd-propagate-layouts and
// hspmd-specialize that one pass file calls in another. Each pass file
// keeps its own pass; what passes share otherwise is the partitioning
// library (passes/Partitioning/).
//
// hspmd-propagate-layouts has two levels. Inside one device group
// (LayoutPropagation.cpp) it assigns every tensor a role per mesh axis
// through the ops' factor rules. A function whose layouts span several
// groups (GroupPartition.cpp) is first laid out across the groups, the
// union's relation read as one outer axis, then partitioned into one
// function per group, each laid out inside its group; where the relation
// across groups changes, `hspmd.exchange` moves the data. A function whose
// layouts lie on different groups, one per tensor, is split into pipeline
// stages (StagePartition.cpp). After specialisation, the programs of
// stages on overlapping groups are merged per device (DeviceMerge.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PARTITIONSTEPS_H
#define LOOM_PASSES_PARTITIONSTEPS_H

#include "passes/Partitioning/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace loom {

/// Lays out `func`, whose layouts all lie on one device group, and writes
/// the layout attributes, choosing by `model`. `skipped` is set when it has
/// no layouts (LayoutPropagation.cpp). With `uneven`, propagation may cut
/// factors into blocks of unequal size (balanced, or in the proportions of
/// a user's explicit blocks); the parts of functions partitioned across
/// groups or stages, and the virtual layout across groups, are laid out
/// with even splits only (their specialisation takes no uneven blocks).
mlir::LogicalResult propagateWithinGroup(
    mlir::func::FuncOp func, bool &skipped, int64_t &numReshards,
    const PropagationCostModel &model = PropagationCostModel::getDefault(),
    bool uneven = false);

/// Whether `func`'s layouts (annotations, reshards, arguments, results)
/// span several device groups: a union of several groups, or one-group
/// layouts on different groups (pipeline stages) (GroupPartition.cpp).
bool hasLayoutsAcrossGroups(mlir::func::FuncOp func);

/// Lays `func` out across its groups, adds one function per group after it
/// (laid out inside the group by `model`) and marks `func` as partitioned.
/// Returns failure after a diagnostic; `numParts` counts the functions
/// added (GroupPartition.cpp; pipeline stages go to partitionIntoStages).
mlir::LogicalResult partitionAcrossGroups(
    mlir::func::FuncOp func, int64_t &numParts, int64_t &numReshards,
    const PropagationCostModel &model = PropagationCostModel::getDefault());

/// Partitions `func`, whose layouts lie on different device groups (one per
/// pipeline stage), into one function per group (StagePartition.cpp).
mlir::LogicalResult partitionIntoStages(
    mlir::func::FuncOp func, int64_t &numParts, int64_t &numReshards,
    const PropagationCostModel &model = PropagationCostModel::getDefault());

/// After specialisation: merges the programs `locals` (one per group, in
/// part order) of `original`'s pipeline stages per device where the groups
/// overlap (DeviceMerge.cpp): every cell of devices that belong to the same
/// groups gets one program `@<original>_cell<k>`, and `locals` are erased.
/// Where the groups are disjoint, `locals` stay (their merge tags are
/// dropped).
mlir::LogicalResult
mergeOverlappingGroups(mlir::func::FuncOp original,
                       llvm::ArrayRef<mlir::func::FuncOp> locals);

} // namespace loom

#endif // LOOM_PASSES_PARTITIONSTEPS_H
