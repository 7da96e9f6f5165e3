// RUN: not loom-opt %s --nn-autodiff -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: not loom-opt %s --nn-autodiff=func=missing 2>&1 | FileCheck %s --check-prefix=MISSING

// Diagnostics name a parameter by its argument number and SSA name; a
// frontend that gives arguments named locations (`loc("w1")`) gets those
// names. Every parameter that does not reach the loss is reported.

// CHECK: error: loc("w1"): parameter #1 (%w1) does not reach the loss
// CHECK: error: loc("w2"): parameter #2 (%w2) does not reach the loss
func.func @f(%x: tensor<4xf32> {nn.data},
             %w1: tensor<4xf32> {nn.param} loc("w1"),
             %w2: tensor<4xf32> {nn.param} loc("w2")) -> tensor<f32> {
  %0 = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}

// A function named by the option must exist.
// MISSING: error: no function named @missing
