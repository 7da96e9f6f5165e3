// Collectives in the local view (one device's buffers) and in the global
// view (layouts given, the global type kept) print and parse back to
// themselves; the single-device interpreter runs the global view as the
// identity.
// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t
// RUN: loom-run --interpret %s --entry global --random-inputs --seed 3 --output-dir %t.out
// RUN: loom-run --interpret %s --entry global_input --random-inputs --seed 3 --output-dir %t.in
// RUN: cmp %t.out/result_0.npy %t.in/result_0.npy
// RUN: not loom-run --interpret %s --entry local --random-inputs 2>&1 | FileCheck %s --check-prefix=LOCAL

// CHECK-LABEL: func.func @local
// CHECK: hspmd.all_reduce sum %{{.*}} over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK: hspmd.all_gather %{{.*}} dim 0 over [0] of [4] : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK: hspmd.reduce_scatter max %{{.*}} dim 1 over [0, 1] of [2, 2] : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK: hspmd.all_to_all %{{.*}} split 1 concat 0 over [0] of [2] : tensor<4x16xf32> -> tensor<8x8xf32>
// CHECK: hspmd.permute %{{.*}} perm [1, 0] over [0, 1] of [2, 2] : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK: hspmd.local_slice %{{.*}} dim 1 over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK: hspmd.make_partial %{{.*}} dim 1 over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x32xf32>
// CHECK: hspmd.make_partial %{{.*}} over [0] of [2, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK: hspmd.sparse_reduce_scatter %{{.*}} rows %{{.*}} over [0, 1] of [2, 2] : tensor<8x16xf32>, tensor<3x2xi64> -> tensor<2x16xf32>
// CHECK: hspmd.sparse_all_gather %{{.*}} rows %{{.*}} over [0] of [2, 2] : tensor<2x16xf32>, tensor<3x2xi64> -> tensor<4x16xf32>
// CHECK: hspmd.sparse_exchange %{{.*}} rows %{{.*}} among [0, 1, 2] blocks [0, 2, 2, 2, 4, 4] : tensor<8x16xf32>, tensor<3x2xi64> -> tensor<2x16xf32>
// CHECK: hspmd.sparse_exchange gather %{{.*}} rows %{{.*}} among [0, 1, 2] blocks [0, 2, 2, 2, 4, 4] : tensor<2x16xf32>, tensor<3x2xi64> -> tensor<8x16xf32>
// CHECK: %[[P:.*]] = hspmd.sparse_all_gather_start %[[B:.*]] rows %[[R:.*]] over [0] of [2, 2] : tensor<2x16xf32>, tensor<3x2xi64> -> tensor<4x16xf32>
// CHECK: hspmd.wait %[[P]] keep(%[[B]], %[[R]] : tensor<2x16xf32>, tensor<3x2xi64>) : tensor<4x16xf32>
// RUN: not loom-run --interpret %s --entry rank --random-inputs 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: error: 'hspmd.axis_index' op reads the running device's rank; run the program on the simulator
// RUN: loom-run --interpret %s --entry rank --simulate 4 --print | FileCheck %s --check-prefix=RANKS
// RANKS: rank 0 result #0: tensor<i64> = 0
// RANKS: rank 1 result #0: tensor<i64> = 8
// RANKS: rank 2 result #0: tensor<i64> = 0
// RANKS: rank 3 result #0: tensor<i64> = 8
// LOCAL: error: 'hspmd.all_reduce' op works on one device's buffer (the local view, after specialisation) and needs the other ranks: run it on the simulator
func.func @local(%a: tensor<8x16xf32>, %b: tensor<2x16xf32>, %c: tensor<4x16xf32>,
                 %d: tensor<4x4xf32>, %r: tensor<3x2xi64>) {
  %0 = hspmd.all_reduce sum %a over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = hspmd.all_gather %b dim 0 over [0] of [4] : tensor<2x16xf32> -> tensor<8x16xf32>
  %2 = hspmd.reduce_scatter max %a dim 1 over [0, 1] of [2, 2] : tensor<8x16xf32> -> tensor<8x4xf32>
  %3 = hspmd.all_to_all %c split 1 concat 0 over [0] of [2] : tensor<4x16xf32> -> tensor<8x8xf32>
  %4 = hspmd.permute %d perm [1, 0] over [0, 1] of [2, 2] : tensor<4x4xf32> -> tensor<4x4xf32>
  %5 = hspmd.local_slice %a dim 1 over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x8xf32>
  %6 = hspmd.make_partial %a dim 1 over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x32xf32>
  %7 = hspmd.make_partial %a over [0] of [2, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
  %8 = hspmd.sparse_reduce_scatter %a rows %r over [0, 1] of [2, 2] : tensor<8x16xf32>, tensor<3x2xi64> -> tensor<2x16xf32>
  %9 = hspmd.sparse_all_gather %b rows %r over [0] of [2, 2] : tensor<2x16xf32>, tensor<3x2xi64> -> tensor<4x16xf32>
  %10 = hspmd.sparse_exchange %a rows %r among [0, 1, 2] blocks [0, 2, 2, 2, 4, 4] : tensor<8x16xf32>, tensor<3x2xi64> -> tensor<2x16xf32>
  %11 = hspmd.sparse_exchange gather %b rows %r among [0, 1, 2] blocks [0, 2, 2, 2, 4, 4] : tensor<2x16xf32>, tensor<3x2xi64> -> tensor<8x16xf32>
  %12 = hspmd.sparse_all_gather_start %b rows %r over [0] of [2, 2] : tensor<2x16xf32>, tensor<3x2xi64> -> tensor<4x16xf32>
  %13 = hspmd.wait %12 keep(%b, %r : tensor<2x16xf32>, tensor<3x2xi64>) : tensor<4x16xf32>
  return
}

// [P(sum):2, S1:2] -> [S0:4] on 4 devices: a reduce-scatter of dimension 0
// over mesh axis 0, then an all-to-all moving the split of dimension 1 to
// dimension 0 over mesh axis 1 (docs/architecture.md, "Reshard lowering").
// CHECK-LABEL: func.func @global
// CHECK: hspmd.reduce_scatter sum %{{.*}} dim 0 over [0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from <{[0, 1, 2, 3]: [P(sum):2, S1:2]}> to <{[0, 1, 2, 3]: [S0:2, S1:2]}>
// CHECK: hspmd.all_to_all %{{.*}} split 0 concat 1 over [1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from <{[0, 1, 2, 3]: [S0:2, S1:2]}> to <{[0, 1, 2, 3]: [S0:4]}>
func.func @global(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = hspmd.reduce_scatter sum %x dim 0 over [0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32>
      from #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, S1:2]}>
      to #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
  %1 = hspmd.all_to_all %0 split 0 concat 1 over [1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32>
      from #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
      to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
  return %1 : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @rank
// CHECK: hspmd.axis_index over [1] of [2, 2] stride 8 : tensor<i64>
func.func @rank() -> tensor<i64> {
  %0 = hspmd.axis_index over [1] of [2, 2] stride 8 : tensor<i64>
  return %0 : tensor<i64>
}

func.func @global_input(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// The group's part of a tensor across groups and the layout change between
// them; the rank with a base (where the group's part starts).
// CHECK-LABEL: func.func @exchange
// CHECK: hspmd.exchange %arg0 shape [32, 128] : tensor<32x128xf64> -> tensor<32x128xf64> from <partial(sum): {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}> to <replicated: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
// CHECK: hspmd.axis_index over [0] of [2] stride 6 base 4 : tensor<i64>
func.func @exchange(%g: tensor<32x128xf64>) -> (tensor<32x128xf64>, tensor<i64>) {
  %0 = hspmd.exchange %g shape [32, 128] : tensor<32x128xf64> -> tensor<32x128xf64>
      from #hspmd.union<partial(sum): {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
      to #hspmd.union<replicated: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
  %1 = hspmd.axis_index over [0] of [2] stride 6 base 4 : tensor<i64>
  return %0, %1 : tensor<32x128xf64>, tensor<i64>
}
