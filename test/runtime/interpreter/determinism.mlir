// The interpreter is bitwise deterministic: a transformer-block-like program
// (embedding, layer norm, attention, GELU MLP, cross-entropy, AdamW) run
// twice on the same random inputs gives identical bits, also when OpenBLAS
// is told to use several threads (the interpreter pins it to one).
// RUN: loom-run --interpret %s --random-inputs --seed 11 --output-dir %t.1
// RUN: env OPENBLAS_NUM_THREADS=4 loom-run --interpret %s --random-inputs --seed 11 --output-dir %t.2
// RUN: cmp %t.1/result_0.npy %t.2/result_0.npy
// RUN: cmp %t.1/result_1.npy %t.2/result_1.npy
// RUN: cmp %t.1/result_2.npy %t.2/result_2.npy
// RUN: loom-run --interpret %s --random-inputs --seed 12 --output-dir %t.3
// RUN: not cmp %t.1/result_0.npy %t.3/result_0.npy
//
// --repeat N calls the function N more times, checks that each call gives
// the first call's bits, and reports the time per call and the BLAS.
// RUN: loom-run --interpret %s --random-inputs --seed 11 --repeat 3 --output-dir %t.4 | FileCheck %s --check-prefix=REPEAT
// RUN: cmp %t.1/result_0.npy %t.4/result_0.npy
// REPEAT: timing: 3 calls of @main, min {{[0-9.]+}} s, median {{[0-9.]+}} s per call
// REPEAT-NEXT: blas: OpenBLAS {{.*}}, core {{.*}}, 1 thread
// RUN: not loom-run --interpret %s --random-inputs --repeat -1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: --repeat expects N >= 0, got -1

func.func @main(%table: tensor<64x32xf32>, %ids: tensor<4x16xi64>,
                %gamma: tensor<32xf32>, %wq: tensor<32x32xf32>,
                %wk: tensor<32x32xf32>, %wv: tensor<32x32xf32>,
                %w1: tensor<32x128xf32>, %w2: tensor<128x64xf32>,
                %labels: tensor<4x16xi64>, %m: tensor<128x64xf32>,
                %v: tensor<128x64xf32>)
    -> (tensor<f32>, tensor<4x16x64xf32>, tensor<128x64xf32>) {
  %x = nn.embedding %table, %ids : tensor<64x32xf32>, tensor<4x16xi64>
  %h = nn.layer_norm %x scale %gamma : tensor<4x16x32xf32>, tensor<32xf32>
  %q0 = nn.matmul %h, %wq : tensor<4x16x32xf32>, tensor<32x32xf32>
  %k0 = nn.matmul %h, %wk : tensor<4x16x32xf32>, tensor<32x32xf32>
  %v0 = nn.matmul %h, %wv : tensor<4x16x32xf32>, tensor<32x32xf32>
  %q = nn.reshape %q0 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
  %k = nn.reshape %k0 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
  %vv = nn.reshape %v0 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
  %a = nn.attention %q, %k, %vv mask = causal
      : tensor<4x16x4x8xf32>, tensor<4x16x4x8xf32>, tensor<4x16x4x8xf32>
  %a2 = nn.reshape %a : tensor<4x16x4x8xf32> to tensor<4x16x32xf32>
  %r = nn.add %x, %a2 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
  %u = nn.matmul %r, %w1 : tensor<4x16x32xf32>, tensor<32x128xf32>
  %g = nn.gelu %u approximate = tanh : tensor<4x16x128xf32>
  %logits = nn.matmul %g, %w2 : tensor<4x16x128xf32>, tensor<128x64xf32>
  %loss = nn.cross_entropy %logits, %labels {normalizer = 64.0 : f64}
      : tensor<4x16x64xf32>, tensor<4x16xi64>
  %step = arith.constant dense<3> : tensor<i64>
  %p, %m1, %v1 = nn.adamw_update %w2, %w2, %m, %v, %step {lr = 1.0e-03 : f64}
      : tensor<128x64xf32>
  return %loss, %logits, %p : tensor<f32>, tensor<4x16x64xf32>, tensor<128x64xf32>
}
