// RUN: loom-opt %s --hspmd-insert-reshards -split-input-file -verify-diagnostics

// An op of a laid-out function without operand layouts: propagation has
// not run.
func.func @no_operand_layouts(%x: tensor<8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<8xf32> {
  // expected-error @+1 {{has no hspmd.operand_layouts; run hspmd-propagate-layouts before hspmd-insert-reshards}}
  %0 = nn.gelu %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// An operand whose producer has no layout.
func.func @no_producer_layout(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{argument #0 of @no_producer_layout has no hspmd.layout; run hspmd-propagate-layouts before hspmd-insert-reshards}}
  %0 = nn.gelu %x {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Strategy sets are graph switching's business.
func.func @strategy_set(%x: tensor<8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<8xf32> {
  // expected-error @+1 {{annotates a strategy set; reshard insertion handles unions (graph switching handles strategy sets)}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.strategies<["a" = <{[0, 1]: [S0:2]}>], optimizer = "a">
  return %0 : tensor<8xf32>
}
