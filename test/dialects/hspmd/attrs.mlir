// Every hspmd attribute prints and parses back to itself, in custom form,
// generic form and bytecode.
// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: loom-opt %s --emit-bytecode | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// CHECK-LABEL: func.func @attrs()
// CHECK-SAME: attributes
// CHECK-SAME: cluster = #hspmd.cluster<[#hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>, #hspmd.device<1, "910b", speed = 0.5, mem = 64, node = 1>, #hspmd.device<7, "cpu", speed = 0.25, mem = 8, node = 3>]>
// CHECK-SAME: dev = #hspmd.device<3, "h200", speed = 1.25, mem = 141, node = 2>
// CHECK-SAME: group = #hspmd.group<[4, 5, 6, 7]>
// CHECK-SAME: s_dp_tp = #hspmd.states<[S0:2, S1:2]>
// CHECK-SAME: s_empty = #hspmd.states<[]>
// CHECK-SAME: s_partial = #hspmd.states<[P(sum):2, S1:2]>
// CHECK-SAME: s_partial_kinds = [#hspmd.states<[P(mean):2]>, #hspmd.states<[P(max):2]>, #hspmd.states<[P(min):2, D:3]>]
// CHECK-SAME: s_replicas = #hspmd.states<[D:2, S0:2]>
// CHECK-SAME: s_uneven = #hspmd.states<[D:2, S1:[16, 8, 8]]>
// CHECK-SAME: strategies = #hspmd.strategies<["tp" = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>, "dp" = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">
// CHECK-SAME: u_equal = #hspmd.union<split(1): {[0, 1]: [S0:2]}, {[2, 3]: [S0:2]}>
// CHECK-SAME: u_partial = #hspmd.union<partial(sum): {[0, 1]: [P(sum):2]}, {[2]: []}>
// CHECK-SAME: u_partial_shares = #hspmd.union<partial(sum) shares [3, 1]: {[0, 1, 2]: [D:3]}, {[3]: []}>
// CHECK-SAME: u_replicated = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3, 4]: [S0:3]}>
// CHECK-SAME: u_single = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>
// CHECK-SAME: u_sizes = #hspmd.union<split(0) sizes [40, 24]: {[0, 1, 2, 3]: [S0:4]}, {[4, 5]: [S1:2]}>
// CHECK-SAME: u_split = #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
func.func @attrs() attributes {
  cluster = #hspmd.cluster<[#hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
                            <1, "910b", speed = 0.5, mem = 64, node = 1>,
                            #hspmd.device<7, "cpu", speed = 0.25, mem = 8, node = 3>]>,
  dev = #hspmd.device<3, "h200", speed = 1.25, mem = 141, node = 2>,
  group = #hspmd.group<[4, 5, 6, 7]>,
  s_dp_tp = #hspmd.states<[S0:2, S1:2]>,
  s_empty = #hspmd.states<[]>,
  s_partial = #hspmd.states<[P(sum):2, S1:2]>,
  s_partial_kinds = [#hspmd.states<[P(mean):2]>, #hspmd.states<[P(max):2]>, #hspmd.states<[P(min):2, D:3]>],
  s_replicas = #hspmd.states<[D:2, S0:2]>,
  s_uneven = #hspmd.states<[D:2, S1:[16,8, 8]]>,
  strategies = #hspmd.strategies<["tp" = <{[0, 1, 2, 3]: [S1:4]}>,
                                  "dp" = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">,
  u_equal = #hspmd.union<split(1): {[0, 1]: [S0:2]}, {[2, 3]: [S0:2]}>,
  u_partial = #hspmd.union<partial(sum): {[0, 1]: [P(sum):2]}, {[2]: []}>,
  u_partial_shares = #hspmd.union<partial(sum) shares [3, 1]: {[0, 1, 2]: [D:3]}, {[3]: []}>,
  u_replicated = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3, 4]: [S0:3]}>,
  u_single = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>,
  u_sizes = #hspmd.union<split(0) sizes [40, 24]: {[0, 1, 2, 3]: [S0:4]}, {[4, 5]: [S1:2]}>,
  u_split = #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
} {
  return
}
