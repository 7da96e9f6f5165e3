// RUN: loom-opt %s --loom-lower-to-calls=entry=step --loom-emit-ascend -split-input-file -verify-diagnostics

// Ascend hardware has no f64: the ops' Ascend kernels take no f64 (their
// kernel contracts' ascendKernelTypes), reported at each op once per op and
// element type.
func.func @step(%x: tensor<4xf64> {nn.data}) -> (tensor<f64> {nn.loss}) {
  // expected-error@+1 {{the ascend target has no kernel for nn.exp on f64 (its kernels take f32); Ascend hardware has no f64 (aclnnMatmul and HCCL's reductions take f32, f16 and bf16 on Atlas A2/A3): build the model in f32}}
  %y = nn.exp %x : tensor<4xf64>
  %z = nn.exp %y : tensor<4xf64>
  // expected-error@+1 {{the ascend target has no kernel for nn.reduce on f64 (its kernels take f32)}}
  %l = nn.reduce sum %z dims = [0] : tensor<4xf64>
  return %l : tensor<f64>
}

// -----

// Data movement has kernels for integers and i1 too, but not for f64.
func.func @step(%x: tensor<4xf64> {nn.data}, %i: tensor<2x3xi32> {nn.data})
    -> (tensor<f32> {nn.loss}, tensor<3x2xi32>) {
  %t = nn.transpose %i permutation = [1, 0] : tensor<2x3xi32>
  // expected-error@+1 {{the ascend target has no kernel for nn.cast on f64 (its kernels take f32, i32, i64, i1)}}
  %c = nn.cast %x : tensor<4xf64> to tensor<4xf32>
  %l = nn.reduce sum %c dims = [0] : tensor<4xf32>
  return %l, %t : tensor<f32>, tensor<3x2xi32>
}

// -----

// HCCL reduces no f64: the first collective on f64 is reported.
module {
  func.func @step(%x: tensor<2xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
    %l = nn.reduce sum %x dims = [0] : tensor<2xf32>
    return %l : tensor<f32>
  }
  func.func @step_group0(%x: tensor<2xf32> {nn.data}) -> (tensor<f32> {nn.loss})
      attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @step} {
    %d = nn.cast %x : tensor<2xf32> to tensor<2xf64>
    // expected-error@+1 {{the Ascend target has no f64 collectives (HCCL's reductions take f32, f16 and bf16 on Atlas A2/A3); build the model in f32}}
    %s = hspmd.all_reduce sum %d over [0] of [2] : tensor<2xf64> -> tensor<2xf64>
    %f = nn.cast %s : tensor<2xf64> to tensor<2xf32>
    %l = nn.reduce sum %f dims = [0] : tensor<2xf32>
    return %l : tensor<f32>
  }
}

// -----

// The mixture-of-experts ops have Ascend kernels in f32 only (docs/moe.md,
// "Targets"); the integer routing ops take i64 on every target.
func.func @step(%s: tensor<16x4xf64> {nn.data}, %x: tensor<16x8xf64> {nn.data},
                %counts: tensor<4xi64> {nn.data}, %w1: tensor<4x8x8xf64> {nn.data})
    -> (tensor<16x2xi64>, tensor<4xi64>, tensor<32x8xf64>) {
  // expected-error@+1 {{the ascend target has no kernel for nn.topk on f64 (its kernels take f32)}}
  %e = nn.topk %s k = 2 : tensor<16x4xf64>
  %slots, %c = nn.moe_route %e num_experts = 4 : tensor<16x2xi64>
  // expected-error@+1 {{the ascend target has no kernel for nn.moe_dispatch on f64 (its kernels take f32)}}
  %buffer = nn.moe_dispatch %x, %slots rows = 32 : tensor<16x8xf64>, tensor<16x2xi64>
  // expected-error@+1 {{the ascend target has no kernel for nn.grouped_matmul on f64 (its kernels take f32)}}
  %h = nn.grouped_matmul %buffer, %w1, %counts : tensor<32x8xf64>, tensor<4x8x8xf64>, tensor<4xi64>
  return %slots, %c, %h : tensor<16x2xi64>, tensor<4xi64>, tensor<32x8xf64>
}
