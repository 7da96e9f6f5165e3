// A data-parallel training step (4 devices, batch split) through
// propagation, reshard insertion and lowering. Plain data parallelism: each
// weight gradient, a pending sum, is all-reduced before the update. ZeRO-1
// (the optimizer states laid out split by rows): each weight is sliced for
// the update (free), its gradient reduce-scattered, and the updated weight
// all-gathered back. Either lowered step computes bitwise what the
// unpartitioned one does on the interpreter (global-view collectives are
// the identity on one device).
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd momentum=0.9" > %t.step.mlir
// RUN: loom-opt %t.step.mlir --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards > %t.dp.mlir
// RUN: FileCheck %s --check-prefix=DP < %t.dp.mlir
// RUN: sed -e 's/nn.state = \([0-9]*\) : i64}/hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.state = \1 : i64}/g' %t.step.mlir \
// RUN:   | loom-opt --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards > %t.zero.mlir
// RUN: FileCheck %s --check-prefix=ZERO < %t.zero.mlir
// RUN: loom-run --interpret %t.step.mlir --entry mlp_train_step --random-inputs --seed 7 --print > %t.step.out
// RUN: loom-run --interpret %t.dp.mlir --entry mlp_train_step --random-inputs --seed 7 --print > %t.dp.out
// RUN: loom-run --interpret %t.zero.mlir --entry mlp_train_step --random-inputs --seed 7 --print > %t.zero.out
// RUN: diff %t.step.out %t.dp.out
// RUN: diff %t.step.out %t.zero.out

// DP-LABEL: func.func @mlp_train_step
// DP-NOT: hspmd.reshard
// DP-DAG: hspmd.all_reduce sum %{{.*}} over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [D:4]}>
// DP-DAG: hspmd.all_reduce sum %{{.*}} over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [D:4]}>
// DP-NOT: hspmd.reshard
// DP-NOT: hspmd.all_gather
// DP-NOT: hspmd.reduce_scatter

// ZERO-LABEL: func.func @mlp_train_step
// ZERO-NOT: hspmd.reshard
// ZERO-DAG: hspmd.local_slice %arg0 dim 0 over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [D:4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// ZERO-DAG: hspmd.local_slice %arg1 dim 0 over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [D:4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// ZERO-DAG: hspmd.reduce_scatter sum %{{.*}} dim 0 over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// ZERO-DAG: hspmd.reduce_scatter sum %{{.*}} dim 0 over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [S0:4]}>
// ZERO-DAG: hspmd.all_gather %{{.*}} dim 0 over [0] of [4] : tensor<16x32xf64> -> tensor<16x32xf64> from <{[0, 1, 2, 3]: [S0:4]}> to <{[0, 1, 2, 3]: [D:4]}>
// ZERO-DAG: hspmd.all_gather %{{.*}} dim 0 over [0] of [4] : tensor<32x4xf64> -> tensor<32x4xf64> from <{[0, 1, 2, 3]: [S0:4]}> to <{[0, 1, 2, 3]: [D:4]}>
// ZERO-NOT: hspmd.reshard
// ZERO-NOT: hspmd.all_reduce
func.func @mlp(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
               %w1: tensor<16x32xf64> {nn.param}, %w2: tensor<32x4xf64> {nn.param}) -> tensor<f64> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x32xf64>
  %g = nn.relu %h : tensor<8x32xf64>
  %y = nn.matmul %g, %w2 : tensor<8x32xf64>, tensor<32x4xf64>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<8x4xf64>
  return %l : tensor<f64>
}
