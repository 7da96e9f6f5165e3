// hspmd-overlap-fetches: a weight's fetch (an hspmd.sparse_all_gather
// marked hspmd.weight_fetch) starts right after the previous fetch of the
// same weight completes, with the side-effect-free ops of its row
// indices; it is waited for where it was. The simulated ranks give the same bits and
// bytes with the started fetches as without.
// RUN: loom-opt %s --hspmd-overlap-fetches | FileCheck %s
// RUN: loom-opt %s --hspmd-overlap-fetches | loom-opt --hspmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: loom-run --interpret %s --entry steps --simulate 2 --random-inputs --int-range 0,4 --comm-stats --output-dir %t.plain > %t.plain.bytes
// RUN: loom-opt %s --hspmd-overlap-fetches | loom-run --interpret - --entry steps --simulate 2 --random-inputs --int-range 0,4 --comm-stats --output-dir %t.started > %t.started.bytes
// RUN: diff %t.plain.bytes %t.started.bytes
// RUN: FileCheck %s --check-prefix=BYTES < %t.started.bytes
// RUN: cmp %t.plain/rank_0/result_0.npy %t.started/rank_0/result_0.npy
// RUN: cmp %t.plain/rank_1/result_0.npy %t.started/rank_1/result_0.npy
// RUN: cmp %t.plain/rank_0/result_1.npy %t.started/rank_0/result_1.npy
// RUN: cmp %t.plain/rank_1/result_1.npy %t.started/rank_1/result_1.npy
// RUN: cmp %t.plain/rank_1/result_2.npy %t.started/rank_1/result_2.npy
// RUN: cmp %t.plain/rank_0/result_3.npy %t.started/rank_0/result_3.npy

// Three micro-steps of one weight %w and one fetch of %v whose indices
// need an all-gather (which stays where it is and holds the start below
// it). The first fetch of %w has nothing before it to overlap: it is
// split all the same, its start right before its wait. The second starts
// right after the first completes, the third right after the second,
// each with the slice of its indices. An unmarked gather of an argument
// stays as it is.
// CHECK-LABEL: func.func @steps
// CHECK-NEXT: %[[I0:.*]] = nn.slice %arg2 offsets = [0]
// CHECK-NEXT: %[[S0:.*]] = hspmd.sparse_all_gather_start %arg0 rows %[[I0]] over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
// CHECK-NEXT: %[[T0:.*]] = hspmd.wait %[[S0]] keep(%arg0, %[[I0]] : tensor<2x3xf64>, tensor<2xi64>) : tensor<4x3xf64>
// CHECK-NEXT: %[[I1:.*]] = nn.slice %arg2 offsets = [2]
// CHECK-NEXT: %[[S1:.*]] = hspmd.sparse_all_gather_start %arg0 rows %[[I1]] over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64>
// CHECK-NEXT: %[[Y0:.*]] = nn.add %arg1, %[[T0]]
// CHECK-NEXT: %[[Z0:.*]] = nn.mul %[[Y0]], %[[Y0]]
// CHECK-NEXT: %[[G:.*]] = hspmd.all_gather
// CHECK-NEXT: %[[J:.*]] = nn.slice %[[G]]
// CHECK-NEXT: %[[SV:.*]] = hspmd.sparse_all_gather_start %arg3 rows %[[J]]
// CHECK-NEXT: %[[T1:.*]] = hspmd.wait %[[S1]] keep(%arg0, %[[I1]] : tensor<2x3xf64>, tensor<2xi64>) : tensor<4x3xf64>
// CHECK-NEXT: %[[I2:.*]] = nn.slice %arg2 offsets = [4]
// CHECK-NEXT: %[[S2:.*]] = hspmd.sparse_all_gather_start %arg0 rows %[[I2]]
// CHECK-NEXT: %[[Y1:.*]] = nn.add %[[Z0]], %[[T1]]
// CHECK-NEXT: %[[V:.*]] = hspmd.wait %[[SV]] keep(%arg3, %[[J]]
// CHECK-NEXT: %[[Z1:.*]] = nn.mul %[[Y1]], %[[V]]
// CHECK-NEXT: %[[T2:.*]] = hspmd.wait %[[S2]]
// CHECK-NEXT: %[[Y2:.*]] = nn.add %[[Z1]], %[[T2]]
// CHECK-NEXT: %[[U:.*]] = hspmd.sparse_all_gather %arg3 rows %[[I2]]
// CHECK-NEXT: %[[B:.*]] = hspmd.sparse_all_gather %[[Y2]]
// CHECK-NEXT: return

// The report counts a start as the gather it is.
// REPORT: rank 0 sparse_all_gather: calls 6, bytes sent at most {{[0-9]+}}, received at most {{[0-9]+}}
// BYTES: rank 0 all_gather: calls 1
// BYTES: rank 0 sparse_all_gather: calls 6, bytes sent {{[1-9][0-9]*}}, received {{[1-9][0-9]*}}
func.func @steps(%w: tensor<2x3xf64>, %x: tensor<4x3xf64>, %ids: tensor<6xi64>,
                 %v: tensor<2x3xf64>)
    -> (tensor<4x3xf64>, tensor<4x3xf64>, tensor<8x3xf64>, tensor<4x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %i0 = nn.slice %ids offsets = [0] sizes = [2] strides = [1] : tensor<6xi64>
  %t0 = hspmd.sparse_all_gather %w rows %i0 over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
  %y0 = nn.add %x, %t0 : tensor<4x3xf64>, tensor<4x3xf64>
  %z0 = nn.mul %y0, %y0 : tensor<4x3xf64>, tensor<4x3xf64>
  %g = hspmd.all_gather %i0 dim 0 over [0] of [2] : tensor<2xi64> -> tensor<4xi64>
  %i1 = nn.slice %ids offsets = [2] sizes = [2] strides = [1] : tensor<6xi64>
  %t1 = hspmd.sparse_all_gather %w rows %i1 over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
  %y1 = nn.add %z0, %t1 : tensor<4x3xf64>, tensor<4x3xf64>
  %j = nn.slice %g offsets = [1] sizes = [2] strides = [1] : tensor<4xi64>
  %tv = hspmd.sparse_all_gather %v rows %j over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
  %z1 = nn.mul %y1, %tv : tensor<4x3xf64>, tensor<4x3xf64>
  %i2 = nn.slice %ids offsets = [4] sizes = [2] strides = [1] : tensor<6xi64>
  %t2 = hspmd.sparse_all_gather %w rows %i2 over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
  %y2 = nn.add %z1, %t2 : tensor<4x3xf64>, tensor<4x3xf64>
  %u = hspmd.sparse_all_gather %v rows %i2 over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64>
  %back = hspmd.sparse_all_gather %y2 rows %i2 over [0] of [2] : tensor<4x3xf64>, tensor<2xi64> -> tensor<8x3xf64>
  return %z1, %y2, %back, %u : tensor<4x3xf64>, tensor<4x3xf64>, tensor<8x3xf64>, tensor<4x3xf64>
}

// In a program merged from several groups' ops, a start keeps its
// fetch's group.
// CHECK-LABEL: func.func @tagged
// CHECK: hspmd.sparse_all_gather_start %arg0 rows %{{.*}} over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.group = #hspmd.group<[2, 3]>, hspmd.weight_fetch}
// CHECK: hspmd.wait
func.func @tagged(%w: tensor<2x3xf64>, %x: tensor<4x3xf64>, %ids: tensor<2xi64>)
    -> tensor<4x3xf64> {
  %y = nn.mul %x, %x : tensor<4x3xf64>, tensor<4x3xf64>
  %t = hspmd.sparse_all_gather %w rows %ids over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.group = #hspmd.group<[2, 3]>, hspmd.weight_fetch}
  %z = nn.add %y, %t : tensor<4x3xf64>, tensor<4x3xf64>
  return %z : tensor<4x3xf64>
}

// Starts keep the fetches' order: %v's ids come straight from an
// argument, so its start could go to the top, but it follows %w's, which
// the all-gather holds below it (the runtimes run started collectives in
// the order they start, on every rank alike).
// CHECK-LABEL: func.func @ordered
// CHECK-NEXT: %[[G:.*]] = hspmd.all_gather %arg2
// CHECK-NEXT: %[[I:.*]] = nn.slice %[[G]]
// CHECK-NEXT: %[[SW:.*]] = hspmd.sparse_all_gather_start %arg0 rows %[[I]]
// CHECK-NEXT: %[[SV:.*]] = hspmd.sparse_all_gather_start %arg1 rows %arg3
// CHECK-NEXT: nn.mul
// CHECK-NEXT: hspmd.wait %[[SW]]
// CHECK-NEXT: nn.add
// CHECK-NEXT: hspmd.wait %[[SV]]
func.func @ordered(%w: tensor<2x3xf64>, %v: tensor<2x3xf64>, %ids: tensor<2xi64>,
                   %jds: tensor<2xi64>, %x: tensor<4x3xf64>)
    -> (tensor<4x3xf64>, tensor<4x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %g = hspmd.all_gather %ids dim 0 over [0] of [2] : tensor<2xi64> -> tensor<4xi64>
  %i = nn.slice %g offsets = [1] sizes = [2] strides = [1] : tensor<4xi64>
  %y = nn.mul %x, %x : tensor<4x3xf64>, tensor<4x3xf64>
  %tw = hspmd.sparse_all_gather %w rows %i over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
  %z = nn.add %y, %tw : tensor<4x3xf64>, tensor<4x3xf64>
  %tv = hspmd.sparse_all_gather %v rows %jds over [0] of [2] : tensor<2x3xf64>, tensor<2xi64> -> tensor<4x3xf64> {hspmd.weight_fetch}
  return %z, %tv : tensor<4x3xf64>, tensor<4x3xf64>
}
