// RUN: loom-opt %s --hspmd-select-shares=alignment=8 -split-input-file -verify-diagnostics

// No cluster to read speeds and memories from.
func.func @no_cluster(%x: tensor<64x8xf32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{splits across device groups but the module has no hspmd.cluster to choose shares from}}
  %0 = hspmd.annotate %x : tensor<64x8xf32> as #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<64x8xf32>
}

// -----

// A dimension that is not a multiple of the alignment.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "a", speed = 1.0, mem = 16, node = 0>,
    #hspmd.device<1, "a", speed = 1.0, mem = 16, node = 0>]>} {
  func.func @alignment(%x: tensor<12x8xf32>) -> tensor<12x8xf32> {
    // expected-error @+1 {{cannot choose shares for dimension 0 of 'tensor<12x8xf32>': }}
    %0 = hspmd.annotate %x : tensor<12x8xf32> as #hspmd.union<split(0) shares [1, 1]: {[0]: []}, {[1]: []}>
    return %0 : tensor<12x8xf32>
  }
}

// -----

// Splits of dimensions of different sizes in one function.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "a", speed = 1.0, mem = 16, node = 0>,
    #hspmd.device<1, "a", speed = 1.0, mem = 16, node = 0>]>} {
  // expected-note @+1 {{first split here}}
  func.func @sizes(%x: tensor<16x8xf32> {hspmd.layout = #hspmd.union<split(0) shares [1, 1]: {[0]: []}, {[1]: []}>},
                   %y: tensor<32x8xf32>) -> tensor<32x8xf32> {
    // expected-error @+1 {{splits other groups or a dimension of another size than}}
    %0 = hspmd.annotate %y : tensor<32x8xf32> as #hspmd.union<split(0) shares [1, 1]: {[0]: []}, {[1]: []}>
    return %0 : tensor<32x8xf32>
  }
}
