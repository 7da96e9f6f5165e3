// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize | FileCheck %s
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 4 --global-entry change --random-inputs --comm-stats | FileCheck %s --check-prefix=SIM
// RUN: loom-opt %t.mlir --hspmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT

// A change from a TP2 layout on devices {0, 1} to a TP4 layout on
// {0, 1, 2, 3}: groups that overlap. Each group's program is specialised,
// then the programs are merged per cell of devices that belong to the same
// groups: {0, 1} runs both groups' ops (the two halves of the exchange
// become one), {2, 3} only the TP4 group's.
// CHECK-NOT: func.func @change_group
// CHECK-LABEL: func.func @change_cell0(%arg0: tensor<8x8xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "x"}) -> (tensor<8x4xf64> {hspmd.global_layout = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>})
// CHECK-SAME: attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @change}
// CHECK-NEXT: %[[X:.*]] = hspmd.exchange %arg0 shape [8, 16] : tensor<8x8xf64> -> tensor<8x4xf64> from <{[0, 1]: [S1:2]}> to <{[0, 1, 2, 3]: [S1:4]}>
// CHECK-NEXT: return %[[X]]
// CHECK-LABEL: func.func @change_cell1(%arg0: tensor<0x0xf64>
// CHECK-SAME: attributes {hspmd.group = #hspmd.group<[2, 3]>, hspmd.specializes = @change}
// CHECK: hspmd.exchange %{{.*}} shape [8, 16] : tensor<0x0xf64> -> tensor<8x4xf64>
// CHECK-NOT: func.func @change_group

// A batched send/recv plan that moves exactly what the destination lacks
// under the mapping (device d keeps being device d): device 0 keeps its
// first quarter; device 1 needs the second quarter (device 0's), devices 2
// and 3 the last two (device 1's): three [8, 4] f64 blocks, 256 bytes each.
// SIM: result #0: tensor<8x16xf64> norm-wise relative error 0.000e+00
// SIM-NEXT: rank 0 exchange: calls 1, bytes sent 256, received 0
// SIM-NEXT: rank 1 exchange: calls 1, bytes sent 512, received 256
// SIM-NEXT: rank 2 exchange: calls 1, bytes sent 0, received 256
// SIM-NEXT: rank 3 exchange: calls 1, bytes sent 0, received 256
// REPORT: comm report @change_cell0: 2 devices, 768 bytes sent per step in all
// REPORT: comm report @change_cell1: 2 devices, 0 bytes sent per step in all
func.func @change(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>})
    -> (tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>}) {
  %y = hspmd.reshard %x : tensor<8x16xf64> from #hspmd.union<{[0, 1]: [S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>
  return %y : tensor<8x16xf64>
}
