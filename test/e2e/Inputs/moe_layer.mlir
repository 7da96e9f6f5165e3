// A mixture-of-experts layer in f64, data parallel on 2 devices: the
// router (scores, softmax, the top 2 of 4 experts and their
// probabilities), the dropless routing into the expert-ordered buffer, each
// expert's two-layer MLP as grouped matmuls over its rows of the buffer
// (the second with its weight read transposed), the combine weighted by the
// router's probabilities (so the router trains through it), a residual, a
// classifier loss and the load-balancing auxiliary loss as a composition:
// 0.01 * E * sum_e f_e P_e, f_e the fraction of entries routed to expert e
// (the counts cast, over T * k) and P_e the router's mean probability of e.
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
    %routed = nn.cast %counts : tensor<4xi64> to tensor<4xf64>
    %entries = nn.fill 1.6e+01 : tensor<f64>
    %f = nn.div %routed, %entries : tensor<4xf64>, tensor<f64>
    %p = nn.reduce mean %probs dims = [0] : tensor<8x4xf64>
    %fp = nn.mul %f, %p : tensor<4xf64>, tensor<4xf64>
    %balance = nn.reduce sum %fp dims = [0] : tensor<4xf64>
    %scale = nn.fill 4.0e-02 : tensor<f64>
    %aux = nn.mul %balance, %scale : tensor<f64>, tensor<f64>
    %total = nn.add %loss, %aux : tensor<f64>, tensor<f64>
    return %total : tensor<f64>
  }
}
