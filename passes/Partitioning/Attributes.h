//===- Attributes.h - Typed access to partitioning attributes ---*- C++ -*-===//
//
// The attributes that layout propagation, partitioning and specialisation
// write and read, behind typed accessors, so that no pass spells their
// names. The hspmd.* names are declared once, by the dialect
// (HSPMDDialect.td, e.g. HSPMDDialect::getLayoutAttrName()); the loom.*
// tags that only the partitioning passes use are declared here.
//
// Layouts of values:
//   hspmd.layout            function argument / result attribute: a union
//                           or a strategy set
//   hspmd.operand_layouts   op attribute: one union per ranked-tensor
//   hspmd.result_layouts    operand / result, in order (what the op needs /
//                           produces)
// Partitioning across device groups (see HSPMDDialect.td):
//   hspmd.parts, hspmd.part_of, hspmd.part, hspmd.whole_layout
// Specialisation:
//   hspmd.global_layout, hspmd.group, hspmd.specializes
// Merging the programs of overlapping pipeline stages:
//   loom.stage_seq, loom.exchange_pair
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PARTITIONING_ATTRIBUTES_H
#define LOOM_PASSES_PARTITIONING_ATTRIBUTES_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>

namespace loom {

/// On the ops of pipeline stages' parts: the index of the original op they
/// come from, and the pair number shared by the two halves of an exchange
/// (what merging the programs of overlapping groups per device needs).
inline constexpr llvm::StringLiteral kStageSeqAttrName = "loom.stage_seq";
inline constexpr llvm::StringLiteral kExchangePairAttrName =
    "loom.exchange_pair";

//===----------------------------------------------------------------------===//
// Function argument and result layouts (hspmd.layout)
//===----------------------------------------------------------------------===//

/// The layout of argument (result) `index` of `func`: a union or a strategy
/// set; null when it has none.
mlir::Attribute getArgLayoutAttr(mlir::func::FuncOp func, unsigned index);
mlir::Attribute getResultLayoutAttr(mlir::func::FuncOp func, unsigned index);
/// The same where it is a union; null otherwise.
hspmd::UnionAttr getArgLayout(mlir::func::FuncOp func, unsigned index);
hspmd::UnionAttr getResultLayout(mlir::func::FuncOp func, unsigned index);
/// Sets the layout of one argument (result). Setting every argument's
/// layout this way is quadratic: use updateAllArgAttrs and setLayout.
void setArgLayout(mlir::func::FuncOp func, unsigned index,
                  mlir::Attribute layout);
void setResultLayout(mlir::func::FuncOp func, unsigned index,
                     mlir::Attribute layout);
/// Whether some argument or result of `func` has a layout.
bool hasArgOrResultLayouts(mlir::func::FuncOp func);

/// The layout in an argument's or result's attribute list (null: none),
/// setting it, and erasing it (returns what was there).
mlir::Attribute getLayout(const mlir::NamedAttrList &attrs);
void setLayout(mlir::NamedAttrList &attrs, mlir::Attribute layout);
mlir::Attribute eraseLayout(mlir::NamedAttrList &attrs);

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

//===----------------------------------------------------------------------===//
// Op layouts (hspmd.operand_layouts / hspmd.result_layouts)
//===----------------------------------------------------------------------===//

/// The number of ranked tensors among `values`: the entries an op's layout
/// array has for them.
unsigned countTensors(mlir::ValueRange values);
/// The index of `result` among its op's ranked-tensor results.
unsigned getTensorResultIndex(mlir::OpResult result);

/// The arrays as written (entries are unions once propagation ran; a
/// reshard of strategy sets may carry one); null when absent.
mlir::ArrayAttr getOperandLayoutsAttr(mlir::Operation *op);
mlir::ArrayAttr getResultLayoutsAttr(mlir::Operation *op);
/// Whether `op` carries either array.
bool hasOpLayouts(mlir::Operation *op);
/// Every entry, when the array is there and each entry is a union.
mlir::FailureOr<llvm::SmallVector<hspmd::UnionAttr>>
getOperandLayouts(mlir::Operation *op);
mlir::FailureOr<llvm::SmallVector<hspmd::UnionAttr>>
getResultLayouts(mlir::Operation *op);
/// Entry `tensorIndex` (counting ranked-tensor operands / results) where
/// it is a union; null otherwise.
hspmd::UnionAttr getOperandLayout(mlir::Operation *op, unsigned tensorIndex);
hspmd::UnionAttr getResultLayout(mlir::Operation *op, unsigned tensorIndex);
/// Sets the arrays.
void setOperandLayouts(mlir::Operation *op,
                       llvm::ArrayRef<hspmd::UnionAttr> layouts);
void setResultLayouts(mlir::Operation *op,
                      llvm::ArrayRef<hspmd::UnionAttr> layouts);
void setOperandLayoutsAttr(mlir::Operation *op, mlir::ArrayAttr layouts);
void setResultLayoutsAttr(mlir::Operation *op, mlir::ArrayAttr layouts);
/// Removes both arrays.
void removeOpLayouts(mlir::Operation *op);

/// The layout `value` is produced with: an entry block argument's
/// function layout, or its producer's result layout; null when there is
/// none (or it is not a union).
hspmd::UnionAttr getProducedLayout(mlir::Value value);

//===----------------------------------------------------------------------===//
// Partitioning across device groups
//===----------------------------------------------------------------------===//

/// Whether `func` was partitioned across device groups: later passes leave
/// it alone (it stays the single-device reference) and work on its parts.
bool isPartitioned(mlir::func::FuncOp func);
/// Marks `func` as partitioned into `parts` (hspmd.parts).
void setParts(mlir::func::FuncOp func,
              llvm::ArrayRef<mlir::func::FuncOp> parts);
/// Whether `func` is a part of a partitioned function.
bool isPart(mlir::func::FuncOp func);
/// The function `part` is a part of (hspmd.part_of); null if none.
mlir::FlatSymbolRefAttr getPartOf(mlir::func::FuncOp part);
/// The index of `part`'s group among the parts (hspmd.part).
std::optional<int64_t> getPartIndex(mlir::func::FuncOp part);
/// Marks `part` as part `index` of `whole`.
void setPartOf(mlir::func::FuncOp part, mlir::func::FuncOp whole,
               int64_t index);
/// The whole layout in a part's argument or result attribute list
/// (hspmd.whole_layout).
void setWholeLayout(mlir::NamedAttrList &attrs, hspmd::UnionAttr layout);
mlir::Attribute eraseWholeLayout(mlir::NamedAttrList &attrs);

//===----------------------------------------------------------------------===//
// Specialisation
//===----------------------------------------------------------------------===//

/// The layout of the global tensor whose block argument (result) `index`
/// of a specialised function is (hspmd.global_layout); null if none or not
/// a union.
hspmd::UnionAttr getArgGlobalLayout(mlir::func::FuncOp func, unsigned index);
hspmd::UnionAttr getResultGlobalLayout(mlir::func::FuncOp func,
                                       unsigned index);
/// In an attribute list.
void setGlobalLayout(mlir::NamedAttrList &attrs, mlir::Attribute layout);

/// The device group a specialised function runs on, or a collective in a
/// merged program runs over (hspmd.group); null if none.
hspmd::DeviceGroupAttr getGroup(mlir::Operation *op);
void setGroup(mlir::Operation *op, hspmd::DeviceGroupAttr group);
/// The devices that run a specialised function: its `hspmd.devices` (a
/// subset of its group, where the group's devices hold blocks of different
/// shapes), else every device of its `hspmd.group`; empty if it has no
/// group.
llvm::SmallVector<int64_t> getRunningDevices(mlir::func::FuncOp func);
void setRunningDevices(mlir::func::FuncOp func, llvm::ArrayRef<int64_t> devices);
/// The global function a specialised function specialises
/// (hspmd.specializes); null if none.
mlir::FlatSymbolRefAttr getSpecializes(mlir::func::FuncOp func);
void setSpecializes(mlir::func::FuncOp local, mlir::func::FuncOp reference);
/// Whether `func` is a specialised function.
bool isSpecialization(mlir::func::FuncOp func);

//===----------------------------------------------------------------------===//
// Merge tags of pipeline stages' parts
//===----------------------------------------------------------------------===//

/// The original op's index (loom.stage_seq).
void setStageSeq(mlir::Operation *op, int64_t seq);
/// The pair number of an exchange's two halves (loom.exchange_pair).
void setExchangePair(mlir::Operation *op, int64_t pair);
std::optional<int64_t> getExchangePair(mlir::Operation *op);
/// Drops both tags.
void removeMergeTags(mlir::Operation *op);

} // namespace loom

#endif // LOOM_PASSES_PARTITIONING_ATTRIBUTES_H
