// A dropout block that does not lie in its global tensor is an error at
// the op, not a silently different mask.
// RUN: not loom-run --interpret %s --random-inputs 2>&1 | FileCheck %s
// CHECK: dropout-block-errors.mlir:[[@LINE+4]]:8: error: 'nn.dropout' op the block of size 4 at 6 along dimension 0 does not lie in the global size 8

func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {
  %s = arith.constant dense<6> : tensor<i64>
  %0 = nn.dropout %x at [%s] {global_shape = array<i64: 8>, rate = 0.5 : f64, seed = 0 : i64} : tensor<4xf64>
  return %0 : tensor<4xf64>
}
