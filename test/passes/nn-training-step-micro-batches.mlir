// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batches=2 clip-norm=1.0 warmup-steps=2 decay=cosine decay-steps=4 min-lr=0.01" | FileCheck %s
// RUN: loom-opt %s --nn-training-step="optimizer=adamw lr=0.1 weight-decay=0.1 param-groups='w:lr=0.05 weight-decay=0'" | FileCheck %s --check-prefix=GROUPS

// A weighted squared error normalised by the batch's total weight. With two
// micro-batches: the normaliser (data alone, reduced over the rows) is
// computed once from the whole batch; micro-batch k takes rows k, k + 2
// (a reshape to [2, 2, ...], the slice of k along dimension 1, a reshape
// back) of every data argument; each runs its forward and backward in turn
// and the losses and gradients are summed; then the gradients are clipped
// by their global norm (returned, nn.grad_norm) and one update, with the
// schedule as its attributes, runs per parameter.
func.func @lin(%x: tensor<4x3xf32> {nn.data}, %w: tensor<3x2xf32> {nn.param},
               %t: tensor<4x2xf32> {nn.data}, %m: tensor<4xf32> {nn.data})
    -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %d = nn.sub %y, %t : tensor<4x2xf32>, tensor<4x2xf32>
  %s = nn.mul %d, %d : tensor<4x2xf32>, tensor<4x2xf32>
  %r = nn.reduce sum %s dims = [1] : tensor<4x2xf32>
  %e = nn.mul %r, %m : tensor<4xf32>, tensor<4xf32>
  %sum = nn.reduce sum %e dims = [0] : tensor<4xf32>
  %n = nn.reduce sum %m dims = [0] : tensor<4xf32>
  %l = nn.div %sum, %n : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @lin_train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {nn.name = "w", nn.param}, %[[MW:[a-z0-9]+]]: tensor<3x2xf32> {nn.name = "w.momentum", nn.state = 0 : i64}, %[[STEP:[a-z0-9]+]]: tensor<i64> {nn.step},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {nn.data, nn.name = "x"}, %[[T:[a-z0-9]+]]: tensor<4x2xf32> {nn.data, nn.name = "t"}, %[[M:[a-z0-9]+]]: tensor<4xf32> {nn.data, nn.name = "m"})
// CHECK-SAME: -> (tensor<f32> {nn.loss}, tensor<f32> {nn.grad_norm}, tensor<3x2xf32> {nn.updates = 0 : i64}, tensor<3x2xf32> {nn.updates = 1 : i64})
// CHECK-NEXT: %[[N:.*]] = nn.reduce sum %[[M]] dims = [0] : tensor<4xf32>
// CHECK-NEXT: %[[F0:.*]] = nn.reshape %[[X]] : tensor<4x3xf32> to tensor<2x2x3xf32>
// CHECK-NEXT: %[[S0:.*]] = nn.slice %[[F0]] offsets = [0, 0, 0] sizes = [2, 1, 3] strides = [1, 1, 1] : tensor<2x2x3xf32>
// CHECK-NEXT: %[[X0:.*]] = nn.reshape %[[S0]] : tensor<2x1x3xf32> to tensor<2x3xf32>
// CHECK:      nn.matmul %[[X0]], %[[W]] : tensor<2x3xf32>, tensor<3x2xf32>
// CHECK:      %[[L0:.*]] = nn.div %{{.*}}, %[[N]] : tensor<f32>, tensor<f32>
// CHECK:      %[[G0:.*]] = nn.matmul %[[X0]], %{{.*}} transpose_lhs : tensor<2x3xf32>, tensor<2x2xf32>
// CHECK:      nn.slice %{{.*}} offsets = [0, 1, 0] sizes = [2, 1, 3] strides = [1, 1, 1] : tensor<2x2x3xf32>
// CHECK:      %[[L1:.*]] = nn.div %{{.*}}, %[[N]] : tensor<f32>, tensor<f32>
// CHECK:      %[[G1:.*]] = nn.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<2x3xf32>, tensor<2x2xf32>
// CHECK-NEXT: %[[LOSS:.*]] = nn.add %[[L0]], %[[L1]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[G:.*]] = nn.add %[[G0]], %[[G1]] : tensor<3x2xf32>, tensor<3x2xf32>
// CHECK-NEXT: %[[SQ:.*]] = nn.mul %[[G]], %[[G]] : tensor<3x2xf32>, tensor<3x2xf32>
// CHECK-NEXT: %[[SUM:.*]] = nn.reduce sum %[[SQ]] dims = [0, 1] : tensor<3x2xf32>
// CHECK-NEXT: %[[NORM:.*]] = nn.sqrt %[[SUM]] : tensor<f32>
// CHECK-NEXT: %[[EPS:.*]] = nn.fill 9.9999999999999995E-7 {loom.clip} : tensor<f32>
// CHECK-NEXT: %[[DEN:.*]] = nn.add %[[NORM]], %[[EPS]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[CLIP:.*]] = nn.fill 1.000000e+00 {loom.clip} : tensor<f32>
// CHECK-NEXT: %[[RATIO:.*]] = nn.div %[[CLIP]], %[[DEN]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[SCALE:.*]] = nn.clamp %[[RATIO]] {max = 1.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT: %[[CLIPPED:.*]] = nn.mul %[[G]], %[[SCALE]] : tensor<3x2xf32>, tensor<f32>
// CHECK-NEXT: %[[NW:.*]], %[[NM:.*]] = nn.sgd_update %[[W]], %[[CLIPPED]], %[[MW]] step %[[STEP]] {decay = #nn<lr_decay cosine>, decay_steps = 4 : i64, lr = 1.000000e-01 : f64, min_lr = 1.000000e-02 : f64, warmup_steps = 2 : i64} : tensor<3x2xf32>
// CHECK-NEXT: return %[[LOSS]], %[[NORM]], %[[NW]], %[[NM]]

// A parameter group: its own learning rate and weight decay; no schedule,
// no step argument beyond AdamW's.
// GROUPS-LABEL: func.func @lin_train_step(
// GROUPS: nn.adamw_update {{.*}} {lr = 5.000000e-02 : f64, weight_decay = 0.000000e+00 : f64} : tensor<3x2xf32>
