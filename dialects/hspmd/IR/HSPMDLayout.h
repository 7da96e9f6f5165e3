//===- HSPMDLayout.h - Layout arithmetic over hspmd unions -----*- C++ -*-===//
//
// What a layout means for a concrete tensor shape: which block of the tensor
// each device holds, which contribution of a pending reduction, which
// replica. Everything later (deduction, communication planning, the
// simulator, code generation) asks these questions through this header.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDLAYOUT_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDLAYOUT_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace loom::hspmd {

/// The part of a tensor that one device holds.
struct Shard {
  /// The block of the global tensor, per dimension.
  llvm::SmallVector<int64_t> offsets;
  llvm::SmallVector<int64_t> sizes;
  /// The device's contribution among `numPartials` contributions that still
  /// have to be combined with `reduction` (numPartials == 1: no reduction).
  int64_t partialIndex = 0;
  int64_t numPartials = 1;
  std::optional<ReductionKind> reduction;
  /// Which of the `numReplicas` devices holding this very contribution of
  /// this block the device is.
  int64_t replicaIndex = 0;
  int64_t numReplicas = 1;

  bool operator==(const Shard &other) const;
  bool operator!=(const Shard &other) const { return !(*this == other); }
  /// The number of elements of the block.
  int64_t getNumElements() const;
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const Shard &shard);

/// Checks that `layout` can lay out a tensor of `shape` (dynamic sizes are
/// ShapedType::kDynamic and skip the checks that need the size). Reports the
/// first problem through `emitError`.
mlir::LogicalResult
verifyLayoutForShape(UnionAttr layout, llvm::ArrayRef<int64_t> shape,
                     llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// Same for every strategy of a strategy set, or a union, given as an
/// attribute (anything else fails).
mlir::LogicalResult
verifyLayoutForShape(mlir::Attribute layout, llvm::ArrayRef<int64_t> shape,
                     llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The extent of dimension `layout.getSplitDim()` that each member group
/// holds, in member order, for a split union and a dimension of `dimSize`.
/// Fails when explicit sizes do not sum to `dimSize` or a ratio does not
/// divide it exactly.
mlir::FailureOr<llvm::SmallVector<int64_t>> getGroupExtents(UnionAttr layout,
                                                            int64_t dimSize);

/// The shard that `device` holds of a tensor of `shape` laid out as
/// `layout`, or std::nullopt when the device is not in the layout or the
/// shape is dynamic or does not fit the layout (see verifyLayoutForShape).
std::optional<Shard> getShard(UnionAttr layout, llvm::ArrayRef<int64_t> shape,
                              int64_t device);

/// Whether `lhs` and `rhs` put the same data on the same devices for a tensor
/// of `shape`: the same device set, and every device holds the same shard.
/// Layouts that differ only in spelling (a degree-1 axis, shares 6:2 vs 3:1,
/// sizes vs ratio) are equivalent.
bool areEquivalent(UnionAttr lhs, UnionAttr rhs, llvm::ArrayRef<int64_t> shape);

/// Whether the two layouts span exactly the same set of devices.
bool haveSameDevices(UnionAttr lhs, UnionAttr rhs);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDLAYOUT_H
