// loom-run --train is bitwise reproducible: two runs with the same seed print
// identical losses (tokens/s aside); another seed gives other losses. The
// model is a tiny token classifier on the tokens task (target = (7 * token
// + 3) mod V), trained with AdamW, so the step counter is exercised.
// RUN: loom-opt %s --loom-training-pipeline="optimizer=adamw lr=1e-2" -o %t.step.mlir
// RUN: loom-run --interpret %t.step.mlir --train --steps 20 --seed 3 --vocab 16 --json > %t.1
// RUN: env OPENBLAS_NUM_THREADS=4 loom-run --interpret %t.step.mlir --train --steps 20 --seed 3 --vocab 16 --json > %t.2
// RUN: %python %S/train_same_losses.py %t.1 %t.2
// RUN: loom-run --interpret %t.step.mlir --train --steps 20 --seed 4 --vocab 16 --json > %t.3
// RUN: not %python %S/train_same_losses.py %t.1 %t.3
// RUN: %python %S/train_loss_check.py %t.1 --steps 20 --ratio 1.0
// --entry names the step; the result is the same.
// RUN: loom-run --interpret %t.step.mlir --train --entry cls_train_step --steps 20 --seed 3 --vocab 16 --json > %t.4
// RUN: %python %S/train_same_losses.py %t.1 %t.4

// Errors are diagnostics, not crashes.
// RUN: not loom-run --interpret %t.step.mlir --train --steps 0 2>&1 | FileCheck %s --check-prefix=STEPS
// STEPS: error: --steps must be at least 1
// RUN: not loom-run --interpret %t.step.mlir --train --data-task affine 2>&1 | FileCheck %s --check-prefix=TASK
// TASK: error: --data-task affine needs a float nn.data argument
// RUN: not loom-run --interpret %t.step.mlir --train --data-task bogus 2>&1 | FileCheck %s --check-prefix=BOGUS
// BOGUS: error: --data-task must be auto, tokens, affine or classes, got 'bogus'
// RUN: not loom-run --interpret %s --train 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: --train needs a training step: no function has a result marked nn.loss
// RUN: not loom-run --interpret %t.step.mlir --train --init-npy %t.missing 2>&1 | FileCheck %s --check-prefix=INIT
// INIT: error: --init-npy:
// RUN: not loom-run --interpret %t.step.mlir --train --entry cls 2>&1 | FileCheck %s --check-prefix=NOTSTEP
// NOTSTEP: error: @cls has no nn.loss result; --train runs a training step
// RUN: not loom-run --interpret %t.step.mlir --json 2>&1 | FileCheck %s --check-prefix=ONLY
// ONLY: error: --steps, --vocab, --data-task, --json and --init-npy only apply with --train
// RUN: not loom-run --interpret %t.step.mlir --train --random-inputs 2>&1 | FileCheck %s --check-prefix=MIX
// MIX: error: --train generates its own arguments

func.func @cls(%tokens: tensor<4x8xi64> {nn.data},
               %targets: tensor<4x8xi64> {nn.data},
               %emb: tensor<16x8xf32> {nn.param},
               %head: tensor<8x16xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %emb, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %logits = nn.matmul %x, %head : tensor<4x8x8xf32>, tensor<8x16xf32>
  %loss = nn.cross_entropy %logits, %targets {normalizer = 32.0 : f64} : tensor<4x8x16xf32>, tensor<4x8xi64>
  return %loss : tensor<f32>
}
