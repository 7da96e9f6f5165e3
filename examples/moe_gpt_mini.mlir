// MoE GPT-mini, the reference model of docs/architecture.md: the GPT-mini of
// gpt_mini.mlir (vocabulary 64, sequence 16, width 32, 4 heads, 2 pre-norm
// blocks, batch 8) with each block's MLP replaced by 4 expert MLPs (GELU,
// width 128, no biases), top-2 routing by softmax scores, dropless (each
// expert's rows of a 256-row buffer counted at run time), the combine
// weighted by the router's probabilities, and the load-balancing loss
// 0.01 * E * sum_e f_e P_e of every block added to the cross-entropy.
// test/examples/moe_gpt_mini_reference.py is an independent numpy model of
// it (forward and backward by hand) and writes exactly this program.
module {
  func.func @moe_gpt_mini(%tokens: tensor<8x16xi64> {nn.data},
      %targets: tensor<8x16xi64> {nn.data},
      %wte: tensor<64x32xf32> {nn.param},
      %wpe: tensor<16x32xf32> {nn.param},
      %l0_ln1_g: tensor<32xf32> {nn.param},
      %l0_ln1_b: tensor<32xf32> {nn.param},
      %l0_wq: tensor<32x32xf32> {nn.param},
      %l0_wk: tensor<32x32xf32> {nn.param},
      %l0_wv: tensor<32x32xf32> {nn.param},
      %l0_wo: tensor<32x32xf32> {nn.param},
      %l0_ln2_g: tensor<32xf32> {nn.param},
      %l0_ln2_b: tensor<32xf32> {nn.param},
      %l0_router: tensor<32x4xf32> {nn.param},
      %l0_w1: tensor<4x32x128xf32> {nn.param},
      %l0_w2: tensor<4x128x32xf32> {nn.param},
      %l1_ln1_g: tensor<32xf32> {nn.param},
      %l1_ln1_b: tensor<32xf32> {nn.param},
      %l1_wq: tensor<32x32xf32> {nn.param},
      %l1_wk: tensor<32x32xf32> {nn.param},
      %l1_wv: tensor<32x32xf32> {nn.param},
      %l1_wo: tensor<32x32xf32> {nn.param},
      %l1_ln2_g: tensor<32xf32> {nn.param},
      %l1_ln2_b: tensor<32xf32> {nn.param},
      %l1_router: tensor<32x4xf32> {nn.param},
      %l1_w1: tensor<4x32x128xf32> {nn.param},
      %l1_w2: tensor<4x128x32xf32> {nn.param},
      %lnf_g: tensor<32xf32> {nn.param},
      %lnf_b: tensor<32xf32> {nn.param},
      %whead: tensor<32x64xf32> {nn.param}) -> tensor<f32> {
    %tok = nn.embedding %wte, %tokens : tensor<64x32xf32>, tensor<8x16xi64>
    %pos_ids = nn.iota dim = 1 : tensor<8x16xi64>
    %pos = nn.embedding %wpe, %pos_ids : tensor<16x32xf32>, tensor<8x16xi64>
    %x0 = nn.add %tok, %pos : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    // The load-balancing loss's constants: the 256 entries routed, 0.01 * 4.
    %entries = nn.fill 2.560000e+02 : tensor<f32>
    %aux_scale = nn.fill 4.000000e-02 : tensor<f32>
    // Block 0: pre-norm causal self-attention, then a mixture of 4 expert MLPs, top-2.
    %b0_h = nn.layer_norm %x0 scale %l0_ln1_g bias %l0_ln1_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %b0_q = nn.matmul %b0_h, %l0_wq : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b0_qh = nn.reshape %b0_q : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b0_k = nn.matmul %b0_h, %l0_wk : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b0_kh = nn.reshape %b0_k : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b0_v = nn.matmul %b0_h, %l0_wv : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b0_vh = nn.reshape %b0_v : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b0_att = nn.attention %b0_qh, %b0_kh, %b0_vh mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
    %b0_a = nn.reshape %b0_att : tensor<8x16x4x8xf32> to tensor<8x16x32xf32>
    %b0_o = nn.matmul %b0_a, %l0_wo : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b0_x1 = nn.add %x0, %b0_o : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b0_h2 = nn.layer_norm %b0_x1 scale %l0_ln2_g bias %l0_ln2_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    // The router: softmax scores, the top 2 experts of each token and their
    // probabilities (the combine weights); the dropless routing into a buffer
    // of 256 rows in expert order; each expert's GELU MLP over its rows.
    %b0_tk = nn.reshape %b0_h2 : tensor<8x16x32xf32> to tensor<128x32xf32>
    %b0_logits = nn.matmul %b0_tk, %l0_router : tensor<128x32xf32>, tensor<32x4xf32>
    %b0_probs = nn.softmax %b0_logits dim = 1 : tensor<128x4xf32>
    %b0_experts = nn.topk %b0_probs k = 2 : tensor<128x4xf32>
    %b0_gates = nn.gather %b0_probs, %b0_experts dim = 1 : tensor<128x4xf32>, tensor<128x2xi64>
    %b0_slots, %b0_counts = nn.moe_route %b0_experts num_experts = 4 : tensor<128x2xi64>
    %b0_buf = nn.moe_dispatch %b0_tk, %b0_slots rows = 256 : tensor<128x32xf32>, tensor<128x2xi64>
    %b0_m = nn.grouped_matmul %b0_buf, %l0_w1, %b0_counts : tensor<256x32xf32>, tensor<4x32x128xf32>, tensor<4xi64>
    %b0_g = nn.gelu %b0_m : tensor<256x128xf32>
    %b0_eo = nn.grouped_matmul %b0_g, %l0_w2, %b0_counts : tensor<256x128xf32>, tensor<4x128x32xf32>, tensor<4xi64>
    %b0_y = nn.moe_combine %b0_eo, %b0_slots weights %b0_gates : tensor<256x32xf32>, tensor<128x2xi64>, tensor<128x2xf32>
    %b0_ya = nn.reshape %b0_y : tensor<128x32xf32> to tensor<8x16x32xf32>
    // The load-balancing loss 0.01 * 4 * sum_e f_e P_e: f_e the fraction of
    // the 256 entries routed to e, P_e the mean router probability of e.
    %b0_routed = nn.cast %b0_counts : tensor<4xi64> to tensor<4xf32>
    %b0_f = nn.div %b0_routed, %entries : tensor<4xf32>, tensor<f32>
    %b0_p = nn.reduce mean %b0_probs dims = [0] : tensor<128x4xf32>
    %b0_fp = nn.mul %b0_f, %b0_p : tensor<4xf32>, tensor<4xf32>
    %b0_bal = nn.reduce sum %b0_fp dims = [0] : tensor<4xf32>
    %b0_aux = nn.mul %b0_bal, %aux_scale : tensor<f32>, tensor<f32>
    %b0_x2 = nn.add %b0_x1, %b0_ya : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    // Block 1: the same.
    %b1_h = nn.layer_norm %b0_x2 scale %l1_ln1_g bias %l1_ln1_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %b1_q = nn.matmul %b1_h, %l1_wq : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b1_qh = nn.reshape %b1_q : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b1_k = nn.matmul %b1_h, %l1_wk : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b1_kh = nn.reshape %b1_k : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b1_v = nn.matmul %b1_h, %l1_wv : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b1_vh = nn.reshape %b1_v : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
    %b1_att = nn.attention %b1_qh, %b1_kh, %b1_vh mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
    %b1_a = nn.reshape %b1_att : tensor<8x16x4x8xf32> to tensor<8x16x32xf32>
    %b1_o = nn.matmul %b1_a, %l1_wo : tensor<8x16x32xf32>, tensor<32x32xf32>
    %b1_x1 = nn.add %b0_x2, %b1_o : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b1_h2 = nn.layer_norm %b1_x1 scale %l1_ln2_g bias %l1_ln2_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %b1_tk = nn.reshape %b1_h2 : tensor<8x16x32xf32> to tensor<128x32xf32>
    %b1_logits = nn.matmul %b1_tk, %l1_router : tensor<128x32xf32>, tensor<32x4xf32>
    %b1_probs = nn.softmax %b1_logits dim = 1 : tensor<128x4xf32>
    %b1_experts = nn.topk %b1_probs k = 2 : tensor<128x4xf32>
    %b1_gates = nn.gather %b1_probs, %b1_experts dim = 1 : tensor<128x4xf32>, tensor<128x2xi64>
    %b1_slots, %b1_counts = nn.moe_route %b1_experts num_experts = 4 : tensor<128x2xi64>
    %b1_buf = nn.moe_dispatch %b1_tk, %b1_slots rows = 256 : tensor<128x32xf32>, tensor<128x2xi64>
    %b1_m = nn.grouped_matmul %b1_buf, %l1_w1, %b1_counts : tensor<256x32xf32>, tensor<4x32x128xf32>, tensor<4xi64>
    %b1_g = nn.gelu %b1_m : tensor<256x128xf32>
    %b1_eo = nn.grouped_matmul %b1_g, %l1_w2, %b1_counts : tensor<256x128xf32>, tensor<4x128x32xf32>, tensor<4xi64>
    %b1_y = nn.moe_combine %b1_eo, %b1_slots weights %b1_gates : tensor<256x32xf32>, tensor<128x2xi64>, tensor<128x2xf32>
    %b1_ya = nn.reshape %b1_y : tensor<128x32xf32> to tensor<8x16x32xf32>
    %b1_routed = nn.cast %b1_counts : tensor<4xi64> to tensor<4xf32>
    %b1_f = nn.div %b1_routed, %entries : tensor<4xf32>, tensor<f32>
    %b1_p = nn.reduce mean %b1_probs dims = [0] : tensor<128x4xf32>
    %b1_fp = nn.mul %b1_f, %b1_p : tensor<4xf32>, tensor<4xf32>
    %b1_bal = nn.reduce sum %b1_fp dims = [0] : tensor<4xf32>
    %b1_aux = nn.mul %b1_bal, %aux_scale : tensor<f32>, tensor<f32>
    %b1_x2 = nn.add %b1_x1, %b1_ya : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b1_auxs = nn.add %b0_aux, %b1_aux : tensor<f32>, tensor<f32>
    %hf = nn.layer_norm %b1_x2 scale %lnf_g bias %lnf_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %logits = nn.matmul %hf, %whead : tensor<8x16x32xf32>, tensor<32x64xf32>
    %ce = nn.cross_entropy %logits, %targets {normalizer = 128.0 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>
    %loss = nn.add %ce, %b1_auxs : tensor<f32>, tensor<f32>
    return %loss : tensor<f32>
  }
}
