// RUN: loom-opt %s --hspmd-select-shares="alignment=8 reserved-gib=0.5" -split-input-file | FileCheck %s
// RUN: loom-opt %s --hspmd-select-shares="alignment=8 reserved-gib=0.5" -split-input-file | loom-opt --hspmd-propagate-layouts -split-input-file | FileCheck %s --check-prefix=PARTS

// Four devices of speed 1 and two of speed 0.5: speeds 4 : 1, so 64 rows
// would go 51.2 : 12.8; in multiples of 8, 48 : 16. Every split union of
// the function gets the ratio 3 : 1; other unions are left as written.
// CHECK-LABEL: func.func @batch
// CHECK-SAME: hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>
// CHECK: hspmd.annotate {{.*}} as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
// CHECK: hspmd.annotate {{.*}} as #hspmd.union<replicated: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>
// The parts hold 48 and 16 rows.
// PARTS: func.func @batch_part0(%arg0: tensor<48x128xf32>
// PARTS: func.func @batch_part1(%arg0: tensor<16x128xf32>
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<2, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<3, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<4, "910b", speed = 0.5, mem = 64, node = 1>,
    #hspmd.device<5, "910b", speed = 0.5, mem = 64, node = 1>]>} {
  func.func @batch(%in: tensor<64x128xf32> {hspmd.layout = #hspmd.union<split(0) shares [1, 1]: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>},
                   %w: tensor<128x128xf32>) -> tensor<64x128xf32> {
    %y = nn.matmul %in, %w : tensor<64x128xf32>, tensor<128x128xf32>
    %ya = hspmd.annotate %y : tensor<64x128xf32> as #hspmd.union<split(0) sizes [32, 32]: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
    %wa = hspmd.annotate %w : tensor<128x128xf32> as #hspmd.union<replicated: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>
    return %ya : tensor<64x128xf32>
  }
}

// -----

// Memory caps a group: group {1, 2} is twice as fast as {0} and would take
// 2/3 of the 64 rows (42.7), but each of its devices has 1 GiB, 0.5 of it
// reserved, and a row of the [64, 16M] f32 tensor is 64 MiB: it holds 16
// rows, and group {0} takes the other 48.
// CHECK-LABEL: func.func @capped
// CHECK: split(0) shares [3, 1]
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "slow", speed = 1.0, mem = 1, node = 1>,
    #hspmd.device<2, "slow", speed = 1.0, mem = 1, node = 1>]>} {
  func.func @capped(%in: tensor<64x16777216xf32> {hspmd.layout = #hspmd.union<split(0) shares [1, 1]: {[0]: []}, {[1, 2]: [D:2]}>}) -> tensor<64x16777216xf32> {
    return %in : tensor<64x16777216xf32>
  }
}
