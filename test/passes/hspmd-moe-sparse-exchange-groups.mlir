// hspmd-moe-sparse-exchange across device groups of different sizes: an
// MoE layer's tokens split 1:1 between a group of 2 devices and a single
// device, its 4 experts 2:2 (one expert a device in the first group, two
// on the single device). The dispatch's buffer (4 blocks of 32 rows)
// reaches each device's rows through a reduce-scatter of the width in the
// pair, an exchange summing across the groups and an all-to-all back to
// rows; the pass makes that one hspmd.sparse_exchange in each group's
// function, at the exchange's place, every device's rows in `blocks`
// (device 0 rows [0, 32), device 1 [32, 64), device 2 [64, 128)). The
// experts' output comes back to the combine, which group partitioning
// splits by width between the groups (the pair's devices each combine
// half the tokens, the single device all of them), through an all-gather
// in the pair and an exchange to the width split: the pass makes that a
// gathering sparse exchange of the rows the combine's slots name (whole
// rows), then a slice of the group's columns. The simulated ranks give
// the same bits with and without it, and equal the global function
// (--global-entry).
// RUN: split-file %s %t
// RUN: loom-opt %t/layer.mlir --loom-partition-pipeline=moe-sparse=false -o %t/dense.mlir
// RUN: loom-opt %t/dense.mlir --hspmd-moe-sparse-exchange -o %t/sparse.mlir
// RUN: FileCheck %s < %t/sparse.mlir
// RUN: loom-run --interpret %t/dense.mlir --global-entry layer --simulate 3 --random-inputs --int-range 0,4 --comm-stats --output-dir %t/d | FileCheck %s --check-prefix=DENSE
// RUN: loom-run --interpret %t/sparse.mlir --global-entry layer --simulate 3 --random-inputs --int-range 0,4 --comm-stats --output-dir %t/s > %t/s.stats
// RUN: FileCheck %s --check-prefix=SPARSE < %t/s.stats
// RUN: cmp %t/d/result_0.npy %t/s/result_0.npy
// RUN: loom-opt %t/sparse.mlir --hspmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT
// The pipeline runs it by default.
// RUN: loom-opt %t/layer.mlir --loom-partition-pipeline | FileCheck %s --check-prefix=PIPELINE

// CHECK-LABEL: func.func @layer_group0
// CHECK: %[[BUF:.*]] = nn.moe_dispatch %{{.*}}, %[[SLOTS:.*]] rows = 128 : tensor<4x4xf64>, tensor<4x2xi64>
// CHECK-NOT: hspmd.reduce_scatter
// CHECK: hspmd.sparse_exchange %[[BUF]] rows %[[SLOTS]] among [0, 1, 2] blocks [0, 32, 32, 32, 64, 64] : tensor<128x4xf64>, tensor<4x2xi64> -> tensor<32x4xf64>
// CHECK-NOT: hspmd.exchange %{{.*}} shape [128, 4] : tensor<128x2xf64> -> tensor<64x2xf64>
// CHECK: %[[OUT:.*]] = nn.grouped_matmul
// CHECK-NOT: hspmd.all_gather
// CHECK: %[[FULL:.*]] = hspmd.sparse_exchange gather %[[OUT]] rows %[[CSLOTS:.*]] among [0, 1, 2] blocks [0, 32, 32, 32, 64, 64] : tensor<32x4xf64>, tensor<8x2xi64> -> tensor<128x4xf64>
// CHECK-NEXT: %[[COLS:.*]] = nn.slice %[[FULL]] offsets = [0, 0] sizes = [128, 2] strides = [1, 1] : tensor<128x4xf64>
// CHECK: nn.moe_combine %[[COLS]], %[[CSLOTS]] weights
// CHECK-LABEL: func.func @layer_group1
// CHECK: %[[BUF1:.*]] = nn.moe_dispatch %{{.*}}, %[[SLOTS1:.*]] rows = 128 : tensor<8x4xf64>, tensor<8x2xi64>
// CHECK-NEXT: hspmd.sparse_exchange %[[BUF1]] rows %[[SLOTS1]] among [0, 1, 2] blocks [0, 32, 32, 32, 64, 64] : tensor<128x4xf64>, tensor<8x2xi64> -> tensor<64x4xf64>
// CHECK: %[[OUT1:.*]] = nn.grouped_matmul
// CHECK: %[[FULL1:.*]] = hspmd.sparse_exchange gather %[[OUT1]] rows %[[CSLOTS1:.*]] among [0, 1, 2] blocks [0, 32, 32, 32, 64, 64] : tensor<64x4xf64>, tensor<16x2xi64> -> tensor<128x4xf64>
// CHECK-NEXT: %[[COLS1:.*]] = nn.slice %[[FULL1]] offsets = [0, 2] sizes = [128, 2] strides = [1, 1] : tensor<128x4xf64>
// CHECK: nn.moe_combine %[[COLS1]], %[[CSLOTS1]] weights
// CHECK-NOT: hspmd.exchange %{{.*}} shape [128, 4]

// DENSE: rank 0 all_gather: calls 2
// DENSE: rank 0 reduce_scatter: calls 1
// DENSE-NOT: sparse_exchange
// SPARSE: result #0: tensor<16x4xf64> norm-wise relative error {{.*}}
// SPARSE: rank 0 all_gather: calls 1
// SPARSE: rank 0 sparse_exchange: calls 2
// SPARSE: rank 2 sparse_exchange: calls 2
// SPARSE-NOT: reduce_scatter
// RUN: not grep reduce_scatter %t/s.stats

// The report's bound: to the experts a device of the pair names 8 rows (4
// tokens, top-2), the single device 16, and a row is 32 bytes and its
// index 8: at most every named row to each other member (no more than its
// block), a count of 8 bytes each way with each; in, at most a whole block
// from each. Back, the pair's devices name 16 rows, the single device 32,
// and rows go the other way.
// REPORT: rank 0 sparse_exchange: calls 2, bytes sent at most 2976, received at most 4128
// REPORT: rank 2 sparse_exchange: calls 2, bytes sent at most 5920, received at most 8224

// PIPELINE: hspmd.sparse_exchange

// A function whose groups do not all qualify keeps every exchange: group 1
// adds to its buffer before the exchange, so group 0 must not leave the
// exchange either (its partner would wait for it).
// RUN: loom-opt %t/mismatch.mlir --hspmd-moe-sparse-exchange | FileCheck %s --check-prefix=MISMATCH
// MISMATCH-NOT: hspmd.sparse_exchange
// MISMATCH: hspmd.exchange
// MISMATCH: hspmd.exchange
// MISMATCH-NOT: hspmd.sparse_exchange
// Without the add, both become sparse.
// RUN: sed -e '/nn.add %b, %b/d' -e 's/exchange %c/exchange %b/' %t/mismatch.mlir | loom-opt --hspmd-moe-sparse-exchange | FileCheck %s --check-prefix=MATCH
// MATCH-COUNT-2: hspmd.sparse_exchange %{{.*}} among [0, 1, 2] blocks [0, 16, 16, 16, 32, 32]

// The way back the same way: group 1's exchange result has a reader that
// is not a combine (an add), so neither group's exchange becomes a
// gather; without it, both do, each slicing its group's columns.
// RUN: loom-opt %t/back.mlir --hspmd-moe-sparse-exchange | FileCheck %s --check-prefix=BACKMISMATCH
// BACKMISMATCH-NOT: hspmd.sparse_exchange
// BACKMISMATCH: hspmd.exchange
// BACKMISMATCH: hspmd.exchange
// BACKMISMATCH-NOT: hspmd.sparse_exchange
// RUN: sed -e 's/%d = nn.add %e, %e : tensor<64x2xf64>, tensor<64x2xf64>/%d = nn.fill 1.0 : tensor<64x2xf64>/' %t/back.mlir | loom-opt --hspmd-moe-sparse-exchange | FileCheck %s --check-prefix=BACKMATCH
// BACKMATCH: hspmd.sparse_exchange gather %{{.*}} rows %{{.*}} among [0, 1, 2] blocks [0, 16, 16, 16, 32, 32] : tensor<16x4xf64>, tensor<4x2xi64> -> tensor<64x4xf64>
// BACKMATCH-NEXT: nn.slice %{{.*}} offsets = [0, 0] sizes = [64, 2]
// BACKMATCH: hspmd.sparse_exchange gather %{{.*}} rows %{{.*}} among [0, 1, 2] blocks [0, 16, 16, 16, 32, 32] : tensor<32x4xf64>, tensor<8x2xi64> -> tensor<64x4xf64>
// BACKMATCH-NEXT: nn.slice %{{.*}} offsets = [0, 2] sizes = [64, 2]
// Slots made after the exchange: the new op could not take its place.
// RUN: sed -e 's/%d = nn.add %e, %e : tensor<64x2xf64>, tensor<64x2xf64>/%d = nn.fill 1.0 : tensor<64x2xf64>/' -e 's/^  %k1 = nn.reshape/  %k1y = nn.reshape/' -e 's/^  %k1x = nn.reshape/  %k1 = nn.reshape/' %t/back.mlir | loom-opt --hspmd-moe-sparse-exchange | FileCheck %s --check-prefix=BACKMISMATCH

// The simulator checks each member's block against the op's blocks (a
// function of no group escapes the verifier's check): a diagnostic, not a
// read past the block.
// RUN: not loom-run --interpret %t/badblocks.mlir --entry main --simulate 2 --random-inputs --int-range 900,999 2>&1 | FileCheck %s --check-prefix=BADBLOCKS
// BADBLOCKS: sparse_exchange: rank 1 holds 4 rows of 1000 where its block is 996 rows of 1000

//--- layer.mlir
#tok = #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [S0:2]}, {[2]: []}>
#exp = #hspmd.union<split(0) shares [2, 2]: {[0, 1]: [S0:2]}, {[2]: []}>
func.func @layer(%x: tensor<16x4xf64> {hspmd.layout = #tok},
                 %e: tensor<16x2xi64> {hspmd.layout = #tok},
                 %g: tensor<16x2xf64> {hspmd.layout = #tok},
                 %w: tensor<4x4x4xf64> {hspmd.layout = #exp}) -> tensor<16x4xf64> {
  %slots, %counts = nn.moe_route %e num_experts = 4 blocks = 4 : tensor<16x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 128 : tensor<16x4xf64>, tensor<16x2xi64>
  %h = nn.grouped_matmul %buf, %w, %counts blocks = 4 : tensor<128x4xf64>, tensor<4x4x4xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots weights %g : tensor<128x4xf64>, tensor<16x2xi64>, tensor<16x2xf64>
  return %y : tensor<16x4xf64>
}

//--- mismatch.mlir
func.func @m(%x: tensor<8x4xf64>, %s: tensor<8x2xi64>) -> tensor<64x4xf64> {
  %b = nn.moe_dispatch %x, %s rows = 64 : tensor<8x4xf64>, tensor<8x2xi64>
  return %b : tensor<64x4xf64>
}
func.func @m_group0(%x: tensor<2x4xf64>, %s: tensor<2x2xi64>) -> tensor<16x4xf64>
    attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @m} {
  %b = nn.moe_dispatch %x, %s rows = 64 : tensor<2x4xf64>, tensor<2x2xi64>
  %r = hspmd.reduce_scatter sum %b dim 1 over [0] of [2] : tensor<64x4xf64> -> tensor<64x2xf64>
  %e = hspmd.exchange %r shape [64, 4] : tensor<64x2xf64> -> tensor<32x2xf64> from <partial(sum): {[0, 1]: [S1:2]}, {[2]: []}> to <split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>
  %a = hspmd.all_to_all %e split 0 concat 1 over [0] of [2] : tensor<32x2xf64> -> tensor<16x4xf64>
  return %a : tensor<16x4xf64>
}
func.func @m_group1(%x: tensor<4x4xf64>, %s: tensor<4x2xi64>) -> tensor<32x4xf64>
    attributes {hspmd.group = #hspmd.group<[2]>, hspmd.specializes = @m} {
  %b = nn.moe_dispatch %x, %s rows = 64 : tensor<4x4xf64>, tensor<4x2xi64>
  %c = nn.add %b, %b : tensor<64x4xf64>, tensor<64x4xf64>
  %e = hspmd.exchange %c shape [64, 4] : tensor<64x4xf64> -> tensor<32x4xf64> from <partial(sum): {[0, 1]: [S1:2]}, {[2]: []}> to <split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>
  return %e : tensor<32x4xf64>
}

//--- back.mlir
func.func @b(%y: tensor<64x4xf64>) -> tensor<64x4xf64> {
  return %y : tensor<64x4xf64>
}
func.func @b_group0(%y: tensor<16x4xf64>, %s: tensor<4x2xi64>, %w: tensor<4x2xf64>)
    -> (tensor<4x2xf64>, tensor<4x2xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @b} {
  %g = hspmd.all_gather %y dim 0 over [0] of [2] : tensor<16x4xf64> -> tensor<32x4xf64>
  %e = hspmd.exchange %g shape [64, 4] : tensor<32x4xf64> -> tensor<64x2xf64> from <split(0) shares [1, 1]: {[0, 1]: [D:2]}, {[2]: []}> to <split(1) shares [1, 1]: {[0, 1]: [D:2]}, {[2]: []}>
  %c = nn.moe_combine %e, %s weights %w : tensor<64x2xf64>, tensor<4x2xi64>, tensor<4x2xf64>
  return %c, %c : tensor<4x2xf64>, tensor<4x2xf64>
}
func.func @b_group1(%y: tensor<32x4xf64>, %k0: tensor<16xi64>, %w: tensor<8x2xf64>)
    -> (tensor<8x2xf64>, tensor<64x2xf64>)
    attributes {hspmd.group = #hspmd.group<[2]>, hspmd.specializes = @b} {
  %k1 = nn.reshape %k0 : tensor<16xi64> to tensor<8x2xi64>
  %e = hspmd.exchange %y shape [64, 4] : tensor<32x4xf64> -> tensor<64x2xf64> from <split(0) shares [1, 1]: {[0, 1]: [D:2]}, {[2]: []}> to <split(1) shares [1, 1]: {[0, 1]: [D:2]}, {[2]: []}>
  %k1x = nn.reshape %k0 : tensor<16xi64> to tensor<8x2xi64>
  %c = nn.moe_combine %e, %k1 weights %w : tensor<64x2xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  %d = nn.add %e, %e : tensor<64x2xf64>, tensor<64x2xf64>
  return %c, %d : tensor<8x2xf64>, tensor<64x2xf64>
}

//--- badblocks.mlir
func.func @main(%x: tensor<4x2xf64>, %r: tensor<3xi64>) -> tensor<1000x2xf64> {
  %y = hspmd.sparse_exchange gather %x rows %r among [0, 1] blocks [0, 4, 4, 996] : tensor<4x2xf64>, tensor<3xi64> -> tensor<1000x2xf64>
  return %y : tensor<1000x2xf64>
}
