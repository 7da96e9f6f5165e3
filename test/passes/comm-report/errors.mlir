// RUN: loom-opt %s -split-input-file --hspmd-comm-report -verify-diagnostics -o /dev/null

func.func @global_view(%x: tensor<8xf64>) -> tensor<8xf64> attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  // expected-error @+1 {{is in the global view; the report counts local-view functions (run --hspmd-specialize first)}}
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<8xf64> -> tensor<8xf64>
      from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return %y : tensor<8xf64>
}

// -----

func.func @mesh(%x: tensor<8xf64>) -> tensor<8xf64> attributes {hspmd.group = #hspmd.group<[0, 1, 2]>} {
  // expected-error @+1 {{runs over a mesh of 2 devices in a function of a group of 3}}
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<8xf64> -> tensor<8xf64>
  return %y : tensor<8xf64>
}
