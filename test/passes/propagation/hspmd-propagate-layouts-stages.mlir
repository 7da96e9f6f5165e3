// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file | FileCheck %s
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd lr=0.01" --loom-partition-pipeline=bucket=false -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 3 --global-entry stages_train_step --random-inputs --tolerance 1e-14 --comm-stats | FileCheck %s --check-prefix=SIM

// Two pipeline stages: the first layer on group {0, 1} (its weight split by
// columns), the second on group {2}; the annotation on group {2} is the
// boundary. Each stage's part has every argument and result, those of the
// other stage empty; the activation crosses by an exchange that both parts
// have at the same point, the sending side yielding an empty tensor and
// the receiving side taking one. Group {0, 1} sends the activation as it
// holds it (split by columns): nothing is gathered first.
// CHECK-LABEL: func.func @stages_part0(
// CHECK-SAME: %arg0: tensor<8x16xf64>
// CHECK-SAME: hspmd.whole_layout = #hspmd.union<{[0, 1]: [S0:2]}>, nn.data, nn.name = "x"}
// CHECK-SAME: %arg2: tensor<0x0xf64>
// CHECK-SAME: hspmd.whole_layout = #hspmd.union<{[2]: []}>, nn.name = "w2", nn.param}
// CHECK-SAME: -> (tensor<f64>
// CHECK-SAME: hspmd.whole_layout = #hspmd.union<{[2]: []}>})
// CHECK: %[[H:.*]] = nn.gelu
// CHECK: hspmd.exchange %[[H]] shape [8, 16] : tensor<8x16xf64> -> tensor<0x0xf64> from <{[0, 1]: [S1:2]}> to <{[2]: []}>
// CHECK: %[[Z:.*]] = arith.constant {{.*}}dense<0.000000e+00> : tensor<f64>
// CHECK: return {{.*}}%[[Z]] : tensor<f64>
// CHECK-LABEL: func.func @stages_part1(
// CHECK-SAME: %arg0: tensor<0x0xf64>
// CHECK-SAME: %arg2: tensor<16x4xf64>
// CHECK: %[[E:.*]] = arith.constant {{.*}}dense<> : tensor<0x0xf64>
// CHECK: %[[X:.*]] = hspmd.exchange %[[E]] shape [8, 16] : tensor<0x0xf64> -> tensor<8x16xf64> from <{[0, 1]: [S1:2]}> to <{[2]: []}>
// CHECK: nn.matmul {{.*}}, %arg2
// The training step on 3 simulated ranks equals one device's; the
// activation crosses forward (each device of stage 0 sends its half, 512
// bytes) and its gradient backward (stage 1 sends each half, 1,024 bytes
// in all); the weights' updates stay on their stages.
// (Within 1e-14, not bitwise: the stages' GEMMs have other shapes than
// the global ones, and OpenBLAS may pick other kernels for them.)
// SIM-COUNT-5: norm-wise relative error {{[0-9]\.[0-9]{3}e[-+][0-9]+}}{{$}}
// SIM: rank 0 exchange: calls 2, bytes sent 512, received 512
// SIM: rank 1 exchange: calls 2, bytes sent 512, received 512
// SIM: rank 2 exchange: calls 2, bytes sent 1024, received 1024
func.func @stages(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                  %w1: tensor<16x16xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                  %w2: tensor<16x4xf64> {nn.param, hspmd.layout = #hspmd.union<{[2]: []}>}) -> tensor<f64> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x16xf64>
  %g = nn.gelu %h : tensor<8x16xf64>
  %ga = hspmd.annotate %g : tensor<8x16xf64> as #hspmd.union<{[2]: []}>
  %y = nn.matmul %ga, %w2 : tensor<8x16xf64>, tensor<16x4xf64>
  %l = nn.reduce mean %y dims = [0, 1] : tensor<8x4xf64>
  return %l : tensor<f64>
}
