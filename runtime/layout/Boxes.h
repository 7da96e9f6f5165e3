//===- Boxes.h - Boxes of row-major arrays ----------------------*- C++ -*-===//
//
// N-dimensional boxes of row-major arrays: their intersection and copies
// between arrays (byte-wise, any element size). Everything that moves a
// block of a tensor (cutting shards, exchanges, the simulator) uses these.
// No dependency beyond the C++ standard library: generated programs link
// them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LAYOUT_BOXES_H
#define LOOM_RUNTIME_LAYOUT_BOXES_H

#include <cstdint>
#include <vector>

namespace loom::layout {

/// A box of a row-major array: offsets and sizes per dimension.
struct Box {
  std::vector<int64_t> offsets, sizes;
};

/// The intersection of `a` and `b` (of one rank) in `out`; false when it is
/// empty (a rank-0 box always intersects).
bool intersect(const Box &a, const Box &b, Box &out);

/// Copies the box `sizes` starting at `srcStart` of an array of `srcShape`
/// to `dstStart` of an array of `dstShape` (every vector of one rank).
void copyBox(const void *src, const std::vector<int64_t> &srcShape,
             const std::vector<int64_t> &srcStart, void *dst,
             const std::vector<int64_t> &dstShape,
             const std::vector<int64_t> &dstStart,
             const std::vector<int64_t> &sizes, int64_t elementBytes);

/// Copies what the block `from` (its data laid out as `fromBox.sizes`,
/// global coordinates `fromBox.offsets`) has in common with the block `to`;
/// returns the overlap copied (empty sizes and false when none).
bool copyOverlap(const void *from, const Box &fromBox, void *to,
                 const Box &toBox, int64_t elementBytes, Box *overlap = nullptr);

} // namespace loom::layout

#endif // LOOM_RUNTIME_LAYOUT_BOXES_H
