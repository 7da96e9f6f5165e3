// In a program that merges several groups' ops (pipeline stages on
// overlapping groups), collectives over different groups never share a
// bucket, even with the same mesh: device 0 belongs to {0, 1} and to
// {0, 2}; its two all-reduces over [2] stay apart, the two over {0, 1} join.
// RUN: loom-opt %s --hspmd-bucket-gradients | FileCheck %s
// (The input has no nn op: the pass loads the nn dialect for the buffers it
// builds; it used to crash here.)
// CHECK-LABEL: func.func @cell(
// CHECK: hspmd.all_reduce sum %arg1 over [0] of [2] : tensor<4xf64> -> tensor<4xf64> {hspmd.group = #hspmd.group<[0, 2]>}
// CHECK: hspmd.all_reduce sum %{{.*}} over [0] of [2] : tensor<1x8xf64> -> tensor<1x8xf64> {hspmd.group = #hspmd.group<[0, 1]>}
// CHECK-NOT: hspmd.all_reduce
func.func @cell(%a: tensor<4xf64>, %b: tensor<4xf64>, %c: tensor<4xf64>)
    -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>)
    attributes {hspmd.group = #hspmd.group<[0]>} {
  %0 = hspmd.all_reduce sum %a over [0] of [2] : tensor<4xf64> -> tensor<4xf64> {hspmd.group = #hspmd.group<[0, 1]>}
  %1 = hspmd.all_reduce sum %b over [0] of [2] : tensor<4xf64> -> tensor<4xf64> {hspmd.group = #hspmd.group<[0, 2]>}
  %2 = hspmd.all_reduce sum %c over [0] of [2] : tensor<4xf64> -> tensor<4xf64> {hspmd.group = #hspmd.group<[0, 1]>}
  return %0, %1, %2 : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}
