// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize --loom-lower-to-calls=entry=step --loom-emit-cluster -split-input-file -verify-diagnostics

// A device kind no target runs.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "tpu-v5", speed = 1.0, mem = 16, node = 0>]>} {
// expected-error@+1 {{device 0 is of kind 'tpu-v5', which no target runs (known: cpu, NVIDIA GPUs such as h100, h200, a100 for cuda, Ascend NPUs such as 910b for ascend)}}
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
}

// -----

// One program on devices of two targets.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "cpu", speed = 1.0, mem = 16, node = 0>,
    #hspmd.device<1, "910b", speed = 1.0, mem = 64, node = 0>]>} {
// expected-error@+1 {{@step_group0 runs on devices of two targets: device 0 (host) and device 1 (ascend); a program's devices must share one target}}
func.func @step(%x: tensor<4xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
}

// -----

// An Ascend program in f64, which Ascend hardware does not compute.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "910b", speed = 1.0, mem = 64, node = 0>]>} {
func.func @step(%x: tensor<4xf64> {nn.data}) -> (tensor<f64> {nn.loss}) {
  // expected-error@+1 {{the ascend target has no kernel for nn.exp on f64}}
  %y = nn.exp %x : tensor<4xf64>
  // expected-error@+1 {{the ascend target has no kernel for nn.reduce on f64}}
  %l = nn.reduce sum %y dims = [0] : tensor<4xf64>
  return %l : tensor<f64>
}
}

// -----

// expected-error@+1 {{--loom-emit-cluster needs a cluster description (the module attribute hspmd.cluster) to pick each program's target}}
module {
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
}
