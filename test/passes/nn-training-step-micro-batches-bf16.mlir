// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=1 micro-batches=4" | FileCheck %s
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=1 micro-batches=4" -o %t.mlir
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.array([[0x4380], [0x3F80], [0x3F80], [0x3F80]], np.uint16)); np.save('%t.w.npy', np.zeros((1, 1), np.uint16))"
// RUN: rm -rf %t.out && loom-run --interpret %t.mlir --entry m_train_step --input %t.w.npy --input %t.w.npy --input %t.x.npy --output-dir %t.out
// RUN: %python -c "import numpy as np; w = (np.load('%t.out/result_1.npy').astype(np.uint32) << 16).view(np.float32); print('new w', w.ravel().tolist())" | FileCheck %s --check-prefix=SUM

// bf16 gradients of several micro-batches are summed in f32: each widened
// before it is added, the sum narrowed back once, before the update.
func.func @m(%x: tensor<4x1xbf16> {nn.data}, %w: tensor<1x1xbf16> {nn.param}) -> tensor<bf16> {
  %y = nn.matmul %x, %w : tensor<4x1xbf16>, tensor<1x1xbf16>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<4x1xbf16>
  return %l : tensor<bf16>
}

// CHECK-LABEL: func.func @m_train_step(
// CHECK:      %[[G0:.*]] = nn.cast %{{.*}} : tensor<1x1xbf16> to tensor<1x1xf32>
// CHECK:      %[[G1:.*]] = nn.cast %{{.*}} : tensor<1x1xbf16> to tensor<1x1xf32>
// CHECK-NEXT: %[[S1:.*]] = nn.add %[[G0]], %[[G1]] : tensor<1x1xf32>, tensor<1x1xf32>
// CHECK-COUNT-2: nn.add %{{.*}} : tensor<1x1xf32>, tensor<1x1xf32>
// CHECK:      %[[G:.*]] = nn.cast %{{.*}} : tensor<1x1xf32> to tensor<1x1xbf16>
// CHECK:      nn.sgd_update %{{.*}}, %[[G]], %{{.*}}

// The gradient of w is the sum of x over the micro-batches, 256 + 1 + 1 + 1:
// in f32, 259, which rounds to 260 in bf16 (spacing 2 at 256, ties to
// even); summed in bf16 every 256 + 1 would round back to 256. SGD with
// lr = 1 from w = 0 gives -260.
// SUM: new w [-260.0]
