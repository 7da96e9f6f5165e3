// RUN: loom-opt %s --loom-lower-to-calls=entry=step -split-input-file -verify-diagnostics

// Dynamic shapes have no static buffer.
// expected-error@+1 {{argument #0 of @step has type 'tensor<?x4xf32>'; code generation needs static tensors of f32, f64, i64, i32 or i1}}
func.func @step(%x: tensor<?x4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0, 1] : tensor<?x4xf32>
  return %l : tensor<f32>
}

// -----

// bf16 has no host kernels.
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  // expected-error@+1 {{result #0 has type 'tensor<4xbf16>'; code generation needs static tensors of f32, f64, i64, i32 or i1}}
  %y = nn.cast %x : tensor<4xf32> to tensor<4xbf16>
  %z = nn.cast %y : tensor<4xbf16> to tensor<4xf32>
  %l = nn.reduce sum %z dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// An op the call layer has no lowering for (an abstract reshard: lower
// reshards first).
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  // expected-error@+1 {{'hspmd.reshard' op has no lowering to the call layer}}
  %y = hspmd.reshard %x : tensor<4xf32> from #hspmd.union<{[0]: []}> to #hspmd.union<{[0]: []}>
  %l = nn.reduce sum %y dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// A collective over a mesh of more axes than the runtimes take (a mesh,
// its axes and a permute's lists go to them as shapes of at most 8).
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  // expected-error@+1 {{'hspmd.permute' op runs over a mesh of 9 axes; the runtimes take at most 8}}
  %y = hspmd.permute %x perm [1, 0] over [0, 1] of [1, 1, 1, 1, 1, 1, 1, 1, 1] : tensor<4xf32> -> tensor<4xf32>
  %l = nn.reduce sum %y dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// Constants other than splats.
func.func @step(%x: tensor<2xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  // expected-error@+1 {{code generation supports splat tensor constants only}}
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = nn.add %x, %c : tensor<2xf32>, tensor<2xf32>
  %l = nn.reduce sum %y dims = [0] : tensor<2xf32>
  return %l : tensor<f32>
}

// -----

// A collective over a mesh that is not its group.
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
func.func @step_group0(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss})
    attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @step} {
  // expected-error@+1 {{'hspmd.all_reduce' op runs over a mesh of 4 devices but its group has 2}}
  %y = hspmd.all_reduce sum %x over [0] of [4] : tensor<4xf32> -> tensor<4xf32>
  %l = nn.reduce sum %y dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// No such entry.
// expected-error@+1 {{no function @step to lower}}
module {
  func.func @other(%x: tensor<4xf32> {nn.data}) -> tensor<f32> {
    %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
    return %l : tensor<f32>
  }
}

// -----

// Two programs claim one device.
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
func.func @step_group0(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss})
    attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @step} {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
// expected-error@+1 {{device 1 is in the groups of two programs of @step (merge overlapping groups first)}}
func.func @step_group1(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss})
    attributes {hspmd.group = #hspmd.group<[1, 2]>, hspmd.specializes = @step} {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// Collectives of element types the runtimes do not move.
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
func.func @step_group0(%x: tensor<4xi32> {nn.data}) -> (tensor<f32> {nn.loss})
    attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @step} {
  // expected-error@+1 {{'hspmd.all_reduce' op moves 'i32' elements; the runtimes' collectives move f32, f64 and i64 (cast before and after)}}
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<4xi32> -> tensor<4xi32>
  %z = nn.cast %y : tensor<4xi32> to tensor<4xf32>
  %l = nn.reduce sum %z dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
