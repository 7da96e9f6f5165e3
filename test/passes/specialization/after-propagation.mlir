// Propagation, then specialisation, on a data-parallel forward pass that
// needs no communication: the batch split of %x reaches every activation,
// the weights are duplicated, and the local function on 4 devices computes
// a quarter of the batch. Sharded from global inputs on the simulator it
// equals the global function within 1e-14 (no sum changes order, but each
// device's GEMMs have a quarter of the rows, and OpenBLAS may pick other
// kernels for them).
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-specialize -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry mlp_group0 --global-entry mlp --random-inputs --seed 4 --tolerance 1e-14 --comm-stats | FileCheck %s --check-prefix=SHARDED
// CHECK-LABEL: func.func @mlp_group0(
// CHECK-SAME: tensor<2x16xf64>
// CHECK-SAME: tensor<16x32xf64>
// CHECK-SAME: tensor<32x16xf64>
// CHECK: nn.matmul {{.*}} : tensor<2x16xf64>, tensor<16x32xf64>
// CHECK: nn.reduce mean {{.*}} dims = [1] keep_dims : tensor<2x16xf64>
// CHECK-NOT: nn.fill
// CHECK: return {{.*}} : tensor<2x16xf64>
// SHARDED: result #0: tensor<8x16xf64> norm-wise relative error {{[0-9]\.[0-9]{3}e[-+][0-9]+}}{{$}}
// SHARDED-NOT: rank

func.func @mlp(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
               %w1: tensor<16x32xf64> {nn.param},
               %w2: tensor<32x16xf64> {nn.param}) -> tensor<8x16xf64> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x32xf64>
  %g = nn.tanh %h : tensor<8x32xf64>
  %y = nn.matmul %g, %w2 : tensor<8x32xf64>, tensor<32x16xf64>
  %m = nn.reduce mean %y dims = [1] keep_dims : tensor<8x16xf64>
  %z = nn.sub %y, %m : tensor<8x16xf64>, tensor<8x1xf64>
  return %z : tensor<8x16xf64>
}
