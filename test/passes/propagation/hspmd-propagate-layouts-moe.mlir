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
