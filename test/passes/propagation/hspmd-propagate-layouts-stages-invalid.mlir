// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file -verify-diagnostics

// A pipeline boundary whose layout the tensor cannot take.
func.func @boundary(%x: tensor<3x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<3x4xf32> {
  // expected-error @+1 {{a dimension of size 3 cannot be split 4 ways (S0:4) without an empty block}}
  %0 = hspmd.annotate %x : tensor<3x4xf32> as #hspmd.union<{[2, 3, 4, 5]: [S0:4]}>
  return %0 : tensor<3x4xf32>
}

// -----

// A tensor of dynamic shape read by another stage: exchanges move static
// tensors.
func.func @dynamic(%x: tensor<?x4xf32> {hspmd.layout = #hspmd.union<{[0]: []}>},
                   %y: tensor<4x4xf32> {hspmd.layout = #hspmd.union<{[1]: []}>}) -> tensor<?x4xf32> {
  %0 = nn.exp %x : tensor<?x4xf32>
  %1 = hspmd.annotate %y : tensor<4x4xf32> as #hspmd.union<{[1]: []}>
  // expected-error @+1 {{uses a value of type 'tensor<?x4xf32>' computed on another pipeline stage; only static tensors and constants cross stages}}
  %2 = hspmd.reshard %0 : tensor<?x4xf32> from #hspmd.union<{[1]: []}> to #hspmd.union<{[1]: []}>
  return %2 : tensor<?x4xf32>
}
