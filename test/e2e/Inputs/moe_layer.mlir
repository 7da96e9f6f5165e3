// A mixture-of-experts layer in f64, data parallel on 2 devices: the
// router (scores, softmax, the top 2 of 4 experts and their
// probabilities), the dropless routing into the expert-ordered buffer, each
// expert's two-layer MLP as grouped matmuls over its rows of the buffer
// (the second with its weight read transposed), the combine weighted by the
// router's probabilities (so the router trains through it), a residual and
// a classifier loss.
module {
  func.func @moe(%x: tensor<8x16xf64> {nn.data},
                 %labels: tensor<8xi64> {nn.data},
                 %router: tensor<16x4xf64> {nn.param},
                 %w1: tensor<4x16x12xf64> {nn.param},
                 %w2: tensor<4x16x12xf64> {nn.param},
                 %head: tensor<16x6xf64> {nn.param}) -> tensor<f64> {
    %xa = hspmd.annotate %x : tensor<8x16xf64> as #hspmd.union<{[0, 1]: [S0:2]}>
    %ra = hspmd.annotate %router : tensor<16x4xf64> as #hspmd.union<{[0, 1]: [D:2]}>
    %logits = nn.matmul %xa, %ra : tensor<8x16xf64>, tensor<16x4xf64>
    %probs = nn.softmax %logits dim = 1 : tensor<8x4xf64>
    %experts = nn.topk %probs k = 2 : tensor<8x4xf64>
    %gates = nn.gather %probs, %experts dim = 1 : tensor<8x4xf64>, tensor<8x2xi64>
    %slots, %counts = nn.moe_route %experts num_experts = 4 : tensor<8x2xi64>
    %buffer = nn.moe_dispatch %xa, %slots rows = 16
        : tensor<8x16xf64>, tensor<8x2xi64>
    %h = nn.grouped_matmul %buffer, %w1, %counts
        : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
    %a = nn.gelu %h : tensor<16x12xf64>
    %out = nn.grouped_matmul %a, %w2, %counts transpose_rhs
        : tensor<16x12xf64>, tensor<4x16x12xf64>, tensor<4xi64>
    %y = nn.moe_combine %out, %slots weights %gates
        : tensor<16x16xf64>, tensor<8x2xi64>, tensor<8x2xf64>
    %r = nn.add %xa, %y : tensor<8x16xf64>, tensor<8x16xf64>
    %z = nn.matmul %r, %head : tensor<8x16xf64>, tensor<16x6xf64>
    %loss = nn.cross_entropy %z, %labels {normalizer = 8.0 : f64}
              : tensor<8x6xf64>, tensor<8xi64>
    return %loss : tensor<f64>
  }
}
