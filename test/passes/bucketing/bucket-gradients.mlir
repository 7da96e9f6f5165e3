// Gradient bucketing after specialisation: the two weight-gradient
// all-reduces of a data-parallel step share one collective; the all-reduce
// of an activation that is read at once stays alone. The sharded run from
// global inputs still equals the global function, and the simulator counts
// two all-reduces per rank instead of three.
// RUN: loom-opt %s --hspmd-specialize --hspmd-bucket-gradients | FileCheck %s
// RUN: loom-opt %s --hspmd-specialize --hspmd-bucket-gradients="bucket-bytes=5000" | FileCheck %s --check-prefix=SMALL
// RUN: loom-opt %s --hspmd-specialize --hspmd-bucket-gradients -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry step_group0 --global-entry step --random-inputs --seed 5 --comm-stats | FileCheck %s --check-prefix=RUN2
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry step_group0 --global-entry step --random-inputs --comm-stats | grep '^rank' > %t.sim
// RUN: loom-opt %t.mlir --hspmd-comm-report -o /dev/null | grep '^rank' | diff - %t.sim
// RUN: not loom-opt %s --hspmd-bucket-gradients="bucket-bytes=0" 2>&1 | FileCheck %s --check-prefix=BYTES

#D2 = #hspmd.union<{[0, 1]: [D:2]}>
#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
#S1 = #hspmd.union<{[0, 1]: [S1:2]}>
#P2 = #hspmd.union<{[0, 1]: [P(sum):2]}>

// CHECK-LABEL: func.func @step_group0(
// CHECK: %[[S:.*]] = hspmd.all_reduce sum %{{.*}} over [0] of [2] : tensor<1x16xf64> -> tensor<1x16xf64>
// CHECK-NEXT: nn.add %[[S]], %[[S]]
// CHECK: %[[F1:.*]] = nn.reshape %{{.*}} : tensor<16x32xf64> to tensor<1x512xf64>
// CHECK-NEXT: %[[F2:.*]] = nn.reshape %{{.*}} : tensor<16x16xf64> to tensor<1x256xf64>
// CHECK-NEXT: %[[C:.*]] = nn.concat %[[F1]], %[[F2]] dim = 1 : tensor<1x512xf64>, tensor<1x256xf64>
// CHECK-NEXT: %[[R:.*]] = hspmd.all_reduce sum %[[C]] over [0] of [2] : tensor<1x768xf64> -> tensor<1x768xf64>
// CHECK-NEXT: %[[A:.*]] = nn.slice %[[R]] offsets = [0, 0] sizes = [1, 512] strides = [1, 1]
// CHECK-NEXT: nn.reshape %[[A]] : tensor<1x512xf64> to tensor<16x32xf64>
// CHECK-NEXT: %[[B:.*]] = nn.slice %[[R]] offsets = [0, 512] sizes = [1, 256] strides = [1, 1]
// CHECK-NEXT: nn.reshape %[[B]] : tensor<1x256xf64> to tensor<16x16xf64>
// CHECK-NOT: hspmd.all_reduce
// CHECK: return
// SMALL-LABEL: func.func @step_group0(
// SMALL-COUNT-3: hspmd.all_reduce sum
// SMALL-NOT: nn.concat
// RUN2: result #0: tensor<16x32xf64> norm-wise relative error
// RUN2: rank 0 all_reduce: calls 2, bytes sent
// BYTES: error: bucket-bytes must be at least 1, got 0

func.func @step(%x: tensor<2x16xf64> {hspmd.layout = #S0},
                %dy: tensor<2x32xf64> {hspmd.layout = #S0},
                %dz: tensor<2x16xf64> {hspmd.layout = #S0},
                %w1: tensor<16x32xf64> {hspmd.layout = #D2},
                %w2: tensor<16x16xf64> {hspmd.layout = #D2})
    -> (tensor<16x32xf64> {hspmd.layout = #D2}, tensor<16x16xf64> {hspmd.layout = #D2},
        tensor<1x16xf64> {hspmd.layout = #D2}) {
  // An activation: summed over the batch, all-reduced, read at once.
  %s = nn.reduce sum %x dims = [0] keep_dims {hspmd.operand_layouts = [#S0], hspmd.result_layouts = [#P2]} : tensor<2x16xf64>
  %sr = hspmd.all_reduce sum %s over [0] of [2] : tensor<1x16xf64> -> tensor<1x16xf64>
      from #P2 to #D2 {hspmd.operand_layouts = [#P2], hspmd.result_layouts = [#D2]}
  %s2 = nn.add %sr, %sr {hspmd.operand_layouts = [#D2, #D2], hspmd.result_layouts = [#D2]} : tensor<1x16xf64>, tensor<1x16xf64>
  // Two weight gradients, partial over the batch split.
  %xt = nn.transpose %x permutation = [1, 0] {hspmd.operand_layouts = [#S0], hspmd.result_layouts = [#S1]} : tensor<2x16xf64>
  %g1 = nn.matmul %xt, %dy {hspmd.operand_layouts = [#S1, #S0], hspmd.result_layouts = [#P2]} : tensor<16x2xf64>, tensor<2x32xf64>
  %g1r = hspmd.all_reduce sum %g1 over [0] of [2] : tensor<16x32xf64> -> tensor<16x32xf64>
      from #P2 to #D2 {hspmd.operand_layouts = [#P2], hspmd.result_layouts = [#D2]}
  %g2 = nn.matmul %xt, %dz {hspmd.operand_layouts = [#S1, #S0], hspmd.result_layouts = [#P2]} : tensor<16x2xf64>, tensor<2x16xf64>
  %g2r = hspmd.all_reduce sum %g2 over [0] of [2] : tensor<16x16xf64> -> tensor<16x16xf64>
      from #P2 to #D2 {hspmd.operand_layouts = [#P2], hspmd.result_layouts = [#D2]}
  // The updates read the gradients.
  %u1 = nn.sub %w1, %g1r {hspmd.operand_layouts = [#D2, #D2], hspmd.result_layouts = [#D2]} : tensor<16x32xf64>, tensor<16x32xf64>
  %u2 = nn.sub %w2, %g2r {hspmd.operand_layouts = [#D2, #D2], hspmd.result_layouts = [#D2]} : tensor<16x16xf64>, tensor<16x16xf64>
  return {hspmd.operand_layouts = [#D2, #D2, #D2]} %u1, %u2, %s2 : tensor<16x32xf64>, tensor<16x16xf64>, tensor<1x16xf64>
}
