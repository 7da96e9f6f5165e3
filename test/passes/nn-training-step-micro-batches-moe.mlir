// A mixture-of-experts layer under micro-batches: each micro-batch routes
// its own tokens (its own counts, and a buffer of its own T * k rows, here
// 4 tokens x 2 = 8), computes its experts (a buffer cast to f32 and back
// included) and combines back to its tokens; the step's loss and
// gradients are the whole batch's: every result (the updated parameters
// and momenta, the loss) within 1e-6 norm-wise of the unsplit step's (the
// experts compute in f32: a few roundings of 6e-8 each).
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batches=2" | FileCheck %s
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batches=2" -o %t.micro.mlir
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1" -o %t.whole.mlir
// RUN: %python -c "import numpy as np; r = np.random.default_rng(3); np.save('%t.tok.npy', r.integers(0, 16, 8)); np.save('%t.exp.npy', np.array([[0, 1], [2, 3], [1, 0], [3, 2], [0, 2], [1, 3], [2, 0], [3, 1]])); np.save('%t.wte.npy', r.standard_normal((16, 4))); np.save('%t.w1.npy', r.standard_normal((4, 4, 4)).astype(np.float32)); np.save('%t.m0.npy', np.zeros((16, 4))); np.save('%t.m1.npy', np.zeros((4, 4, 4), np.float32))"
// RUN: loom-run --interpret %t.whole.mlir --entry moe_layer_train_step --input %t.wte.npy --input %t.w1.npy --input %t.m0.npy --input %t.m1.npy --input %t.tok.npy --input %t.exp.npy --output-dir %t.w
// RUN: loom-run --interpret %t.micro.mlir --entry moe_layer_train_step --input %t.wte.npy --input %t.w1.npy --input %t.m0.npy --input %t.m1.npy --input %t.tok.npy --input %t.exp.npy --output-dir %t.m
// RUN: %python -c "import numpy as np, os, sys; n = len([f for f in os.listdir('%t.w') if f.startswith('result_')]); load = lambda d, i: np.load(f'{d}/result_{i}.npy').astype(float); errs = [float(np.linalg.norm(load('%t.m', i) - load('%t.w', i)) / max(np.linalg.norm(load('%t.w', i)), 1e-300)) for i in range(n)]; print(n, 'results, errors', errs); sys.exit(not (n == 5 and all(e <= 1e-6 for e in errs)))"

// CHECK-LABEL: func.func @moe_layer_train_step
// CHECK: nn.moe_route %{{.*}} num_experts = 4 : tensor<4x2xi64>
// CHECK: nn.moe_dispatch %{{.*}} rows = 8 : tensor<4x4xf64>, tensor<4x2xi64>
// CHECK: nn.cast %{{.*}} : tensor<8x4xf64> to tensor<8x4xf32>
// CHECK: nn.grouped_matmul %{{.*}} : tensor<8x4xf32>, tensor<4x4x4xf32>, tensor<4xi64>
// CHECK: nn.moe_combine %{{.*}} : tensor<8x4xf64>, tensor<4x2xi64>

func.func @moe_layer(%tokens: tensor<8xi64> {nn.data}, %experts: tensor<8x2xi64> {nn.data},
                     %wte: tensor<16x4xf64> {nn.param}, %w1: tensor<4x4x4xf32> {nn.param})
    -> tensor<f64> {
  %x = nn.embedding %wte, %tokens : tensor<16x4xf64>, tensor<8xi64>
  %slots, %counts = nn.moe_route %experts num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x4xf64>, tensor<8x2xi64>
  %bufc = nn.cast %buf : tensor<16x4xf64> to tensor<16x4xf32>
  %h = nn.grouped_matmul %bufc, %w1, %counts : tensor<16x4xf32>, tensor<4x4x4xf32>, tensor<4xi64>
  %hc = nn.cast %h : tensor<16x4xf32> to tensor<16x4xf64>
  %y = nn.moe_combine %hc, %slots : tensor<16x4xf64>, tensor<8x2xi64>
  %sq = nn.mul %y, %y : tensor<8x4xf64>, tensor<8x4xf64>
  %total = nn.reduce sum %sq dims = [0, 1] : tensor<8x4xf64>
  return %total : tensor<f64>
}
