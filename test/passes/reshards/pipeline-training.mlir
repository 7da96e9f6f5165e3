// A data-parallel training step (4 devices, batch split) through
// propagation, reshard insertion and lowering: ZeRO-1 style, each weight is
// sliced for the update (free), each weight gradient, a pending sum, is
// reduce-scattered, and the updated weight is all-gathered back. The
// lowered step computes bitwise what the unpartitioned one does on the
// interpreter (global-view collectives are the identity on one device).
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd momentum=0.9" --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards > %t.lowered.mlir
// RUN: FileCheck %s < %t.lowered.mlir
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd momentum=0.9" > %t.step.mlir
// RUN: loom-run --interpret %t.step.mlir --entry mlp_train_step --random-inputs --seed 7 --print > %t.step.out
// RUN: loom-run --interpret %t.lowered.mlir --entry mlp_train_step --random-inputs --seed 7 --print > %t.lowered.out
// RUN: diff %t.step.out %t.lowered.out

// CHECK-LABEL: func.func @mlp_train_step
// CHECK-NOT: hspmd.reshard
// CHECK-DAG: hspmd.local_slice %arg0 dim 0 over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [D:4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// CHECK-DAG: hspmd.local_slice %arg1 dim 0 over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [D:4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// CHECK-DAG: hspmd.reduce_scatter sum %{{.*}} dim 0 over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// CHECK-DAG: hspmd.reduce_scatter sum %{{.*}} dim 0 over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// CHECK-DAG: hspmd.all_gather %{{.*}} dim 0 over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [S0:4]}> to <{[0, 1, 2, 3]: [D:4]}>
// CHECK-DAG: hspmd.all_gather %{{.*}} dim 0 over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [S0:4]}> to <{[0, 1, 2, 3]: [D:4]}>
// CHECK-NOT: hspmd.reshard
func.func @mlp(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
               %w1: tensor<16x32xf64> {nn.param}, %w2: tensor<32x4xf64> {nn.param}) -> tensor<f64> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x32xf64>
  %g = nn.relu %h : tensor<8x32xf64>
  %y = nn.matmul %g, %w2 : tensor<8x32xf64>, tensor<32x4xf64>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<8x4xf64>
  return %l : tensor<f64>
}
