//===- HSPMDAxis.h - One axis of a distributed state -----------*- C++ -*-===//
//
// An axis of distributed states: a split of one tensor dimension, a duplicate
// or a partial (pending reduction), each with a degree. Plain data so that it
// can be an attribute parameter and be used by layout arithmetic alike.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDAXIS_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDAXIS_H

#include "dialects/hspmd/IR/HSPMDEnums.h.inc"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace loom::hspmd {

enum class AxisKind : uint8_t { Split, Duplicate, Partial };

struct Axis {
  AxisKind kind = AxisKind::Duplicate;
  /// The tensor dimension a split axis cuts; -1 for the other kinds.
  int64_t dim = -1;
  /// How many devices the axis spans.
  int64_t degree = 1;
  /// The reduction of a partial axis; ignored for the other kinds.
  ReductionKind reduction = ReductionKind::Sum;
  /// A split axis's explicit block sizes, one per coordinate (`S1:[16, 8,
  /// 8]`); empty for equal or balanced blocks (`S1:3`: where 3 does not
  /// divide the dimension, the first size mod 3 blocks are one larger).
  /// Interned (see internBlockSizes): the array lives as long as the
  /// process, so an axis stays plain data.
  llvm::ArrayRef<int64_t> sizes;

  static Axis split(int64_t dim, int64_t degree) {
    return {AxisKind::Split, dim, degree, ReductionKind::Sum, {}};
  }
  /// A split into blocks of explicit sizes (interned here).
  static Axis split(int64_t dim, llvm::ArrayRef<int64_t> sizes);
  static Axis duplicate(int64_t degree) {
    return {AxisKind::Duplicate, -1, degree, ReductionKind::Sum, {}};
  }
  static Axis partial(int64_t degree, ReductionKind kind) {
    return {AxisKind::Partial, -1, degree, kind, {}};
  }

  bool isSplit() const { return kind == AxisKind::Split; }
  bool isDuplicate() const { return kind == AxisKind::Duplicate; }
  bool isPartial() const { return kind == AxisKind::Partial; }

  /// Two axes name the same thing (ignoring the degree): the same split
  /// dimension, or both duplicate, or both partial.
  bool sameKindAs(const Axis &other) const {
    return kind == other.kind && (!isSplit() || dim == other.dim);
  }

  /// `S0:2`, `S1:[16, 8, 8]`, `D:2` or `P(sum):2`.
  std::string str() const;

  bool operator==(const Axis &other) const {
    return kind == other.kind && dim == other.dim && degree == other.degree &&
           (!isPartial() || reduction == other.reduction) &&
           sizes == other.sizes;
  }
  bool operator!=(const Axis &other) const { return !(*this == other); }
};

inline llvm::hash_code hash_value(const Axis &axis) {
  return llvm::hash_combine(static_cast<uint8_t>(axis.kind), axis.dim,
                            axis.degree,
                            axis.isPartial() ? static_cast<int>(axis.reduction)
                                             : -1,
                            llvm::hash_combine_range(axis.sizes.begin(),
                                                     axis.sizes.end()));
}

/// A copy of `sizes` that lives as long as the process; equal lists share
/// one copy.
llvm::ArrayRef<int64_t> internBlockSizes(llvm::ArrayRef<int64_t> sizes);

/// Prints `S0:2`, `S1:[16, 8, 8]`, `D:2` or `P(sum):2`.
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const Axis &axis);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDAXIS_H
