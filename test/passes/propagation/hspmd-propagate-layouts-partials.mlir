// Partial sums through linear ops (the factor rules' linear groups), shared
// reshards and the charge for reductions owed further on: the choices that
// make a Megatron block move exactly its two all-reduces each way. Each
// function is also run, partitioned, on the simulator against the global
// one.
// RUN: loom-opt %s -split-input-file --hspmd-propagate-layouts --hspmd-insert-reshards | FileCheck %s
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry partials_meet_group0 --global-entry partials_meet --random-inputs --seed 3 --comm-stats | FileCheck %s --check-prefix=MEET
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry reduce_first_group0 --global-entry reduce_first --random-inputs --seed 3 --comm-stats | FileCheck %s --check-prefix=REDUCE
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry shared_group0 --global-entry shared --random-inputs --seed 3 --comm-stats | FileCheck %s --check-prefix=SHARED

// Two partial sums (row-parallel products) meet in an add: the add passes
// the partial on and one all-reduce of the sum follows, where tanh needs
// it whole (not one per product).
// CHECK-LABEL: func.func @partials_meet
// CHECK: nn.add {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>, #hspmd.union<{[0, 1]: [P(sum):2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
// CHECK-NEXT: hspmd.reshard {{.*}} from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
// CHECK-NEXT: nn.tanh
// MEET: result #0: tensor<8x4xf64> norm-wise relative error
// MEET: rank 0 all_reduce: calls 1, bytes sent 256
func.func @partials_meet(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w1: tensor<16x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %w2: tensor<16x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<8x4xf64> {
  %a = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x4xf64>
  %b = nn.matmul %x, %w2 : tensor<8x16xf64>, tensor<16x4xf64>
  %c = nn.add %a, %b : tensor<8x4xf64>, tensor<8x4xf64>
  %d = nn.tanh %c : tensor<8x4xf64>
  return %d : tensor<8x4xf64>
}

// -----

// A sum over rows shrinks the partial: it is summed first, and the 4-element
// result all-reduced rather than the [8, 4] product.
// CHECK-LABEL: func.func @reduce_first
// CHECK: nn.reduce sum {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
// CHECK-NEXT: hspmd.reshard {{.*}} : tensor<4xf64> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
// REDUCE: rank 0 all_reduce: calls 1, bytes sent 32
func.func @reduce_first(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w: tensor<16x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<4xf64> {
  %a = nn.matmul %x, %w : tensor<8x16xf64>, tensor<16x4xf64>
  %s = nn.reduce sum %a dims = [0] : tensor<8x4xf64>
  %t = nn.tanh %s : tensor<4xf64>
  return %t : tensor<4xf64>
}

// -----

// Passing a partial on through a same-sized op saves nothing: the partial
// is reduced where it is made, and a whole value meets the add (a whole
// value cannot join a partial sum).
// CHECK-LABEL: func.func @reduce_where_made
// CHECK: nn.matmul
// CHECK-NEXT: hspmd.reshard {{.*}} from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
// CHECK-NEXT: nn.neg {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>]
// CHECK-NEXT: nn.add {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>, #hspmd.union<{[0, 1]: [D:2]}>]
func.func @reduce_where_made(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w: tensor<16x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %r: tensor<8x4xf64>) -> tensor<8x4xf64> {
  %a = nn.matmul %x, %w : tensor<8x16xf64>, tensor<16x4xf64>
  %n = nn.neg %a : tensor<8x4xf64>
  %c = nn.add %r, %n : tensor<8x4xf64>, tensor<8x4xf64>
  %d = nn.tanh %c : tensor<8x4xf64>
  return %d : tensor<8x4xf64>
}

// -----

// The norm needs the product whole; the column sum (a bias gradient in a
// backward pass) then takes the same all-reduced value for free rather
// than summing the partial and reducing again, and the norm does not split
// rows on its own (a reduce-scatter now, an all-gather owed later).
// CHECK-LABEL: func.func @shared
// CHECK: nn.matmul
// CHECK-NEXT: %[[WHOLE:.*]] = hspmd.reshard {{.*}} from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
// CHECK-NEXT: nn.layer_norm %[[WHOLE]] {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>
// CHECK-NEXT: nn.reduce sum %[[WHOLE]]
// SHARED: rank 0 all_reduce: calls 1, bytes sent 256
// SHARED-NOT: rank 0
func.func @shared(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w: tensor<16x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %s: tensor<4xf64>) -> (tensor<8x4xf64>, tensor<4xf64>) {
  %a = nn.matmul %x, %w : tensor<8x16xf64>, tensor<16x4xf64>
  %n = nn.layer_norm %a scale %s : tensor<8x4xf64>, tensor<4xf64>
  %g = nn.reduce sum %a dims = [0] : tensor<8x4xf64>
  return %n, %g : tensor<8x4xf64>, tensor<4xf64>
}
