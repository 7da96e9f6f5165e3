// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// The mixture-of-experts ops: the router's top k and the routing of each
// (token, choice) entry to its row of the expert-ordered buffer; result
// types inferred.

// CHECK-LABEL: func.func @router
func.func @router(%scores: tensor<16x4xf32>, %batched: tensor<2x8x6xf64>)
    -> (tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xi64>, tensor<2x8x6xi64>) {
  // CHECK: nn.topk %{{.*}} k = 2 : tensor<16x4xf32>
  %experts = nn.topk %scores k = 2 : tensor<16x4xf32>
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 : tensor<16x2xi64>
  %slots, %counts = nn.moe_route %experts num_experts = 4 : tensor<16x2xi64>
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 capacity = 6 : tensor<16x2xi64>
  %capped, %kept = nn.moe_route %experts num_experts = 4 capacity = 6
      : tensor<16x2xi64>
  // CHECK: nn.topk %{{.*}} k = 6 : tensor<2x8x6xf64>
  %all = nn.topk %batched k = 6 : tensor<2x8x6xf64>
  return %experts, %capped, %kept, %all
      : tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xi64>, tensor<2x8x6xi64>
}
