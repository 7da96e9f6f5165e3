// The cross-entropy loss and its gradient as reductions and element-wise
// ops (what lets propagation split the classes), and the same numbers as
// the fused ops: norm-wise relative difference below 1e-14 in f64, on
// random logits and labels (the gradient with a normaliser operand and the
// loss with weights, each a different code path).
// RUN: loom-opt %s --nn-decompose-cross-entropy -cse -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: loom-run --interpret %s --entry loss --random-inputs --seed 1 --int-range 0,10 --output-dir %t.fused.loss
// RUN: loom-run --interpret %t.mlir --entry loss --random-inputs --seed 1 --int-range 0,10 --output-dir %t.split.loss
// RUN: loom-run --interpret %s --entry grad --random-inputs --seed 2 --int-range 0,10 --output-dir %t.fused.grad
// RUN: loom-run --interpret %t.mlir --entry grad --random-inputs --seed 2 --int-range 0,10 --output-dir %t.split.grad
// RUN: %python -c "import numpy as np, sys; \
// RUN:   pairs = [('%t.fused.loss', '%t.split.loss'), ('%t.fused.grad', '%t.split.grad')]; \
// RUN:   errs = [np.linalg.norm(np.load(b + '/result_0.npy') - np.load(a + '/result_0.npy')) / np.linalg.norm(np.load(a + '/result_0.npy')) for a, b in pairs]; \
// RUN:   print('worst', max(errs)); sys.exit(0 if max(errs) < 1e-14 else 1)" | FileCheck %s --check-prefix=NUM
// NUM: worst
// A padding token (weight 0, label -100, logits all -inf) contributes
// nothing to the loss and gets a zero gradient, as with the fused ops.
// RUN: %python -c "import numpy as np; p = '%t'; \
// RUN:   l = np.random.default_rng(0).standard_normal((2, 3, 5)); l[1, 2, :] = -np.inf; np.save(p + '.l.npy', l); \
// RUN:   np.save(p + '.y.npy', np.array([[0, 1, 2], [3, 4, -100]], np.int64)); \
// RUN:   w = np.ones((2, 3)); w[1, 2] = 0; np.save(p + '.w.npy', w)"
// RUN: loom-run --interpret %s --entry pad --input %t.l.npy --input %t.y.npy --input %t.w.npy --output-dir %t.fused.pad
// RUN: loom-run --interpret %t.mlir --entry pad --input %t.l.npy --input %t.y.npy --input %t.w.npy --output-dir %t.split.pad
// RUN: %python -c "import numpy as np, sys; a, b = '%t.fused.pad', '%t.split.pad'; \
// RUN:   r = [np.load(d + '/result_%%d.npy' %% i) for d in (a, b) for i in (0, 1)]; \
// RUN:   ok = all(np.isfinite(x).all() for x in r) and abs(r[0] - r[2]) < 1e-14 * abs(r[0]) and np.abs(r[1] - r[3]).max() < 1e-14; \
// RUN:   print('padding', 'ok' if ok else 'differs'); sys.exit(0 if ok else 1)" | FileCheck %s --check-prefix=PAD
// PAD: padding ok

// CHECK-LABEL: func.func @loss
// CHECK-NOT: nn.cross_entropy
// CHECK: %[[MAX:.*]] = nn.reduce max %arg0 dims = [2] keep_dims
// CHECK: %[[Z:.*]] = nn.sub %arg0, %[[MAX]]
// CHECK: %[[E:.*]] = nn.exp %[[Z]]
// CHECK: %[[S:.*]] = nn.reduce sum %[[E]] dims = [2] keep_dims
// CHECK: %[[CLS:.*]] = nn.iota dim = 2 : tensor<4x6x10xi64>
// CHECK: %[[LAB:.*]] = nn.reshape %arg1 : tensor<4x6xi64> to tensor<4x6x1xi64>
// CHECK: %[[IS:.*]] = nn.compare eq, %[[CLS]], %[[LAB]]
// CHECK: %[[LOG:.*]] = nn.log %[[S]]
// CHECK: %[[PICK:.*]] = nn.select %[[IS]], %[[Z]]
// CHECK: %[[T:.*]] = nn.reduce sum %[[PICK]] dims = [2] keep_dims
// CHECK: nn.sub %[[LOG]], %[[T]]
// CHECK: nn.mul {{.*}}, %arg2
// CHECK: nn.reduce sum {{.*}} dims = [0, 1] : tensor<4x6xf64>
// CHECK: nn.fill 1.700000e+01
// CHECK: nn.div
func.func @loss(%logits: tensor<4x6x10xf64>, %labels: tensor<4x6xi64>, %w: tensor<4x6xf64>) -> tensor<f64> {
  %l = nn.cross_entropy %logits, %labels weights %w {normalizer = 17.0 : f64} : tensor<4x6x10xf64>, tensor<4x6xi64>, tensor<4x6xf64>
  return %l : tensor<f64>
}

// dlogits = (softmax - onehot) * dy / n.
// CHECK-LABEL: func.func @grad
// CHECK-NOT: nn.cross_entropy_grad
// CHECK: %[[P:.*]] = nn.div %{{.*}}, %{{.*}} : tensor<4x6x10xf64>, tensor<4x6x1xf64>
// CHECK: %[[ONE:.*]] = nn.select
// CHECK: %[[D:.*]] = nn.sub %[[P]], %[[ONE]]
// CHECK: %[[SCALE:.*]] = nn.div %arg0, %arg3 : tensor<f64>, tensor<f64>
// CHECK: nn.mul %[[D]], %[[SCALE]]
func.func @grad(%dy: tensor<f64>, %logits: tensor<4x6x10xf64>, %labels: tensor<4x6xi64>, %n: tensor<f64>) -> tensor<4x6x10xf64> {
  %g = nn.cross_entropy_grad %dy, %logits, %labels normalizer %n : tensor<f64>, tensor<4x6x10xf64>, tensor<4x6xi64>, tensor<f64>
  return %g : tensor<4x6x10xf64>
}

// CHECK-LABEL: func.func @pad
func.func @pad(%logits: tensor<2x3x5xf64>, %labels: tensor<2x3xi64>, %w: tensor<2x3xf64>) -> (tensor<f64>, tensor<2x3x5xf64>) {
  %l = nn.cross_entropy %logits, %labels weights %w {normalizer = 5.0 : f64} : tensor<2x3x5xf64>, tensor<2x3xi64>, tensor<2x3xf64>
  %one = nn.fill 1.0 : tensor<f64>
  %g = nn.cross_entropy_grad %one, %logits, %labels weights %w {normalizer = 5.0 : f64} : tensor<f64>, tensor<2x3x5xf64>, tensor<2x3xi64>, tensor<2x3xf64>
  return %l, %g : tensor<f64>, tensor<2x3x5xf64>
}
