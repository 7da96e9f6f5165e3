// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2x6,2x3" 2>&1 | FileCheck %s --check-prefix=TOKENS
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2x6*0" 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2by6" 2>&1 | FileCheck %s --check-prefix=FORM2
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batches=2 micro-batch-shapes=2x6*2" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not loom-opt %s --nn-training-step="func=rows micro-batch-shapes=2x6*2" 2>&1 | FileCheck %s --check-prefix=NOSEQ

// The micro-batch-shapes option's own errors, with what and where.

func.func @lm(%tokens: tensor<4x6xi64> {nn.data}, %targets: tensor<4x6xi64> {nn.data},
              %wte: tensor<8x4xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  %loss = nn.cross_entropy %t, %targets {normalizer = 24.0 : f64} : tensor<4x6x4xf32>, tensor<4x6xi64>
  return %loss : tensor<f32>
}

// TOKENS: nn-training-step-micro-batch-shapes-options.mlir:9:1: error: micro-batch-shapes (1 x 2x6, 1 x 2x3) hold 18 tokens, but @lm's batch holds 4x6 = 24: the micro-batches of a step must hold the forward's tokens, so that its normalisers are the whole step's
// FORM: error: nn-training-step: micro-batch shape '2x6*0' must be ROWSxLENGTH or ROWSxLENGTH*COUNT (positive integers)
// FORM2: error: nn-training-step: micro-batch shape '2by6' must be ROWSxLENGTH or ROWSxLENGTH*COUNT (positive integers)
// BOTH: error: nn-training-step: micro-batches and micro-batch-shapes are exclusive (the shapes give the micro-batches)

func.func @rows(%x: tensor<4xf32> {nn.data}, %w: tensor<f32> {nn.param}) -> tensor<f32> {
  %y = nn.mul %x, %w : tensor<4xf32>, tensor<f32>
  %l = nn.reduce sum %y dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// NOSEQ: error: micro-batch-shapes change the rows and the sequence length (dimension 1) of the data, but no nn.data argument of @rows has rank >= 2 (give micro-batches=K)

// Several compositions (separated by ';'): each must name a shape, hold the
// forward's tokens (the error names the composition), and differ from the
// others.
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2x6*2;;4x3*2" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2x6*2;4x3*2;4x3" 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2x6*2;4x3*2;4x3,4x3" 2>&1 | FileCheck %s --check-prefix=SAME
// EMPTY: error: nn-training-step: micro-batch-shapes: composition 2 of 3 is empty (compositions are separated by ';', their shapes by ',')
// RUN: not loom-opt %s --nn-training-step="func=lm micro-batch-shapes=2x6*2;" 2>&1 | FileCheck %s --check-prefix=TRAILING
// TRAILING: error: nn-training-step: micro-batch-shapes: composition 2 of 2 is empty
// SHORT: error: micro-batch-shapes (1 x 4x3, composition 3 of 3) hold 12 tokens, but @lm's batch holds 4x6 = 24
// SAME: error: nn-training-step: micro-batch-shapes: compositions 2 and 3 hold the same micro-batches ('4x3,4x3')
