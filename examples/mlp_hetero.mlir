// A 2-layer MLP training forward pass on 6 devices of two kinds.
//
// Group A, devices 0-3 (fast): data parallel 2 x tensor parallel 2.
// Group B, devices 4-5 (slow): tensor parallel 2.
// The batch of 64 is shared 3:1 between the groups (48 rows on A, 16 on B).
// Layer 1 is column-parallel and layer 2 row-parallel (Megatron style), so
// the logits are partial sums over each group's TP axis until the explicit
// reshard sums them. The loss is normalised by the global batch (64), never
// averaged per group: a mean over an uneven split is a sum scaled by the
// global count.
//
// The weights' layouts are also on the arguments, so the training step
// keeps them there: each weight gradient is reduce-scattered inside a group
// over its data-parallel axis, summed across the groups block by block
// (hspmd.exchange), and gathered back; every device updates its block.
//
// Run: loom-opt examples/mlp_hetero.mlir --hspmd-print-shards -o /dev/null
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<2, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<3, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<4, "910b", speed = 0.5, mem = 64, node = 1>,
    #hspmd.device<5, "910b", speed = 0.5, mem = 64, node = 1>]>} {
  func.func @mlp_loss(%x: tensor<64x128xf32> {nn.data},
                      %labels: tensor<64xi64> {nn.data},
                      %w1: tensor<128x512xf32> {nn.param, hspmd.layout = #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}>},
                      %w2: tensor<512x64xf32> {nn.param, hspmd.layout = #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S0:2]}, {[4, 5]: [S0:2]}>}) -> tensor<f32> {
    // Input rows: A splits its 48 rows over DP and replicates over TP.
    %xa = hspmd.annotate %x : tensor<64x128xf32>
            as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, D:2]}, {[4, 5]: [D:2]}>
    // Column-parallel weight: every group holds all of it, split by columns
    // over its TP axis.
    %w1a = hspmd.annotate %w1 : tensor<128x512xf32>
             as #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}>
    %h = nn.matmul %xa, %w1a : tensor<64x128xf32>, tensor<128x512xf32>
    %ha = hspmd.annotate %h : tensor<64x512xf32>
            as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
    %a = nn.gelu %ha : tensor<64x512xf32>
    // Row-parallel weight.
    %w2a = hspmd.annotate %w2 : tensor<512x64xf32>
             as #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S0:2]}, {[4, 5]: [S0:2]}>
    %logits = nn.matmul %a, %w2a : tensor<64x512xf32>, tensor<512x64xf32>
    %partial = hspmd.annotate %logits : tensor<64x64xf32>
                 as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, P(sum):2]}, {[4, 5]: [P(sum):2]}>
    // The all-reduce over each group's TP axis.
    %full = hspmd.reshard %partial : tensor<64x64xf32>
              from #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, P(sum):2]}, {[4, 5]: [P(sum):2]}>
              to #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, D:2]}, {[4, 5]: [D:2]}>
    %loss = nn.cross_entropy %full, %labels {normalizer = 64.0 : f64}
              : tensor<64x64xf32>, tensor<64xi64>
    return %loss : tensor<f32>
  }
}
