// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Errors in the role attributes of training-step arguments and results
// (nn.state, nn.step, nn.loss, nn.updates); see invalid.mlir for nn.param
// and nn.data.

// nn.state names the argument of its parameter.
// expected-error @+1 {{'func.func' op argument #1 attribute 'nn.state' must be an integer (the argument index of its parameter), got unit}}
func.func @state_unit(%w: tensor<4xf32> {nn.param}, %m: tensor<4xf32> {nn.state}) {
  return
}

// -----

// nn.state refers to an existing argument.
// expected-error @+1 {{'func.func' op argument #1 is optimizer state of argument #5, but the function has 2 arguments}}
func.func @state_range(%w: tensor<4xf32> {nn.param}, %m: tensor<4xf32> {nn.state = 5 : i64}) {
  return
}

// -----

// nn.state refers to a parameter.
// expected-error @+1 {{'func.func' op argument #1 is optimizer state of argument #0, which is not a parameter (marked 'nn.param')}}
func.func @state_of_data(%x: tensor<4xf32> {nn.data}, %m: tensor<4xf32> {nn.state = 0 : i64}) {
  return
}

// -----

// Optimizer state has its parameter's type.
// expected-error @+1 {{'func.func' op argument #1 of type 'tensor<8xf32>' is optimizer state of parameter #0 of type 'tensor<4xf32>'; they must have the same type}}
func.func @state_type(%w: tensor<4xf32> {nn.param}, %m: tensor<8xf32> {nn.state = 0 : i64}) {
  return
}

// -----

// The step counter is a 0-d i64 tensor.
// expected-error @+1 {{'func.func' op argument #0 of type 'tensor<i32>' is marked 'nn.step', which requires a 0-d i64 tensor}}
func.func @step_type(%s: tensor<i32> {nn.step}) {
  return
}

// -----

// One role per argument.
// expected-error @+1 {{'func.func' op argument #0 is marked both 'nn.data' and 'nn.step'; an argument has one role (parameter, data, optimizer state or step counter) at most}}
func.func @two_roles(%s: tensor<i64> {nn.data, nn.step}) {
  return
}

// -----

// nn.loss marks results.
// expected-error @+1 {{'func.func' op carries 'nn.loss' on argument #0, but it is only valid on function results}}
func.func @loss_on_arg(%l: tensor<f32> {nn.loss}) {
  return
}

// -----

// The loss is a 0-d float tensor.
// expected-error @+1 {{'func.func' op result #0 of type 'tensor<4xf32>' is marked 'nn.loss', which requires a 0-d float tensor}}
func.func @loss_type(%x: tensor<4xf32>) -> (tensor<4xf32> {nn.loss}) {
  return %x : tensor<4xf32>
}

// -----

// nn.updates names the argument it replaces.
// expected-error @+1 {{'func.func' op result #0 attribute 'nn.updates' must be an integer (the index of the argument it updates), got unit}}
func.func @updates_unit(%w: tensor<4xf32> {nn.param}) -> (tensor<4xf32> {nn.updates}) {
  return %w : tensor<4xf32>
}

// -----

// Only parameters and optimizer state are updated.
// expected-error @+1 {{'func.func' op result #0 updates argument #0, which is neither a parameter nor optimizer state}}
func.func @updates_data(%x: tensor<4xf32> {nn.data}) -> (tensor<4xf32> {nn.updates = 0 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// An update has the type of what it updates.
// expected-error @+1 {{'func.func' op result #0 of type 'tensor<f32>' updates argument #0 of type 'tensor<4xf32>'; they must have the same type}}
func.func @updates_type(%w: tensor<4xf32> {nn.param}, %l: tensor<f32>) -> (tensor<f32> {nn.updates = 0 : i64}) {
  return %l : tensor<f32>
}

// -----

// An unknown result attribute of the nn namespace.
// expected-error @+1 {{'func.func' op has unknown nn result attribute 'nn.grad' on result #0 (expected 'nn.loss', 'nn.updates' or 'nn.grad_norm')}}
func.func @unknown_result(%x: tensor<4xf32>) -> (tensor<4xf32> {nn.grad}) {
  return %x : tensor<4xf32>
}

// -----

// Role attributes are not op attributes.
func.func @loss_on_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.relu' op carries 'nn.loss' as an op attribute, but it is only valid on function results}}
  %0 = nn.relu %x {nn.loss} : tensor<4xf32>
  return
}
