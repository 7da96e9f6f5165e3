// --random-inputs draws every argument from splitmix64 keyed by the seed and
// the argument index: floats uniform in [-1, 1), integers in --int-range
// (default [0, 8)), i1 fair coins. Inputs given with --input come first.
// RUN: loom-run --interpret %s --random-inputs --seed 3 --print > %t.a
// RUN: loom-run --interpret %s --random-inputs --seed 3 --print > %t.b
// RUN: cmp %t.a %t.b
// RUN: loom-run --interpret %s --random-inputs --seed 4 --print > %t.c
// RUN: not cmp %t.a %t.c
// RUN: FileCheck %s < %t.a
// RUN: loom-run --interpret %s --random-inputs --int-range=-3,-1 --print | FileCheck %s --check-prefix=RANGE
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.full((2, 3), 0.25, np.float32))"
// RUN: loom-run --interpret %s --input %t.x.npy --random-inputs --print | FileCheck %s --check-prefix=MIXED

// CHECK: result #0: tensor<2x3xf32> = {{\[\[}}{{-?[0-9.]+(e-[0-9]+)?}}, {{-?[0-9.]+(e-[0-9]+)?}}, {{-?[0-9.]+(e-[0-9]+)?}}], [{{-?[0-9.]+(e-[0-9]+)?}}, {{-?[0-9.]+(e-[0-9]+)?}}, {{-?[0-9.]+(e-[0-9]+)?}}]]
// CHECK-NEXT: result #1: tensor<8xi64> = [{{[0-7]}}, {{[0-7]}}, {{[0-7]}}, {{[0-7]}}, {{[0-7]}}, {{[0-7]}}, {{[0-7]}}, {{[0-7]}}]
// CHECK-NEXT: result #2: tensor<4xi1> = [{{(true|false)}}, {{(true|false)}}, {{(true|false)}}, {{(true|false)}}]
// CHECK-NEXT: result #3: tensor<2xf64> = [{{-?0\.[0-9]+}}, {{-?0\.[0-9]+}}]
// RANGE: result #1: tensor<8xi64> = [{{-[23]}}, {{-[23]}}, {{-[23]}}, {{-[23]}}, {{-[23]}}, {{-[23]}}, {{-[23]}}, {{-[23]}}]
// MIXED: result #0: tensor<2x3xf32> = {{\[\[}}0.25, 0.25, 0.25], [0.25, 0.25, 0.25]]
func.func @main(%x: tensor<2x3xf32>, %i: tensor<8xi64>, %b: tensor<4xi1>, %d: tensor<2xf64>)
    -> (tensor<2x3xf32>, tensor<8xi64>, tensor<4xi1>, tensor<2xf64>) {
  return %x, %i, %b, %d : tensor<2x3xf32>, tensor<8xi64>, tensor<4xi1>, tensor<2xf64>
}
