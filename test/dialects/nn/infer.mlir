// RUN: loom-opt %s --mlir-print-op-generic | FileCheck %s

// Result types that the custom assembly leaves out, as inferred. The generic
// form prints them.

// Numpy broadcasting: missing leading dimensions count as 1, and a size-1
// dimension takes the other operand's size.
// CHECK-LABEL: sym_name = "broadcasting"
func.func @broadcasting(%a: tensor<2x1x8xf32>, %b: tensor<4x1xf32>,
                        %s: tensor<f32>, %c: tensor<4x8xi1>) {
  // CHECK: "nn.add"{{.*}} -> tensor<2x4x8xf32>
  %0 = nn.add %a, %b : tensor<2x1x8xf32>, tensor<4x1xf32>
  // CHECK: "nn.maximum"{{.*}} -> tensor<4x1xf32>
  %1 = nn.maximum %s, %b : tensor<f32>, tensor<4x1xf32>
  // CHECK: "nn.compare"{{.*}} -> tensor<2x4x8xi1>
  %2 = nn.compare ge, %a, %b : tensor<2x1x8xf32>, tensor<4x1xf32>
  // CHECK: "nn.select"{{.*}} -> tensor<2x4x8xf32>
  %3 = nn.select %c, %a, %s : tensor<4x8xi1>, tensor<2x1x8xf32>, tensor<f32>
  return
}

// Dynamic sizes broadcast with anything; against a static size other than 1
// they take that size.
// CHECK-LABEL: sym_name = "dynamic_broadcasting"
func.func @dynamic_broadcasting(%a: tensor<?x8xf32>, %b: tensor<4x1xf32>,
                                %c: tensor<1x8xf32>, %d: tensor<?x?xf32>) {
  // CHECK: "nn.sub"{{.*}} -> tensor<4x8xf32>
  %0 = nn.sub %a, %b : tensor<?x8xf32>, tensor<4x1xf32>
  // CHECK: "nn.mul"{{.*}} -> tensor<?x8xf32>
  %1 = nn.mul %a, %c : tensor<?x8xf32>, tensor<1x8xf32>
  // CHECK: "nn.div"{{.*}} -> tensor<?x8xf32>
  %2 = nn.div %d, %c : tensor<?x?xf32>, tensor<1x8xf32>
  return
}

// Matmul: batch dimensions broadcast; the transpose flags pick M, K and N.
// CHECK-LABEL: sym_name = "matmul"
func.func @matmul(%a: tensor<4x1x16x32xf32>, %b: tensor<3x32x64xf32>,
                  %c: tensor<32x16xf32>, %d: tensor<64x32xf32>,
                  %e: tensor<?x16x32xf32>, %f: tensor<32x?xf32>) {
  // CHECK: "nn.matmul"{{.*}} -> tensor<4x3x16x64xf32>
  %0 = nn.matmul %a, %b : tensor<4x1x16x32xf32>, tensor<3x32x64xf32>
  // CHECK: "nn.matmul"{{.*}} -> tensor<16x64xf32>
  %1 = nn.matmul %c, %d transpose_lhs transpose_rhs : tensor<32x16xf32>, tensor<64x32xf32>
  // CHECK: "nn.matmul"{{.*}} -> tensor<16x16xf32>
  %2 = nn.matmul %c, %c transpose_lhs : tensor<32x16xf32>, tensor<32x16xf32>
  // CHECK: "nn.matmul"{{.*}} -> tensor<?x16x?xf32>
  %3 = nn.matmul %e, %f : tensor<?x16x32xf32>, tensor<32x?xf32>
  return
}

// Reductions drop the reduced dimensions, or keep them with size 1.
// CHECK-LABEL: sym_name = "reduce"
func.func @reduce(%x: tensor<2x3x4x5xf32>, %y: tensor<?x6xf32>) {
  // CHECK: "nn.reduce"{{.*}} -> tensor<2x5xf32>
  %0 = nn.reduce sum %x dims = [2, 1] : tensor<2x3x4x5xf32>
  // CHECK: "nn.reduce"{{.*}} -> tensor<2x1x1x5xf32>
  %1 = nn.reduce mean %x dims = [1, 2] keep_dims : tensor<2x3x4x5xf32>
  // CHECK: "nn.reduce"{{.*}} -> tensor<?xf32>
  %2 = nn.reduce max %y dims = [1] : tensor<?x6xf32>
  return
}

// Shape ops.
// CHECK-LABEL: sym_name = "shapes"
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<?x3xf32>,
                  %z: tensor<4x5xf32>, %i: tensor<2x3x7xi32>) {
  // CHECK: "nn.transpose"{{.*}} -> tensor<4x2x3xf32>
  %0 = nn.transpose %x permutation = [2, 0, 1] : tensor<2x3x4xf32>
  // CHECK: "nn.slice"{{.*}} -> tensor<1x2x2xf32>
  %1 = nn.slice %x offsets = [1, 0, 1] sizes = [1, 2, 2] strides = [1, 2, 2] : tensor<2x3x4xf32>
  // CHECK: "nn.slice"{{.*}} -> tensor<0x3xf32>
  %2 = nn.slice %y offsets = [100, 0] sizes = [0, 3] strides = [1, 1] : tensor<?x3xf32>
  // CHECK: "nn.concat"{{.*}} -> tensor<4x8xf32>
  %3 = nn.concat %y, %z dim = 1 : tensor<?x3xf32>, tensor<4x5xf32>
  // CHECK: "nn.concat"{{.*}} -> tensor<?x3xf32>
  %4 = nn.concat %y, %y dim = 0 : tensor<?x3xf32>, tensor<?x3xf32>
  // CHECK: "nn.gather"{{.*}} -> tensor<2x3x7xf32>
  %5 = nn.gather %x, %i dim = 2 : tensor<2x3x4xf32>, tensor<2x3x7xi32>
  return
}

// Transformer blocks.
// CHECK-LABEL: sym_name = "transformer"
func.func @transformer(%table: tensor<64x32xbf16>, %ids: tensor<8x16xi64>,
                       %q: tensor<8x16x4x8xf32>, %kv: tensor<8x32x2x8xf32>,
                       %v: tensor<8x32x2x12xf32>, %pos: tensor<8x16xi32>,
                       %logits: tensor<8x16x64xf64>, %labels: tensor<8x16xi32>,
                       %n: tensor<f64>) {
  // CHECK: "nn.embedding"{{.*}} -> tensor<8x16x32xbf16>
  %0 = nn.embedding %table, %ids : tensor<64x32xbf16>, tensor<8x16xi64>
  // CHECK: "nn.attention"{{.*}} -> tensor<8x16x4x12xf32>
  %1 = nn.attention %q, %kv, %v mask = causal positions %pos : tensor<8x16x4x8xf32>, tensor<8x32x2x8xf32>, tensor<8x32x2x12xf32>, tensor<8x16xi32>
  // CHECK: "nn.cross_entropy"{{.*}} -> tensor<f64>
  %2 = nn.cross_entropy %logits, %labels normalizer %n : tensor<8x16x64xf64>, tensor<8x16xi32>, tensor<f64>
  // CHECK: "nn.layer_norm"{{.*}} -> tensor<8x16x64xf64>
  %3 = nn.layer_norm %logits : tensor<8x16x64xf64>
  return
}
