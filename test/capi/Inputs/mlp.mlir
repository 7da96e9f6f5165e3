// A 2-layer MLP in f64 for the program-library tests: the layouts come from
// the tests (sed on LAYOUT_*), so one model gives a data-parallel and a
// tensor-parallel program on 2 devices.
module {
  func.func @mlp(%x: tensor<8x16xf64> {nn.data},
                 %labels: tensor<8xi64> {nn.data},
                 %w1: tensor<16x32xf64> {nn.param},
                 %w2: tensor<32x8xf64> {nn.param}) -> tensor<f64> {
    %xa = hspmd.annotate %x : tensor<8x16xf64> as LAYOUT_X
    %w1a = hspmd.annotate %w1 : tensor<16x32xf64> as LAYOUT_W1
    %h = nn.matmul %xa, %w1a : tensor<8x16xf64>, tensor<16x32xf64>
    %a = nn.gelu %h : tensor<8x32xf64>
    %w2a = hspmd.annotate %w2 : tensor<32x8xf64> as LAYOUT_W2
    %logits = nn.matmul %a, %w2a : tensor<8x32xf64>, tensor<32x8xf64>
    %loss = nn.cross_entropy %logits, %labels {normalizer = 8.0 : f64}
              : tensor<8x8xf64>, tensor<8xi64>
    return %loss : tensor<f64>
  }
}
