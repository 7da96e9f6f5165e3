// hspmd ops under a cluster print and parse back to themselves, in custom
// form, generic form and bytecode.
// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: loom-opt %s --emit-bytecode | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// Annotations with a union and with a strategy set, and a reshard, under a
// cluster of 4 fast and 2 slow devices.
// CHECK-LABEL: module attributes {hspmd.cluster = #hspmd.cluster<[#hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>
// CHECK-LABEL: func.func @annotate_and_reshard
// CHECK: %[[A:.*]] = hspmd.annotate %{{.*}} : tensor<64x128xf32> as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK: %[[B:.*]] = hspmd.reshard %[[A]] : tensor<64x128xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
// CHECK: hspmd.annotate %[[B]] : tensor<64x128xf32> as #hspmd.strategies<["tp" = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>, "dp" = #hspmd.union<partial(sum) shares [3, 1]: {[0, 1, 2, 3]: [S0:4]}, {[4, 5]: [D:2]}>], optimizer = "dp">
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<2, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<3, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<4, "910b", speed = 0.5, mem = 64, node = 1>,
    #hspmd.device<5, "910b", speed = 0.5, mem = 64, node = 1>]>} {
  func.func @annotate_and_reshard(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
    %0 = hspmd.annotate %x : tensor<64x128xf32>
           as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
    %1 = hspmd.reshard %0 : tensor<64x128xf32>
           from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
    %2 = hspmd.annotate %1 : tensor<64x128xf32>
           as #hspmd.strategies<["tp" = <{[0, 1, 2, 3]: [S1:4]}>,
                                 "dp" = <partial(sum) shares [3, 1]: {[0, 1, 2, 3]: [S0:4]}, {[4, 5]: [D:2]}>],
                                optimizer = "dp">
    return %2 : tensor<64x128xf32>
  }
}

