// The MLP of mlp.mlir without layouts: a run configuration gives them
// (mlp_tp.txtpb), through the C API.
module {
  func.func @mlp(%x: tensor<8x16xf64> {nn.data},
                 %labels: tensor<8xi64> {nn.data},
                 %w1: tensor<16x32xf64> {nn.param},
                 %w2: tensor<32x8xf64> {nn.param}) -> tensor<f64> {
    %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x32xf64>
    %a = nn.gelu %h : tensor<8x32xf64>
    %logits = nn.matmul %a, %w2 : tensor<8x32xf64>, tensor<32x8xf64>
    %loss = nn.cross_entropy %logits, %labels {normalizer = 8.0 : f64}
              : tensor<8x8xf64>, tensor<8xi64>
    return %loss : tensor<f64>
  }
}
