// The backward kernels reject operands whose run-time shapes do not fit
// (dynamic dimensions the verifier cannot see) and result types they cannot
// size, with a diagnostic at the op; nothing crashes.

// RUN: %python -c "import numpy as np; p = '%t'; \
// RUN:   np.save(p + '.v4.npy', np.zeros((4,), np.float32)); \
// RUN:   np.save(p + '.v5.npy', np.zeros((5,), np.float32)); \
// RUN:   np.save(p + '.m45.npy', np.zeros((4, 5), np.float32)); \
// RUN:   np.save(p + '.i45.npy', np.zeros((4, 5), np.int64)); \
// RUN:   np.save(p + '.i3.npy', np.zeros((3,), np.int64)); \
// RUN:   np.save(p + '.a.npy', np.zeros((1, 3, 2, 4), np.float32)); \
// RUN:   np.save(p + '.b.npy', np.zeros((1, 2, 2, 4), np.float32))"

// RUN: not loom-run --interpret %s --entry gelu_grad --input %t.v4.npy --input %t.v5.npy 2>&1 | FileCheck %s --check-prefix=GELU
// GELU: error: 'nn.gelu_grad' op grad has shape [4] but the shape of the input is [5]

// RUN: not loom-run --interpret %s --entry norm_grad --input %t.m45.npy --input %t.v5.npy --input %t.v4.npy 2>&1 | FileCheck %s --check-prefix=NORM
// NORM: error: 'nn.layer_norm_grad' op scale has shape [4] but the normalised trailing shape of the input is [5]

// RUN: not loom-run --interpret %s --entry ce_grad --input %t.m45.npy --input %t.i3.npy 2>&1 | FileCheck %s --check-prefix=CE
// CE: error: 'nn.cross_entropy_grad' op labels has shape [3] but the logits shape without the last dimension is [4]

// RUN: not loom-run --interpret %s --entry attention_grad --input %t.b.npy --input %t.a.npy --input %t.a.npy --input %t.a.npy 2>&1 | FileCheck %s --check-prefix=ATT
// ATT: error: 'nn.attention_grad' op grad has shape [1, 2, 2, 4] but the attention's result [batch, seq_q, heads, value_head_dim] is [1, 3, 2, 4]

// RUN: not loom-run --interpret %s --entry gather_grad --input %t.m45.npy --input %t.i45.npy 2>&1 | FileCheck %s --check-prefix=GATHER
// GATHER: error: 'nn.gather_grad' op the interpreter needs a static result type, got 'tensor<4x?xf32>'

func.func @gelu_grad(%dy: tensor<?xf32>, %x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = nn.gelu_grad %dy, %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

func.func @norm_grad(%dy: tensor<4x?xf32>, %x: tensor<?xf32>, %g: tensor<?xf32>) -> tensor<4x?xf32> {
  %x2 = nn.broadcast %x : tensor<?xf32> to tensor<4x?xf32>
  %0 = nn.layer_norm_grad %dy, %x2 scale %g : tensor<4x?xf32>, tensor<4x?xf32>, tensor<?xf32>
  return %0 : tensor<4x?xf32>
}

func.func @ce_grad(%logits: tensor<?x5xf32>, %labels: tensor<?xi64>) -> tensor<?x5xf32> {
  %one = nn.fill 1.0 : tensor<f32>
  %0 = nn.cross_entropy_grad %one, %logits, %labels {normalizer = 1.0 : f64} : tensor<f32>, tensor<?x5xf32>, tensor<?xi64>
  return %0 : tensor<?x5xf32>
}

func.func @attention_grad(%dy: tensor<1x?x2x4xf32>, %q: tensor<1x?x2x4xf32>, %k: tensor<1x?x2x4xf32>, %v: tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32> {
  %dq, %dk, %dv = nn.attention_grad %dy, %q, %k, %v mask = none : tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>
  return %dq : tensor<1x?x2x4xf32>
}

func.func @gather_grad(%dy: tensor<4x5xf32>, %idx: tensor<4x5xi64>) -> tensor<4x?xf32> {
  %0 = nn.gather_grad %dy, %idx dim = 1 : tensor<4x5xf32>, tensor<4x5xi64> to tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}
