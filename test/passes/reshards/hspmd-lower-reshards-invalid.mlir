// RUN: loom-opt %s --hspmd-lower-reshards -split-input-file -verify-diagnostics

// A reshard can make a partial sum locally, but not turn one reduction
// into another.
func.func @other_reduction(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{the target holds a pending reduction P(max) on mesh axis 0 of [2] where the source has P(sum)}}
  %y = hspmd.reshard %x : tensor<8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [P(max):2]}>
  return %y : tensor<8xf32>
}

// -----

// Collectives need a static shape.
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{cannot lower a reshard of 'tensor<?x8xf32>': collectives need a static shape}}
  %y = hspmd.reshard %x : tensor<?x8xf32> from #hspmd.union<{[0, 1]: [S1:2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return %y : tensor<?x8xf32>
}

// -----

// Partial sums are not made of blocks of unequal size (an exchange makes
// complete values only).
func.func @uneven_to_partial(%x: tensor<8x4xf64>) -> tensor<8x4xf64> {
  // expected-error @+1 {{the target holds partial sums and a tensor cut into blocks of unequal size; an exchange makes complete values only}}
  %y = hspmd.reshard %x : tensor<8x4xf64> from #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, D:2]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, P(sum):2]}>
  return %y : tensor<8x4xf64>
}
