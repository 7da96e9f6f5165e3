// hspmd ops without a cluster print and parse back to themselves, in custom
// form, generic form and bytecode.
// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: loom-opt %s --emit-bytecode | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// Without a cluster, layouts name any devices; scalars, integer tensors,
// dynamic sizes and reshards between strategy sets are fine.
// CHECK-LABEL: func.func @no_cluster
// CHECK: hspmd.annotate %{{.*}} : tensor<f32> as #hspmd.union<{[10, 11]: [P(max):2]}>
// CHECK: hspmd.annotate %{{.*}} : tensor<?x16xi64> as #hspmd.union<split(0) sizes [5, 3]: {[0]: []}, {[1, 2]: [S1:2]}>
// CHECK: hspmd.reshard %{{.*}} : tensor<8x16xbf16> from #hspmd.strategies<["a" = #hspmd.union<{[0, 1]: [S0:2]}>], optimizer = "a"> to #hspmd.strategies<["a" = #hspmd.union<{[0, 1]: [S1:2]}>], optimizer = "a">
func.func @no_cluster(%s: tensor<f32>, %i: tensor<?x16xi64>, %b: tensor<8x16xbf16>)
    -> (tensor<f32>, tensor<?x16xi64>, tensor<8x16xbf16>) {
  %0 = hspmd.annotate %s : tensor<f32> as #hspmd.union<{[10, 11]: [P(max):2]}>
  %1 = hspmd.annotate %i : tensor<?x16xi64>
         as #hspmd.union<split(0) sizes [5, 3]: {[0]: []}, {[1, 2]: [S1:2]}>
  %2 = hspmd.reshard %b : tensor<8x16xbf16>
         from #hspmd.strategies<["a" = <{[0, 1]: [S0:2]}>], optimizer = "a">
         to #hspmd.strategies<["a" = <{[0, 1]: [S1:2]}>], optimizer = "a">
  return %0, %1, %2 : tensor<f32>, tensor<?x16xi64>, tensor<8x16xbf16>
}
