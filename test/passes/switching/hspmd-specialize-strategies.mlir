// RUN: loom-opt %s --hspmd-specialize-strategies -split-input-file | FileCheck %s

// Two strategies of a step with one weight, its optimizer state (no layout
// of its own) and a data argument (no set): one function per strategy, in
// the set's order, each argument taking that strategy's layout, the state
// the optimizer strategy's ("dp") whatever the function's strategy, the
// annotation in the body its strategy's, the data argument untouched.
// CHECK-LABEL: func.func @step_tp(
// CHECK-SAME:    tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "w", nn.param}
// CHECK-SAME:    tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>, nn.name = "m", nn.state = 0 : i64}
// CHECK-SAME:    tensor<4x8xf64> {nn.data, nn.name = "x"})
// CHECK-SAME:    attributes {hspmd.strategy = "tp"}
// CHECK:         hspmd.annotate %{{.*}} as #hspmd.union<{[0, 1]: [S1:2]}>
// CHECK-LABEL: func.func @step_dp(
// CHECK-SAME:    tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>, nn.name = "w", nn.param}
// CHECK-SAME:    tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>, nn.name = "m", nn.state = 0 : i64}
// CHECK-SAME:    tensor<4x8xf64> {nn.data, nn.name = "x"})
// CHECK-SAME:    attributes {hspmd.strategy = "dp"}
// CHECK:         hspmd.annotate %{{.*}} as #hspmd.union<{[0, 1]: [S0:2]}>
// The original is gone; a function without sets stays as it is.
// CHECK-NOT:   func.func @step(
// CHECK-LABEL: func.func @plain(
// CHECK-NOT:     hspmd.strategy
// CHECK:       }
module {
  func.func @step(
      %w: tensor<8x16xf64> {nn.param, hspmd.layout = #hspmd.strategies<[
          "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">},
      %m: tensor<8x16xf64> {nn.state = 0 : i64},
      %x: tensor<4x8xf64> {nn.data}) -> tensor<4x16xf64> {
    %y = nn.matmul %x, %w : tensor<4x8xf64>, tensor<8x16xf64>
    %z = hspmd.annotate %y : tensor<4x16xf64> as #hspmd.strategies<[
        "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [S0:2]}>], optimizer = "dp">
    return %z : tensor<4x16xf64>
  }
  func.func @plain(%x: tensor<4xf64>) -> tensor<4xf64> {
    return %x : tensor<4xf64>
  }
}

// -----

// A result's set becomes the strategy's layout too.
// CHECK-LABEL: func.func @res_tp(
// CHECK-SAME:    -> (tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
// CHECK-LABEL: func.func @res_dp(
// CHECK-SAME:    -> (tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
module {
  func.func @res(
      %w: tensor<8x16xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
          "tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">})
      -> (tensor<8x16xf32> {hspmd.layout = #hspmd.strategies<[
          "tp" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1]: [D:2]}>], optimizer = "dp">}) {
    return %w : tensor<8x16xf32>
  }
}

// -----

// Optimizer state with a layout of its own keeps it; a heterogeneous mix
// (TP2 on devices 0, 1 and a single device 2, as one union) is a strategy
// like any other.
// CHECK-LABEL: func.func @mixed_mix(
// CHECK-SAME:    {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: [D:1]}>, nn.name = "w", nn.param}
// CHECK-SAME:    {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S0:3]}>, nn.name = "m", nn.state = 0 : i64}
// CHECK-SAME:    attributes {hspmd.strategy = "mix"}
// CHECK-LABEL: func.func @mixed_dp(
// CHECK-SAME:    {hspmd.layout = #hspmd.union<{[0, 1, 2]: [D:3]}>, nn.name = "w", nn.param}
// CHECK-SAME:    {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S0:3]}>, nn.name = "m", nn.state = 0 : i64}
module {
  func.func @mixed(
      %w: tensor<8x16xf32> {nn.param, hspmd.layout = #hspmd.strategies<[
          "mix" = <replicated: {[0, 1]: [S1:2]}, {[2]: [D:1]}>,
          "dp" = <{[0, 1, 2]: [D:3]}>], optimizer = "dp">},
      %m: tensor<8x16xf32> {nn.state = 0 : i64, hspmd.layout = #hspmd.union<{[0, 1, 2]: [S0:3]}>}) {
    return
  }
}
