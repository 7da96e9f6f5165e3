// RUN: loom-opt %s -split-input-file -verify-diagnostics --nn-training-step="micro-batch-shapes=2x8,4x2" -mlir-print-op-on-diagnostic=false

// Micro-batches of their own shapes retype the forward for each shape; what
// does not take another batch size or sequence length is reported at its
// op, with the shape; nothing is created.

// A learned position table of 6 positions read at the positions of a
// micro-batch of length 8.
func.func @long(%tokens: tensor<4x6xi64> {nn.data}, %wte: tensor<8x4xf32> {nn.param}, %wpe: tensor<6x4xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  %pos = nn.iota dim = 1 : tensor<4x6xi64>
  // expected-error @+1 {{@long cannot run as micro-batches: a micro-batch of length 8 reads position 7 of a table of 6 positions}}
  %p = nn.embedding %wpe, %pos : tensor<6x4xf32>, tensor<4x6xi64>
  %x = nn.add %t, %p : tensor<4x6x4xf32>, tensor<4x6x4xf32>
  %l = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x6x4xf32>
  return %l : tensor<f32>
}

// -----

// A normaliser computed from the data of the whole batch.
func.func @counted(%tokens: tensor<4x6xi64> {nn.data}, %mask: tensor<4x6xf32> {nn.data}, %wte: tensor<8x4xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  %s = nn.reduce sum %t dims = [2] : tensor<4x6x4xf32>
  %m = nn.mul %s, %mask : tensor<4x6xf32>, tensor<4x6xf32>
  %sum = nn.reduce sum %m dims = [0, 1] : tensor<4x6xf32>
  // expected-error @+1 {{@counted cannot run as micro-batches of their own shapes: this value is computed from the data of the whole batch (a normaliser such as a token count), which micro-batches of several shapes do not make}}
  %n = nn.reduce sum %mask dims = [0, 1] : tensor<4x6xf32>
  %l = nn.div %sum, %n : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// -----

// A slice of part of the sequence.
func.func @window(%tokens: tensor<4x6xi64> {nn.data}, %wte: tensor<8x4xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  // expected-error @+1 {{@window cannot run as micro-batches: a slice of part of dimension 1 (of 6) does not take a micro-batch of 2 rows of length 8}}
  %w = nn.slice %t offsets = [0, 0, 0] sizes = [4, 4, 4] strides = [1, 1, 1] : tensor<4x6x4xf32>
  %l = nn.reduce sum %w dims = [0, 1, 2] : tensor<4x4x4xf32>
  return %l : tensor<f32>
}

// -----

// A reshape that cannot follow another sequence length (the positions
// regrouped in threes).
func.func @groups(%tokens: tensor<4x6xi64> {nn.data}, %wte: tensor<8x4xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  // expected-error @+1 {{@groups cannot run as micro-batches: this reshape does not take a micro-batch of 2 rows of length 8}}
  %r = nn.reshape %t : tensor<4x6x4xf32> to tensor<4x2x12xf32>
  %l = nn.reduce sum %r dims = [0, 1, 2] : tensor<4x2x12xf32>
  return %l : tensor<f32>
}

// -----

// An expert placement forecast is split by rows only.
func.func @forecast(%x: tensor<4x8x3xf32> {nn.data},
                    // expected-error @+1 {{micro-batches of their own shape are not supported with an expert placement forecast (argument 'f' of @forecast is split by rows only); use micro-batches=K}}
                    %f: tensor<4x1x4xi64> {nn.data, nn.moe_forecast, nn.name = "f"},
                    %w: tensor<3x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x8x3xf32>, tensor<3x2xf32>
  %l = nn.reduce sum %y dims = [0, 1, 2] : tensor<4x8x2xf32>
  return %l : tensor<f32>
}
