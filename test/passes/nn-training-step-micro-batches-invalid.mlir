// RUN: loom-opt %s -split-input-file -verify-diagnostics --nn-training-step="micro-batches=2" -mlir-print-op-on-diagnostic=false

// Micro-batches split the rows of every data argument of rank >= 1 (dimension
// 0); the loss must be a sum over the rows, scaled by values of the whole
// batch, for the micro-batches' sum to be the step's. Each error names what
// cannot be split and where; nothing is created.

// A mean over the rows of a parameter-dependent value.
func.func @mean(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  // expected-error @+1 {{@mean cannot run as micro-batches: a mean over the rows of a parameter-dependent value is not the sum of its micro-batches' (write it as a sum divided by a count of the whole batch)}}
  %l = nn.reduce mean %y dims = [0, 1] : tensor<4x2xf32>
  return %l : tensor<f32>
}

// -----

// A non-linear function of a sum over the rows.
func.func @square(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %s = nn.reduce sum %y dims = [0, 1] : tensor<4x2xf32>
  // expected-error @+1 {{@square cannot run as micro-batches: the loss must be linear in its sums over the rows}}
  %l = nn.mul %s, %s : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// -----

// Data arguments of different row counts.
func.func @rows(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param},
                // expected-error @+1 {{micro-batches split every nn.data argument of rank >= 1 along its leading dimension, but argument 'x' of @rows has 4 rows and argument 't' has 6}}
                %t: tensor<6x2xf32> {nn.data}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %s = nn.reduce sum %y dims = [0, 1] : tensor<4x2xf32>
  %u = nn.reduce sum %t dims = [0, 1] : tensor<6x2xf32>
  %l = nn.add %s, %u : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// -----

// Dropout's mask depends on the element's index in the whole batch.
func.func @dropout(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  // expected-error @+1 {{@dropout cannot run as micro-batches: nn.dropout draws its mask from each element's index in the whole batch}}
  %d = nn.dropout %y {rate = 0.5 : f64, seed = 3 : i64} : tensor<4x2xf32>
  %l = nn.reduce sum %d dims = [0, 1] : tensor<4x2xf32>
  return %l : tensor<f32>
}

// -----

// A loss that does not sum over the rows.
func.func @params(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{@params cannot run as micro-batches: its loss is not a sum over the rows of the batch of parameter-dependent values}}
  %l = nn.reduce sum %w dims = [0, 1] : tensor<3x2xf32>
  return %l : tensor<f32>
}

// -----

// The batch moves out of the leading dimension.
func.func @moved(%x: tensor<4x3xf32> {nn.data}, %w: tensor<4x2xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{@moved cannot run as micro-batches: a transpose that moves the rows computes across the rows, which a micro-batch does not all have}}
  %xt = nn.transpose %x permutation = [1, 0] : tensor<4x3xf32>
  %y = nn.matmul %xt, %w : tensor<3x4xf32>, tensor<4x2xf32>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<3x2xf32>
  return %l : tensor<f32>
}

// -----

// A normaliser computed from the parameters.
func.func @normalizer(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}, %labels: tensor<4xi64> {nn.data}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %n = nn.reduce sum %y dims = [0, 1] : tensor<4x2xf32>
  // expected-error @+1 {{@normalizer cannot run as micro-batches: its normaliser must be a value of the whole batch}}
  %l = nn.cross_entropy %y, %labels normalizer %n : tensor<4x2xf32>, tensor<4xi64>, tensor<f32>
  return %l : tensor<f32>
}

// -----

// A softmax over the rows.
func.func @softmax(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  // expected-error @+1 {{@softmax cannot run as micro-batches: a softmax over the rows computes across the rows, which a micro-batch does not all have}}
  %p = nn.log_softmax %y dim = 0 : tensor<4x2xf32>
  %l = nn.reduce sum %p dims = [0, 1] : tensor<4x2xf32>
  return %l : tensor<f32>
}

// -----

// A product of the rows with themselves (a contrastive [B, B] matrix).
func.func @gram(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  // expected-error @+1 {{@gram cannot run as micro-batches: a matrix product over the rows computes across the rows}}
  %g = nn.matmul %y, %y transpose_rhs : tensor<4x2xf32>, tensor<4x2xf32>
  %l = nn.reduce sum %g dims = [0, 1] : tensor<4x4xf32>
  return %l : tensor<f32>
}

// -----

// Positions along the rows differ from row to row.
func.func @rows_iota(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param}, %table: tensor<4x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %ids = nn.iota dim = 0 : tensor<4xi64>
  %pos = nn.embedding %table, %ids : tensor<4x2xf32>, tensor<4xi64>
  // expected-error @+2 {{@rows_iota cannot run as micro-batches: this op does not take a micro-batch of 2 rows}}
  // expected-error @+1 {{'nn.add' op operand #1 dimension 0 of size 4 is not broadcast-compatible with dimension 0 of size 2 of operand #0}}
  %z = nn.add %y, %pos : tensor<4x2xf32>, tensor<4x2xf32>
  %l = nn.reduce sum %z dims = [0, 1] : tensor<4x2xf32>
  return %l : tensor<f32>
}

// -----

// A reshape that regroups the rows ([4, 3] as [2, 6]: two rows a row).
func.func @regroup(%x: tensor<4x3xf32> {nn.data}, %w: tensor<6x2xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{@regroup cannot run as micro-batches: its result (tensor<2x6xf32>) does not keep the rows in its leading dimension (a multiple of the 4 rows)}}
  %r = nn.reshape %x : tensor<4x3xf32> to tensor<2x6xf32>
  %y = nn.matmul %r, %w : tensor<2x6xf32>, tensor<6x2xf32>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<2x2xf32>
  return %l : tensor<f32>
}

// -----

// An MoE route with a capacity drops entries by their order in the whole
// batch.
func.func @moe_capacity(%x: tensor<8x4xf32> {nn.data}, %e: tensor<8x2xi64> {nn.data},
                        %w: tensor<4x4x4xf32> {nn.param}) -> tensor<f32> {
  // expected-error @+1 {{@moe_capacity cannot run as micro-batches: a route with a capacity drops entries by their order in the whole batch, which a micro-batch does not have}}
  %slots, %counts = nn.moe_route %e num_experts = 4 capacity = 3 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 12 : tensor<8x4xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w, %counts : tensor<12x4xf32>, tensor<4x4x4xf32>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<12x4xf32>, tensor<8x2xi64>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<8x4xf32>
  return %l : tensor<f32>
}

// -----

// A load-balancing loss from a route's counts: f_e P_e is not a sum over
// the rows.
func.func @moe_balance(%x: tensor<8x4xf32> {nn.data}, %e: tensor<8x2xi64> {nn.data},
                       %router: tensor<4x4xf32> {nn.param}) -> tensor<f32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %logits = nn.matmul %x, %router : tensor<8x4xf32>, tensor<4x4xf32>
  %p = nn.reduce sum %logits dims = [0] : tensor<8x4xf32>
  %f = nn.cast %counts : tensor<4xi64> to tensor<4xf32>
  // expected-error @+1 {{@moe_balance cannot run as micro-batches: it reads a value of one micro-batch's MoE routing (an expert-ordered buffer, counts or a placement), which differs from the whole batch's; only the MoE ops, grouped matmuls, element-wise ops, reshapes and lookups may (a load-balancing loss from the counts is not a sum of the micro-batches' losses)}}
  %fp = nn.mul %f, %p : tensor<4xf32>, tensor<4xf32>
  %l = nn.reduce sum %fp dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
