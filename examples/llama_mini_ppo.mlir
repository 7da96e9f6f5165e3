// LLaMA-mini (llama_mini.mlir) trained by PPO/GRPO's clipped objective, the RL
// update step that prefix deduplication (nn-prefix-dedup) rewrites. Per
// sample slot b and position s (the prediction of token s + 1):
//
//   lp    = log_softmax(logits)[b, s, targets[b, s]]
//   ratio = exp(lp - old_logprobs[b, s])
//   obj   = min(ratio * A, clamp(ratio, 1 - 0.2, 1 + 0.2) * A),
//           A = advantages[b, s] (the sample's advantage)
//   loss  = -sum(weights * obj) / sum(weights)
//
// `weights` holds loss mask * sample weight (0 on padding); the data
// arguments are what `loom-batch pack` writes from a batch of JSON Lines
// (README, "RL batches"). Batch 8 slots of 16 tokens, vocabulary 64.
module {
  func.func @llama_mini_ppo(%tokens: tensor<8x16xi64> {nn.data},
      %targets: tensor<8x16xi64> {nn.data},
      %weights: tensor<8x16xf32> {nn.data},
      %advantages: tensor<8x16xf32> {nn.data},
      %old_logprobs: tensor<8x16xf32> {nn.data},
      %wte: tensor<64x32xf32> {nn.param},
      %l0_attn_norm: tensor<32xf32> {nn.param},
      %l0_wq: tensor<32x32xf32> {nn.param},
      %l0_wk: tensor<32x16xf32> {nn.param},
      %l0_wv: tensor<32x16xf32> {nn.param},
      %l0_wo: tensor<32x32xf32> {nn.param},
      %l0_mlp_norm: tensor<32xf32> {nn.param},
      %l0_w_gate: tensor<32x96xf32> {nn.param},
      %l0_w_up: tensor<32x96xf32> {nn.param},
      %l0_w_down: tensor<96x32xf32> {nn.param},
      %l1_attn_norm: tensor<32xf32> {nn.param},
      %l1_wq: tensor<32x32xf32> {nn.param},
      %l1_wk: tensor<32x16xf32> {nn.param},
      %l1_wv: tensor<32x16xf32> {nn.param},
      %l1_wo: tensor<32x32xf32> {nn.param},
      %l1_mlp_norm: tensor<32xf32> {nn.param},
      %l1_w_gate: tensor<32x96xf32> {nn.param},
      %l1_w_up: tensor<32x96xf32> {nn.param},
      %l1_w_down: tensor<96x32xf32> {nn.param},
      %final_norm: tensor<32xf32> {nn.param},
      %whead: tensor<32x64xf32> {nn.param}) -> tensor<f32> {
    %x0 = nn.embedding %wte, %tokens : tensor<64x32xf32>, tensor<8x16xi64>
    %pos = nn.iota dim = 1 : tensor<8x16xi64>
    // Block 0: pre-norm causal grouped-query attention with rotary
    // positions on the queries and keys, then a SwiGLU MLP.
    %b0_h = nn.rms_norm %x0 scale %l0_attn_norm {epsilon = 1.0e-05 : f64} : tensor<8x16x32xf32>, tensor<32xf32>
    %b0_q = nn.matmul %b0_h, %l0_wq : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b0_qh = nn.reshape %b0_q : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b0_qr = nn.rope %b0_qh, %pos : tensor<8x16x4x8xf32>, tensor<8x16xi64>
    %b0_k = nn.matmul %b0_h, %l0_wk : tensor<8x16x32xf32>, tensor<32x16xf32>
    %b0_kh = nn.reshape %b0_k : tensor<8x16x16xf32> to tensor<8x16x2x8xf32>
    %b0_kr = nn.rope %b0_kh, %pos : tensor<8x16x2x8xf32>, tensor<8x16xi64>
    %b0_v = nn.matmul %b0_h, %l0_wv : tensor<8x16x32xf32>, tensor<32x16xf32>
    %b0_vh = nn.reshape %b0_v : tensor<8x16x16xf32> to tensor<8x16x2x8xf32>
    %b0_att = nn.attention %b0_qr, %b0_kr, %b0_vh mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x2x8xf32>, tensor<8x16x2x8xf32>
    %b0_a = nn.reshape %b0_att : tensor<8x16x4x8xf32> to tensor<8x16x32xf32>
    %b0_o = nn.matmul %b0_a, %l0_wo : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b0_x1 = nn.add %x0, %b0_o : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b0_h2 = nn.rms_norm %b0_x1 scale %l0_mlp_norm {epsilon = 1.0e-05 : f64} : tensor<8x16x32xf32>, tensor<32xf32>
    %b0_gate = nn.matmul %b0_h2, %l0_w_gate : tensor<8x16x32xf32>, tensor<32x96xf32>
    %b0_up = nn.matmul %b0_h2, %l0_w_up : tensor<8x16x32xf32>, tensor<32x96xf32>
    %b0_act = nn.silu %b0_gate : tensor<8x16x96xf32>
    %b0_m = nn.mul %b0_act, %b0_up : tensor<8x16x96xf32>, tensor<8x16x96xf32>
    %b0_d = nn.matmul %b0_m, %l0_w_down : tensor<8x16x96xf32>, tensor<96x32xf32>
    %b0_x2 = nn.add %b0_x1, %b0_d : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    // Block 1: the same.
    %b1_h = nn.rms_norm %b0_x2 scale %l1_attn_norm {epsilon = 1.0e-05 : f64} : tensor<8x16x32xf32>, tensor<32xf32>
    %b1_q = nn.matmul %b1_h, %l1_wq : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b1_qh = nn.reshape %b1_q : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b1_qr = nn.rope %b1_qh, %pos : tensor<8x16x4x8xf32>, tensor<8x16xi64>
    %b1_k = nn.matmul %b1_h, %l1_wk : tensor<8x16x32xf32>, tensor<32x16xf32>
    %b1_kh = nn.reshape %b1_k : tensor<8x16x16xf32> to tensor<8x16x2x8xf32>
    %b1_kr = nn.rope %b1_kh, %pos : tensor<8x16x2x8xf32>, tensor<8x16xi64>
    %b1_v = nn.matmul %b1_h, %l1_wv : tensor<8x16x32xf32>, tensor<32x16xf32>
    %b1_vh = nn.reshape %b1_v : tensor<8x16x16xf32> to tensor<8x16x2x8xf32>
    %b1_att = nn.attention %b1_qr, %b1_kr, %b1_vh mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x2x8xf32>, tensor<8x16x2x8xf32>
    %b1_a = nn.reshape %b1_att : tensor<8x16x4x8xf32> to tensor<8x16x32xf32>
    %b1_o = nn.matmul %b1_a, %l1_wo : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b1_x1 = nn.add %b0_x2, %b1_o : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b1_h2 = nn.rms_norm %b1_x1 scale %l1_mlp_norm {epsilon = 1.0e-05 : f64} : tensor<8x16x32xf32>, tensor<32xf32>
    %b1_gate = nn.matmul %b1_h2, %l1_w_gate : tensor<8x16x32xf32>, tensor<32x96xf32>
    %b1_up = nn.matmul %b1_h2, %l1_w_up : tensor<8x16x32xf32>, tensor<32x96xf32>
    %b1_act = nn.silu %b1_gate : tensor<8x16x96xf32>
    %b1_m = nn.mul %b1_act, %b1_up : tensor<8x16x96xf32>, tensor<8x16x96xf32>
    %b1_d = nn.matmul %b1_m, %l1_w_down : tensor<8x16x96xf32>, tensor<96x32xf32>
    %b1_x2 = nn.add %b1_x1, %b1_d : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %hf = nn.rms_norm %b1_x2 scale %final_norm {epsilon = 1.0e-05 : f64} : tensor<8x16x32xf32>, tensor<32xf32>
    %logits = nn.matmul %hf, %whead : tensor<8x16x32xf32>, tensor<32x64xf32>
    // Per-token log-probabilities of the sampled tokens, then the clipped
    // surrogate with each sample's own old log-probabilities and advantage.
    %lsm = nn.log_softmax %logits dim = 2 : tensor<8x16x64xf32>
    %labels = nn.reshape %targets : tensor<8x16xi64> to tensor<8x16x1xi64>
    %lp1 = nn.gather %lsm, %labels dim = 2 : tensor<8x16x64xf32>, tensor<8x16x1xi64>
    %lp = nn.reshape %lp1 : tensor<8x16x1xf32> to tensor<8x16xf32>
    %d = nn.sub %lp, %old_logprobs : tensor<8x16xf32>, tensor<8x16xf32>
    %ratio = nn.exp %d : tensor<8x16xf32>
    %clipped = nn.clamp %ratio {max = 1.2 : f64, min = 0.8 : f64} : tensor<8x16xf32>
    %u = nn.mul %ratio, %advantages : tensor<8x16xf32>, tensor<8x16xf32>
    %c = nn.mul %clipped, %advantages : tensor<8x16xf32>, tensor<8x16xf32>
    %obj = nn.minimum %u, %c : tensor<8x16xf32>, tensor<8x16xf32>
    %wobj = nn.mul %obj, %weights : tensor<8x16xf32>, tensor<8x16xf32>
    %sum = nn.reduce sum %wobj dims = [0, 1] : tensor<8x16xf32>
    %n = nn.reduce sum %weights dims = [0, 1] : tensor<8x16xf32>
    %neg = nn.neg %sum : tensor<f32>
    %loss = nn.div %neg, %n : tensor<f32>, tensor<f32>
    return %loss : tensor<f32>
  }
}
