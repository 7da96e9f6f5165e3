// RUN: loom-opt %s -split-input-file -verify-diagnostics --nn-training-step="optimizer=sgd momentum=1.5" -mlir-print-op-on-diagnostic=false
// RUN: not loom-opt %s -split-input-file --nn-training-step="optimizer=adamw beta2=1" -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Hyper-parameters are checked by the update ops' verifiers; the error is
// reported at the forward function and nothing is created.
// expected-error @+2 {{'nn.sgd_update' op momentum must be in [0, 1), got 1.5}}
// CHECK: error: 'nn.adamw_update' op beta2 must be in [0, 1), got 1
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce sum %w dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// The training step's name is taken.
// expected-error @+2 {{cannot create @g_train_step: the module already has a symbol of that name}}
// CHECK: error: cannot create @g_train_step: the module already has a symbol of that name
func.func @g(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce sum %w dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}
func.func private @g_train_step()

// -----

// The errors of autodiff apply.
func.func @h(%w: tensor<4xf32> {nn.param},
             // expected-error @+2 {{parameter #1 (%arg1) does not reach the loss}}
             // CHECK: error: parameter #1 (%arg1) does not reach the loss
             %v: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce sum %w dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}
