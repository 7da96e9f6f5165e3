// RUN: loom-opt %s --nn-autodiff | FileCheck %s

// The gradients of the mixture-of-experts buffer ops (nn.moe_dispatch,
// nn.moe_combine, nn.moe_slot_dot, nn.grouped_matmul and
// nn.grouped_matmul_grad): each one's adjoint is another of them, with the
// slots and counts of the forward pass and no gradient for those (the
// formulas are in the ops' descriptions; gradcheck.test checks them against
// finite differences).

// An expert layer: dispatch, two grouped matmuls (the second transposed),
// a weighted combine.
// CHECK-LABEL: func.func @moe_layer_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<16x8xf32> {{.*}}, %[[W:[a-z0-9]+]]: tensor<16x2xf32> {{.*}}, %[[W1:[a-z0-9]+]]: tensor<4x8x12xf32> {{.*}}, %[[W2:[a-z0-9]+]]: tensor<4x8x12xf32> {{.*}}, %[[S:[a-z0-9]+]]: tensor<16x2xi64> {{.*}}, %[[C:[a-z0-9]+]]: tensor<4xi64>
// CHECK: %[[BUF:.*]] = nn.moe_dispatch %[[X]], %[[S]] rows = 32
// CHECK: %[[H:.*]] = nn.grouped_matmul %[[BUF]], %[[W1]], %[[C]] :
// CHECK: %[[O:.*]] = nn.grouped_matmul %[[H]], %[[W2]], %[[C]] transpose_rhs
// CHECK: %[[DY:.*]] = nn.broadcast {{.*}} to tensor<16x8xf32>
// The combine: the output through the weighted dispatch, the weights by
// slot dot products.
// CHECK: %[[DO:.*]] = nn.moe_dispatch %[[DY]], %[[S]] weights %[[W]] rows = 32
// CHECK: %[[DW:.*]] = nn.moe_slot_dot %[[O]], %[[DY]], %[[S]]
// The transposed matmul: its input by the untransposed one, its weight by
// the (dy, input) product.
// CHECK: %[[DH:.*]] = nn.grouped_matmul %[[DO]], %[[W2]], %[[C]] : tensor<32x8xf32>
// CHECK: %[[DW2:.*]] = nn.grouped_matmul_grad %[[DO]], %[[H]], %[[C]]
// CHECK: %[[DBUF:.*]] = nn.grouped_matmul %[[DH]], %[[W1]], %[[C]] transpose_rhs
// CHECK: %[[DW1:.*]] = nn.grouped_matmul_grad %[[BUF]], %[[DH]], %[[C]]
// The unweighted dispatch: a plain combine.
// CHECK: %[[DX:.*]] = nn.moe_combine %[[DBUF]], %[[S]] :
// CHECK: return %{{.*}}, %[[DX]], %[[DW]], %[[DW1]], %[[DW2]]
func.func @moe_layer(%x: tensor<16x8xf32> {nn.param}, %w: tensor<16x2xf32> {nn.param},
                     %w1: tensor<4x8x12xf32> {nn.param}, %w2: tensor<4x8x12xf32> {nn.param},
                     %slots: tensor<16x2xi64> {nn.data}, %counts: tensor<4xi64> {nn.data}) -> tensor<f32> {
  %buffer = nn.moe_dispatch %x, %slots rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %o = nn.grouped_matmul %h, %w2, %counts transpose_rhs : tensor<32x12xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %y = nn.moe_combine %o, %slots weights %w : tensor<32x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<16x8xf32>
  return %l : tensor<f32>
}

// A weighted dispatch and slot dot products, sharing the tokens.
// CHECK-LABEL: func.func @weighted_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<16x8xf64> {{.*}}, %[[G:[a-z0-9]+]]: tensor<16x2xf64> {{.*}}, %[[B:[a-z0-9]+]]: tensor<32x8xf64> {{.*}}, %[[S:[a-z0-9]+]]: tensor<16x2xi64>
// CHECK: %[[DT:.*]] = nn.broadcast {{.*}} to tensor<16x2xf64>
// CHECK: %[[DB:.*]] = nn.broadcast {{.*}} to tensor<32x8xf64>
// The slot dot products: the buffer by a dispatch weighted by dy, the
// tokens by a combine weighted by dy.
// CHECK: %[[DBUF:.*]] = nn.moe_dispatch %[[X]], %[[S]] weights %[[DT]] rows = 32
// CHECK: %[[DX1:.*]] = nn.moe_combine %[[B]], %[[S]] weights %[[DT]]
// The dispatch: the input by the weighted combine, the weights by slot dot
// products.
// CHECK: %[[DX2:.*]] = nn.moe_combine %[[DB]], %[[S]] weights %[[G]]
// CHECK: %[[DG:.*]] = nn.moe_slot_dot %[[DB]], %[[X]], %[[S]]
// CHECK: %[[DX:.*]] = nn.add %[[DX1]], %[[DX2]]
// CHECK: return %{{.*}}, %[[DX]], %[[DG]], %[[DBUF]]
func.func @weighted(%x: tensor<16x8xf64> {nn.param}, %g: tensor<16x2xf64> {nn.param},
                    %b: tensor<32x8xf64> {nn.param}, %slots: tensor<16x2xi64> {nn.data}) -> tensor<f64> {
  %buffer = nn.moe_dispatch %x, %slots weights %g rows = 32 : tensor<16x8xf64>, tensor<16x2xi64>, tensor<16x2xf64>
  %d = nn.moe_slot_dot %b, %x, %slots : tensor<32x8xf64>, tensor<16x8xf64>, tensor<16x2xi64>
  %l1 = nn.reduce sum %buffer dims = [0, 1] : tensor<32x8xf64>
  %l2 = nn.reduce sum %d dims = [0, 1] : tensor<16x2xf64>
  %l = nn.add %l1, %l2 : tensor<f64>, tensor<f64>
  return %l : tensor<f64>
}
