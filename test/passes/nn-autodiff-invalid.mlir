// RUN: loom-opt %s -split-input-file -verify-diagnostics --nn-autodiff=func=f -mlir-print-op-on-diagnostic=false

// The loss is not a scalar.
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<4xf32> {
  %0 = nn.relu %w : tensor<4xf32>
  // expected-error @+1 {{expected the loss to be a 0-d float tensor (f32, f64 or bf16), got 'tensor<4xf32>'}}
  return %0 : tensor<4xf32>
}

// -----

// The loss is not a float.
func.func @f(%w: tensor<4xf32> {nn.param}, %n: tensor<i64>) -> tensor<i64> {
  // expected-error @+1 {{expected the loss to be a 0-d float tensor (f32, f64 or bf16), got 'tensor<i64>'}}
  return %n : tensor<i64>
}

// -----

// The loss is a float that nn ops do not compute in.
func.func @f(%w: tensor<f16> {nn.param}) -> tensor<f16> {
  // expected-error @+1 {{expected the loss to be a 0-d float tensor (f32, f64 or bf16), got 'tensor<f16>'}}
  return %w : tensor<f16>
}

// -----

// A forward function returns one value, the loss.
func.func @f(%w: tensor<f32> {nn.param}) -> (tensor<f32>, tensor<f32>) {
  // expected-error @+1 {{expected @f to return one value, the loss, got 2}}
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// Nothing is marked as a parameter.
// expected-error @+1 {{@f has no nn.param argument, so there is nothing to differentiate; mark the parameters with {nn.param}}}
func.func @f(%w: tensor<4xf32>) -> tensor<f32> {
  %0 = nn.reduce sum %w dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// A parameter the loss does not use: the error names it, by its argument
// number and SSA name.
func.func @f(%w1: tensor<4xf32> {nn.param},
             // expected-error @+1 {{parameter #1 (%arg1) does not reach the loss: the returned value does not depend on it through differentiable ops}}
             %w2: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce sum %w1 dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// A parameter that only reaches the loss through an integer does not reach
// it in the sense of gradients.
// expected-error @+1 {{parameter #0 (%arg0) does not reach the loss}}
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.cast %w : tensor<4xf32> to tensor<4xi32>
  %1 = nn.cast %0 : tensor<4xi32> to tensor<4xf32>
  %2 = nn.reduce sum %1 dims = [0] : tensor<4xf32>
  return %2 : tensor<f32>
}

// -----

// An op without a gradient on the path from a parameter to the loss.
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{'arith.addf' op has no gradient (it does not implement GradientOpInterface), but it lies on the path from parameter #0 (%arg0) to the loss}}
  %0 = arith.addf %w, %w : tensor<4xf32>
  %1 = nn.reduce sum %0 dims = [0] : tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// Optimizer updates are not differentiated.
func.func @f(%w: tensor<4xf32> {nn.param}, %g: tensor<4xf32>, %m: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.sgd_update' op has no gradient (it does not implement GradientOpInterface), but it lies on the path from parameter #0 (%arg0) to the loss}}
  %p, %b = nn.sgd_update %w, %g, %m {lr = 0.1 : f64} : tensor<4xf32>
  %1 = nn.reduce sum %p dims = [0] : tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// Calls are not differentiated yet.
func.func private @g(tensor<4xf32>) -> tensor<4xf32>
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{'func.call' op calls @g on the path from parameter #0 (%arg0) to the loss; autodiff does not differentiate across calls yet, inline the callee first (--inline)}}
  %0 = func.call @g(%w) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.reduce sum %0 dims = [0] : tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// Control flow is not differentiated yet.
// expected-error @+1 {{expected a function body with a single block, got 2 blocks; autodiff does not differentiate control flow yet}}
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce sum %w dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
^unreachable:
  return %0 : tensor<f32>
}

// -----

// A partial maximum has no dual layout for its gradient.
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{'hspmd.annotate' op cannot lay out the gradient of %0: axis P(max):2 has no dual: only a pending sum (P(sum)) turns into a duplicate in the gradient}}
  %0 = hspmd.annotate %w : tensor<4xf32> as #hspmd.union<{[0, 1]: [P(max):2]}>
  %1 = nn.reduce sum %0 dims = [0] : tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// Nor has a reshard from a partial maximum.
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{'hspmd.reshard' op cannot lay out the gradient of %0 (source layout): axis P(max):2 has no dual}}
  %0 = hspmd.reshard %w : tensor<4xf32> from #hspmd.union<{[0, 1]: [P(max):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  %1 = nn.reduce sum %0 dims = [0] : tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// With a dynamic size, whether an operand was broadcast is unknown.
func.func @f(%w: tensor<?x8xf32> {nn.param}, %x: tensor<4x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.add' op cannot differentiate: operand #0 of type 'tensor<?x8xf32>' has dynamic dimension 0, so whether it was broadcast is unknown; autodiff needs static sizes where broadcasting may happen}}
  %0 = nn.add %w, %x : tensor<?x8xf32>, tensor<4x8xf32>
  %1 = nn.reduce sum %0 dims = [0, 1] : tensor<4x8xf32>
  return %1 : tensor<f32>
}

// -----

// A mean over a dynamic dimension divides by an unknown count.
func.func @f(%w: tensor<?xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{'nn.reduce' op cannot differentiate a mean over dimension 0 of [?]: the number of elements averaged must be static}}
  %0 = nn.reduce mean %w dims = [0] : tensor<?xf32>
  return %0 : tensor<f32>
}

// -----

// The gradient function's name is taken.
// expected-error @+1 {{cannot create @f_grad: the module already has a symbol of that name}}
func.func @f(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce sum %w dims = [0] : tensor<4xf32>
  return %0 : tensor<f32>
}
func.func private @f_grad()

// -----

// A block of a vocabulary-split table (a specialised lookup) has no
// gradient rule: differentiate the global program.
func.func @f(%t: tensor<4x3xf32> {nn.param}, %ids: tensor<2xi64>, %o: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{has no gradient with an offset}}
  %e = nn.embedding %t, %ids offset %o : tensor<4x3xf32>, tensor<2xi64>
  %l = nn.reduce sum %e dims = [0, 1] : tensor<2x3xf32>
  return %l : tensor<f32>
}
