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

/// An empty tensor of `type` (every dimension 0; a zero for a 0-d one):
/// what a group holds of a value that lives on another group.
mlir::Value createEmptyTensor(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Type type);

/// What an hspmd collective (all_reduce, all_gather, reduce_scatter,
/// all_to_all, permute, local_slice, make_partial) runs over, and its
/// global-view layouts (null in the local view).
struct CollectiveView {
  llvm::ArrayRef<int64_t> axes;
  llvm::ArrayRef<int64_t> mesh;
  hspmd::UnionAttr from, to;
};
/// `op`'s view; none when it is not a collective.
std::optional<CollectiveView> getCollectiveView(mlir::Operation *op);
/// Turns a global-view collective into a local-view one (drops `from` and
/// `to`); other ops are left as they are.
void dropGlobalView(mlir::Operation *op);

} // namespace loom

#endif // LOOM_PASSES_PARTITIONING_UTILS_H
