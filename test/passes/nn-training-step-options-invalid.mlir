// RUN: not loom-opt %s --nn-training-step="micro-batches=3" 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not loom-opt %s --nn-training-step="micro-batches=0" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not loom-opt %s --nn-training-step="clip-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not loom-opt %s --nn-training-step="decay=step" 2>&1 | FileCheck %s --check-prefix=DECAY
// RUN: not loom-opt %s --nn-training-step="decay=cosine" 2>&1 | FileCheck %s --check-prefix=STEPS
// RUN: not loom-opt %s --nn-training-step="lr=0.1 decay=linear decay-steps=4 min-lr=0.5" 2>&1 | FileCheck %s --check-prefix=FLOOR
// RUN: not loom-opt %s --nn-training-step="warmup-steps=-2" 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not loom-opt %s --nn-training-step="param-groups='norm*:weight-decay=0'" 2>&1 | FileCheck %s --check-prefix=UNUSED
// RUN: not loom-opt %s --nn-training-step="param-groups='w:decay=0'" 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: not loom-opt %s --nn-training-step="param-groups='w:lr=fast'" 2>&1 | FileCheck %s --check-prefix=NUMBER
// RUN: not loom-opt %s --nn-training-step="param-groups='w'" 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not loom-opt %s --nn-training-step="decay-steps=100 min-lr=1e-4" 2>&1 | FileCheck %s --check-prefix=NODECAY
// RUN: not loom-opt %s --nn-training-step="optimizer=adamw param-groups='w:momentum=0.9'" 2>&1 | FileCheck %s --check-prefix=UNUSEDKEY

// The options of nn-training-step that no op verifier checks, and those the
// update ops' verifiers check (the schedule), each reported with what and
// where; nothing is created.

func.func @lin(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param},
               %t: tensor<4x2xf32> {nn.data}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %d = nn.sub %y, %t : tensor<4x2xf32>, tensor<4x2xf32>
  %s = nn.mul %d, %d : tensor<4x2xf32>, tensor<4x2xf32>
  %l = nn.reduce sum %s dims = [0, 1] : tensor<4x2xf32>
  return %l : tensor<f32>
}

// DIVIDE: nn-training-step-options-invalid.mlir:19:16: error: micro-batches = 3 does not divide the batch of 4 rows of argument 'x' of @lin
// COUNT: error: nn-training-step: micro-batches must be positive, got 0
// CLIP: error: nn-training-step: clip-norm must be a positive, finite norm (0: no clipping), got -1
// DECAY: error: nn-training-step: decay must be constant, linear or cosine, got 'step'
// STEPS: error: 'nn.adamw_update' op decay = cosine needs decay_steps > 0
// FLOOR: error: 'nn.adamw_update' op min_lr must lie in [0, lr = 0.1], got 0.5
// WARMUP: error: 'nn.adamw_update' op warmup_steps must be >= 0, got -2
// UNUSED: nn-training-step-options-invalid.mlir:19:1: error: parameter group 'norm*:weight-decay=0' matches no parameter of @lin (parameters match by nn.name)
// KEY: error: nn-training-step: parameter group 'w:decay=0': unknown setting 'decay' (lr, weight-decay, momentum, beta1, beta2, eps, min-lr)
// NUMBER: error: nn-training-step: parameter group 'w:lr=fast': 'lr' needs a number, got 'fast'
// NODECAY: error: nn-training-step: decay-steps and min-lr need decay=linear or decay=cosine (decay is constant)
// UNUSEDKEY: error: nn-training-step: parameter group 'w:momentum=0.9': 'momentum' does not apply to AdamW
// FORM: error: nn-training-step: parameter group 'w' must be PATTERN[,PATTERN...]:KEY=VALUE[ KEY=VALUE...]
