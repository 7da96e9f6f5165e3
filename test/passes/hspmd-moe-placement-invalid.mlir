// RUN: loom-opt %s -split-input-file --hspmd-expert-blocks --hspmd-moe-placement -verify-diagnostics

// A forecast of the wrong element type.
// expected-error @+1 {{has a forecast of type 'tensor<1x1x4xf32>'; it must be tensor<rows x layers x experts x i64> with static layers and experts}}
func.func @f32_forecast(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                        %forecast: tensor<1x1x4xf32> {nn.data, nn.moe_forecast},
                        %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf64> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// Two layers forecast, one in the program.
// expected-error @+1 {{has a forecast of 2 layers but 1 expert-parallel MoE layers (routes with expert blocks)}}
func.func @layers(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                  %forecast: tensor<1x2x4xi64> {nn.data, nn.moe_forecast},
                  %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf64> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// A forecast of 8 experts for a layer of 4.
func.func @experts(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                   %forecast: tensor<1x1x8xi64> {nn.data, nn.moe_forecast},
                   %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf64> {
  // expected-error @+1 {{has 4 experts but its layer (0) of the forecast 'tensor<1x1x8xi64>' has 8}}
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// A capacity drops entries: the blocks' rows would change with the slots.
func.func @capacity(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                    %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast},
                    %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf64> {
  // expected-error @+1 {{has a capacity; placement per micro-step needs a dropless route}}
  %slots, %counts = nn.moe_route %e num_experts = 4 capacity = 3 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 12 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<12x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<12x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// One slot a device cannot hold 4 experts on 2 devices.
func.func @slots(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                 %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast = 1 : i64},
                 %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf64> {
  // expected-error @+1 {{cannot place its 4 experts on 2 devices of 1 slots}}
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// 4 experts split 3 + 1 over two devices: the blocks are single experts,
// not one block a device.
func.func @uneven(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                  %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast},
                  %w1: tensor<4x16x12xf64> {nn.param})
    -> tensor<8x12xf64> {
  %wa = hspmd.annotate %w1 : tensor<4x16x12xf64> as #hspmd.union<{[0, 1]: [S0:[3, 1]]}>
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  // expected-error @+1 {{has an expert weight 'tensor<4x16x12xf64>' whose layout does not give device 0 one block of 1 experts; placement per micro-step needs the experts split evenly}}
  %h = nn.grouped_matmul %buf, %wa, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// A marked argument whose value is not a slot count.
// expected-error @+1 {{argument #0 attribute 'nn.moe_forecast' must be a positive integer (replica slots a device) or unit, got "three"}}
func.func @attr(%forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast = "three"}) {
  return
}

// -----

// A differentiated program (blocks already written): its weight
// gradients read the counts too.
func.func @differentiated(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>, %dy: tensor<32x12xf64>,
                          %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast},
                          %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<32x12xf64>, tensor<4x16x12xf64>) {
  %slots, %counts = nn.moe_route %e num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 32 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts blocks = 2 : tensor<32x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  // expected-error @+1 {{reads the counts of a route to be placed; placement per micro-step runs before autodiff (in loom-training-pipeline)}}
  %dw = nn.grouped_matmul_grad %buf, %dy, %counts blocks = 2 : tensor<32x16xf64>, tensor<32x12xf64>, tensor<4xi64>
  return %h, %dw : tensor<32x12xf64>, tensor<4x16x12xf64>
}

// -----

// More replica slots a device than experts.
func.func @many_slots(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                      %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast = 5 : i64},
                      %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x12xf64> {
  // expected-error @+1 {{would give each of its 2 devices 5 replica slots, more than its 4 experts}}
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}

// -----

// Expert weights laid out by a strategy set: a plan's devices would be one
// strategy's.
func.func @strategies(%x: tensor<8x16xf64>, %e: tensor<8x2xi64>,
                      %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast},
                      %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.strategies<["ep" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "ep">})
    -> tensor<8x12xf64> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  // expected-error @+1 {{has an expert weight laid out by a strategy set: placement per micro-step under strategy sets is not supported yet}}
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf64>, tensor<8x2xi64>
  return %y : tensor<8x12xf64>
}
