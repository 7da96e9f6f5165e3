// RUN: loom-opt %s --hspmd-print-shards -split-input-file -o /dev/null | FileCheck %s

// The 3:1 batch split between a 2x2 group and a TP-2 group: every device's
// block, with the slow group's 16 rows split by columns.
// CHECK-LABEL: value %0 : tensor<64x128xf32> at
// CHECK-NEXT:   layout #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK-NEXT:   device 0 (h200): shard 24x64 at [0, 0]
// CHECK-NEXT:   device 1 (h200): shard 24x64 at [0, 64]
// CHECK-NEXT:   device 2 (h200): shard 24x64 at [24, 0]
// CHECK-NEXT:   device 3 (h200): shard 24x64 at [24, 64]
// CHECK-NEXT:   device 4 (910b): shard 16x64 at [48, 0]
// CHECK-NEXT:   device 5 (910b): shard 16x64 at [48, 64]
// Partial sums and replicas inside a group, in axis order (first slowest).
// CHECK-LABEL: value %1 : tensor<8x8xf32> at
// CHECK-NEXT:   layout #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, D:2]}>
// CHECK-NEXT:   device 0 (h200): shard 8x8 at [0, 0], partial 0/2 (sum), replica 0/2
// CHECK-NEXT:   device 1 (h200): shard 8x8 at [0, 0], partial 0/2 (sum), replica 1/2
// CHECK-NEXT:   device 2 (h200): shard 8x8 at [0, 0], partial 1/2 (sum), replica 0/2
// CHECK-NEXT:   device 3 (h200): shard 8x8 at [0, 0], partial 1/2 (sum), replica 1/2
// Strategy sets print every strategy and mark the optimizer's.
// CHECK-LABEL: value %2 : tensor<8x8xf32> at
// CHECK-NEXT:   strategy "tp"
// CHECK-NEXT:     layout #hspmd.union<{[4, 5]: [S1:2]}>
// CHECK-NEXT:     device 4 (910b): shard 8x4 at [0, 0]
// CHECK-NEXT:     device 5 (910b): shard 8x4 at [0, 4]
// CHECK-NEXT:   strategy "dp" (optimizer)
// CHECK-NEXT:     layout #hspmd.union<replicated: {[0, 1]: [D:2]}, {[4, 5]: [S0:2]}>
// CHECK-NEXT:     device 0 (h200): shard 8x8 at [0, 0], replica 0/3
// CHECK-NEXT:     device 1 (h200): shard 8x8 at [0, 0], replica 1/3
// CHECK-NEXT:     device 4 (910b): shard 4x8 at [0, 0], replica 2/3
// CHECK-NEXT:     device 5 (910b): shard 4x8 at [4, 0], replica 2/3
// Dynamic sizes have no static shards.
// CHECK-LABEL: value %3 : tensor<?x8xf32> at
// CHECK-NEXT:   dynamic shape: shards depend on run-time sizes
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<2, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<3, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<4, "910b", speed = 0.5, mem = 64, node = 1>,
    #hspmd.device<5, "910b", speed = 0.5, mem = 64, node = 1>]>} {
  func.func @f(%x: tensor<64x128xf32>, %y: tensor<8x8xf32>, %d: tensor<?x8xf32>) {
    %0 = hspmd.annotate %x : tensor<64x128xf32>
           as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
    %1 = hspmd.annotate %y : tensor<8x8xf32> as #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, D:2]}>
    %2 = hspmd.annotate %y : tensor<8x8xf32>
           as #hspmd.strategies<["tp" = <{[4, 5]: [S1:2]}>,
                                 "dp" = <replicated: {[0, 1]: [D:2]}, {[4, 5]: [S0:2]}>], optimizer = "dp">
    %3 = hspmd.annotate %d : tensor<?x8xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
    return
  }
}

// -----

// Contributions add up across partial groups; explicit sizes give uneven
// blocks.
// CHECK-LABEL: value %0 : tensor<8x6xf64> at
// CHECK-NEXT:   layout #hspmd.union<partial(sum) shares [3, 1]: {[0, 1, 2]: [P(sum):3]}, {[3]: []}>
// CHECK-NEXT:   device 0: shard 8x6 at [0, 0], partial 0/4 (sum)
// CHECK-NEXT:   device 1: shard 8x6 at [0, 0], partial 1/4 (sum)
// CHECK-NEXT:   device 2: shard 8x6 at [0, 0], partial 2/4 (sum)
// CHECK-NEXT:   device 3: shard 8x6 at [0, 0], partial 3/4 (sum)
// CHECK-LABEL: value %1 : tensor<8x6xf64> at
// CHECK-NEXT:   layout #hspmd.union<split(1) sizes [5, 1]: {[0]: []}, {[1]: []}>
// CHECK-NEXT:   device 0: shard 8x5 at [0, 0]
// CHECK-NEXT:   device 1: shard 8x1 at [0, 5]
func.func @g(%x: tensor<8x6xf64>) {
  %0 = hspmd.annotate %x : tensor<8x6xf64>
         as #hspmd.union<partial(sum) shares [3, 1]: {[0, 1, 2]: [P(sum):3]}, {[3]: []}>
  %1 = hspmd.annotate %x : tensor<8x6xf64> as #hspmd.union<split(1) sizes [5, 1]: {[0]: []}, {[1]: []}>
  return
}

// -----

// Blocks of unequal size inside a group: a degree that does not divide the
// dimension gives balanced blocks (the first 8 mod 3 one row larger), and
// explicit sizes keep attention heads of 8 columns whole.
// CHECK-LABEL: value %0 : tensor<8x32xf64> at
// CHECK-NEXT:   layout #hspmd.union<{[0, 1, 2]: [S0:3]}>
// CHECK-NEXT:   device 0: shard 3x32 at [0, 0]
// CHECK-NEXT:   device 1: shard 3x32 at [3, 0]
// CHECK-NEXT:   device 2: shard 2x32 at [6, 0]
// CHECK-LABEL: value %1 : tensor<8x32xf64> at
// CHECK-NEXT:   layout #hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>
// CHECK-NEXT:   device 0: shard 8x16 at [0, 0]
// CHECK-NEXT:   device 1: shard 8x8 at [0, 16]
// CHECK-NEXT:   device 2: shard 8x8 at [0, 24]
// A group's share is cut the same way: 43/43/42 of the 128 columns.
// CHECK-LABEL: value %2 : tensor<8x128xf64> at
// CHECK-NEXT:   layout #hspmd.union<{[0, 1, 2]: [S1:3]}>
// CHECK-NEXT:   device 0: shard 8x43 at [0, 0]
// CHECK-NEXT:   device 1: shard 8x43 at [0, 43]
// CHECK-NEXT:   device 2: shard 8x42 at [0, 86]
// CHECK-LABEL: value %3 : tensor<9x4xf64> at
// CHECK-NEXT:   layout #hspmd.union<split(0) shares [2, 1]: {[0, 1, 2, 3]: [S0:4]}, {[4]: []}>
// CHECK-NEXT:   device 0: shard 2x4 at [0, 0]
// CHECK-NEXT:   device 1: shard 2x4 at [2, 0]
// CHECK-NEXT:   device 2: shard 1x4 at [4, 0]
// CHECK-NEXT:   device 3: shard 1x4 at [5, 0]
// CHECK-NEXT:   device 4: shard 3x4 at [6, 0]
func.func @uneven(%x: tensor<8x32xf64>, %y: tensor<8x128xf64>, %z: tensor<9x4xf64>) {
  %0 = hspmd.annotate %x : tensor<8x32xf64> as #hspmd.union<{[0, 1, 2]: [S0:3]}>
  %1 = hspmd.annotate %x : tensor<8x32xf64> as #hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>
  %2 = hspmd.annotate %y : tensor<8x128xf64> as #hspmd.union<{[0, 1, 2]: [S1:3]}>
  %3 = hspmd.annotate %z : tensor<9x4xf64> as #hspmd.union<split(0) shares [2, 1]: {[0, 1, 2, 3]: [S0:4]}, {[4]: []}>
  return
}
