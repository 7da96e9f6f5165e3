// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards | FileCheck %s
// Partitioned and run on 2 simulated ranks from global scores: the slots
// and counts equal one device's exactly, and each rank gathers the other's
// 8 x 2 experts (128 bytes).
// RUN: loom-opt %s --loom-partition-pipeline -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry route_group0 --global-entry route --random-inputs --seed 4 --comm-stats | FileCheck %s --check-prefix=SIM
// SIM: result #0: tensor<16x2xi64> norm-wise relative error 0.000e+00
// SIM-NEXT: result #1: tensor<4xi64> norm-wise relative error 0.000e+00
// SIM-NEXT: rank 0 all_gather: calls 1, bytes sent 128, received 128
// SIM-NEXT: rank 1 all_gather: calls 1, bytes sent 128, received 128
// The experts tensor parallel, equal to one device's (f64): no
// communication inside the layer, the combined output a pending sum.
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry experts_group0 --global-entry experts --random-inputs --seed 4 --comm-stats | FileCheck %s --check-prefix=TP
// TP: result #0: tensor<16x8xf64> norm-wise relative error {{[0-9.]+}}e-{{1[5-9]|[2-9][0-9]}}
// TP-NOT: rank

// Routing under data parallelism: the top k of batch-split scores stays
// split (each row alone), and the routing, which counts every entry of all
// tokens, gathers the picked experts first: one all-gather of i64, and the
// slots and counts come out duplicated.
// CHECK-LABEL: func.func @route
// CHECK: nn.topk {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
// CHECK-NEXT: hspmd.all_gather %{{.*}} dim 0 over [0] of [2] : tensor<16x2xi64> -> tensor<16x2xi64>
// CHECK-NEXT: nn.moe_route {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [D:2]}>, #hspmd.union<{[0, 1]: [D:2]}>]}
// CHECK-NOT: hspmd.all_gather
// CHECK: return
func.func @route(%s: tensor<16x4xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<16x2xi64>, tensor<4xi64>) {
  %e = nn.topk %s k = 2 : tensor<16x4xf32>
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<16x2xi64>
  return %slots, %counts : tensor<16x2xi64>, tensor<4xi64>
}

// The experts tensor parallel (Megatron-style within each expert): the first
// grouped matmul's weight split on its output width, the second's (read
// transposed) on its contraction. The buffer and the counts are whole on
// both ranks; the hidden activations stay split through the gelu; the
// second matmul gives partial sums, and the combine, linear in the buffer,
// keeps them pending: the reduction, wherever it comes, moves the 16 x 8
// tokens and not the 32 x 8 buffer.
// CHECK-LABEL: func.func @experts
// CHECK: nn.moe_dispatch {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1]: [D:2]}>]
// CHECK-NEXT: nn.grouped_matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>, #hspmd.union<{[0, 1]: [S2:2]}>, #hspmd.union<{[0, 1]: [D:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]}
// CHECK-NEXT: nn.gelu {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]
// CHECK-NEXT: nn.grouped_matmul {{.*}} transpose_rhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>, #hspmd.union<{[0, 1]: [S2:2]}>, #hspmd.union<{[0, 1]: [D:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
// CHECK-NEXT: nn.moe_combine {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>, #hspmd.union<{[0, 1]: [D:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
// CHECK-NOT: hspmd.all_reduce
// CHECK: return
func.func @experts(%x: tensor<16x8xf64> {nn.data}, %s: tensor<16x4xf64> {nn.data},
                   %w1: tensor<4x8x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S2:2]}>},
                   %w2: tensor<4x8x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S2:2]}>})
    -> tensor<16x8xf64> {
  %e = nn.topk %s k = 2 : tensor<16x4xf64>
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<16x2xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 32 : tensor<16x8xf64>, tensor<16x2xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts : tensor<32x8xf64>, tensor<4x8x12xf64>, tensor<4xi64>
  %a = nn.gelu %h : tensor<32x12xf64>
  %o = nn.grouped_matmul %a, %w2, %counts transpose_rhs : tensor<32x12xf64>, tensor<4x8x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %o, %slots : tensor<32x8xf64>, tensor<16x2xi64>
  return %y : tensor<16x8xf64>
}
