// Blocks of unequal size inside a group: the devices holding equally shaped
// blocks share a function (hspmd.devices lists them), each with its own
// local shapes; block starts are affine in the device's coordinate within
// a class (a class whose are not is split). Each runs sharded on the
// simulator from global inputs and must equal the global function.
// RUN: loom-opt %s --hspmd-specialize | FileCheck %s
// RUN: loom-opt %s --hspmd-specialize -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 3 --global-entry positions --random-inputs | FileCheck %s --check-prefix=SIM
// RUN: loom-run --interpret %t.mlir --simulate 3 --global-entry center --random-inputs --seed 3 --comm-stats | FileCheck %s --check-prefix=MEAN
// RUN: loom-run --interpret %t.mlir --simulate 3 --global-entry heads --random-inputs | FileCheck %s --check-prefix=SIM
// RUN: loom-run --interpret %t.mlir --simulate 4 --global-entry scattered --random-inputs | FileCheck %s --check-prefix=SIM
// One class's function alone does not run on the whole group:
// RUN: not loom-run --interpret %t.mlir --simulate 3 --entry positions_group0_block0 --global-entry positions --random-inputs 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: @positions_group0_block0 runs on devices [0, 1] of its group only (the others hold blocks of other shapes); run every specialisation of @positions together (leave out --entry)

#S3 = #hspmd.union<{[0, 1, 2]: [S1:3]}>
#D3 = #hspmd.union<{[0, 1, 2]: [D:3]}>
#P3 = #hspmd.union<{[0, 1, 2]: [P(sum):3]}>
#H3 = #hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>
#N4 = #hspmd.union<{[0, 1, 2, 3]: [S1:[2, 2, 1, 2]]}>

// 8 columns over 3 devices, balanced: 3, 3 (starts 0, 3) and 2 (start 6).
// CHECK-LABEL: func.func @positions_group0_block0(
// CHECK-SAME: tensor<2x3xf64>
// CHECK-SAME: hspmd.devices = array<i64: 0, 1>, hspmd.group = #hspmd.group<[0, 1, 2]>, hspmd.specializes = @positions
// CHECK: %[[A:.*]] = hspmd.axis_index over [0] of [3] stride 3 : tensor<i64>
// CHECK-NEXT: nn.iota dim = 1 offset %[[A]] : tensor<2x3xi64>
// CHECK-LABEL: func.func @positions_group0_block1(
// CHECK-SAME: tensor<2x2xf64>
// CHECK-SAME: hspmd.devices = array<i64: 2>
// CHECK: %[[B:.*]] = hspmd.axis_index over [0] of [3] stride 0 base 6 : tensor<i64>
// CHECK-NEXT: nn.iota dim = 1 offset %[[B]] : tensor<2x2xi64>
// SIM: result #0: {{.*}} norm-wise relative error 0.000e+00
func.func @positions(%x: tensor<2x8xf64> {hspmd.layout = #S3}) -> (tensor<2x8xi64> {hspmd.layout = #S3}) {
  %i = nn.iota dim = 1 {hspmd.result_layouts = [#S3]} : tensor<2x8xi64>
  return {hspmd.operand_layouts = [#S3]} %i : tensor<2x8xi64>
}

// A mean over uneven blocks is each block's mean times its share of the
// whole (3/8 and 2/8), never an average of averages.
// CHECK-LABEL: func.func @center_group0_block0(
// CHECK: nn.fill 3.750000e-01 : tensor<f64>
// CHECK: hspmd.all_reduce sum %{{.*}} over [0] of [3] : tensor<4x1xf64> -> tensor<4x1xf64>
// CHECK-LABEL: func.func @center_group0_block1(
// CHECK: nn.fill 2.500000e-01 : tensor<f64>
// CHECK: hspmd.all_reduce sum %{{.*}} over [0] of [3] : tensor<4x1xf64> -> tensor<4x1xf64>
// MEAN: result #0: tensor<4x1xf64> norm-wise relative error {{[0-9.]+e-(1[1-9]|[2-9][0-9])|0.000e\+00}}
// MEAN: rank 0 all_reduce: calls 1
// MEAN: rank 2 all_reduce: calls 1
func.func @center(%x: tensor<4x8xf64> {hspmd.layout = #S3})
    -> (tensor<4x1xf64> {hspmd.layout = #D3}) {
  %m = nn.reduce mean %x dims = [1] keep_dims {hspmd.operand_layouts = [#S3], hspmd.result_layouts = [#P3]}
      : tensor<4x8xf64>
  %r = hspmd.all_reduce sum %m over [0] of [3] : tensor<4x1xf64> -> tensor<4x1xf64>
      from #P3 to #D3 {hspmd.operand_layouts = [#P3], hspmd.result_layouts = [#D3]}
  return {hspmd.operand_layouts = [#D3]} %r : tensor<4x1xf64>
}

// Explicit blocks keep heads of 8 whole: 16 on device 0, 8 on devices 1
// and 2 (starts 16 and 24).
// CHECK-LABEL: func.func @heads_group0_block0(
// CHECK-SAME: tensor<2x16xf64>
// CHECK-SAME: hspmd.devices = array<i64: 0>
// CHECK-LABEL: func.func @heads_group0_block1(
// CHECK-SAME: tensor<2x8xf64>
// CHECK-SAME: hspmd.devices = array<i64: 1, 2>
// CHECK: hspmd.axis_index over [0] of [3] stride 8 base 8 : tensor<i64>
func.func @heads(%x: tensor<2x32xf64> {hspmd.layout = #H3}) -> (tensor<2x32xi64> {hspmd.layout = #H3}) {
  %i = nn.iota dim = 1 {hspmd.result_layouts = [#H3]} : tensor<2x32xi64>
  return {hspmd.operand_layouts = [#H3]} %i : tensor<2x32xi64>
}

// Blocks of 2 start at 0, 2 and 5: not affine in the coordinate (0, 1, 3),
// so each device gets its own function.
// CHECK-LABEL: func.func @scattered_group0_block0(
// CHECK-SAME: hspmd.devices = array<i64: 0>
// CHECK-LABEL: func.func @scattered_group0_block1(
// CHECK-SAME: hspmd.devices = array<i64: 1>
// CHECK-LABEL: func.func @scattered_group0_block2(
// CHECK-SAME: tensor<2x1xf64>
// CHECK-SAME: hspmd.devices = array<i64: 2>
// CHECK-LABEL: func.func @scattered_group0_block3(
// CHECK-SAME: hspmd.devices = array<i64: 3>
// CHECK: hspmd.axis_index over [0] of [4] stride 0 base 5 : tensor<i64>
func.func @scattered(%x: tensor<2x7xf64> {hspmd.layout = #N4}) -> (tensor<2x7xi64> {hspmd.layout = #N4}) {
  %i = nn.iota dim = 1 {hspmd.result_layouts = [#N4]} : tensor<2x7xi64>
  return {hspmd.operand_layouts = [#N4]} %i : tensor<2x7xi64>
}
