// A router in f64: scores, softmax, the top 2 of 4 experts (nn.topk) and a
// loss over the picked logits (nn.gather), data parallel on 2 devices.
module {
  func.func @router(%x: tensor<8x16xf64> {nn.data},
                    %labels: tensor<8xi64> {nn.data},
                    %w: tensor<16x4xf64> {nn.param}) -> tensor<f64> {
    %xa = hspmd.annotate %x : tensor<8x16xf64> as #hspmd.union<{[0, 1]: [S0:2]}>
    %wa = hspmd.annotate %w : tensor<16x4xf64> as #hspmd.union<{[0, 1]: [D:2]}>
    %logits = nn.matmul %xa, %wa : tensor<8x16xf64>, tensor<16x4xf64>
    %probs = nn.softmax %logits dim = 1 : tensor<8x4xf64>
    %experts = nn.topk %probs k = 2 : tensor<8x4xf64>
    %top = nn.gather %logits, %experts dim = 1 : tensor<8x4xf64>, tensor<8x2xi64>
    %loss = nn.cross_entropy %top, %labels {normalizer = 8.0 : f64}
              : tensor<8x2xf64>, tensor<8xi64>
    return %loss : tensor<f64>
  }
}
