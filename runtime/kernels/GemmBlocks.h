//===- GemmBlocks.h - Fixed row blocks of a GEMM ---------------*- C++ -*-===//
//
// One rule, shared by the host kernels and the interpreter, for cutting a
// GEMM's output into row blocks. OpenBLAS gives the same bits for the same
// call on one machine, but not for different shapes: a smaller M can take
// another path (a small-matrix kernel, other edge kernels), and its own
// threads split the work by thread count. So every GEMM is issued as
// single-threaded calls on blocks of at most kGemmRowBlock rows of C, cut at
// the same places whatever the thread count; threads only take whole blocks,
// which are independent (no reduction is split). The result is then a
// function of the shapes and the machine, not of LOOM_HOST_THREADS, and the
// host kernels and the interpreter, which both cut this way, agree bit for
// bit.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELS_GEMMBLOCKS_H
#define LOOM_RUNTIME_KERNELS_GEMMBLOCKS_H

#include <algorithm>
#include <cstdint>

namespace loom::gemm_blocks {

/// Rows of C per block: large enough that repacking B for every block costs
/// little (on 1024^3, 64 rows were 23% slower than one call), small enough
/// that big products still give threads several blocks.
inline constexpr int64_t kGemmRowBlock = 256;

/// The number of row blocks of an M-row product.
inline int64_t countRowBlocks(int64_t m) {
  return (m + kGemmRowBlock - 1) / kGemmRowBlock;
}

/// Calls `fn(row, rows, a, c)` for row block `block` of C = op(A) op(B):
/// its first row, its row count, and A and C advanced to that row (A's row
/// `row` is its column `row` when A is transposed).
template <typename T, typename Fn>
void forRowBlock(int64_t block, bool transA, int64_t m, const T *a,
                 int64_t lda, T *c, int64_t ldc, Fn &&fn) {
  int64_t row = block * kGemmRowBlock;
  int64_t rows = std::min(kGemmRowBlock, m - row);
  fn(row, rows, transA ? a + row : a + row * lda, c + row * ldc);
}

} // namespace loom::gemm_blocks

#endif // LOOM_RUNTIME_KERNELS_GEMMBLOCKS_H
