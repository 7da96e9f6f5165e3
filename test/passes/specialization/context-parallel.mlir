// Context parallelism: causal attention with the query sequence split and
// the keys whole. The local op gets its queries' global positions (an iota
// from the block's start, hspmd.axis_index); its gradient too, where dkey
// and dvalue come out as partial sums of the local queries' contributions
// (the query sequence is a reduction factor of nn.attention_grad). On the
// simulator the partitioned functions equal the global ones in f64.
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry attend_group0 --global-entry attend --random-inputs --seed 5 --tolerance 1e-12 | FileCheck %s --check-prefix=FWD
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry attend_grad_group0 --global-entry attend_grad --random-inputs --seed 5 --tolerance 1e-12 --comm-stats | FileCheck %s --check-prefix=BWD

// CHECK-LABEL: func.func @attend_group0(
// CHECK-SAME: tensor<2x4x2x4xf64>
// CHECK-SAME: tensor<2x8x2x4xf64>
// CHECK: %[[START:.*]] = hspmd.axis_index over [0] of [2] stride 4 : tensor<i64>
// CHECK-NEXT: %[[POS:.*]] = nn.iota dim = 1 offset %[[START]] : tensor<2x4xi64>
// CHECK-NEXT: nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = causal positions %[[POS]] : tensor<2x4x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x4xi64>
// FWD: result #0: tensor<2x8x2x4xf64> norm-wise relative error
func.func @attend(%q: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                  %k: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>},
                  %v: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
    -> (tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>}) {
  %o = nn.attention %q, %k, %v mask = causal : tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>
  return %o : tensor<2x8x2x4xf64>
}

// CHECK-LABEL: func.func @attend_grad_group0(
// CHECK: nn.iota dim = 1 offset %{{.*}} : tensor<2x4xi64>
// CHECK-NEXT: nn.attention_grad {{.*}} mask = causal positions %{{.*}} : tensor<2x4x2x4xf64>, tensor<2x4x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x4xi64>
// CHECK: hspmd.reduce_scatter sum {{.*}} dim 1 over [0] of [2] : tensor<2x8x2x4xf64> -> tensor<2x4x2x4xf64>
// CHECK: hspmd.reduce_scatter sum {{.*}} dim 1 over [0] of [2] : tensor<2x8x2x4xf64> -> tensor<2x4x2x4xf64>
// BWD: result #0: tensor<2x8x2x4xf64> norm-wise relative error
// BWD: result #1: tensor<2x8x2x4xf64> norm-wise relative error
// BWD: result #2: tensor<2x8x2x4xf64> norm-wise relative error
// BWD: rank 0 reduce_scatter: calls 2
func.func @attend_grad(%dy: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                       %q: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                       %k: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>},
                       %v: tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
    -> (tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
        tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
        tensor<2x8x2x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>}) {
  %dq, %dk, %dv = nn.attention_grad %dy, %q, %k, %v mask = causal : tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>
  return %dq, %dk, %dv : tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>, tensor<2x8x2x4xf64>
}
