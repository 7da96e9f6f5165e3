// An op without a kernel, a program that does not verify, and one that does
// not parse: a diagnostic each, no crash.

// RUN: split-file --leading-lines %s %t
// RUN: not loom-run --interpret %t/no-kernel.mlir --random-inputs 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: not loom-run --interpret %t/parse.mlir 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not loom-run --interpret %t/two.mlir --random-inputs 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: loom-run --interpret %t/two.mlir --random-inputs --entry g --print | FileCheck %s --check-prefix=ENTRY

//--- no-kernel.mlir
// KERNEL: no-kernel.mlir:[[@LINE+2]]:8: error: no interpreter kernel for 'arith.addf'
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- parse.mlir
// PARSE: parse.mlir:[[@LINE+2]]:8: error: 'nn.matmul' op operand #1 dimension 0 of size 5
func.func @main(%a: tensor<4x8xf32>, %b: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %0 = nn.matmul %a, %b : tensor<4x8xf32>, tensor<5x3xf32>
  return %0 : tensor<4x3xf32>
}

//--- two.mlir
// TWO: error: the module defines 2 functions and none is called @main; choose one with --entry
// ENTRY: result #0: tensor<2xi32> = [{{-?[0-9]+}}, {{-?[0-9]+}}]
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
func.func @g(%a: tensor<2xi32>) -> tensor<2xi32> {
  return %a : tensor<2xi32>
}
