// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 momentum=0.9 weight-decay=1e-4" | FileCheck %s --check-prefix=SGD
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 momentum=0.9 nesterov=true" | FileCheck %s --check-prefix=NESTEROV
// RUN: loom-opt %s --nn-training-step="optimizer=adamw lr=1e-3 beta1=0.8 beta2=0.99 eps=1e-6 weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW
// RUN: loom-opt %s --loom-training-pipeline="optimizer=adamw lr=1e-3" | FileCheck %s --check-prefix=PIPELINE

// A linear model with a mean squared error: the training step computes the
// loss and the gradients (the code of nn-autodiff), then updates every
// parameter. Arguments: params, optimizer state, [step,] data; results: the
// loss, the new params, the new state. Roles are attributes.
func.func @lin(%x: tensor<2x4xf32> {nn.data}, %w: tensor<4x8xf32> {nn.param},
               %b: tensor<8xf32> {nn.param}, %t: tensor<2x8xf32> {nn.data})
    -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32>
  %z = nn.add %y, %b : tensor<2x8xf32>, tensor<8xf32>
  %d = nn.sub %z, %t : tensor<2x8xf32>, tensor<2x8xf32>
  %s = nn.mul %d, %d : tensor<2x8xf32>, tensor<2x8xf32>
  %l = nn.reduce mean %s dims = [0, 1] : tensor<2x8xf32>
  return %l : tensor<f32>
}

// The forward function stays.
// SGD-LABEL: func.func @lin(
// SGD-LABEL: func.func @lin_train_step(
// SGD-SAME: %[[W:[a-z0-9]+]]: tensor<4x8xf32> {nn.name = "w", nn.param}, %[[B:[a-z0-9]+]]: tensor<8xf32> {nn.name = "b", nn.param},
// SGD-SAME: %[[MW:[a-z0-9]+]]: tensor<4x8xf32> {nn.name = "w.momentum", nn.state = 0 : i64}, %[[MB:[a-z0-9]+]]: tensor<8xf32> {nn.name = "b.momentum", nn.state = 1 : i64},
// SGD-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.data, nn.name = "x"}, %[[T:[a-z0-9]+]]: tensor<2x8xf32> {nn.data, nn.name = "t"})
// SGD-SAME: -> (tensor<f32> {nn.loss}, tensor<4x8xf32> {nn.updates = 0 : i64}, tensor<8xf32> {nn.updates = 1 : i64}, tensor<4x8xf32> {nn.updates = 2 : i64}, tensor<8xf32> {nn.updates = 3 : i64})
// SGD:      %[[Y:.*]] = nn.matmul %[[X]], %[[W]]
// SGD:      %[[L:.*]] = nn.reduce mean
// SGD:      %[[DZ:.*]] = nn.add
// SGD-NEXT: %[[DB:.*]] = nn.reduce sum %[[DZ]] dims = [0] : tensor<2x8xf32>
// SGD-NEXT: %[[DW:.*]] = nn.matmul %[[X]], %[[DZ]] transpose_lhs : tensor<2x4xf32>, tensor<2x8xf32>
// SGD-NEXT: %[[NW:.*]], %[[NMW:.*]] = nn.sgd_update %[[W]], %[[DW]], %[[MW]] {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 1.000000e-04 : f64} : tensor<4x8xf32>
// SGD-NEXT: %[[NB:.*]], %[[NMB:.*]] = nn.sgd_update %[[B]], %[[DB]], %[[MB]] {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 1.000000e-04 : f64} : tensor<8xf32>
// SGD-NEXT: return %[[L]], %[[NW]], %[[NB]], %[[NMW]], %[[NMB]] : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>

// NESTEROV-LABEL: func.func @lin_train_step(
// NESTEROV: nn.sgd_update {{.*}} {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov} : tensor<4x8xf32>

// AdamW: first moments of all parameters, then second moments, then the
// step counter.
// ADAMW-LABEL: func.func @lin_train_step(
// ADAMW-SAME: %[[W:[a-z0-9]+]]: tensor<4x8xf32> {nn.name = "w", nn.param}, %[[B:[a-z0-9]+]]: tensor<8xf32> {nn.name = "b", nn.param},
// ADAMW-SAME: %[[MW:[a-z0-9]+]]: tensor<4x8xf32> {nn.name = "w.m", nn.state = 0 : i64}, %[[MB:[a-z0-9]+]]: tensor<8xf32> {nn.name = "b.m", nn.state = 1 : i64},
// ADAMW-SAME: %[[VW:[a-z0-9]+]]: tensor<4x8xf32> {nn.name = "w.v", nn.state = 0 : i64}, %[[VB:[a-z0-9]+]]: tensor<8xf32> {nn.name = "b.v", nn.state = 1 : i64},
// ADAMW-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {nn.step},
// ADAMW-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.data, nn.name = "x"}, %[[T:[a-z0-9]+]]: tensor<2x8xf32> {nn.data, nn.name = "t"})
// ADAMW-SAME: -> (tensor<f32> {nn.loss}, tensor<4x8xf32> {nn.updates = 0 : i64}, tensor<8xf32> {nn.updates = 1 : i64}, tensor<4x8xf32> {nn.updates = 2 : i64}, tensor<8xf32> {nn.updates = 3 : i64}, tensor<4x8xf32> {nn.updates = 4 : i64}, tensor<8xf32> {nn.updates = 5 : i64})
// ADAMW:      %[[L:.*]] = nn.reduce mean
// ADAMW:      %[[DB:.*]] = nn.reduce sum %{{.*}} dims = [0] : tensor<2x8xf32>
// ADAMW-NEXT: %[[DW:.*]] = nn.matmul %[[X]], %{{.*}} transpose_lhs
// ADAMW-NEXT: %[[NW:.*]], %[[NMW:.*]], %[[NVW:.*]] = nn.adamw_update %[[W]], %[[DW]], %[[MW]], %[[VW]], %[[STEP]] {beta1 = 8.000000e-01 : f64, beta2 = {{.*}} : f64, epsilon = {{.*}} : f64, lr = 1.000000e-03 : f64} : tensor<4x8xf32>
// ADAMW-NEXT: %[[NB:.*]], %[[NMB:.*]], %[[NVB:.*]] = nn.adamw_update %[[B]], %[[DB]], %[[MB]], %[[VB]], %[[STEP]]
// ADAMW-NEXT: return %[[L]], %[[NW]], %[[NB]], %[[NMW]], %[[NMB]], %[[NVW]], %[[NVB]]

// The pipeline runs CSE after the step: the two equal contributions of
// d * d to its gradient are computed once.
// PIPELINE-LABEL: func.func @lin_train_step(
// PIPELINE:      nn.broadcast
// PIPELINE-NEXT: %[[G:.*]] = nn.mul %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<2x8xf32>
// PIPELINE-NEXT: nn.add %[[G]], %[[G]] : tensor<2x8xf32>, tensor<2x8xf32>
// PIPELINE-COUNT-2: nn.adamw_update {{.*}} {lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64}
