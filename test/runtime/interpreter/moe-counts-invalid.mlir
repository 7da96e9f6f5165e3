// Counts that do not fit their buffer stop the run with a diagnostic naming
// the expert, on the interpreter and in the host kernel alike (one check,
// runtime/moe/Blocks.h): two blocks of 2 rows, and expert 1 (the second
// block's only expert) given 3 rows; then a negative count.
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.ones((4, 2))); np.save('%t.w.npy', np.ones((2, 2, 3))); np.save('%t.c.npy', np.array([1, 3], dtype=np.int64)); np.save('%t.n.npy', np.array([-1, 0], dtype=np.int64))"
// RUN: not loom-run --interpret %s --entry blocked --input %t.x.npy --input %t.w.npy --input %t.c.npy 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: counts must be non-negative and sum to at most the 2 rows of each of the 2 blocks; expert 1 has 3 after 0 rows of its block
// RUN: not loom-run --interpret %s --entry blocked --input %t.x.npy --input %t.w.npy --input %t.n.npy 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: expert 0 has -1 after 0 rows of its block
func.func @blocked(%x: tensor<4x2xf64>, %w: tensor<2x2x3xf64>, %c: tensor<2xi64>) -> tensor<4x3xf64> {
  %h = nn.grouped_matmul %x, %w, %c blocks = 2 : tensor<4x2xf64>, tensor<2x2x3xf64>, tensor<2xi64>
  return %h : tensor<4x3xf64>
}
