//===- HSPMDOps.h - Operations of the hspmd dialect ------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace loom::hspmd {

/// The sub-groups of a collective over mesh axes `axes` of `mesh`: indices
/// into the device group (0 .. product(mesh) - 1), each sub-group in rank
/// order, sub-groups ordered by their first member.
llvm::SmallVector<llvm::SmallVector<int64_t>>
getCollectiveSubgroups(llvm::ArrayRef<int64_t> mesh,
                       llvm::ArrayRef<int64_t> axes);

} // namespace loom::hspmd

#define GET_OP_CLASSES
#include "dialects/hspmd/IR/HSPMDOps.h.inc"

#include <optional>

namespace loom::hspmd {

/// What a collective (all_reduce, all_gather, reduce_scatter, all_to_all,
/// permute, local_slice, make_partial; sparse_reduce_scatter and
/// sparse_all_gather, which exist in the local view only) runs over, and
/// its global-view layouts (null in the local view, after specialisation).
struct CollectiveView {
  llvm::ArrayRef<int64_t> axes;
  llvm::ArrayRef<int64_t> mesh;
  UnionAttr from, to;
};
/// `op`'s view; none when it is not a collective.
std::optional<CollectiveView> getCollectiveView(mlir::Operation *op);
/// Whether `op` is a collective in the global view (it carries layouts).
inline bool isGlobalViewCollective(mlir::Operation *op) {
  std::optional<CollectiveView> view = getCollectiveView(op);
  return view && view->from;
}
/// The kind of collective `op` is, as the runtimes and the communication
/// report count it: its name without the dialect, but a started
/// collective's is the collective's (`sparse_all_gather` for
/// `hspmd.sparse_all_gather_start`).
std::string getCollectiveKind(mlir::Operation *op);
/// Turns a global-view collective into a local-view one (drops `from` and
/// `to`); other ops are left as they are.
void dropGlobalView(mlir::Operation *op);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H
