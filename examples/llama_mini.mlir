// LLaMA-mini, the second reference model (beside gpt_mini.mlir): vocabulary
// 64, sequence 16, width 32, 2 pre-norm blocks, batch 8, no biases and no
// learned position embedding. Each block: RMS norm (epsilon 1e-5), causal
// grouped-query attention (4 query heads of width 8 sharing 2 key/value
// heads: nn.attention's own GQA, query head h reads kv head h / 2) with
// rotary positions (nn.rope, "rotate half", theta 10000) on the queries and
// keys, and a SwiGLU MLP of width 96, (silu(x W_gate) * (x W_up)) W_down.
// Then a final RMS norm, an untied linear head, and cross-entropy over next
// tokens. One device's forward pass returning the loss; parameters are
// marked nn.param, token ids and targets nn.data. The synthetic task's
// targets are (7 * token + 3) mod 64, as for the GPT-mini.
//
// Keeping the kv heads as their own dimension (rather than repeating them)
// is what lets tensor parallelism split them: a split of the query heads
// splits the kv groups first (docs/rationale/partitioning.md, attention), so
// TP2 holds one kv head and its two query heads per device.
module {
  func.func @llama_mini(%tokens: tensor<8x16xi64> {nn.data},
      %targets: tensor<8x16xi64> {nn.data},
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
    // Mean over the 128 target tokens of the batch.
    %loss = nn.cross_entropy %logits, %targets {normalizer = 128.0 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>
    return %loss : tensor<f32>
  }
}
