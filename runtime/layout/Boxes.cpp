//===- Boxes.cpp - Boxes of row-major arrays ------------------------------===//

#include "runtime/layout/Boxes.h"

#include <algorithm>
#include <cstring>

using namespace loom::layout;

bool loom::layout::intersect(const Box &a, const Box &b, Box &out) {
  size_t rank = a.offsets.size();
  out.offsets.assign(rank, 0);
  out.sizes.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (hi <= lo)
      return false;
    out.offsets[d] = lo;
    out.sizes[d] = hi - lo;
  }
  return true;
}

void loom::layout::copyBox(const void *src,
                           const std::vector<int64_t> &srcShape,
                           const std::vector<int64_t> &srcStart, void *dst,
                           const std::vector<int64_t> &dstShape,
                           const std::vector<int64_t> &dstStart,
                           const std::vector<int64_t> &sizes,
                           int64_t elementBytes) {
  const char *from = static_cast<const char *>(src);
  char *to = static_cast<char *>(dst);
  size_t rank = sizes.size();
  for (int64_t size : sizes)
    if (size <= 0)
      return;
  if (rank == 0) {
    std::memcpy(to, from, static_cast<size_t>(elementBytes));
    return;
  }
  // Row-major strides in elements.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) {
    srcStride[d] = srcStride[d + 1] * srcShape[d + 1];
    dstStride[d] = dstStride[d + 1] * dstShape[d + 1];
  }
  size_t rowBytes = static_cast<size_t>(sizes[rank - 1] * elementBytes);
  // One row per index over every dimension but the last.
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (size_t d = 0; d < rank; ++d) {
      srcOffset += (srcStart[d] + index[d]) * srcStride[d];
      dstOffset += (dstStart[d] + index[d]) * dstStride[d];
    }
    std::memcpy(to + dstOffset * elementBytes, from + srcOffset * elementBytes,
                rowBytes);
    size_t d = rank - 1;
    while (d > 0 && ++index[d - 1] == sizes[d - 1]) {
      index[d - 1] = 0;
      --d;
    }
    if (d == 0)
      return;
  }
}

bool loom::layout::copyOverlap(const void *from, const Box &fromBox, void *to,
                               const Box &toBox, int64_t elementBytes,
                               Box *overlap) {
  Box box;
  if (!intersect(fromBox, toBox, box)) {
    if (overlap)
      *overlap = Box();
    return false;
  }
  size_t rank = box.offsets.size();
  std::vector<int64_t> fromStart(rank), toStart(rank);
  for (size_t d = 0; d < rank; ++d) {
    fromStart[d] = box.offsets[d] - fromBox.offsets[d];
    toStart[d] = box.offsets[d] - toBox.offsets[d];
  }
  copyBox(from, fromBox.sizes, fromStart, to, toBox.sizes, toStart, box.sizes,
          elementBytes);
  if (overlap)
    *overlap = std::move(box);
  return true;
}

