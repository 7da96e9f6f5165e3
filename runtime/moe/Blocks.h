//===- Blocks.h - Rows of one expert block of an MoE buffer -----*- C++ -*-===//
//
// With `blocks = B` (nn.moe_route, nn.grouped_matmul, docs/moe.md), the
// expert-ordered buffer is B blocks of S rows, one per group of E / B
// consecutive experts, so that each block is one device's work of a static
// size. S is the most entries one block can receive: every entry (T * k)
// without a capacity, else at most C per expert of the block. One formula
// for the op, the interpreter and every target's kernels; header-only and
// free of MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MOE_BLOCKS_H
#define LOOM_RUNTIME_MOE_BLOCKS_H

#include <algorithm>
#include <cstdint>

namespace loom::moe {

/// The rows of one block for `entries` (T * k) routed entries, `experts`
/// experts in `blocks` blocks and a capacity per expert (`capacity < 1`:
/// none).
inline int64_t blockRows(int64_t entries, int64_t experts, int64_t blocks,
                         int64_t capacity) {
  if (capacity < 1 || blocks < 1)
    return entries;
  // (No overflow: the product is compared only when it is below entries.)
  int64_t perBlock = experts / blocks;
  if (perBlock > 0 && capacity > entries / perBlock)
    return entries;
  return std::min(entries, capacity * perBlock);
}

} // namespace loom::moe

#endif // LOOM_RUNTIME_MOE_BLOCKS_H
