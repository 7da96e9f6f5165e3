// RUN: loom-opt %s -split-input-file --hspmd-expert-blocks -verify-diagnostics

// A buffer that leaves the function cannot be resized.
func.func @returned(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                    %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<16x16xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  // expected-error @+1 {{'func.return' op uses the buffer of an nn.moe_route whose experts are split, which expert blocks resize (blocks move its rows); only element-wise ops, casts, grouped matmuls, combines and slot dot products may use it}}
  return %buf : tensor<16x16xf32>
}

// -----

// A route over dynamic tokens has no static block size.
func.func @dynamic(%x: tensor<?x16xf32>, %e: tensor<?x2xi64>,
                   %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<16x12xf32> {
  // expected-error @+1 {{needs static tokens and choices for expert blocks (its experts' weights are split 2 ways)}}
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<?x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<?x16xf32>, tensor<?x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  return %h : tensor<16x12xf32>
}

// -----

// A slice of the buffer would read other rows once the blocks move them.
func.func @slice(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                 %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  // expected-error @+1 {{'nn.slice' op uses the buffer of an nn.moe_route whose experts are split}}
  %s = nn.slice %h offsets = [8, 0] sizes = [8, 12] strides = [1, 1] : tensor<16x12xf32>
  return %s : tensor<8x12xf32>
}

// -----

// A mean over the buffer's rows would count the blocks' unused rows.
func.func @mean(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<12xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  // expected-error @+1 {{'nn.reduce' op uses the buffer of an nn.moe_route}}
  %m = nn.reduce mean %h dims = [0] : tensor<16x12xf32>
  return %m : tensor<12xf32>
}

// -----

// The slots themselves change: they may not leave the layer.
func.func @slots(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                 %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x2xi64> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  // expected-error @+1 {{'func.return' op uses the slots of an nn.moe_route whose experts are split}}
  return %slots : tensor<8x2xi64>
}

// -----

// An element-wise op that mixes the buffer with another tensor of its rows.
func.func @mixed(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>, %other: tensor<16x12xf32>,
                 %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  // expected-error @+1 {{'nn.add' op combines the buffer with a tensor of its rows that is not}}
  %a = nn.add %h, %other : tensor<16x12xf32>, tensor<16x12xf32>
  %y = nn.moe_combine %a, %slots : tensor<16x12xf32>, tensor<8x2xi64>
  return %y : tensor<8x12xf32>
}
