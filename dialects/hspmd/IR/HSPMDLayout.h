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
#include "runtime/layout/Layout.h"

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

/// The blocks a split axis cuts a dimension (or a group's share of it) of
/// `size` into, in coordinate order: equal where the degree divides it,
/// balanced otherwise (the first size mod degree one larger), or the axis's
/// explicit sizes (layout::getBlockSizes). Fails where explicit sizes do
/// not sum to `size` or a block would be empty.
mlir::FailureOr<llvm::SmallVector<int64_t>> getBlockSizes(const Axis &axis,
                                                          int64_t size);

/// Whether `axis` (any kind; dynamic sizes count as even) cuts `size` into
/// equal blocks.
bool isEvenSplit(const Axis &axis, int64_t size);

/// Whether a tensor of `shape` laid out as `layout` has blocks of unequal
/// size inside a group (a balanced or explicit split): the devices of that
/// group hold differently shaped blocks. Null layouts have none.
bool hasUnevenSplits(UnionAttr layout, llvm::ArrayRef<int64_t> shape);
/// The same for the blocks along dimension `dim` only.
bool isUnevenAlong(UnionAttr layout, llvm::ArrayRef<int64_t> shape,
                   int64_t dim);

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

//===----------------------------------------------------------------------===//
// The runtime's layout core
//===----------------------------------------------------------------------===//

/// The layout as the MLIR-free layout core's plain data
/// (runtime/layout/Layout.h), which everything outside the compiler uses.
layout::Layout toLayoutCore(UnionAttr layout);
layout::Axis toLayoutCore(const Axis &axis);
layout::Reduction toLayoutCore(ReductionKind kind);

//===----------------------------------------------------------------------===//
// Duality: the layout of a gradient
//===----------------------------------------------------------------------===//
//
// Reverse-mode differentiation turns a copy into a sum: where a value is
// duplicated on n devices, each device's use of it contributes a piece of
// its gradient, so the gradient is a partial sum over those n devices; and
// where a value is a pending sum, every contribution gets the whole
// gradient, so the gradient is duplicated. Splits are linear and stay. The
// dual layout is the layout the gradient naturally has:
//
//   S<d>:n -> S<d>:n      D:n -> P(sum):n      P(sum):n -> D:n
//   union split(d) (same shares)    -> split(d)
//   union replicated (several groups) -> partial(sum) (no shares)
//   union partial(sum)              -> replicated
//
// each member's states dualised axis by axis, in place (the device order is
// kept). Pending reductions other than a sum have no dual. The dual of the
// dual is the original, up to degree-1 partial axes that a split union adds
// so that its members agree on the pending reduction.

/// The dual of distributed states, or null (after reporting through
/// `emitError` when given) when they hold a reduction other than a sum.
DistStatesAttr getGradientStates(
    DistStatesAttr states,
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError = nullptr);

/// The layout of the gradient of a value laid out as `layout`, or null
/// (after reporting through `emitError` when given) when it has none.
UnionAttr getGradientLayout(
    UnionAttr layout,
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError = nullptr);

/// The dual of every strategy of a strategy set (names and the optimizer
/// strategy unchanged), or null when one has none.
StrategySetAttr getGradientLayout(
    StrategySetAttr layouts,
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError = nullptr);

/// The dual of a union or a strategy set given as an attribute; null for
/// anything else or when there is none.
mlir::Attribute getGradientLayout(
    mlir::Attribute layout,
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError = nullptr);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDLAYOUT_H
