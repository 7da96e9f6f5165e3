// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batch-shapes=2x8" | FileCheck %s
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batch-shapes=2x8" -o %t.mb.mlir
// RUN: sed -e 's/4x4xi64/2x8xi64/g' -e 's/4x4x4xf64/2x8x4xf64/g' -e 's/4x4x8xf64/2x8x8xf64/g' %s | loom-opt --nn-training-step="optimizer=sgd lr=0.1" -o %t.plain.mlir
// RUN: rm -rf %t.data && mkdir %t.data && %python -c "import numpy as np; r = np.random.default_rng(3); t = r.integers(0, 8, (3, 2, 8)); [np.save('%t.data/' + n + '.npy', a) for n, a in (('tokens_2x8', t), ('tokens', t), ('targets_2x8', (t + 1) %% 8), ('targets', (t + 1) %% 8))]"
// RUN: loom-run --interpret %t.mb.mlir --train --steps 3 --data %t.data --json > %t.mb.log
// RUN: loom-run --interpret %t.plain.mlir --train --steps 3 --data %t.data --json > %t.plain.log
// RUN: %python %loom_src_root/test/frontends/config/close_losses.py %t.mb.log %t.plain.log 1e-12 | FileCheck %s --check-prefix=SAME

// A micro-batch of as many tokens as the forward's batch in another shape
// (one 2x8 micro-batch of a 4x4 batch): the flattened rows and positions
// keep their size (16), but their unflattening takes the micro-batch's
// rows and length. Trained (f64, 3 SGD steps), it equals the plain step of
// the forward written at 2x8.
func.func @lm(%tokens: tensor<4x4xi64> {nn.data},
              %targets: tensor<4x4xi64> {nn.data},
              %wte: tensor<8x4xf64> {nn.param},
              %wpe: tensor<8x4xf64> {nn.param},
              %w: tensor<4x8xf64> {nn.param}) -> tensor<f64> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf64>, tensor<4x4xi64>
  %pos = nn.iota dim = 1 : tensor<4x4xi64>
  %p = nn.embedding %wpe, %pos : tensor<8x4xf64>, tensor<4x4xi64>
  %x = nn.add %t, %p : tensor<4x4x4xf64>, tensor<4x4x4xf64>
  %h = nn.reshape %x : tensor<4x4x4xf64> to tensor<16x4xf64>
  %logits = nn.matmul %h, %w : tensor<16x4xf64>, tensor<4x8xf64>
  %l3 = nn.reshape %logits : tensor<16x8xf64> to tensor<4x4x8xf64>
  %loss = nn.cross_entropy %l3, %targets {normalizer = 16.0 : f64} : tensor<4x4x8xf64>, tensor<4x4xi64>
  return %loss : tensor<f64>
}

// CHECK-LABEL: func.func @lm_train_step(
// CHECK: nn.reshape %{{.*}} : tensor<2x8x4xf64> to tensor<16x4xf64>
// CHECK: nn.reshape %{{.*}} : tensor<16x8xf64> to tensor<2x8x8xf64>
// CHECK: nn.cross_entropy %{{.*}} : tensor<2x8x8xf64>, tensor<2x8xi64>
// SAME: 3 losses agree within 1e-12
