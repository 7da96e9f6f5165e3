// The forward of Inputs/mlp.mlir without its loss: the logits, as a rollout
// (generation) program of RL post-training computes them. The layouts come
// from the tests (LAYOUT_*), as in mlp.mlir; the arguments keep the
// training step's names, so that loom_program_switch matches them.
module {
  func.func @mlp_logits(%x: tensor<8x16xf64> {nn.data},
                        %w1: tensor<16x32xf64> {nn.param},
                        %w2: tensor<32x8xf64> {nn.param}) -> tensor<8x8xf64> {
    %xa = hspmd.annotate %x : tensor<8x16xf64> as LAYOUT_X
    %w1a = hspmd.annotate %w1 : tensor<16x32xf64> as LAYOUT_W1
    %h = nn.matmul %xa, %w1a : tensor<8x16xf64>, tensor<16x32xf64>
    %a = nn.gelu %h : tensor<8x32xf64>
    %w2a = hspmd.annotate %w2 : tensor<32x8xf64> as LAYOUT_W2
    %logits = nn.matmul %a, %w2a : tensor<8x32xf64>, tensor<32x8xf64>
    return %logits : tensor<8x8xf64>
  }
}
