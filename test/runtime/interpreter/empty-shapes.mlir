// Zero-size tensors go through every kind of kernel without reading out of
// bounds: empty contractions give zeros, a query that sees no key gives
// zeros, empty reductions give -inf (max) and NaN (mean), undefined elements
// (a label or id outside an empty vocabulary) give NaN.
// RUN: loom-run --interpret %s --random-inputs --print | FileCheck %s

// CHECK: result #0: tensor<4x4xf32> = {{\[\[}}0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
// CHECK-NEXT: result #1: tensor<4x4xf32> = {{\[\[}}0, 0, 0, 0],
// CHECK-NEXT: result #2: tensor<2x3x2x4xf32> = {{\[\[\[\[}}0, 0, 0, 0], [0, 0, 0, 0]],
// CHECK-NEXT: result #3: tensor<f32> = nan
// CHECK-NEXT: result #4: tensor<2x5xf32> = {{\[\[}}nan, nan, nan, nan, nan], [nan, nan, nan, nan, nan]]
// CHECK-NEXT: result #5: tensor<4xf32> = [-inf, -inf, -inf, -inf]
// CHECK-NEXT: result #6: tensor<0x4xf32> = []
// CHECK-NEXT: result #7: tensor<3x0xf32> = {{\[\[}}], [], []]
// CHECK-NEXT: result #8: tensor<4xf32> = [{{-?}}nan, {{-?}}nan, {{-?}}nan, {{-?}}nan]
// CHECK-NEXT: result #9: tensor<3x0xf32> = {{\[\[}}], [], []]
// CHECK-NEXT: result #10: tensor<0x4xf32> = []
// CHECK-NEXT: result #11: tensor<3x4xf32> = {{\[\[}}
func.func @main(%a: tensor<0x4xf32>, %b: tensor<4x0xf32>, %k0: tensor<2x0x2x4xf32>, %q: tensor<2x3x2x4xf32>,
                %logits: tensor<3x0xf32>, %labels: tensor<3xi64>, %tbl: tensor<0x5xf32>, %ids: tensor<2xi64>,
                %x: tensor<3x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3x2x4xf32>, tensor<f32>, tensor<2x5xf32>, tensor<4xf32>,
        tensor<0x4xf32>, tensor<3x0xf32>, tensor<4xf32>, tensor<3x0xf32>, tensor<0x4xf32>, tensor<3x4xf32>) {
  %0 = nn.matmul %a, %b transpose_lhs transpose_rhs : tensor<0x4xf32>, tensor<4x0xf32>
  %1 = nn.matmul %b, %a : tensor<4x0xf32>, tensor<0x4xf32>
  %2 = nn.attention %q, %k0, %k0 mask = none : tensor<2x3x2x4xf32>, tensor<2x0x2x4xf32>, tensor<2x0x2x4xf32>
  %3 = nn.cross_entropy %logits, %labels {normalizer = 3.0 : f64} : tensor<3x0xf32>, tensor<3xi64>
  %4 = nn.embedding %tbl, %ids : tensor<0x5xf32>, tensor<2xi64>
  %5 = nn.reduce max %a dims = [0] : tensor<0x4xf32>
  %6 = nn.softmax %a dim = 0 : tensor<0x4xf32>
  %7 = nn.layer_norm %logits : tensor<3x0xf32>
  %8 = nn.reduce mean %a dims = [0] : tensor<0x4xf32>
  %9 = nn.log_softmax %logits dim = 1 : tensor<3x0xf32>
  %10 = nn.concat %a, %a dim = 0 : tensor<0x4xf32>, tensor<0x4xf32>
  %11 = nn.concat %x, %a dim = 0 : tensor<3x4xf32>, tensor<0x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3x2x4xf32>, tensor<f32>, tensor<2x5xf32>, tensor<4xf32>,
        tensor<0x4xf32>, tensor<3x0xf32>, tensor<4xf32>, tensor<3x0xf32>, tensor<0x4xf32>, tensor<3x4xf32>
}
