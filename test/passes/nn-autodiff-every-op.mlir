// RUN: loom-opt %s --nn-autodiff | FileCheck %s

// Every differentiable nn op on one path from the parameters to the loss:
// each builds its gradient, and the gradient function verifies (loom-opt
// verifies after the pass). The checks name the gradient of each op kind;
// nn-autodiff.mlir checks representative ones in full.

// CHECK-LABEL: func.func @every_op_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>)
// mean, max (even split among maxima), sum:
// CHECK-DAG: nn.fill 1.600000e+01 : tensor<f32>
// CHECK-DAG: nn.reduce sum %{{.*}} dims = [0, 1, 2, 3] keep_dims : tensor<2x2x2x4xf32>
// gather and embedding: scatter-adds.
// CHECK-DAG: nn.gather_grad %{{.*}}, %{{.*}} dim = 1 : tensor<2x1x8xf32>, tensor<2x1x8xi64> to tensor<2x3x8xf32>
// CHECK-DAG: nn.gather_grad %{{.*}}, %{{.*}} dim = 0 : tensor<4x8xf32>, tensor<4x8xi64> to tensor<16x8xf32>
// dropout: the same mask; rms_norm; rope: the inverse rotation.
// CHECK-DAG: nn.dropout %{{.*}}, %arg5 {rate = 2.500000e-01 : f64, seed = 7 : i64} : tensor<2x2x2x4xf32>
// CHECK-DAG: nn.rms_norm_grad %{{.*}}, %{{.*}} : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
// CHECK-DAG: nn.rope %{{.*}}, %arg4 inverse : tensor<2x2x2x4xf32>, tensor<2x2xi64>
// concat: slices; slice: slice_grad.
// CHECK-DAG: nn.slice %{{.*}} offsets = [0, 0, 2] sizes = [2, 4, 4] strides = [1, 1, 1] : tensor<2x4x6xf32>
// CHECK-DAG: nn.slice_grad %{{.*}} offsets = [0, 0, 1] strides = [1, 1, 2] : tensor<2x4x2xf32> to tensor<2x4x4xf32>
// transpose: the inverse permutation; casts: back to the operand type.
// CHECK-DAG: nn.transpose %{{.*}} permutation = [1, 0] : tensor<8x4xf32>
// CHECK-DAG: nn.cast %{{.*}} : tensor<4x8xf64> to tensor<4x8xf32>
// clamp: inclusive bounds.
// CHECK-DAG: nn.compare le, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
// CHECK-DAG: nn.compare ge, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
// minimum and maximum: ties split in half.
// CHECK-DAG: nn.fill 5.000000e-01 : tensor<f32>
// CHECK-DAG: nn.compare eq, %{{.*}}, %arg2 : tensor<4x8xf32>, tensor<8xf32>
// gelu, both forms.
// CHECK-DAG: nn.gelu_grad %{{.*}}, %{{.*}} approximate = tanh : tensor<4x8xf32>
// CHECK-DAG: nn.gelu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
// rsqrt: -1/2 y^3.
// CHECK-DAG: nn.fill -5.000000e-01 : tensor<f32>
// CHECK: return
func.func @every_op(%w: tensor<4x8xf32> {nn.param}, %table: tensor<16x8xf32> {nn.param},
                    %s: tensor<8xf32> {nn.param}, %ids: tensor<4xi64> {nn.data},
                    %pos: tensor<2x2xi64> {nn.data}, %step: tensor<i64>) -> tensor<f32> {
  %a = nn.neg %w : tensor<4x8xf32>
  %b = nn.exp %a : tensor<4x8xf32>
  %c = nn.log %b : tensor<4x8xf32>
  %d = nn.sqrt %b : tensor<4x8xf32>
  %e = nn.rsqrt %b : tensor<4x8xf32>
  %f = nn.tanh %c : tensor<4x8xf32>
  %g = nn.relu %f : tensor<4x8xf32>
  %h = nn.silu %d : tensor<4x8xf32>
  %i = nn.sin %e : tensor<4x8xf32>
  %j = nn.cos %h : tensor<4x8xf32>
  %k = nn.gelu %j : tensor<4x8xf32>
  %l = nn.gelu %k approximate = tanh : tensor<4x8xf32>
  %m = nn.sub %l, %g : tensor<4x8xf32>, tensor<4x8xf32>
  %n = nn.div %m, %s : tensor<4x8xf32>, tensor<8xf32>
  %o = nn.minimum %n, %i : tensor<4x8xf32>, tensor<4x8xf32>
  %p = nn.maximum %o, %s : tensor<4x8xf32>, tensor<8xf32>
  %cond = nn.compare lt, %p, %w : tensor<4x8xf32>, tensor<4x8xf32>
  %q = nn.select %cond, %p, %s : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>
  %r = nn.clamp %q {max = 1.0 : f64, min = -1.0 : f64} : tensor<4x8xf32>
  %r64 = nn.cast %r : tensor<4x8xf32> to tensor<4x8xf64>
  %r32 = nn.cast %r64 : tensor<4x8xf64> to tensor<4x8xf32>
  %t = nn.transpose %r32 permutation = [1, 0] : tensor<4x8xf32>
  %u = nn.reshape %t : tensor<8x4xf32> to tensor<2x4x4xf32>
  %v = nn.slice %u offsets = [0, 0, 1] sizes = [2, 4, 2] strides = [1, 1, 2] : tensor<2x4x4xf32>
  %x = nn.concat %v, %u dim = 2 : tensor<2x4x2xf32>, tensor<2x4x4xf32>
  %y = nn.softmax %x dim = 2 : tensor<2x4x6xf32>
  %z = nn.log_softmax %y dim = 1 : tensor<2x4x6xf32>
  %emb = nn.embedding %table, %ids : tensor<16x8xf32>, tensor<4xi64>
  %e2 = nn.reshape %emb : tensor<4x8xf32> to tensor<2x2x2x4xf32>
  %rot = nn.rope %e2, %pos : tensor<2x2x2x4xf32>, tensor<2x2xi64>
  %rms = nn.rms_norm %rot : tensor<2x2x2x4xf32>
  %drop = nn.dropout %rms, %step {rate = 0.25 : f64, seed = 7 : i64} : tensor<2x2x2x4xf32>
  %bc = nn.broadcast %s broadcast_dims = [1] : tensor<8xf32> to tensor<3x8xf32>
  %bc2 = nn.broadcast %bc : tensor<3x8xf32> to tensor<2x3x8xf32>
  %idx = nn.iota dim = 1 : tensor<2x1x8xi64>
  %gat = nn.gather %bc2, %idx dim = 1 : tensor<2x3x8xf32>, tensor<2x1x8xi64>
  %s1 = nn.reduce sum %z dims = [0, 1, 2] : tensor<2x4x6xf32>
  %s2a = nn.reduce max %drop dims = [0, 1, 2, 3] : tensor<2x2x2x4xf32>
  %s3 = nn.reduce mean %gat dims = [0, 1, 2] : tensor<2x1x8xf32>
  %t1 = nn.add %s1, %s2a : tensor<f32>, tensor<f32>
  %t2 = nn.add %t1, %s3 : tensor<f32>, tensor<f32>
  return %t2 : tensor<f32>
}
