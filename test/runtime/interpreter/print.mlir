// --print writes every result with enough digits to round-trip (%.17g for
// f64, %.9g for f32 and bf16), i1 as true/false, 0-d tensors as a bare value.
// RUN: loom-run --interpret %s --print | FileCheck %s

// CHECK: result #0: tensor<2xf64> = [0.10000000000000001, -2.5]
// CHECK-NEXT: result #1: tensor<f32> = 0.100000001
// CHECK-NEXT: result #2: tensor<2x2xi1> = {{\[\[}}true, false], [false, true]]
// CHECK-NEXT: result #3: tensor<3xi64> = [-9223372036854775808, 0, 7]
// CHECK-NEXT: result #4: tensor<2xbf16> = [0.100097656, 3]
// CHECK-NEXT: result #5: tensor<0x2xf32> = []
// CHECK-NEXT: result #6: tensor<2x1x2xi32> = {{\[\[\[}}1, 2]], {{\[\[}}3, 4]]]
func.func @main() -> (tensor<2xf64>, tensor<f32>, tensor<2x2xi1>, tensor<3xi64>,
                      tensor<2xbf16>, tensor<0x2xf32>, tensor<2x1x2xi32>) {
  %0 = arith.constant dense<[0.1, -2.5]> : tensor<2xf64>
  %1 = arith.constant dense<0.1> : tensor<f32>
  %2 = arith.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
  %3 = arith.constant dense<[-9223372036854775808, 0, 7]> : tensor<3xi64>
  %4 = arith.constant dense<[0.1, 3.0]> : tensor<2xbf16>
  %5 = tensor.empty() : tensor<0x2xf32>
  %6 = arith.constant dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2xf64>, tensor<f32>, tensor<2x2xi1>,
      tensor<3xi64>, tensor<2xbf16>, tensor<0x2xf32>, tensor<2x1x2xi32>
}
