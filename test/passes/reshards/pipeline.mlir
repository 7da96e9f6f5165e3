// Propagation, reshard insertion and lowering together: the lowered
// program is in the global view, so the single-device interpreter still
// computes the original function.
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards | FileCheck %s
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards > %t.mlir
// RUN: loom-run --interpret %t.mlir --entry megatron --random-inputs --seed 3 --print > %t.lowered
// RUN: loom-run --interpret %s --entry megatron --random-inputs --seed 3 --print > %t.original
// RUN: diff %t.original %t.lowered
// RUN: FileCheck %s --check-prefix=VALUES < %t.lowered
// VALUES: result #0: tensor<8x16xf64> = {{\[\[}}

// Megatron MLP on 2 devices with a duplicated result: the row-parallel
// output's pending sum becomes one all-reduce in front of the return.
// CHECK-LABEL: func.func @megatron
// CHECK: %[[Y:.*]] = nn.matmul {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]
// CHECK: %[[R:.*]] = hspmd.all_reduce sum %[[Y]] over [0] of [2] : tensor<8x16xf64> -> tensor<8x16xf64> from <{[0, 1]: [P(sum):2]}> to <{[0, 1]: [D:2]}>
// CHECK-NOT: hspmd.reshard
// CHECK: return {{.*}} %[[R]]
func.func @megatron(%x: tensor<8x16xf64> {nn.data},
    %w1: tensor<16x32xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w2: tensor<32x16xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>}) {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x32xf64>
  %g = nn.gelu %h : tensor<8x32xf64>
  %y = nn.matmul %g, %w2 : tensor<8x32xf64>, tensor<32x16xf64>
  return %y : tensor<8x16xf64>
}
