// hspmd-moe-sparse-exchange: the reduce-scatter (sum, rows) of an MoE
// dispatch's partial buffer becomes a sparse reduce-scatter naming the
// dispatch's slots, with or without combine weights; every other
// reduce-scatter stays. The way back: an all-to-all to a width split, a
// combine with slots and weights the same on every member, and the
// all-to-all back become a combine of the device's own tokens over a
// sparse all-gather of their rows; a slot dot product of that buffer,
// reduce-scattered along the tokens, reuses the gathered rows. The
// pipeline runs it unless moe-sparse=false.
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | FileCheck %s
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-opt --hspmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: loom-run --interpret %s --entry dispatch --simulate 2 --random-inputs --int-range 0,4 --comm-stats | FileCheck %s --check-prefix=DENSE
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-run --interpret - --entry dispatch --simulate 2 --random-inputs --int-range 0,4 --comm-stats --output-dir %t.sparse | FileCheck %s --check-prefix=SPARSE
// RUN: loom-run --interpret %s --entry dispatch --simulate 2 --random-inputs --int-range 0,4 --output-dir %t.dense
// RUN: cmp %t.dense/rank_0/result_0.npy %t.sparse/rank_0/result_0.npy
// RUN: cmp %t.dense/rank_1/result_0.npy %t.sparse/rank_1/result_0.npy
// RUN: cmp %t.dense/rank_0/result_1.npy %t.sparse/rank_0/result_1.npy
// Slots outside the buffer (here drawn from [-3, 40) for 32 rows) name no
// row, as the dispatch reads them.
// RUN: loom-run --interpret %s --entry dispatch_raw --simulate 2 --random-inputs --int-range -3,40 --output-dir %t.rdense
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-run --interpret - --entry dispatch_raw --simulate 2 --random-inputs --int-range -3,40 --output-dir %t.rsparse
// RUN: cmp %t.rdense/rank_0/result_0.npy %t.rsparse/rank_0/result_0.npy
// RUN: cmp %t.rdense/rank_1/result_0.npy %t.rsparse/rank_1/result_0.npy
// The way back on 2 simulated ranks, with and without the pass: the
// combine bitwise (the same products and sums per element), the slot dot
// product within rounding (the whole width summed at once instead of two
// halves then the reduce-scatter).
// RUN: loom-run --interpret %s --entry way_back --simulate 2 --random-inputs --int-range 0,4 --comm-stats --output-dir %t.wdense | FileCheck %s --check-prefix=WDENSE
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-run --interpret - --entry way_back --simulate 2 --random-inputs --int-range 0,4 --comm-stats --output-dir %t.wsparse | FileCheck %s --check-prefix=WSPARSE
// RUN: cmp %t.wdense/rank_0/result_0.npy %t.wsparse/rank_0/result_0.npy
// RUN: cmp %t.wdense/rank_1/result_0.npy %t.wsparse/rank_1/result_0.npy
// RUN: %python -c "import numpy as np, sys; a, b = (np.load(sys.argv[i]) for i in (1, 2)); e = np.linalg.norm(a - b) / np.linalg.norm(b); print('slot dot error', e); sys.exit(not e <= 1e-14)" %t.wdense/rank_1/result_1.npy %t.wsparse/rank_1/result_1.npy
// With tensor parallelism inside the experts (2 x 2 devices, the experts'
// output partial over mesh axis 1): the same on every rank, bitwise.
// RUN: loom-run --interpret %s --entry way_back_tp --simulate 4 --random-inputs --int-range 0,4 --output-dir %t.tdense
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-run --interpret - --entry way_back_tp --simulate 4 --random-inputs --int-range 0,4 --comm-stats --output-dir %t.tsparse | FileCheck %s --check-prefix=TSPARSE
// RUN: cmp %t.tdense/rank_0/result_0.npy %t.tsparse/rank_0/result_0.npy
// RUN: cmp %t.tdense/rank_1/result_0.npy %t.tsparse/rank_1/result_0.npy
// RUN: cmp %t.tdense/rank_2/result_0.npy %t.tsparse/rank_2/result_0.npy
// RUN: cmp %t.tdense/rank_3/result_0.npy %t.tsparse/rank_3/result_0.npy

// CHECK-LABEL: func.func @dispatch
// CHECK: %[[SLOTS:.*]] = hspmd.local_slice %{{.*}} dim 0 over [0] of [2]
// CHECK: %[[BUF:.*]] = nn.moe_dispatch %{{.*}}, %[[SLOTS]] rows = 32
// CHECK: hspmd.sparse_reduce_scatter %[[BUF]] rows %[[SLOTS]] over [0] of [2] : tensor<32x4xf64>, tensor<4x2xi64> -> tensor<16x4xf64> {hspmd.group = #hspmd.group<[0, 1]>}
// CHECK: %[[WBUF:.*]] = nn.moe_dispatch %{{.*}}, %[[SLOTS]] weights %{{.*}} rows = 32
// CHECK: hspmd.sparse_reduce_scatter %[[WBUF]] rows %[[SLOTS]] over [0] of [2]
// CHECK-NOT: hspmd.reduce_scatter
// CHECK: return

// The bound: 8 named rows of 32 bytes, all (of a block of 16) to the
// other rank, plus the count: 8 + 8 * (8 + 32) = 328 a call.
// REPORT: comm report @dispatch: 2 devices, at most 1312 bytes sent per step in all
// REPORT: rank 0 sparse_reduce_scatter: calls 2, bytes sent at most 656, received at most 656

// Dense: every row of the other block (16 x 32 bytes) a call.
// DENSE: rank 0 reduce_scatter: calls 2, bytes sent 1024, received 1024
// SPARSE: rank 0 sparse_reduce_scatter: calls 2, bytes sent {{[0-9]+}}, received {{[0-9]+}}

// 8 tokens over 2 ranks, top 2 of 4 experts in 2 blocks of 16 rows; the
// experts are random in [0, 4) (an expert may repeat within a token: two
// distinct rows all the same).
func.func @dispatch(%x: tensor<4x4xf64>, %experts: tensor<8x2xi64>,
                    %w: tensor<4x2xf64>)
    -> (tensor<16x4xf64>, tensor<16x4xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %slots, %counts = nn.moe_route %experts num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %local = hspmd.local_slice %slots dim 0 over [0] of [2] : tensor<8x2xi64> -> tensor<4x2xi64>
  %buf = nn.moe_dispatch %x, %local rows = 32 : tensor<4x4xf64>, tensor<4x2xi64>
  %block = hspmd.reduce_scatter sum %buf dim 0 over [0] of [2] : tensor<32x4xf64> -> tensor<16x4xf64> {hspmd.group = #hspmd.group<[0, 1]>}
  %wbuf = nn.moe_dispatch %x, %local weights %w rows = 32 : tensor<4x4xf64>, tensor<4x2xi64>, tensor<4x2xf64>
  %wblock = hspmd.reduce_scatter sum %wbuf dim 0 over [0] of [2] : tensor<32x4xf64> -> tensor<16x4xf64>
  return %block, %wblock : tensor<16x4xf64>, tensor<16x4xf64>
}

// WDENSE: rank 0 all_to_all: calls 3
// WDENSE: rank 0 reduce_scatter: calls 1
// WSPARSE-NOT: all_to_all
// WSPARSE-NOT: reduce_scatter
// WSPARSE: rank 0 sparse_all_gather: calls 1, bytes sent {{[0-9]+}}, received {{[0-9]+}}

// The slots are then only sliced back to the device's own tokens, so the
// route becomes one of the device's own share, from a table of both
// members' counts gathered in place of the choices; the gates' local
// slice of their gather is the device's own gates.
// CHECK-LABEL: func.func @way_back
// CHECK-SAME: %[[E:arg1]]: tensor<4x2xi64> {nn.name = "e"}, %[[WL:arg2]]: tensor<4x2xf64>
// CHECK-NOT: hspmd.all_gather
// CHECK: %{{.*}}, %[[OWN:.*]] = nn.moe_route %[[E]] num_experts = 4 : tensor<4x2xi64>
// CHECK-NEXT: %[[ROW:.*]] = nn.reshape %[[OWN]] : tensor<4xi64> to tensor<1x4xi64>
// CHECK-NEXT: %[[TABLE:.*]] = hspmd.all_gather %[[ROW]] dim 0 over [0] of [2] : tensor<1x4xi64> -> tensor<2x4xi64>
// CHECK-NEXT: %[[ME:.*]] = hspmd.axis_index over [0] of [2] : tensor<i64>
// CHECK-NEXT: %[[SL:.*]], %{{.*}} = nn.moe_route %[[E]] shares(%[[TABLE]] : tensor<2x4xi64>) at %[[ME]] num_experts = 4 blocks = 2 : tensor<4x2xi64>
// CHECK-NOT: hspmd.local_slice
// CHECK: %[[FULL:.*]] = hspmd.sparse_all_gather %{{.*}} rows %[[SL]] over [0] of [2] : tensor<16x4xf64>, tensor<4x2xi64> -> tensor<32x4xf64>
// CHECK-NEXT: %[[C:.*]] = nn.moe_combine %[[FULL]], %[[SL]] weights %[[WL]] : tensor<32x4xf64>, tensor<4x2xi64>, tensor<4x2xf64>
// CHECK-NEXT: %[[DOT:.*]] = nn.moe_slot_dot %[[FULL]], %{{.*}}, %[[SL]] : tensor<32x4xf64>, tensor<4x4xf64>, tensor<4x2xi64>
// CHECK-NEXT: return %[[C]], %[[DOT]]
func.func @way_back(%y: tensor<16x4xf64>, %e: tensor<4x2xi64>,
                    %g: tensor<4x2xf64>, %d: tensor<4x4xf64>)
    -> (tensor<4x4xf64>, tensor<4x2xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %eg = hspmd.all_gather %e dim 0 over [0] of [2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %gg = hspmd.all_gather %g dim 0 over [0] of [2] : tensor<4x2xf64> -> tensor<8x2xf64>
  %slots, %counts = nn.moe_route %eg num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %w = hspmd.all_to_all %y split 1 concat 0 over [0] of [2] : tensor<16x4xf64> -> tensor<32x2xf64>
  %c = nn.moe_combine %w, %slots weights %gg : tensor<32x2xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  %o = hspmd.all_to_all %c split 0 concat 1 over [0] of [2] : tensor<8x2xf64> -> tensor<4x4xf64>
  %dw = hspmd.all_to_all %d split 1 concat 0 over [0] of [2] : tensor<4x4xf64> -> tensor<8x2xf64>
  %dot = nn.moe_slot_dot %w, %dw, %slots : tensor<32x2xf64>, tensor<8x2xf64>, tensor<8x2xi64>
  %r = hspmd.reduce_scatter sum %dot dim 0 over [0] of [2] : tensor<8x2xf64> -> tensor<4x2xf64>
  return %o, %r : tensor<4x4xf64>, tensor<4x2xf64>
}

// The way back stays dense where the slots may differ between the members
// (an argument), where the tokens go back over other mesh axes, and where
// the combine's result has another user.
// CHECK-LABEL: func.func @way_back_kept
// CHECK-NOT: sparse_all_gather
// CHECK: return
func.func @way_back_kept(%y: tensor<16x4xf64>, %slots: tensor<8x2xi64>,
                         %e4: tensor<4x2xi64>, %z: tensor<16x4xf64>)
    -> (tensor<4x4xf64>, tensor<4x4xf64>, tensor<4x4xf64>, tensor<8x1xf64>) {
  %w = hspmd.all_to_all %y split 1 concat 0 over [0] of [2] : tensor<16x4xf64> -> tensor<32x2xf64>
  %c = nn.moe_combine %w, %slots : tensor<32x2xf64>, tensor<8x2xi64>
  %o = hspmd.all_to_all %c split 0 concat 1 over [0] of [2] : tensor<8x2xf64> -> tensor<4x4xf64>
  %t = hspmd.all_to_all %z split 1 concat 0 over [0] of [2, 2] : tensor<16x4xf64> -> tensor<32x2xf64>
  %g2 = hspmd.all_gather %e4 dim 0 over [0] of [2, 2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %s2, %n2 = nn.moe_route %g2 num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %c2 = nn.moe_combine %t, %s2 : tensor<32x2xf64>, tensor<8x2xi64>
  %o2 = hspmd.all_to_all %c2 split 0 concat 1 over [1] of [2, 2] : tensor<8x2xf64> -> tensor<4x4xf64>
  %g3 = hspmd.all_gather %e4 dim 0 over [0] of [2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %s3, %n3 = nn.moe_route %g3 num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %c3 = nn.moe_combine %w, %s3 : tensor<32x2xf64>, tensor<8x2xi64>
  %o3 = hspmd.all_to_all %c3 split 0 concat 1 over [0] of [2] : tensor<8x2xf64> -> tensor<4x4xf64>
  %half = nn.slice %c3 offsets = [0, 0] sizes = [8, 1] strides = [1, 1] : tensor<8x2xf64>
  return %o, %o2, %o3, %half : tensor<4x4xf64>, tensor<4x4xf64>, tensor<4x4xf64>, tensor<8x1xf64>
}

// Routing from exchanged counts: on 2 simulated ranks, with and without
// the pass, each rank's slots and the counts are the same bits, plain
// (capacity 3, 2 blocks) and by a placement; experts drawn from [-1, 5)
// (some out of range, dropped either way). Each all-gather of the
// choices (64 bytes a rank) becomes one of the counts (32).
// RUN: loom-run --interpret %s --entry route --simulate 2 --random-inputs --int-range -1,5 --comm-stats --output-dir %t.rdense2 | FileCheck %s --check-prefix=RDENSE
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-run --interpret - --entry route --simulate 2 --random-inputs --int-range -1,5 --comm-stats --output-dir %t.rshare | FileCheck %s --check-prefix=RSHARE
// RUN: %python -c "import numpy as np, sys; d, s = sys.argv[1:]; print(all(np.array_equal(np.load(f'{d}/rank_{r}/result_{i}.npy'), np.load(f'{s}/rank_{r}/result_{i}.npy')) for r in (0, 1) for i in range(4)))" %t.rdense2 %t.rshare | FileCheck %s --check-prefix=RSAME
// RDENSE: rank 0 all_gather: calls 2, bytes sent 128, received 128
// RSHARE: rank 0 all_gather: calls 2, bytes sent 64, received 64
// RSAME: True

// CHECK-LABEL: func.func @route(
// CHECK-NOT: tensor<8x2xi64>
// CHECK: return
func.func @route(%experts: tensor<4x2xi64>)
    -> (tensor<4x2xi64>, tensor<4xi64>, tensor<4x2xi64>, tensor<6xi64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %hosts = arith.constant dense<[0, 1, -1, 0, 2, 3]> : tensor<6xi64>
  %all = hspmd.all_gather %experts dim 0 over [0] of [2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %slots, %counts = nn.moe_route %all num_experts = 4 capacity = 3 blocks = 2 : tensor<8x2xi64>
  %own = hspmd.local_slice %slots dim 0 over [0] of [2] : tensor<8x2xi64> -> tensor<4x2xi64>
  %all2 = hspmd.all_gather %experts dim 0 over [0] of [2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %placed, %replicas = nn.moe_route %all2 hosts %hosts num_experts = 4 blocks = 2 : tensor<8x2xi64>, tensor<6xi64>
  %mine = hspmd.local_slice %placed dim 0 over [0] of [2] : tensor<8x2xi64> -> tensor<4x2xi64>
  return %own, %counts, %mine, %replicas : tensor<4x2xi64>, tensor<4xi64>, tensor<4x2xi64>, tensor<6xi64>
}

// In a merged program (hspmd-merge-devices: a cell of 4 devices, the layer
// on the group of 0 and 1) the table's gather and the member's index run
// over that group, tagged as the gather was.
// CHECK-LABEL: func.func @route_merged
// CHECK: hspmd.all_gather %{{.*}} dim 0 over [0] of [2] : tensor<1x4xi64> -> tensor<2x4xi64> {hspmd.group = #hspmd.group<[0, 1]>}
// CHECK-NEXT: hspmd.axis_index over [0] of [2] {hspmd.group = #hspmd.group<[0, 1]>} : tensor<i64>
// CHECK-NEXT: nn.moe_route %{{.*}} shares(
func.func @route_merged(%experts: tensor<4x2xi64>) -> tensor<4x2xi64>
    attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3]>} {
  %all = hspmd.all_gather %experts dim 0 over [0] of [2] : tensor<4x2xi64> -> tensor<8x2xi64> {hspmd.group = #hspmd.group<[0, 1]>}
  %slots, %counts = nn.moe_route %all num_experts = 4 : tensor<8x2xi64>
  %own = hspmd.local_slice %slots dim 0 over [0] of [2] : tensor<8x2xi64> -> tensor<4x2xi64> {hspmd.group = #hspmd.group<[0, 1]>}
  return %own : tensor<4x2xi64>
}

// A table that is not the shares' counts (a wrong exchange) fails the
// route at the op, naming the disagreement.
// RUN: %python -c "import numpy as np; np.save('%t.be.npy', np.array([[0, 1], [1, 2]], dtype=np.int64)); np.save('%t.bt.npy', np.array([[1, 1, 2, 0], [0, 0, 4, 0]], dtype=np.int64))"
// RUN: not loom-run --interpret %s --entry bad_table --input %t.be.npy --input %t.bt.npy 2>&1 | FileCheck %s --check-prefix=BADTABLE
// BADTABLE: hspmd-moe-sparse-exchange.mlir:[[@LINE+3]]:12: error: 'nn.moe_route' op nn.moe_route: the shares' table gives member 0 1 entries of expert 1 but its share has 2
func.func @bad_table(%e: tensor<2x2xi64>, %t: tensor<2x4xi64>) -> tensor<2x2xi64> {
  %m = arith.constant dense<0> : tensor<i64>
  %s, %c = nn.moe_route %e shares(%t : tensor<2x4xi64>) at %m num_experts = 4 : tensor<2x2xi64>
  return %s : tensor<2x2xi64>
}

// The route stays where a user reads the slots of every token, the slice
// is over other members, or the experts are gathered along the choices.
// CHECK-LABEL: func.func @route_kept
// CHECK-NOT: shares
// CHECK: return
func.func @route_kept(%experts: tensor<4x2xi64>, %e4: tensor<4x2xi64>)
    -> (tensor<4x2xi64>, tensor<8x2xi64>, tensor<4x2xi64>, tensor<4x4xi64>)
    attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3]>} {
  %all = hspmd.all_gather %experts dim 0 over [0] of [2, 2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %slots, %counts = nn.moe_route %all num_experts = 4 : tensor<8x2xi64>
  %own = hspmd.local_slice %slots dim 0 over [0] of [2, 2] : tensor<8x2xi64> -> tensor<4x2xi64>
  %g = hspmd.all_gather %e4 dim 0 over [0] of [2, 2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %s2, %n2 = nn.moe_route %g num_experts = 4 : tensor<8x2xi64>
  %other = hspmd.local_slice %s2 dim 0 over [1] of [2, 2] : tensor<8x2xi64> -> tensor<4x2xi64>
  %wide = hspmd.all_gather %e4 dim 1 over [0] of [2, 2] : tensor<4x2xi64> -> tensor<4x4xi64>
  %s3, %n3 = nn.moe_route %wide num_experts = 4 : tensor<4x4xi64>
  return %own, %slots, %other, %s3 : tensor<4x2xi64>, tensor<8x2xi64>, tensor<4x2xi64>, tensor<4x4xi64>
}

func.func @dispatch_raw(%x: tensor<4x4xf64>, %slots: tensor<4x2xi64>)
    -> tensor<16x4xf64> {
  %buf = nn.moe_dispatch %x, %slots rows = 32 : tensor<4x4xf64>, tensor<4x2xi64>
  %block = hspmd.reduce_scatter sum %buf dim 0 over [0] of [2] : tensor<32x4xf64> -> tensor<16x4xf64>
  return %block : tensor<16x4xf64>
}

// TSPARSE-NOT: all_to_all
// TSPARSE-NOT: reduce_scatter
// TSPARSE: rank 0 all_reduce: calls 1
// TSPARSE-NOT: all_to_all
// TSPARSE: rank 0 sparse_all_gather: calls 1

// CHECK-LABEL: func.func @way_back_tp
// CHECK: %[[FULL:.*]] = hspmd.sparse_all_gather %{{.*}} rows %[[SL:.*]] over [0] of [2, 2] : tensor<16x4xf64>, tensor<4x2xi64> -> tensor<32x4xf64>
// CHECK-NEXT: %[[C:.*]] = nn.moe_combine %[[FULL]], %[[SL]] weights %{{.*}} : tensor<32x4xf64>, tensor<4x2xi64>, tensor<4x2xf64>
// CHECK-NEXT: %[[R:.*]] = hspmd.all_reduce sum %[[C]] over [1] of [2, 2] : tensor<4x4xf64> -> tensor<4x4xf64>
// CHECK-NEXT: return %[[R]]
func.func @way_back_tp(%y: tensor<16x4xf64>, %e: tensor<4x2xi64>,
                       %g: tensor<4x2xf64>) -> tensor<4x4xf64>
    attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3]>} {
  %eg = hspmd.all_gather %e dim 0 over [0] of [2, 2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %gg = hspmd.all_gather %g dim 0 over [0] of [2, 2] : tensor<4x2xf64> -> tensor<8x2xf64>
  %slots, %counts = nn.moe_route %eg num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %w = hspmd.all_to_all %y split 1 concat 0 over [0] of [2, 2] : tensor<16x4xf64> -> tensor<32x2xf64>
  %c = nn.moe_combine %w, %slots weights %gg : tensor<32x2xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  %r = hspmd.reduce_scatter sum %c dim 1 over [1] of [2, 2] : tensor<8x2xf64> -> tensor<8x1xf64>
  %b = hspmd.all_to_all %r split 0 concat 1 over [0, 1] of [2, 2] : tensor<8x1xf64> -> tensor<2x4xf64>
  %o = hspmd.all_gather %b dim 0 over [1] of [2, 2] : tensor<2x4xf64> -> tensor<4x4xf64>
  return %o : tensor<4x4xf64>
}

// Weights that may differ between the members keep the combine dense, and
// with it the gates' gradient (no gathered rows to reuse: a gather of its
// own would move more than the dense form).
// CHECK-LABEL: func.func @way_back_weights
// CHECK-NOT: sparse_all_gather
// CHECK: return
func.func @way_back_weights(%y: tensor<16x4xf64>, %e: tensor<4x2xi64>,
                            %w: tensor<8x2xf64>, %d: tensor<4x4xf64>)
    -> (tensor<4x4xf64>, tensor<4x2xf64>) {
  %eg = hspmd.all_gather %e dim 0 over [0] of [2] : tensor<4x2xi64> -> tensor<8x2xi64>
  %slots, %counts = nn.moe_route %eg num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %a = hspmd.all_to_all %y split 1 concat 0 over [0] of [2] : tensor<16x4xf64> -> tensor<32x2xf64>
  %c = nn.moe_combine %a, %slots weights %w : tensor<32x2xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  %o = hspmd.all_to_all %c split 0 concat 1 over [0] of [2] : tensor<8x2xf64> -> tensor<4x4xf64>
  %dw = hspmd.all_to_all %d split 1 concat 0 over [0] of [2] : tensor<4x4xf64> -> tensor<8x2xf64>
  %dot = nn.moe_slot_dot %a, %dw, %slots : tensor<32x2xf64>, tensor<8x2xf64>, tensor<8x2xi64>
  %r = hspmd.reduce_scatter sum %dot dim 0 over [0] of [2] : tensor<8x2xf64> -> tensor<4x2xf64>
  return %o, %r : tensor<4x4xf64>, tensor<4x2xf64>
}

// Not a dispatch's rows: along the width, a maximum, another producer, and
// a global-view reduce-scatter, all kept.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: hspmd.reduce_scatter
// CHECK-NOT: sparse_reduce_scatter
// CHECK: return
func.func @kept(%x: tensor<4x4xf64>, %slots: tensor<4x2xi64>, %y: tensor<16x4xf64>)
    -> (tensor<16x2xf64>, tensor<8x4xf64>, tensor<8x4xf64>, tensor<16x4xf64>) {
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<4x4xf64>, tensor<4x2xi64>
  %0 = hspmd.reduce_scatter sum %buf dim 1 over [0] of [2] : tensor<16x4xf64> -> tensor<16x2xf64>
  %1 = hspmd.reduce_scatter max %buf dim 0 over [0] of [2] : tensor<16x4xf64> -> tensor<8x4xf64>
  %2 = hspmd.reduce_scatter sum %y dim 0 over [0] of [2] : tensor<16x4xf64> -> tensor<8x4xf64>
  %3 = hspmd.reduce_scatter sum %buf dim 0 over [0] of [2] : tensor<16x4xf64> -> tensor<16x4xf64>
      from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [S0:2]}>
  return %0, %1, %2, %3 : tensor<16x2xf64>, tensor<8x4xf64>, tensor<8x4xf64>, tensor<16x4xf64>
}

// Placed MoE layers (hspmd-moe-placement): the replicas' weights, a lookup
// by the plan's lookup of a table split along its rows, reduce-scattered
// to the replicas' devices, become a fetch of the rows each device's own
// lookup names; the gradient home, a scatter-add by those ids
// reduce-scattered, a sparse reduce-scatter naming them. Both bitwise on
// 2 simulated ranks.
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | FileCheck %s --check-prefix=PLACED
// RUN: %python -c "import numpy as np; np.save('%t.f.npy', np.array([[[30, 1, 0, 1]]])); np.save('%t.w.npy', np.arange(12.0).reshape(4, 3) - 5); np.save('%t.dy.npy', np.arange(18.0).reshape(6, 3) / 7)"
// RUN: loom-run --interpret %s --entry replicas --simulate 2 --input %t.f.npy --input %t.w.npy --output-dir %t.pdense
// RUN: loom-opt %s --hspmd-moe-sparse-exchange | loom-run --interpret - --entry replicas --simulate 2 --input %t.f.npy --input %t.w.npy --comm-stats --output-dir %t.psparse | FileCheck %s --check-prefix=PSIM --implicit-check-not=' reduce_scatter:'
// RUN: cmp %t.pdense/rank_0/result_0.npy %t.psparse/rank_0/result_0.npy
// RUN: cmp %t.pdense/rank_1/result_0.npy %t.psparse/rank_1/result_0.npy
// RUN: cmp %t.pdense/rank_0/result_1.npy %t.psparse/rank_0/result_1.npy
// RUN: cmp %t.pdense/rank_1/result_1.npy %t.psparse/rank_1/result_1.npy

// PLACED-LABEL: func.func @replicas
// PLACED: %[[HOSTS:.*]], %[[LOOKUP:.*]] = nn.moe_plan
// PLACED: %[[MINE:.*]] = hspmd.local_slice %[[LOOKUP]] dim 0 over [0] of [2] : tensor<6xi64> -> tensor<3xi64>
// PLACED: %[[FULL:.*]] = hspmd.sparse_all_gather %{{.*}} rows %[[MINE]] over [0] of [2] : tensor<2x3xf64>, tensor<3xi64> -> tensor<4x3xf64>
// PLACED: nn.embedding %[[FULL]], %[[MINE]] : tensor<4x3xf64>, tensor<3xi64>
// PLACED: %[[NAMED:.*]] = nn.slice %{{.*}} offsets = [0, 0] sizes = [3, 1] strides = [1, 1] : tensor<3x3xi64>
// PLACED: %[[G:.*]] = nn.gather_grad
// PLACED: hspmd.sparse_reduce_scatter %[[G]] rows %[[NAMED]] over [0] of [2] : tensor<4x3xf64>, tensor<3x1xi64> -> tensor<2x3xf64>
// PLACED-NOT: hspmd.axis_index
// PLACED: return
// Left dense: ids from the plan's hosts (an empty slot's -1 reads zeros
// through the offset, not a row), a lookup read twice, and a scatter-add
// with an offset (its indices are not the rows it writes).
// PLACED-LABEL: func.func @not_replicas
// PLACED-COUNT-3: hspmd.reduce_scatter
// PLACED-NOT: sparse
// PLACED: return

// PSIM: rank 0 sparse_all_gather: calls 1
// PSIM: rank 0 sparse_reduce_scatter: calls 1

// The gradients' indices broadcast first and sliced after (the partitioned
// form): one index a replica all the same; indices whose rows are not one
// id (a broadcast of [1, 3]) name all of theirs.
// PLACED-LABEL: func.func @gradient_indices
// PLACED: %[[S:.*]] = hspmd.local_slice %{{.*}} dim 0 over [0] of [2] : tensor<6x3xi64> -> tensor<3x3xi64>
// PLACED: %[[FIRST:.*]] = nn.slice %[[S]] offsets = [0, 0] sizes = [3, 1] strides = [1, 1] : tensor<3x3xi64>
// PLACED: hspmd.sparse_reduce_scatter %{{.*}} rows %[[FIRST]] over [0] of [2] : tensor<4x3xf64>, tensor<3x1xi64>
// PLACED: %[[MIXED:.*]] = nn.broadcast %{{.*}} : tensor<1x3xi64> to tensor<3x3xi64>
// PLACED: hspmd.sparse_reduce_scatter %{{.*}} rows %[[MIXED]] over [0] of [2] : tensor<4x3xf64>, tensor<3x3xi64>
// PLACED: return

func.func @replicas(%f: tensor<1x1x4xi64>, %w: tensor<4x3xf64>)
    -> (tensor<3x3xf64>, tensor<2x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %h, %l = nn.moe_plan %f layer = 0 devices = 2 slots = 3 : tensor<1x1x4xi64>
  %local = hspmd.local_slice %w dim 0 over [0] of [2] : tensor<4x3xf64> -> tensor<2x3xf64>
  %start = hspmd.axis_index over [0] of [2] stride 2 : tensor<i64>
  %rows = nn.embedding %local, %l offset %start : tensor<2x3xf64>, tensor<6xi64>
  %r = hspmd.reduce_scatter sum %rows dim 0 over [0] of [2] : tensor<6x3xf64> -> tensor<3x3xf64>
  // The gradient of the device's replicas (its rows of %r, doubled), home.
  %mine = hspmd.local_slice %l dim 0 over [0] of [2] : tensor<6xi64> -> tensor<3xi64>
  %two = nn.add %r, %r : tensor<3x3xf64>, tensor<3x3xf64>
  %m2 = nn.reshape %mine : tensor<3xi64> to tensor<3x1xi64>
  %idx = nn.broadcast %m2 : tensor<3x1xi64> to tensor<3x3xi64>
  %g = nn.gather_grad %two, %idx dim = 0 : tensor<3x3xf64>, tensor<3x3xi64> to tensor<4x3xf64>
  %home = hspmd.reduce_scatter sum %g dim 0 over [0] of [2] : tensor<4x3xf64> -> tensor<2x3xf64>
  return %r, %home : tensor<3x3xf64>, tensor<2x3xf64>
}

func.func @not_replicas(%f: tensor<1x1x4xi64>, %w: tensor<2x3xf64>, %dy: tensor<3x3xf64>)
    -> (tensor<3x3xf64>, tensor<3x3xf64>, tensor<6x3xf64>, tensor<2x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %h, %l = nn.moe_plan %f layer = 0 devices = 2 slots = 3 : tensor<1x1x4xi64>
  %start = hspmd.axis_index over [0] of [2] stride 2 : tensor<i64>
  %byhost = nn.embedding %w, %h offset %start : tensor<2x3xf64>, tensor<6xi64>
  %a = hspmd.reduce_scatter sum %byhost dim 0 over [0] of [2] : tensor<6x3xf64> -> tensor<3x3xf64>
  %twice = nn.embedding %w, %l offset %start : tensor<2x3xf64>, tensor<6xi64>
  %b = hspmd.reduce_scatter sum %twice dim 0 over [0] of [2] : tensor<6x3xf64> -> tensor<3x3xf64>
  %mine = hspmd.local_slice %l dim 0 over [0] of [2] : tensor<6xi64> -> tensor<3xi64>
  %m2 = nn.reshape %mine : tensor<3xi64> to tensor<3x1xi64>
  %idx = nn.broadcast %m2 : tensor<3x1xi64> to tensor<3x3xi64>
  %g = nn.gather_grad %dy, %idx dim = 0 offset %start : tensor<3x3xf64>, tensor<3x3xi64> to tensor<2x3xf64>
  %c = hspmd.reduce_scatter sum %g dim 0 over [0] of [2] : tensor<2x3xf64> -> tensor<1x3xf64>
  %c2 = nn.concat %c, %c dim = 0 : tensor<1x3xf64>, tensor<1x3xf64>
  return %a, %b, %twice, %c2 : tensor<3x3xf64>, tensor<3x3xf64>, tensor<6x3xf64>, tensor<2x3xf64>
}

func.func @gradient_indices(%f: tensor<1x1x4xi64>, %dy: tensor<3x3xf64>)
    -> (tensor<2x3xf64>, tensor<2x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %h, %l = nn.moe_plan %f layer = 0 devices = 2 slots = 3 : tensor<1x1x4xi64>
  %l2 = nn.reshape %l : tensor<6xi64> to tensor<6x1xi64>
  %all = nn.broadcast %l2 : tensor<6x1xi64> to tensor<6x3xi64>
  %mine = hspmd.local_slice %all dim 0 over [0] of [2] : tensor<6x3xi64> -> tensor<3x3xi64>
  %g = nn.gather_grad %dy, %mine dim = 0 : tensor<3x3xf64>, tensor<3x3xi64> to tensor<4x3xf64>
  %home = hspmd.reduce_scatter sum %g dim 0 over [0] of [2] : tensor<4x3xf64> -> tensor<2x3xf64>
  %row = hspmd.local_slice %l dim 0 over [0] of [2] : tensor<6xi64> -> tensor<3xi64>
  %r2 = nn.reshape %row : tensor<3xi64> to tensor<1x3xi64>
  %mixed = nn.broadcast %r2 : tensor<1x3xi64> to tensor<3x3xi64>
  %g2 = nn.gather_grad %dy, %mixed dim = 0 : tensor<3x3xf64>, tensor<3x3xi64> to tensor<4x3xf64>
  %home2 = hspmd.reduce_scatter sum %g2 dim 0 over [0] of [2] : tensor<4x3xf64> -> tensor<2x3xf64>
  return %home, %home2 : tensor<2x3xf64>, tensor<2x3xf64>
}
