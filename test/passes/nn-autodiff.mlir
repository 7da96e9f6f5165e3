// RUN: loom-opt %s -split-input-file --nn-autodiff | FileCheck %s

// Matmul: dw = x^T dy, read as the transposed lhs; the data operand gets no
// gradient. The forward function stays; @f_grad returns (loss, dloss/dw).
// CHECK-LABEL: func.func @matmul(
// CHECK-LABEL: func.func @matmul_grad(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32> {nn.name = "w", nn.param}, %[[X:.*]]: tensor<2x4xf32> {nn.data, nn.name = "x"}) -> (tensor<f32>, tensor<4x8xf32>)
// CHECK:      %[[Y:.*]] = nn.matmul %[[X]], %[[W]] : tensor<2x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[L:.*]] = nn.reduce sum %[[Y]] dims = [0, 1] : tensor<2x8xf32>
// CHECK-NEXT: %[[SEED:.*]] = nn.fill 1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[S2:.*]] = nn.reshape %[[SEED]] : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[DY:.*]] = nn.broadcast %[[S2]] : tensor<1x1xf32> to tensor<2x8xf32>
// CHECK-NEXT: %[[DW:.*]] = nn.matmul %[[X]], %[[DY]] transpose_lhs : tensor<2x4xf32>, tensor<2x8xf32>
// CHECK-NEXT: return %[[L]], %[[DW]] : tensor<f32>, tensor<4x8xf32>
func.func @matmul(%w: tensor<4x8xf32> {nn.param}, %x: tensor<2x4xf32> {nn.data}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<2x8xf32>
  return %l : tensor<f32>
}

// -----

// Transposed and batched matmul: both gradients read the stored layouts;
// the unbatched operand's gradient is summed over the batch.
// CHECK-LABEL: func.func @matmul_transposed_grad(
// CHECK-SAME: %[[W:.*]]: tensor<8x4xf32> {nn.name = "w", nn.param}, %[[X:.*]]: tensor<3x4x2xf32> {nn.name = "x", nn.param})
// CHECK:      %[[DY:.*]] = nn.broadcast %{{.*}} : tensor<1x1x1xf32> to tensor<3x2x8xf32>
// CHECK-NEXT: %[[DX:.*]] = nn.matmul %[[W]], %[[DY]] transpose_lhs transpose_rhs : tensor<8x4xf32>, tensor<3x2x8xf32>
// CHECK-NEXT: %[[DWB:.*]] = nn.matmul %[[DY]], %[[X]] transpose_lhs transpose_rhs : tensor<3x2x8xf32>, tensor<3x4x2xf32>
// CHECK-NEXT: %[[DW:.*]] = nn.reduce sum %[[DWB]] dims = [0] : tensor<3x8x4xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]], %[[DX]] : tensor<f32>, tensor<8x4xf32>, tensor<3x4x2xf32>
func.func @matmul_transposed(%w: tensor<8x4xf32> {nn.param}, %x: tensor<3x4x2xf32> {nn.param}) -> tensor<f32> {
  %y = nn.matmul %x, %w transpose_lhs transpose_rhs : tensor<3x4x2xf32>, tensor<8x4xf32>
  %l = nn.reduce sum %y dims = [0, 1, 2] : tensor<3x2x8xf32>
  return %l : tensor<f32>
}

// -----

// Broadcasting add and mul: a bias broadcast along the batch sums its
// gradient over dimension 0; a [4, 1] operand sums over dimension 1 and is
// reshaped back.
// CHECK-LABEL: func.func @broadcasting_grad(
// CHECK-SAME: %[[B:.*]]: tensor<8xf32> {nn.name = "b", nn.param}, %[[C:.*]]: tensor<4x1xf32> {nn.name = "c", nn.param}, %[[X:.*]]: tensor<4x8xf32> {nn.data, nn.name = "x"})
// CHECK:      %[[XB:.*]] = nn.add %[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK:      %[[DY:.*]] = nn.broadcast %{{.*}} : tensor<1x1xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[DXB:.*]] = nn.mul %[[DY]], %[[C]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK-NEXT: %[[DCF:.*]] = nn.mul %[[DY]], %[[XB]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[DCS:.*]] = nn.reduce sum %[[DCF]] dims = [1] : tensor<4x8xf32>
// CHECK-NEXT: %[[DC:.*]] = nn.reshape %[[DCS]] : tensor<4xf32> to tensor<4x1xf32>
// CHECK-NEXT: %[[DB:.*]] = nn.reduce sum %[[DXB]] dims = [0] : tensor<4x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DB]], %[[DC]] : tensor<f32>, tensor<8xf32>, tensor<4x1xf32>
func.func @broadcasting(%b: tensor<8xf32> {nn.param}, %c: tensor<4x1xf32> {nn.param}, %x: tensor<4x8xf32> {nn.data}) -> tensor<f32> {
  %0 = nn.add %x, %b : tensor<4x8xf32>, tensor<8xf32>
  %1 = nn.mul %0, %c : tensor<4x8xf32>, tensor<4x1xf32>
  %l = nn.reduce sum %1 dims = [0, 1] : tensor<4x8xf32>
  return %l : tensor<f32>
}

// -----

// Reduce mean divides by the count and broadcasts back; reduce max splits
// the gradient evenly among the maxima.
// CHECK-LABEL: func.func @reductions_grad(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32> {nn.name = "w", nn.param})
// CHECK:      %[[MEAN:.*]] = nn.reduce mean %[[W]] dims = [1] : tensor<4x8xf32>
// CHECK-NEXT: %[[MAX:.*]] = nn.reduce max %[[MEAN]] dims = [0] : tensor<4xf32>
// CHECK-NEXT: %[[SEED:.*]] = nn.fill 1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[DYK:.*]] = nn.reshape %[[SEED]] : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[YK:.*]] = nn.reshape %[[MAX]] : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[ISMAX:.*]] = nn.compare eq, %[[MEAN]], %[[YK]] : tensor<4xf32>, tensor<1xf32>
// CHECK-NEXT: %[[ZERO:.*]] = nn.fill 0.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[ONE:.*]] = nn.fill 1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[ONES:.*]] = nn.select %[[ISMAX]], %[[ONE]], %[[ZERO]] : tensor<4xi1>, tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[COUNT:.*]] = nn.reduce sum %[[ONES]] dims = [0] keep_dims : tensor<4xf32>
// CHECK-NEXT: %[[SHARE:.*]] = nn.div %[[DYK]], %[[COUNT]] : tensor<1xf32>, tensor<1xf32>
// CHECK-NEXT: %[[DMEAN:.*]] = nn.select %[[ISMAX]], %[[SHARE]], %[[ZERO]] : tensor<4xi1>, tensor<1xf32>, tensor<f32>
// CHECK-NEXT: %[[DMK:.*]] = nn.reshape %[[DMEAN]] : tensor<4xf32> to tensor<4x1xf32>
// CHECK-NEXT: %[[N:.*]] = nn.fill 8.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[DIV:.*]] = nn.div %[[DMK]], %[[N]] : tensor<4x1xf32>, tensor<f32>
// CHECK-NEXT: %[[DW:.*]] = nn.broadcast %[[DIV]] : tensor<4x1xf32> to tensor<4x8xf32>
// CHECK-NEXT: return %[[MAX]], %[[DW]] : tensor<f32>, tensor<4x8xf32>
func.func @reductions(%w: tensor<4x8xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.reduce mean %w dims = [1] : tensor<4x8xf32>
  %1 = nn.reduce max %0 dims = [0] : tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// Softmax: dx = y * (dy - sum(dy * y)) along the softmax dimension.
// CHECK-LABEL: func.func @softmax_grad(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32> {nn.name = "w", nn.param}, %[[T:.*]]: tensor<4x8xf32> {nn.data, nn.name = "t"})
// CHECK:      %[[Y:.*]] = nn.softmax %[[W]] dim = 1 : tensor<4x8xf32>
// CHECK:      nn.broadcast %{{.*}} : tensor<1x1xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[DY:.*]] = nn.mul %{{.*}}, %[[T]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[DYY:.*]] = nn.mul %[[DY]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[DOT:.*]] = nn.reduce sum %[[DYY]] dims = [1] keep_dims : tensor<4x8xf32>
// CHECK-NEXT: %[[DIFF:.*]] = nn.sub %[[DY]], %[[DOT]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK-NEXT: %[[DW:.*]] = nn.mul %[[Y]], %[[DIFF]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<4x8xf32>
func.func @softmax(%w: tensor<4x8xf32> {nn.param}, %t: tensor<4x8xf32> {nn.data}) -> tensor<f32> {
  %0 = nn.softmax %w dim = 1 : tensor<4x8xf32>
  %1 = nn.mul %0, %t : tensor<4x8xf32>, tensor<4x8xf32>
  %l = nn.reduce sum %1 dims = [0, 1] : tensor<4x8xf32>
  return %l : tensor<f32>
}

// -----

// A value used twice (and a product of a value with itself): the
// contributions add up with nn.add.
// CHECK-LABEL: func.func @used_twice_grad(
// CHECK-SAME: %[[W:.*]]: tensor<4xf32> {nn.name = "w", nn.param})
// CHECK:      %[[E:.*]] = nn.exp %[[W]] : tensor<4xf32>
// CHECK:      %[[DY:.*]] = nn.broadcast %{{.*}} : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[DEXP:.*]] = nn.mul %[[DY]], %[[E]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[DL:.*]] = nn.mul %[[DY]], %[[W]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[DR:.*]] = nn.mul %[[DY]], %[[W]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[SUM1:.*]] = nn.add %[[DEXP]], %[[DL]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[SUM2:.*]] = nn.add %[[SUM1]], %[[DR]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: return %{{.*}}, %[[SUM2]] : tensor<f32>, tensor<4xf32>
func.func @used_twice(%w: tensor<4xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.mul %w, %w : tensor<4xf32>, tensor<4xf32>
  %1 = nn.exp %w : tensor<4xf32>
  %2 = nn.add %0, %1 : tensor<4xf32>, tensor<4xf32>
  %l = nn.reduce sum %2 dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// Layer norm: dx through nn.layer_norm_grad; dscale = sum(dy * xhat) with
// xhat the normalisation without scale and bias; dbias = sum(dy); both over
// the leading dimensions.
// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK-SAME: %[[X:.*]]: tensor<2x4x8xf32> {nn.data, nn.name = "x"}, %[[G:.*]]: tensor<8xf32> {nn.name = "g", nn.param}, %[[B:.*]]: tensor<8xf32> {nn.name = "b", nn.param}, %[[W:.*]]: tensor<8x8xf32> {nn.name = "w", nn.param})
// CHECK:      %[[H:.*]] = nn.matmul %[[X]], %[[W]] : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK:      %[[N:.*]] = nn.fill 6.400000e+01 : tensor<f32>
// CHECK:      %[[DY:.*]] = nn.broadcast %{{.*}} : tensor<1x1x1xf32> to tensor<2x4x8xf32>
// CHECK-NEXT: %[[DH:.*]] = nn.layer_norm_grad %[[DY]], %[[H]] scale %[[G]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[XHAT:.*]] = nn.layer_norm %[[H]] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[P:.*]] = nn.mul %[[DY]], %[[XHAT]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK-NEXT: %[[DG:.*]] = nn.reduce sum %[[P]] dims = [0, 1] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[DB:.*]] = nn.reduce sum %[[DY]] dims = [0, 1] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[DWB:.*]] = nn.matmul %[[X]], %[[DH]] transpose_lhs : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK-NEXT: %[[DW:.*]] = nn.reduce sum %[[DWB]] dims = [0] : tensor<2x8x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DG]], %[[DB]], %[[DW]] : tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>
func.func @layer_norm(%x: tensor<2x4x8xf32> {nn.data}, %g: tensor<8xf32> {nn.param}, %b: tensor<8xf32> {nn.param}, %w: tensor<8x8xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
  %1 = nn.layer_norm %0 scale %g bias %b : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %l = nn.reduce mean %1 dims = [0, 1, 2] : tensor<2x4x8xf32>
  return %l : tensor<f32>
}

// -----

// Attention with a tree mask and grouped-query heads: nn.attention_grad with
// the same mask; value is data, so its gradient is left out.
// CHECK-LABEL: func.func @attention_grad(
// CHECK-SAME: %[[Q:.*]]: tensor<1x8x4x2xf32> {nn.name = "q", nn.param}, %[[K:.*]]: tensor<1x8x2x2xf32> {nn.name = "k", nn.param}, %[[V:.*]]: tensor<1x8x2x2xf32> {nn.data, nn.name = "v"}, %[[E:.*]]: tensor<1x8xi32> {nn.data, nn.name = "ends"})
// CHECK:      %[[DO:.*]] = nn.broadcast %{{.*}} : tensor<1x1x1x1xf32> to tensor<1x8x4x2xf32>
// CHECK-NEXT: %[[DQ:.*]], %[[DK:.*]], %{{.*}} = nn.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]] mask = tree subtree_end %[[E]] : tensor<1x8x4x2xf32>, tensor<1x8x4x2xf32>, tensor<1x8x2x2xf32>, tensor<1x8x2x2xf32>, tensor<1x8xi32>
// CHECK-NEXT: return %{{.*}}, %[[DQ]], %[[DK]] : tensor<f32>, tensor<1x8x4x2xf32>, tensor<1x8x2x2xf32>
func.func @attention(%q: tensor<1x8x4x2xf32> {nn.param}, %k: tensor<1x8x2x2xf32> {nn.param}, %v: tensor<1x8x2x2xf32> {nn.data}, %ends: tensor<1x8xi32> {nn.data}) -> tensor<f32> {
  %0 = nn.attention %q, %k, %v mask = tree subtree_end %ends : tensor<1x8x4x2xf32>, tensor<1x8x2x2xf32>, tensor<1x8x2x2xf32>, tensor<1x8xi32>
  %l = nn.reduce sum %0 dims = [0, 1, 2, 3] : tensor<1x8x4x2xf32>
  return %l : tensor<f32>
}

// -----

// Cross-entropy: the logits through nn.cross_entropy_grad; the weights get
// dy * (per-token loss) / N, the per-token loss being -log_softmax at the
// label; the normalizer operand gets -(dy * loss) / N.
// CHECK-LABEL: func.func @cross_entropy_grad(
// CHECK-SAME: %[[Z:.*]]: tensor<4x16xf32> {nn.name = "z", nn.param}, %[[Y:.*]]: tensor<4xi64> {nn.data, nn.name = "y"}, %[[W:.*]]: tensor<4xf32> {nn.name = "w", nn.param}, %[[N:.*]]: tensor<f32> {nn.name = "n", nn.param})
// CHECK:      %[[L:.*]] = nn.cross_entropy %[[Z]], %[[Y]] weights %[[W]] normalizer %[[N]]
// CHECK-NEXT: %[[SEED:.*]] = nn.fill 1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[DZ:.*]] = nn.cross_entropy_grad %[[SEED]], %[[Z]], %[[Y]] weights %[[W]] normalizer %[[N]] : tensor<f32>, tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>, tensor<f32>
// CHECK-NEXT: %[[LP:.*]] = nn.log_softmax %[[Z]] dim = 1 : tensor<4x16xf32>
// CHECK-NEXT: %[[Y2:.*]] = nn.reshape %[[Y]] : tensor<4xi64> to tensor<4x1xi64>
// CHECK-NEXT: %[[PICK:.*]] = nn.gather %[[LP]], %[[Y2]] dim = 1 : tensor<4x16xf32>, tensor<4x1xi64>
// CHECK-NEXT: %[[PICK1:.*]] = nn.reshape %[[PICK]] : tensor<4x1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[TOK:.*]] = nn.neg %[[PICK1]] : tensor<4xf32>
// CHECK-NEXT: %[[T1:.*]] = nn.mul %[[TOK]], %[[SEED]] : tensor<4xf32>, tensor<f32>
// CHECK-NEXT: %[[DW:.*]] = nn.div %[[T1]], %[[N]] : tensor<4xf32>, tensor<f32>
// CHECK-NEXT: %[[T2:.*]] = nn.mul %[[SEED]], %[[L]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[T3:.*]] = nn.div %[[T2]], %[[N]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[DN:.*]] = nn.neg %[[T3]] : tensor<f32>
// CHECK-NEXT: return %[[L]], %[[DZ]], %[[DW]], %[[DN]] : tensor<f32>, tensor<4x16xf32>, tensor<4xf32>, tensor<f32>
func.func @cross_entropy(%z: tensor<4x16xf32> {nn.param}, %y: tensor<4xi64> {nn.data}, %w: tensor<4xf32> {nn.param}, %n: tensor<f32> {nn.param}) -> tensor<f32> {
  %l = nn.cross_entropy %z, %y weights %w normalizer %n : tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>, tensor<f32>
  return %l : tensor<f32>
}

// -----

// Only forward functions are differentiated by default: a function without
// parameters, one returning a non-scalar, one returning several values.
// CHECK-LABEL: func.func @not_forward
// CHECK-NOT: _grad
func.func @not_forward_no_params(%x: tensor<4xf32>) -> tensor<f32> {
  %l = nn.reduce sum %x dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
func.func @not_forward_vector(%w: tensor<4xf32> {nn.param}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
func.func @not_forward_two(%w: tensor<f32> {nn.param}) -> (tensor<f32>, tensor<f32>) {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// A parameter that is the loss itself: its gradient is the seed. Result
// attributes of the loss are kept.
// CHECK-LABEL: func.func @identity_grad(
// CHECK-SAME: %[[W:.*]]: tensor<f64> {nn.name = "w", nn.param}) -> (tensor<f64> {nn.loss}, tensor<f64>)
// CHECK-NEXT: %[[SEED:.*]] = nn.fill 1.000000e+00 : tensor<f64>
// CHECK-NEXT: return %[[W]], %[[SEED]] : tensor<f64>, tensor<f64>
func.func @identity(%w: tensor<f64> {nn.param}) -> (tensor<f64> {nn.loss}) {
  return %w : tensor<f64>
}
