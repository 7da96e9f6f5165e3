// loom-run --train on a two-layer GELU MLP regressing the affine data task
// (t = x A + c): the training pipeline builds the SGD step, loom-run runs it
// for 200 steps and the last loss is below half the first.
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd lr=0.1 momentum=0.9" -o %t.step.mlir
// RUN: loom-run --interpret %t.step.mlir --train --steps 200 --seed 5 > %t.log
// RUN: FileCheck %s < %t.log
// RUN: %python %S/train_loss_check.py %t.log --steps 200 --ratio 0.5
// RUN: loom-run --interpret %t.step.mlir --train --steps 3 --seed 5 --output-dir %t.params
// RUN: ls %t.params | FileCheck %s --check-prefix=PARAMS
// Parameters loaded back with --init-npy are used as given.
// RUN: loom-run --interpret %t.step.mlir --train --steps 1 --seed 5 --init-npy %t.params --json | FileCheck %s --check-prefix=JSON

// CHECK: step 1 loss {{[0-9.e+-]+}} tokens/s {{[0-9.]+}} flop/s {{[0-9.e+-]+}}
// CHECK: step 200 loss
// PARAMS: param_0.npy
// PARAMS: param_3.npy
// JSON: {"step":1,"loss":{{[0-9.e+-]+}},"tokens":{{[0-9]+}},"tokens_per_s":{{[0-9.]+}},"flops_per_s":{{[0-9.e+-]+}}}

func.func @mlp(%x: tensor<16x4xf32> {nn.data}, %t: tensor<16x2xf32> {nn.data},
               %w1: tensor<4x16xf32> {nn.param}, %b1: tensor<16xf32> {nn.param},
               %w2: tensor<16x2xf32> {nn.param}, %b2: tensor<2xf32> {nn.param})
    -> tensor<f32> {
  %h = nn.matmul %x, %w1 : tensor<16x4xf32>, tensor<4x16xf32>
  %hb = nn.add %h, %b1 : tensor<16x16xf32>, tensor<16xf32>
  %g = nn.gelu %hb : tensor<16x16xf32>
  %y = nn.matmul %g, %w2 : tensor<16x16xf32>, tensor<16x2xf32>
  %yb = nn.add %y, %b2 : tensor<16x2xf32>, tensor<2xf32>
  %d = nn.sub %yb, %t : tensor<16x2xf32>, tensor<16x2xf32>
  %s = nn.mul %d, %d : tensor<16x2xf32>, tensor<16x2xf32>
  %l = nn.reduce mean %s dims = [0, 1] : tensor<16x2xf32>
  return %l : tensor<f32>
}
