// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards -split-input-file | FileCheck %s

// Producer/consumer mismatch: %0 is produced split by columns, the second
// add (following %x, at equal priority the lower factor) needs it split by
// rows; a reshard goes in between and the add uses it.
// CHECK-LABEL: func.func @mismatch
// CHECK: %[[A:.*]] = nn.add %arg1, %arg1
// CHECK: %[[R:.*]] = hspmd.reshard %[[A]] : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S1:2]}> to #hspmd.union<{[0, 1]: [S0:2]}> {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
// CHECK: nn.add %arg0, %[[R]]
func.func @mismatch(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                    %y: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>}) -> tensor<8x8xf32> {
  %0 = nn.add %y, %y : tensor<8x8xf32>, tensor<8x8xf32>
  %1 = nn.add %x, %0 : tensor<8x8xf32>, tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

// Megatron row-parallel output: the second matmul's result is a pending
// sum; the function result is annotated duplicated, so the return gets a
// P(sum) -> D reshard.
// CHECK-LABEL: func.func @return_layout
// CHECK: %[[Y:.*]] = nn.matmul
// CHECK: %[[R:.*]] = hspmd.reshard %[[Y]] : tensor<8x16xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
// CHECK: return {{.*}} %[[R]]
func.func @return_layout(%x: tensor<8x32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w: tensor<32x16xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>}) {
  %y = nn.matmul %x, %w : tensor<8x32xf32>, tensor<32x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// An annotation that differs from its input's layout becomes a reshard
// (at the annotation's place in the data flow); its users read the
// reshard.
// CHECK-LABEL: func.func @annotate_reshards
// CHECK-NOT: hspmd.annotate
// CHECK: %[[R:.*]] = hspmd.reshard %arg0 : tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:4]}> to #hspmd.union<{[0, 1, 2, 3]: [D:4]}>
// CHECK: nn.gelu %[[R]]
func.func @annotate_reshards(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>}) -> tensor<8x8xf32> {
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0, 1, 2, 3]: [D:4]}>
  %1 = nn.gelu %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

// An annotation that agrees with its input (here spelled differently:
// [S0:2, D:1] is [S0:2]) is erased and nothing is inserted.
// CHECK-LABEL: func.func @annotate_erased
// CHECK-NOT: hspmd.annotate
// CHECK-NOT: hspmd.reshard
// CHECK: nn.gelu %arg0
func.func @annotate_erased(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<8x8xf32> {
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0, 1]: [S0:2, D:1]}>
  %1 = nn.gelu %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

// Two consumers needing the same layout of one value share one reshard.
// CHECK-LABEL: func.func @shared
// CHECK-COUNT-1: hspmd.reshard
// CHECK-NOT: hspmd.reshard
func.func @shared(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>},
        tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>}) {
  return %x, %x : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A function without layouts is left alone.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: hspmd
func.func @plain(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = nn.gelu %x : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
