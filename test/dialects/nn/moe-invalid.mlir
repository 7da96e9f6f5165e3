// RUN: loom-opt %s -split-input-file -verify-diagnostics

// topk: k beyond the last dimension.
func.func @topk_too_many(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{k = 4 must be in [1, 3] (the size of the last dimension)}}
  %0 = nn.topk %x k = 4 : tensor<4x3xf32>
  return
}

// -----

// topk: k must be positive.
func.func @topk_zero(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{k = 0 must be in [1, 3]}}
  %0 = nn.topk %x k = 0 : tensor<4x3xf32>
  return
}

// -----

// topk: a scalar has no last dimension.
func.func @topk_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{needs an input of rank at least 1}}
  %0 = nn.topk %x k = 1 : tensor<f32>
  return
}

// -----

// topk: scores are floats.
func.func @topk_int(%x: tensor<4x3xi64>) {
  // expected-error @+1 {{'nn.topk' op operand #0 must be float tensor (f32, f64 or bf16), but got 'tensor<4x3xi64>'}}
  %0 = nn.topk %x k = 1 : tensor<4x3xi64>
  return
}

// -----

// moe_route: experts are tokens x choices.
func.func @route_rank(%e: tensor<16xi64>) {
  // expected-error @+1 {{needs experts of rank 2 (tokens x choices)}}
  %0, %1 = nn.moe_route %e num_experts = 4 : tensor<16xi64>
  return
}

// -----

func.func @route_experts(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{num_experts = 0 must be positive}}
  %0, %1 = nn.moe_route %e num_experts = 0 : tensor<16x2xi64>
  return
}

// -----

func.func @route_capacity(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{capacity = 0 must be positive (leave it out for no capacity)}}
  %0, %1 = nn.moe_route %e num_experts = 4 capacity = 0 : tensor<16x2xi64>
  return
}
