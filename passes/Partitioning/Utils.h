//===- Utils.h - What the partitioning passes share -------------*- C++ -*-===//
//
// Helpers that layout propagation, partitioning across groups and pipeline
// stages, specialisation and the merge of overlapping groups share: the
// user layouts of a function, building and finishing its parts, and a
// collective's mesh and global-view layouts.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PARTITIONING_UTILS_H
#define LOOM_PASSES_PARTITIONING_UTILS_H

#include "passes/Partitioning/Attributes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace loom {

/// Visits the layouts the user wrote on `func`, in order: argument and
/// result layouts, then in program order each `hspmd.annotate`'s layout and
/// each `hspmd.reshard`'s source and target. `visit` gets the layout (a
/// union or a strategy set), the type of the tensor it lays out, where it
/// was written and the op carrying it (the function for its arguments and
/// results); the walk stops at the first failure, which it returns.
mlir::LogicalResult forEachUserLayout(
    mlir::func::FuncOp func,
    llvm::function_ref<mlir::LogicalResult(mlir::Attribute layout,
                                           mlir::Type type, mlir::Location loc,
                                           mlir::Operation *owner)>
        visit);

/// Replaces every user layout of `func` (those forEachUserLayout visits)
/// by `rewrite` of it.
void rewriteUserLayouts(mlir::func::FuncOp func,
                        llvm::function_ref<mlir::Attribute(mlir::Attribute)>
                            rewrite);

/// A layout a user wrote on a function, with where.
struct UserUnion {
  hspmd::UnionAttr layout;
  mlir::Location loc;
};

/// Collects the user layouts of `func` into `out`; fails on a strategy set
/// (reported when `diagnose`).
mlir::LogicalResult collectUserUnions(mlir::func::FuncOp func,
                                      llvm::SmallVectorImpl<UserUnion> &out,
                                      bool diagnose = true);

/// Adds part `index` of `func`, of type `type`, after `insertAfter`:
/// `@<func>_part<index>`, with the given argument and result attributes,
/// marked as a part of `func`, and an entry block (the builder is left at
/// its start). Fails after a diagnostic naming `what` when the name is
/// taken.
mlir::FailureOr<mlir::func::FuncOp>
createPart(mlir::OpBuilder &builder, mlir::func::FuncOp func, int64_t index,
           mlir::FunctionType type, llvm::ArrayRef<mlir::DictionaryAttr> argAttrs,
           llvm::ArrayRef<mlir::DictionaryAttr> resultAttrs,
           mlir::Operation *insertAfter, llvm::StringRef what);
/// The name of part `index` of `func`.
std::string getPartName(mlir::func::FuncOp func, int64_t index);

/// Records on every part the whole layout of each argument and result
/// (null: none), and marks `func` as partitioned into `parts`.
void finishPartition(mlir::func::FuncOp func,
                     llvm::ArrayRef<mlir::func::FuncOp> parts,
                     llvm::ArrayRef<hspmd::UnionAttr> argWholes,
                     llvm::ArrayRef<hspmd::UnionAttr> resultWholes);

/// Erases the producers of `values` that nothing uses any more and that
/// have no side effects (what localised ops stopped using, such as a
/// group's constant start folded into a block start).
void eraseUnused(llvm::ArrayRef<mlir::Value> values);

/// An empty tensor of `type` (every dimension 0; a zero for a 0-d one):
/// what a group holds of a value that lives on another group.
mlir::Value createEmptyTensor(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Type type);

// What a collective runs over (hspmd::getCollectiveView) and dropping its
// global view (hspmd::dropGlobalView) are the hspmd dialect's
// (HSPMDOps.h), for the runtimes too.
using hspmd::CollectiveView;
using hspmd::dropGlobalView;
using hspmd::getCollectiveView;

} // namespace loom

#endif // LOOM_PASSES_PARTITIONING_UTILS_H
