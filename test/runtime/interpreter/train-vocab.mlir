// --train draws integer data from [0, --vocab); a vocabulary larger than
// what the ids index is an error that names the argument and the op, not a
// run that fails later on ids out of range.
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd lr=1e-1" -o %t.step.mlir
// RUN: loom-run --interpret %t.step.mlir --train --steps 3 --vocab 16 | FileCheck %s --check-prefix=OK
// OK: step 3 loss
// RUN: not loom-run --interpret %t.step.mlir --train --steps 3 --vocab 40 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: error: --vocab 40 draws ids up to 39 for nn.data argument #{{[0-9]+}} of @narrow_train_step, but it feeds this op, which has 32 rows in the embedding table; pass --vocab 32 or less
// ROWS-NEXT: nn.embedding
// The targets of the tokens task, (7 * token + 3) mod vocab, reach the
// cross-entropy's 16 classes only for a vocabulary of at most 16.
// RUN: not loom-run --interpret %t.step.mlir --train --steps 3 --vocab 20 2>&1 | FileCheck %s --check-prefix=CLASSES
// CLASSES: error: --vocab 20 draws ids up to 19 for nn.data argument #{{[0-9]+}} of @narrow_train_step, but it feeds this op, which has 16 classes in the cross-entropy logits; pass --vocab 16 or less
// CLASSES-NEXT: nn.cross_entropy

func.func @narrow(%tokens: tensor<4x8xi64> {nn.data},
                  %targets: tensor<4x8xi64> {nn.data},
                  %emb: tensor<32x8xf32> {nn.param},
                  %head: tensor<8x16xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %emb, %tokens : tensor<32x8xf32>, tensor<4x8xi64>
  %logits = nn.matmul %x, %head : tensor<4x8x8xf32>, tensor<8x16xf32>
  %loss = nn.cross_entropy %logits, %targets {normalizer = 32.0 : f64} : tensor<4x8x16xf32>, tensor<4x8xi64>
  return %loss : tensor<f32>
}
