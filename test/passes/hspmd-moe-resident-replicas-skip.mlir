// hspmd-moe-resident-replicas leaves a weight alone where keeping its
// replicas would be wrong or its ops do not line up with the plans:
// lookups of different weights in the two micro-steps (here the second
// reads the weights doubled), or a lookup of one micro-step missing.
// Nothing changes: no plan takes a previous lookup.
// RUN: loom-opt %s --hspmd-moe-resident-replicas | FileCheck %s

// CHECK-LABEL: func.func @other_weights
// CHECK-NOT: previous
// CHECK-NOT: nn.compare
// CHECK: return
func.func @other_weights(%f0: tensor<4x1x4xi64>, %f1: tensor<4x1x4xi64>,
                         %w: tensor<4x2x3xf64>) -> (tensor<6x2x3xf64>, tensor<6x2x3xf64>) {
  %h0, %l0 = nn.moe_plan %f0 layer = 0 devices = 2 slots = 3 : tensor<4x1x4xi64>
  %r0 = nn.embedding %w, %l0 {nn.moe_replicas = 0 : i64} : tensor<4x2x3xf64>, tensor<6xi64>
  %two = nn.fill 2.0 : tensor<f64>
  %w2 = nn.mul %w, %two : tensor<4x2x3xf64>, tensor<f64>
  %h1, %l1 = nn.moe_plan %f1 layer = 0 devices = 2 slots = 3 : tensor<4x1x4xi64>
  %r1 = nn.embedding %w2, %l1 {nn.moe_replicas = 0 : i64} : tensor<4x2x3xf64>, tensor<6xi64>
  return %r0, %r1 : tensor<6x2x3xf64>, tensor<6x2x3xf64>
}

// CHECK-LABEL: func.func @missing_lookup
// CHECK-NOT: previous
// CHECK-NOT: nn.compare
// CHECK: return
func.func @missing_lookup(%f0: tensor<4x1x4xi64>, %f1: tensor<4x1x4xi64>,
                          %w: tensor<4x2x3xf64>) -> (tensor<6x2x3xf64>, tensor<6xi64>) {
  %h0, %l0 = nn.moe_plan %f0 layer = 0 devices = 2 slots = 3 : tensor<4x1x4xi64>
  %r0 = nn.embedding %w, %l0 {nn.moe_replicas = 0 : i64} : tensor<4x2x3xf64>, tensor<6xi64>
  %h1, %l1 = nn.moe_plan %f1 layer = 0 devices = 2 slots = 3 : tensor<4x1x4xi64>
  return %r0, %l1 : tensor<6x2x3xf64>, tensor<6xi64>
}

// The same weights in both micro-steps: kept (for contrast).
// CHECK-LABEL: func.func @same_weights
// CHECK: nn.moe_plan %{{.*}} previous
// CHECK: nn.compare eq
// CHECK: return
func.func @same_weights(%f0: tensor<4x1x4xi64>, %f1: tensor<4x1x4xi64>,
                        %w: tensor<4x2x3xf64>) -> (tensor<6x2x3xf64>, tensor<6x2x3xf64>) {
  %h0, %l0 = nn.moe_plan %f0 layer = 0 devices = 2 slots = 3 : tensor<4x1x4xi64>
  %r0 = nn.embedding %w, %l0 {nn.moe_replicas = 0 : i64} : tensor<4x2x3xf64>, tensor<6xi64>
  %h1, %l1 = nn.moe_plan %f1 layer = 0 devices = 2 slots = 3 : tensor<4x1x4xi64>
  %r1 = nn.embedding %w, %l1 {nn.moe_replicas = 0 : i64} : tensor<4x2x3xf64>, tensor<6xi64>
  return %r0, %r1 : tensor<6x2x3xf64>, tensor<6x2x3xf64>
}
