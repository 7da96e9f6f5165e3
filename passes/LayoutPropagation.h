//===- LayoutPropagation.h - Layout propagation entry points ----*- C++ -*-===//
//
// hspmd-propagate-layouts has two levels. Inside one device group
// (LayoutPropagation.cpp) it assigns every tensor a role per mesh axis
// through the ops' factor rules. A function whose layouts span several
// groups (GroupPartition.cpp) is first laid out across the groups, the
// union's relation read as one outer axis, then partitioned into one
// function per group, each laid out inside its group; where the relation
// across groups changes, `hspmd.exchange` moves the data.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LAYOUTPROPAGATION_H
#define LOOM_PASSES_LAYOUTPROPAGATION_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace loom {

/// Function attributes of a partitioned function and its parts (see
/// HSPMDDialect.td).
inline constexpr llvm::StringLiteral kPartsAttrName =
    hspmd::HSPMDDialect::getPartsAttrName();
inline constexpr llvm::StringLiteral kPartOfAttrName =
    hspmd::HSPMDDialect::getPartOfAttrName();
inline constexpr llvm::StringLiteral kPartAttrName =
    hspmd::HSPMDDialect::getPartAttrName();
inline constexpr llvm::StringLiteral kWholeLayoutAttrName =
    hspmd::HSPMDDialect::getWholeLayoutAttrName();

/// On the ops of pipeline stages' parts: the index of the original op they
/// come from, and the pair number shared by the two halves of an exchange
/// (what merging the programs of overlapping groups per device needs).
inline constexpr llvm::StringLiteral kStageSeqAttrName = "loom.stage_seq";
inline constexpr llvm::StringLiteral kExchangePairAttrName =
    "loom.exchange_pair";

/// Whether `func` was partitioned across device groups: later passes leave
/// it alone (it stays the single-device reference) and work on its parts.
inline bool isPartitioned(mlir::func::FuncOp func) {
  return func->hasAttr(kPartsAttrName);
}

/// Rewrites every argument's (result's) attributes of `func` through
/// `update` and sets them all at once: setting them one by one builds a new
/// array of every argument's attributes each time, which the context keeps
/// (quadratic memory in the number of arguments).
void updateAllArgAttrs(
    mlir::func::FuncOp func,
    llvm::function_ref<void(unsigned, mlir::NamedAttrList &)> update);
void updateAllResultAttrs(
    mlir::func::FuncOp func,
    llvm::function_ref<void(unsigned, mlir::NamedAttrList &)> update);

/// Records on every part the whole layout of each argument and result
/// (null: none), and marks `func` as partitioned into `parts`.
void finishPartition(mlir::func::FuncOp func,
                     llvm::ArrayRef<mlir::func::FuncOp> parts,
                     llvm::ArrayRef<hspmd::UnionAttr> argWholes,
                     llvm::ArrayRef<hspmd::UnionAttr> resultWholes);

/// An empty tensor of `type` (every dimension 0; a zero for a 0-d one):
/// what a group holds of a value that lives on another group.
mlir::Value createEmptyTensor(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Type type);

/// Lays out `func`, whose layouts all lie on one device group, and writes
/// the layout attributes. `skipped` is set when it has no layouts.
mlir::LogicalResult propagateWithinGroup(mlir::func::FuncOp func, bool &skipped,
                                         int64_t &numReshards);

/// Whether `func`'s layouts (annotations, reshards, arguments, results)
/// span several device groups: a union of several groups, or one-group
/// layouts on different groups (pipeline stages).
bool hasLayoutsAcrossGroups(mlir::func::FuncOp func);

/// A layout a user wrote on a function, with where.
struct UserUnion {
  hspmd::UnionAttr layout;
  mlir::Location loc;
};

/// Collects the user layouts of `func` (argument and result attributes,
/// annotations, reshards) into `out`; fails on a strategy set (reported
/// when `diagnose`).
mlir::LogicalResult collectUserUnions(mlir::func::FuncOp func,
                                      llvm::SmallVectorImpl<UserUnion> &out,
                                      bool diagnose = true);

/// Partitions `func`, whose layouts lie on different device groups (one per
/// pipeline stage), into one function per group (StagePartition.cpp).
mlir::LogicalResult partitionIntoStages(mlir::func::FuncOp func,
                                        int64_t &numParts,
                                        int64_t &numReshards);

/// Lays `func` out across its groups, adds one function per group after it
/// (laid out inside the group) and marks `func` as partitioned. Returns
/// failure after a diagnostic; `numParts` counts the functions added.
mlir::LogicalResult partitionAcrossGroups(mlir::func::FuncOp func,
                                          int64_t &numParts,
                                          int64_t &numReshards);

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

#endif // LOOM_PASSES_LAYOUTPROPAGATION_H
