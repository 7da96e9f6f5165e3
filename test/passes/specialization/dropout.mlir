// Dropout on a split tensor: the local op draws the mask elements of its
// block's global indices. Specialisation gives it every dimension's block
// start (an hspmd.axis_index where the dimension is split, 0 elsewhere)
// and the global shape; partitioning across groups adds the group's start.
// On the simulator every layout's ranks together give the single-device
// dropout bit for bit (error 0): data parallel (batch split), sequence
// parallel, tensor parallel (feature split), a 2-D mesh, and a split
// across two device groups.
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry dp_group0 --global-entry dp --random-inputs --seed 1 --tolerance 0 | FileCheck %s --check-prefix=SIM
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry sp_group0 --global-entry sp --random-inputs --seed 2 --tolerance 0 | FileCheck %s --check-prefix=SIM
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry tp_group0 --global-entry tp --random-inputs --seed 3 --tolerance 0 | FileCheck %s --check-prefix=SIM
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry mesh2d_group0 --global-entry mesh2d --random-inputs --seed 4 --tolerance 0 | FileCheck %s --check-prefix=SIM
// RUN: loom-run --interpret %t.mlir --simulate 4 --global-entry groups --random-inputs --seed 6 --tolerance 0 | FileCheck %s --check-prefix=SIM
// SIM: result #0: tensor<8x8x4xf64> norm-wise relative error 0.000e+00
//
// The check bites: the same local programs with the block positions
// removed from the local programs (each device drawing by its local
// index) differ.
// RUN: sed -E '/operand_layouts/!{s/ at \[[^]]*\]//; s/global_shape = array<i64: [0-9, ]*>, //;}' %t.mlir > %t.fault.mlir
// RUN: loom-run --interpret %t.fault.mlir --simulate 4 --entry sp_group0 --global-entry sp --random-inputs --seed 2 --tolerance 10 | FileCheck %s --check-prefix=FAULT
// FAULT: result #0: tensor<8x8x4xf64> norm-wise relative error {{[1-9]}}

// CHECK-LABEL: func.func @dp_group0(
// CHECK-DAG: %[[B:.*]] = hspmd.axis_index over [0] of [4] stride 2 : tensor<i64>
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK: nn.dropout %{{.*}} at [%[[B]], %[[Z]], %[[Z]]] {global_shape = array<i64: 8, 8, 4>, rate = 5.000000e-01 : f64, seed = 5 : i64} : tensor<2x8x4xf64>
// CHECK-LABEL: func.func @sp_group0(
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[S:.*]] = hspmd.axis_index over [0] of [4] stride 2 : tensor<i64>
// CHECK: nn.dropout %{{.*}} at [%[[Z]], %[[S]], %[[Z]]] {global_shape = array<i64: 8, 8, 4>, {{.*}}} : tensor<8x2x4xf64>
// CHECK-LABEL: func.func @tp_group0(
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[F:.*]] = hspmd.axis_index over [0] of [4] : tensor<i64>
// CHECK: nn.dropout %{{.*}} at [%[[Z]], %[[Z]], %[[F]]] {global_shape = array<i64: 8, 8, 4>, {{.*}}} : tensor<8x8x1xf64>
// CHECK-LABEL: func.func @mesh2d_group0(
// CHECK-DAG: %[[B:.*]] = hspmd.axis_index over [0] of [2, 2] stride 4 : tensor<i64>
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[F:.*]] = hspmd.axis_index over [1] of [2, 2] stride 2 : tensor<i64>
// CHECK: nn.dropout %{{.*}} at [%[[B]], %[[Z]], %[[F]]] {global_shape = array<i64: 8, 8, 4>, {{.*}}} : tensor<4x8x2xf64>
// Across groups: group 1 holds positions 6 and 7 of dimension 1 (its
// constant start) and splits the features inside the group.
// CHECK-LABEL: func.func @groups_group0(
// CHECK: %[[B:.*]] = hspmd.axis_index over [0] of [2] stride 4 : tensor<i64>
// CHECK: nn.dropout %{{.*}} at [%[[B]], %{{.*}}, %{{.*}}] {global_shape = array<i64: 8, 8, 4>, {{.*}}} : tensor<4x6x4xf64>
// CHECK-LABEL: func.func @groups_group1(
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[G:.*]] = arith.constant dense<6> : tensor<i64>
// CHECK-DAG: %[[F:.*]] = hspmd.axis_index over [0] of [2] stride 2 : tensor<i64>
// CHECK: nn.dropout %{{.*}} at [%[[Z]], %[[G]], %[[F]]] {global_shape = array<i64: 8, 8, 4>, {{.*}}} : tensor<8x2x2xf64>

func.func @dp(%x: tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>})
    -> (tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>}) {
  %y = nn.dropout %x {rate = 0.5 : f64, seed = 5 : i64} : tensor<8x8x4xf64>
  return %y : tensor<8x8x4xf64>
}

func.func @sp(%x: tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>})
    -> (tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>}) {
  %y = nn.dropout %x {rate = 0.5 : f64, seed = 5 : i64} : tensor<8x8x4xf64>
  return %y : tensor<8x8x4xf64>
}

func.func @tp(%x: tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S2:4]}>})
    -> (tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S2:4]}>}) {
  %y = nn.dropout %x {rate = 0.5 : f64, seed = 5 : i64} : tensor<8x8x4xf64>
  return %y : tensor<8x8x4xf64>
}

func.func @mesh2d(%x: tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>})
    -> (tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>}) {
  %y = nn.dropout %x {rate = 0.5 : f64, seed = 5 : i64} : tensor<8x8x4xf64>
  return %y : tensor<8x8x4xf64>
}

func.func @groups(%x: tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2, 3]: [S2:2]}>})
    -> (tensor<8x8x4xf64> {hspmd.layout = #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2, 3]: [S2:2]}>}) {
  %y = nn.dropout %x {rate = 0.5 : f64, seed = 5 : i64} : tensor<8x8x4xf64>
  return %y : tensor<8x8x4xf64>
}
