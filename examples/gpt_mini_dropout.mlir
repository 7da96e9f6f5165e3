// GPT-mini with dropout on the residual stream (examples/gpt_mini.mlir
// otherwise): each block's attention and MLP outputs are dropped with rate
// 0.1 (one seed per site) before they are added to the residual, as GPT-2
// does. The masks are drawn by global element index, so a sharded step
// (batch, sequence, or tensor-parallel splits, inside a group or across
// groups) drops exactly the elements one device drops.
//
// GPT-mini, the reference model of docs/architecture.md: vocabulary 64,
// sequence 16, learned position embeddings, width 32, 4 heads, 2 pre-norm
// blocks (causal attention, GELU MLP of width 128, layer norm), cross-entropy
// over next tokens, batch 8. One device's forward pass returning the loss;
// parameters are marked nn.param, token ids and targets nn.data. The
// synthetic task's targets are (7 * token + 3) mod 64.
module {
  func.func @gpt_mini_dropout(%tokens: tensor<8x16xi64> {nn.data},
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
      %l0_w1: tensor<32x128xf32> {nn.param},
      %l0_b1: tensor<128xf32> {nn.param},
      %l0_w2: tensor<128x32xf32> {nn.param},
      %l0_b2: tensor<32xf32> {nn.param},
      %l1_ln1_g: tensor<32xf32> {nn.param},
      %l1_ln1_b: tensor<32xf32> {nn.param},
      %l1_wq: tensor<32x32xf32> {nn.param},
      %l1_wk: tensor<32x32xf32> {nn.param},
      %l1_wv: tensor<32x32xf32> {nn.param},
      %l1_wo: tensor<32x32xf32> {nn.param},
      %l1_ln2_g: tensor<32xf32> {nn.param},
      %l1_ln2_b: tensor<32xf32> {nn.param},
      %l1_w1: tensor<32x128xf32> {nn.param},
      %l1_b1: tensor<128xf32> {nn.param},
      %l1_w2: tensor<128x32xf32> {nn.param},
      %l1_b2: tensor<32xf32> {nn.param},
      %lnf_g: tensor<32xf32> {nn.param},
      %lnf_b: tensor<32xf32> {nn.param},
      %whead: tensor<32x64xf32> {nn.param}) -> tensor<f32> {
    %tok = nn.embedding %wte, %tokens : tensor<64x32xf32>, tensor<8x16xi64>
    %pos_ids = nn.iota dim = 1 : tensor<8x16xi64>
    %pos = nn.embedding %wpe, %pos_ids : tensor<16x32xf32>, tensor<8x16xi64>
    %x0 = nn.add %tok, %pos : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    // Block 0: pre-norm causal self-attention, then a GELU MLP.
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
    %b0_od = nn.dropout %b0_o {rate = 0.1 : f64, seed = 11 : i64} : tensor<8x16x32xf32>
    %b0_x1 = nn.add %x0, %b0_od : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b0_h2 = nn.layer_norm %b0_x1 scale %l0_ln2_g bias %l0_ln2_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %b0_m = nn.matmul %b0_h2, %l0_w1 : tensor<8x16x32xf32>, tensor<32x128xf32>
    %b0_m1 = nn.add %b0_m, %l0_b1 : tensor<8x16x128xf32>, tensor<128xf32>
    %b0_g = nn.gelu %b0_m1 : tensor<8x16x128xf32>
    %b0_m2 = nn.matmul %b0_g, %l0_w2 : tensor<8x16x128xf32>, tensor<128x32xf32>
    %b0_m3 = nn.add %b0_m2, %l0_b2 : tensor<8x16x32xf32>, tensor<32xf32>
    %b0_m3d = nn.dropout %b0_m3 {rate = 0.1 : f64, seed = 12 : i64} : tensor<8x16x32xf32>
    %b0_x2 = nn.add %b0_x1, %b0_m3d : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    // Block 1: pre-norm causal self-attention, then a GELU MLP.
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
    %b1_od = nn.dropout %b1_o {rate = 0.1 : f64, seed = 13 : i64} : tensor<8x16x32xf32>
    %b1_x1 = nn.add %b0_x2, %b1_od : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %b1_h2 = nn.layer_norm %b1_x1 scale %l1_ln2_g bias %l1_ln2_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %b1_m = nn.matmul %b1_h2, %l1_w1 : tensor<8x16x32xf32>, tensor<32x128xf32>
    %b1_m1 = nn.add %b1_m, %l1_b1 : tensor<8x16x128xf32>, tensor<128xf32>
    %b1_g = nn.gelu %b1_m1 : tensor<8x16x128xf32>
    %b1_m2 = nn.matmul %b1_g, %l1_w2 : tensor<8x16x128xf32>, tensor<128x32xf32>
    %b1_m3 = nn.add %b1_m2, %l1_b2 : tensor<8x16x32xf32>, tensor<32xf32>
    %b1_m3d = nn.dropout %b1_m3 {rate = 0.1 : f64, seed = 14 : i64} : tensor<8x16x32xf32>
    %b1_x2 = nn.add %b1_x1, %b1_m3d : tensor<8x16x32xf32>, tensor<8x16x32xf32>
    %hf = nn.layer_norm %b1_x2 scale %lnf_g bias %lnf_b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %logits = nn.matmul %hf, %whead : tensor<8x16x32xf32>, tensor<32x64xf32>
    // Mean over the 128 target tokens of the batch.
    %loss = nn.cross_entropy %logits, %targets {normalizer = 128.0 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>
    return %loss : tensor<f32>
  }
}
