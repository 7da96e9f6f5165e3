// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// The role attributes of a training step's arguments and results: what
// nn-training-step creates and a driver reads to feed each result into the
// next step's arguments.

// CHECK-LABEL: func.func @step
// CHECK-SAME: {nn.name = "w", nn.param}
// CHECK-SAME: {nn.name = "m", nn.state = 0 : i64}
// CHECK-SAME: {nn.name = "step", nn.step}
// CHECK-SAME: {nn.data, nn.name = "x"}
// CHECK-SAME: -> (tensor<f32> {nn.loss}, tensor<4xf32> {nn.updates = 0 : i64}, tensor<4xf32> {nn.updates = 1 : i64})
func.func @step(%w: tensor<4xf32> {nn.param},
                %m: tensor<4xf32> {nn.state = 0 : i64},
                %step: tensor<i64> {nn.step},
                %x: tensor<4xf32> {nn.data})
    -> (tensor<f32> {nn.loss}, tensor<4xf32> {nn.updates = 0 : i64},
        tensor<4xf32> {nn.updates = 1 : i64}) {
  %0 = nn.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %1 = nn.reduce sum %0 dims = [0] : tensor<4xf32>
  return %1, %w, %m : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
