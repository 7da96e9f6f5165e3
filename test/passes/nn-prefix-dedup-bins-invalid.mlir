// RUN: loom-opt %s --nn-prefix-dedup="capacity=16 bins=3" -verify-diagnostics -o /dev/null

// Each bin holds batch / bins sample slots.
// expected-error @+1 {{bins = 3 does not divide the batch of 4 samples}}
func.func @bins(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}
