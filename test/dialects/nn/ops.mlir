// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: loom-opt %s --emit-bytecode | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// Round trip of every nn op through the custom form, the generic form and
// bytecode. Result types are inferred where the custom form omits them.

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>,
                  %c: tensor<8x16x32xf32>, %d: tensor<4x1x64x32xbf16>,
                  %e: tensor<3x64x32xbf16>, %f: tensor<8x32x16xf64>,
                  %g: tensor<8x64x32xf64>)
    -> (tensor<16x64xf32>, tensor<8x16x64xf32>, tensor<4x3x64x64xbf16>,
        tensor<8x16x64xf64>) {
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x64xf32>
  %0 = nn.matmul %a, %b : tensor<16x32xf32>, tensor<32x64xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : tensor<8x16x32xf32>, tensor<32x64xf32>
  %1 = nn.matmul %c, %b : tensor<8x16x32xf32>, tensor<32x64xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<4x1x64x32xbf16>, tensor<3x64x32xbf16>
  %2 = nn.matmul %d, %e transpose_rhs : tensor<4x1x64x32xbf16>, tensor<3x64x32xbf16>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<8x32x16xf64>, tensor<8x64x32xf64>
  %3 = nn.matmul %f, %g transpose_lhs transpose_rhs : tensor<8x32x16xf64>, tensor<8x64x32xf64>
  return %0, %1, %2, %3 : tensor<16x64xf32>, tensor<8x16x64xf32>, tensor<4x3x64x64xbf16>, tensor<8x16x64xf64>
}

// CHECK-LABEL: func.func @broadcast_binary
func.func @broadcast_binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>,
                            %c: tensor<4x1xf32>, %s: tensor<f32>,
                            %d: tensor<2x1x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<2x4x8xf32>, tensor<4x8xf32>) {
  // CHECK: nn.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: nn.sub %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<8xf32>
  %1 = nn.sub %c, %b : tensor<4x1xf32>, tensor<8xf32>
  // CHECK: nn.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
  %2 = nn.mul %a, %s : tensor<4x8xf32>, tensor<f32>
  // CHECK: nn.div %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x1xf32>
  %3 = nn.div %a, %c : tensor<4x8xf32>, tensor<4x1xf32>
  // CHECK: nn.minimum %{{.*}}, %{{.*}} : tensor<2x1x8xf32>, tensor<4x8xf32>
  %4 = nn.minimum %d, %a : tensor<2x1x8xf32>, tensor<4x8xf32>
  // CHECK: nn.maximum %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
  %5 = nn.maximum %a, %a : tensor<4x8xf32>, tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @dynamic_dims
func.func @dynamic_dims(%a: tensor<?x8xf32>, %b: tensor<8xf32>,
                        %c: tensor<?x8x16xf32>, %w: tensor<16x4xf32>)
    -> (tensor<?x8xf32>, tensor<?x8x4xf32>) {
  // CHECK: nn.add %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<8xf32>
  %0 = nn.add %a, %b : tensor<?x8xf32>, tensor<8xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : tensor<?x8x16xf32>, tensor<16x4xf32>
  %1 = nn.matmul %c, %w : tensor<?x8x16xf32>, tensor<16x4xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8x4xf32>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %y: tensor<2x3xbf16>, %z: tensor<5xf64>)
    -> (tensor<4x8xf32>, tensor<2x3xbf16>, tensor<5xf64>) {
  // CHECK: nn.neg %{{.*}} : tensor<4x8xf32>
  %0 = nn.neg %x : tensor<4x8xf32>
  // CHECK: nn.exp %{{.*}} : tensor<4x8xf32>
  %1 = nn.exp %0 : tensor<4x8xf32>
  // CHECK: nn.log %{{.*}} : tensor<4x8xf32>
  %2 = nn.log %1 : tensor<4x8xf32>
  // CHECK: nn.sqrt %{{.*}} : tensor<4x8xf32>
  %3 = nn.sqrt %2 : tensor<4x8xf32>
  // CHECK: nn.rsqrt %{{.*}} : tensor<4x8xf32>
  %4 = nn.rsqrt %3 : tensor<4x8xf32>
  // CHECK: nn.tanh %{{.*}} : tensor<4x8xf32>
  %5 = nn.tanh %4 : tensor<4x8xf32>
  // CHECK: nn.relu %{{.*}} : tensor<4x8xf32>
  %6 = nn.relu %5 : tensor<4x8xf32>
  // CHECK: nn.gelu %{{.*}} : tensor<4x8xf32>
  %7 = nn.gelu %6 : tensor<4x8xf32>
  // CHECK: nn.gelu %{{.*}} approximate = tanh : tensor<4x8xf32>
  %8 = nn.gelu %7 approximate = tanh : tensor<4x8xf32>
  // CHECK: nn.silu %{{.*}} : tensor<2x3xbf16>
  %9 = nn.silu %y : tensor<2x3xbf16>
  // CHECK: nn.sin %{{.*}} : tensor<5xf64>
  %10 = nn.sin %z : tensor<5xf64>
  // CHECK: nn.cos %{{.*}} : tensor<5xf64>
  %11 = nn.cos %10 : tensor<5xf64>
  return %8, %9, %11 : tensor<4x8xf32>, tensor<2x3xbf16>, tensor<5xf64>
}

// CHECK-LABEL: func.func @compare_select_clamp_cast
func.func @compare_select_clamp_cast(%a: tensor<4x8xf32>, %b: tensor<4x1xf32>,
                                     %s: tensor<f32>, %i: tensor<8xi64>,
                                     %j: tensor<8xi64>)
    -> (tensor<4x8xf32>, tensor<8xi1>, tensor<4x8xf32>, tensor<4x8xbf16>,
        tensor<8xf32>) {
  // CHECK: nn.compare lt, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x1xf32>
  %0 = nn.compare lt, %a, %b : tensor<4x8xf32>, tensor<4x1xf32>
  // CHECK: nn.compare eq, %{{.*}}, %{{.*}} : tensor<8xi64>, tensor<8xi64>
  %1 = nn.compare eq, %i, %j : tensor<8xi64>, tensor<8xi64>
  // CHECK: nn.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>
  %2 = nn.select %0, %a, %s : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>
  // CHECK: nn.clamp %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4x8xf32>
  %3 = nn.clamp %2 {min = 0.0 : f64, max = 6.0 : f64} : tensor<4x8xf32>
  // CHECK: nn.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %4 = nn.cast %3 : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: nn.cast %{{.*}} : tensor<8xi1> to tensor<8xf32>
  %5 = nn.cast %1 : tensor<8xi1> to tensor<8xf32>
  return %a, %1, %3, %4, %5 : tensor<4x8xf32>, tensor<8xi1>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<8xf32>
}

// CHECK-LABEL: func.func @reduce
func.func @reduce(%x: tensor<4x8x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x1x1xf32>, tensor<f32>) {
  // CHECK: nn.reduce sum %{{.*}} dims = [1] : tensor<4x8x16xf32>
  %0 = nn.reduce sum %x dims = [1] : tensor<4x8x16xf32>
  // CHECK: nn.reduce mean %{{.*}} dims = [2, 1] keep_dims : tensor<4x8x16xf32>
  %1 = nn.reduce mean %x dims = [2, 1] keep_dims : tensor<4x8x16xf32>
  // CHECK: nn.reduce max %{{.*}} dims = [0, 1, 2] : tensor<4x8x16xf32>
  %2 = nn.reduce max %x dims = [0, 1, 2] : tensor<4x8x16xf32>
  return %0, %1, %2 : tensor<4x16xf32>, tensor<4x1x1xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops(%x: tensor<2x16x4x8xf32>, %b: tensor<8xf32>,
                     %c: tensor<4xi64>, %m: tensor<4x8xf32>,
                     %n: tensor<4x5xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xi64>, tensor<2x4x16x8xf32>,
        tensor<32x32xf32>, tensor<4x3xf32>, tensor<4x13xf32>,
        tensor<12x8xf32>, tensor<4x8xf32>) {
  // CHECK: nn.broadcast %{{.*}} : tensor<8xf32> to tensor<4x8xf32>
  %0 = nn.broadcast %b : tensor<8xf32> to tensor<4x8xf32>
  // CHECK: nn.broadcast %{{.*}} broadcast_dims = [0] : tensor<4xi64> to tensor<4x8xi64>
  %1 = nn.broadcast %c broadcast_dims = [0] : tensor<4xi64> to tensor<4x8xi64>
  // CHECK: nn.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  %2 = nn.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  // CHECK: nn.reshape %{{.*}} : tensor<2x16x4x8xf32> to tensor<32x32xf32>
  %3 = nn.reshape %x : tensor<2x16x4x8xf32> to tensor<32x32xf32>
  // CHECK: nn.slice %{{.*}} offsets = [0, 2] sizes = [4, 3] strides = [1, 2] : tensor<4x8xf32>
  %4 = nn.slice %m offsets = [0, 2] sizes = [4, 3] strides = [1, 2] : tensor<4x8xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}} dim = 1 : tensor<4x8xf32>, tensor<4x5xf32>
  %5 = nn.concat %m, %n dim = 1 : tensor<4x8xf32>, tensor<4x5xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}}, %{{.*}} dim = 0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  %6 = nn.concat %m, %m, %m dim = 0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: nn.concat %{{.*}} dim = 0 : tensor<4x8xf32>
  %7 = nn.concat %m dim = 0 : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x8xf32>, tensor<4x8xi64>, tensor<2x4x16x8xf32>, tensor<32x32xf32>, tensor<4x3xf32>, tensor<4x13xf32>, tensor<12x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @gather_iota
func.func @gather_iota(%logits: tensor<16x64xf32>, %labels: tensor<16x1xi64>,
                       %idx: tensor<3x64xi32>)
    -> (tensor<16x1xf32>, tensor<3x64xf32>, tensor<8x16xi64>, tensor<16xf32>) {
  // CHECK: nn.gather %{{.*}}, %{{.*}} dim = 1 : tensor<16x64xf32>, tensor<16x1xi64>
  %0 = nn.gather %logits, %labels dim = 1 : tensor<16x64xf32>, tensor<16x1xi64>
  // CHECK: nn.gather %{{.*}}, %{{.*}} dim = 0 : tensor<16x64xf32>, tensor<3x64xi32>
  %1 = nn.gather %logits, %idx dim = 0 : tensor<16x64xf32>, tensor<3x64xi32>
  // CHECK: nn.iota dim = 1 : tensor<8x16xi64>
  %2 = nn.iota dim = 1 : tensor<8x16xi64>
  // CHECK: nn.iota dim = 0 : tensor<16xf32>
  %3 = nn.iota dim = 0 : tensor<16xf32>
  return %0, %1, %2, %3 : tensor<16x1xf32>, tensor<3x64xf32>, tensor<8x16xi64>, tensor<16xf32>
}

// CHECK-LABEL: func.func @softmax_norms
func.func @softmax_norms(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>,
                         %b: tensor<32xf32>, %g2: tensor<16x32xf32>)
    -> (tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>,
        tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>,
        tensor<8x16x32xf32>, tensor<8x16x32xf32>) {
  // CHECK: nn.softmax %{{.*}} dim = 2 : tensor<8x16x32xf32>
  %0 = nn.softmax %x dim = 2 : tensor<8x16x32xf32>
  // CHECK: nn.log_softmax %{{.*}} dim = 0 : tensor<8x16x32xf32>
  %1 = nn.log_softmax %x dim = 0 : tensor<8x16x32xf32>
  // CHECK: nn.layer_norm %{{.*}} scale %{{.*}} bias %{{.*}} : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
  %2 = nn.layer_norm %x scale %g bias %b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
  // CHECK: nn.layer_norm %{{.*}} {epsilon = 9.9999999999999995E-7 : f64, normalized_dims = 2 : i64} : tensor<8x16x32xf32>
  %3 = nn.layer_norm %x {epsilon = 1.0e-06 : f64, normalized_dims = 2 : i64} : tensor<8x16x32xf32>
  // CHECK: nn.layer_norm %{{.*}} bias %{{.*}} : tensor<8x16x32xf32>, tensor<32xf32>
  %4 = nn.layer_norm %x bias %b : tensor<8x16x32xf32>, tensor<32xf32>
  // CHECK: nn.rms_norm %{{.*}} scale %{{.*}} : tensor<8x16x32xf32>, tensor<32xf32>
  %5 = nn.rms_norm %x scale %g : tensor<8x16x32xf32>, tensor<32xf32>
  // CHECK: nn.rms_norm %{{.*}} : tensor<8x16x32xf32>
  %6 = nn.rms_norm %x : tensor<8x16x32xf32>
  // CHECK: nn.rms_norm %{{.*}} scale %{{.*}} {normalized_dims = 2 : i64} : tensor<8x16x32xf32>, tensor<16x32xf32>
  %7 = nn.rms_norm %x scale %g2 {normalized_dims = 2 : i64} : tensor<8x16x32xf32>, tensor<16x32xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>
}

// CHECK-LABEL: func.func @rope_dropout_embedding
func.func @rope_dropout_embedding(%q: tensor<8x16x4x8xf32>,
                                  %pos: tensor<8x16xi64>,
                                  %pos1: tensor<16xi32>,
                                  %k: tensor<16x4x8xbf16>,
                                  %step: tensor<i64>,
                                  %table: tensor<64x32xf32>,
                                  %ids: tensor<8x16xi64>)
    -> (tensor<8x16x4x8xf32>, tensor<16x4x8xbf16>, tensor<8x16x4x8xf32>,
        tensor<8x16x4x8xf32>, tensor<8x16x32xf32>) {
  // CHECK: nn.rope %{{.*}}, %{{.*}} : tensor<8x16x4x8xf32>, tensor<8x16xi64>
  %0 = nn.rope %q, %pos : tensor<8x16x4x8xf32>, tensor<8x16xi64>
  // CHECK: nn.rope %{{.*}}, %{{.*}} {theta = 5.000000e+05 : f64} : tensor<16x4x8xbf16>, tensor<16xi32>
  %1 = nn.rope %k, %pos1 {theta = 500000.0 : f64} : tensor<16x4x8xbf16>, tensor<16xi32>
  // CHECK: nn.dropout %{{.*}} {rate = 1.000000e-01 : f64, seed = 42 : i64} : tensor<8x16x4x8xf32>
  %2 = nn.dropout %0 {rate = 0.1 : f64, seed = 42 : i64} : tensor<8x16x4x8xf32>
  // CHECK: nn.dropout %{{.*}}, %{{.*}} {rate = 0.000000e+00 : f64, seed = -7 : i64} : tensor<8x16x4x8xf32>
  %3 = nn.dropout %0, %step {rate = 0.0 : f64, seed = -7 : i64} : tensor<8x16x4x8xf32>
  // A block of a larger tensor: one start per dimension, the global shape.
  // CHECK: nn.dropout %{{.*}}, %{{.*}} at [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {global_shape = array<i64: 16, 16, 4, 8>, rate = 5.000000e-01 : f64, seed = 1 : i64} : tensor<8x16x4x8xf32>
  %5 = nn.dropout %0, %step at [%step, %step, %step, %step] {global_shape = array<i64: 16, 16, 4, 8>, rate = 0.5 : f64, seed = 1 : i64} : tensor<8x16x4x8xf32>
  // CHECK: nn.embedding %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<8x16xi64>
  %4 = nn.embedding %table, %ids : tensor<64x32xf32>, tensor<8x16xi64>
  return %0, %1, %2, %3, %4 : tensor<8x16x4x8xf32>, tensor<16x4x8xbf16>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x32xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x4x8xf32>,
                     %v: tensor<2x16x4x8xf32>, %kg: tensor<2x16x2x8xf32>,
                     %vg: tensor<2x16x2x12xf32>, %ends: tensor<2x16xi32>,
                     %qc: tensor<2x4x4x8xf32>, %pos: tensor<2x4xi64>)
    -> (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x12xf32>,
        tensor<2x16x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) {
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = none : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  %0 = nn.attention %q, %k, %v mask = none : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = causal {scale = 1.250000e-01 : f64} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  %1 = nn.attention %q, %k, %v mask = causal {scale = 0.125 : f64} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = causal : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x12xf32>
  %2 = nn.attention %q, %kg, %vg mask = causal : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x12xf32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = tree subtree_end %{{.*}} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16xi32>
  %3 = nn.attention %q, %k, %v mask = tree subtree_end %ends : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16xi32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = causal positions %{{.*}} : tensor<2x4x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x4xi64>
  %4 = nn.attention %qc, %k, %v mask = causal positions %pos : tensor<2x4x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x4xi64>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = tree subtree_end %{{.*}} positions %{{.*}} : tensor<2x4x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16xi32>, tensor<2x4xi64>
  %5 = nn.attention %qc, %k, %v mask = tree subtree_end %ends positions %pos : tensor<2x4x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16xi32>, tensor<2x4xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x12xf32>, tensor<2x16x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
}

// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<8x16x64xf32>, %labels: tensor<8x16xi64>,
                         %w: tensor<8x16xf32>, %n: tensor<f32>,
                         %l2: tensor<64xbf16>, %y2: tensor<i32>)
    -> (tensor<f32>, tensor<f32>, tensor<bf16>) {
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} weights %{{.*}} {normalizer = 1.280000e+02 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
  %0 = nn.cross_entropy %logits, %labels weights %w {normalizer = 128.0 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} weights %{{.*}} normalizer %{{.*}} : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>, tensor<f32>
  %1 = nn.cross_entropy %logits, %labels weights %w normalizer %n : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>, tensor<f32>
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} {normalizer = 1.000000e+00 : f64} : tensor<64xbf16>, tensor<i32>
  %2 = nn.cross_entropy %l2, %y2 {normalizer = 1.0 : f64} : tensor<64xbf16>, tensor<i32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<bf16>
}

// CHECK-LABEL: func.func @optimizers
func.func @optimizers(%p: tensor<32x64xf32> {nn.param}, %g: tensor<32x64xf32>,
                      %buf: tensor<32x64xf32>, %m: tensor<32x64xf32>,
                      %v: tensor<32x64xf32>, %step: tensor<i64>,
                      %x: tensor<8x32xf32> {nn.data})
    -> (tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
        tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) {
  // CHECK: nn.sgd_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-02 : f64} : tensor<32x64xf32>
  %0:2 = nn.sgd_update %p, %g, %buf {lr = 0.01 : f64} : tensor<32x64xf32>
  // CHECK: nn.sgd_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-02 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-04 : f64} : tensor<32x64xf32>
  %1:2 = nn.sgd_update %p, %g, %buf {lr = 0.01 : f64, momentum = 0.9 : f64, nesterov, weight_decay = 1.0e-4 : f64} : tensor<32x64xf32>
  // CHECK: nn.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-03 : f64} : tensor<32x64xf32>
  %2:3 = nn.adamw_update %p, %g, %m, %v, %step {lr = 1.0e-3 : f64} : tensor<32x64xf32>
  // CHECK: nn.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {beta1 = 0.000000e+00 : f64, beta2 = 0.949{{[0-9]*}} : f64, epsilon = 9.99{{[0-9]*}}E-7 : f64, lr = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<32x64xf32>
  %3:3 = nn.adamw_update %p, %g, %m, %v, %step {lr = 0.0 : f64, beta1 = 0.0 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-6 : f64, weight_decay = 0.0 : f64} : tensor<32x64xf32>
  // A learning-rate schedule: warm-up, then a cosine decay to a floor.
  // CHECK: nn.sgd_update %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} {decay = #nn<lr_decay cosine>, decay_steps = 90 : i64, lr = 1.000000e-01 : f64, min_lr = 1.000000e-03 : f64, warmup_steps = 10 : i64} : tensor<32x64xf32>
  %4:2 = nn.sgd_update %p, %g, %buf step %step {lr = 0.1 : f64, warmup_steps = 10 : i64, decay = #nn<lr_decay cosine>, decay_steps = 90 : i64, min_lr = 1.0e-3 : f64} : tensor<32x64xf32>
  // CHECK: nn.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {decay = #nn<lr_decay linear>, decay_steps = 5 : i64, lr = 1.000000e-03 : f64} : tensor<32x64xf32>
  %5:3 = nn.adamw_update %p, %g, %m, %v, %step {lr = 1.0e-3 : f64, decay = #nn<lr_decay linear>, decay_steps = 5 : i64} : tensor<32x64xf32>
  return %0#0, %1#1, %2#0, %2#2, %3#1, %3#2 : tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
}

// CHECK-LABEL: func.func @arg_classes
// CHECK-SAME: {nn.name = "w", nn.param}
// CHECK-SAME: {nn.data, nn.name = "tokens"}
func.func @arg_classes(%w: tensor<32x64xf32> {nn.param},
                       %tokens: tensor<8x16xi64> {nn.data},
                       %lr: f32) -> tensor<32x64xf32> {
  return %w : tensor<32x64xf32>
}

// CHECK-LABEL: func.func private @declaration
// CHECK-SAME: {nn.param}
func.func private @declaration(tensor<4xf32> {nn.param})
