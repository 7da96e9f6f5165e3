// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file | FileCheck %s

// Megatron MLP on 2 devices: W1 split by columns, W2 by rows. The hidden
// activation (and the bias) is split like W1's columns, the data stays
// duplicated, the second matmul contracts the split factor: its output is
// a pending sum, which the function returns as such.
// CHECK-LABEL: func.func @megatron
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>, nn.data, nn.name = "x"}
// CHECK-SAME: %{{.*}}: tensor<32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>, nn.name = "b1", nn.param}
// CHECK-SAME: -> (tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [P(sum):2]}>})
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>, #hspmd.union<{[0, 1]: [S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]}
// CHECK: nn.add {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>, #hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]}
// CHECK: nn.gelu {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]}
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>, #hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
// CHECK: return {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
func.func @megatron(%x: tensor<8x16xf32> {nn.data},
    %w1: tensor<16x32xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %b1: tensor<32xf32> {nn.param},
    %w2: tensor<32x16xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) -> tensor<8x16xf32> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>
  %hb = nn.add %h, %b1 : tensor<8x32xf32>, tensor<32xf32>
  %g = nn.gelu %hb : tensor<8x32xf32>
  %y = nn.matmul %g, %w2 : tensor<8x32xf32>, tensor<32x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// 2-D: data parallel on the slow mesh axis, tensor parallel on the fast one
// (4 devices, mesh [2, 2]). Each matmul splits the batch on axis 0 and
// W1's columns / W2's rows on axis 1.
// CHECK-LABEL: func.func @tp_dp
// CHECK-SAME: -> (tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>})
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>, #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>]}
// CHECK: nn.gelu {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>]
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>, #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>]}
func.func @tp_dp(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>},
    %w1: tensor<16x32xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>},
    %w2: tensor<32x16xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}>}) -> tensor<8x16xf32> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>
  %g = nn.gelu %h : tensor<8x32xf32>
  %y = nn.matmul %g, %w2 : tensor<8x32xf32>, tensor<32x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Two layouts read on a finer mesh: [S0:4] and [S0:2, S1:2] share [2, 2].
// The elementwise op follows its user-laid-out operand on both axes; the
// other operand (at equal priority) is resharded, which costs an
// all-to-all on axis 1 either way; the tie goes to the lower factor.
// CHECK-LABEL: func.func @finer_mesh
// CHECK: nn.add {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]}
func.func @finer_mesh(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
                      %y: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>}) -> tensor<8x8xf32> {
  %0 = nn.add %x, %y : tensor<8x8xf32>, tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// Head-parallel attention from one annotation: Wq split by columns makes
// the query heads split; K and V follow through the attention rule (heads
// are parallel), so Wk and Wv are split by columns too and Wo by rows.
// CHECK-LABEL: func.func @attention_heads
// CHECK-SAME: %{{.*}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "wq", nn.param}, %{{.*}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "wk", nn.param}, %{{.*}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "wv", nn.param}, %{{.*}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>, nn.name = "wo", nn.param}
// CHECK: nn.reshape {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S2:2]}>]} : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
// CHECK: nn.attention {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S2:2]}>, #hspmd.union<{[0, 1]: [S2:2]}>, #hspmd.union<{[0, 1]: [S2:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S2:2]}>]}
// CHECK: nn.reshape {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S2:2]}>]} : tensor<8x16x4x8xf32> to tensor<8x16x32xf32>
// CHECK: nn.matmul {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]
func.func @attention_heads(%x: tensor<8x16x32xf32> {nn.data},
    %wq: tensor<32x32xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %wk: tensor<32x32xf32> {nn.param}, %wv: tensor<32x32xf32> {nn.param},
    %wo: tensor<32x32xf32> {nn.param}) -> tensor<8x16x32xf32> {
  %q = nn.matmul %x, %wq : tensor<8x16x32xf32>, tensor<32x32xf32>
  %qh = nn.reshape %q : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
  %k = nn.matmul %x, %wk : tensor<8x16x32xf32>, tensor<32x32xf32>
  %kh = nn.reshape %k : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
  %v = nn.matmul %x, %wv : tensor<8x16x32xf32>, tensor<32x32xf32>
  %vh = nn.reshape %v : tensor<8x16x32xf32> to tensor<8x16x4x8xf32>
  %att = nn.attention %qh, %kh, %vh mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
  %a = nn.reshape %att : tensor<8x16x4x8xf32> to tensor<8x16x32xf32>
  %o = nn.matmul %a, %wo : tensor<8x16x32xf32>, tensor<32x32xf32>
  return %o : tensor<8x16x32xf32>
}

// -----

// A reshape whose split dimension is of two factors: [8, 32] -> [8, 4, 8]
// splits dimension 1 of the operand by its major factor (4 heads) only; a
// split of the minor factor (the 8 per head) is not one block of dimension
// 1, so the reshape gathers it and the result is split after the op.
// CHECK-LABEL: func.func @reshape_minor
// CHECK: nn.reshape %{{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]} : tensor<8x32xf32> to tensor<8x4x8xf32>
// CHECK: nn.reshape %{{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [D:2]}>]} : tensor<8x32xf32> to tensor<8x4x8xf32>
func.func @reshape_minor(%x: tensor<8x32xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                         %y: tensor<8x32xf32>) -> (tensor<8x4x8xf32>, tensor<8x4x8xf32>) {
  %0 = nn.reshape %x : tensor<8x32xf32> to tensor<8x4x8xf32>
  %1 = nn.reshape %y : tensor<8x32xf32> to tensor<8x4x8xf32>
  %2 = hspmd.annotate %1 : tensor<8x4x8xf32> as #hspmd.union<{[0, 1]: [S2:2]}>
  return %0, %2 : tensor<8x4x8xf32>, tensor<8x4x8xf32>
}

// -----

// A split that does not divide a factor falls back to a less-split layout.
// x is [S0:4], read as (S0, S0) on the mesh [2, 2] that y's layout brings.
// The reshape [8, 8] -> [2, 4, 8] makes x's dimension 0 the factors 2*4: its
// major factor (2) takes mesh axis 0 but not also axis 1, and the minor one
// cannot be split. On axis 1 the cheapest choice is the other dimension (an
// all-to-all of x rather than a gather).
// CHECK-LABEL: func.func @less_split
// CHECK: nn.reshape %{{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>]}
func.func @less_split(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
                      %y: tensor<8x8xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>}) -> (tensor<2x4x8xf32>, tensor<8x8xf32>) {
  %0 = nn.reshape %x : tensor<8x8xf32> to tensor<2x4x8xf32>
  return %0, %y : tensor<2x4x8xf32>, tensor<8x8xf32>
}

// -----

// A function without any layout is left alone.
// CHECK-LABEL: func.func @no_layouts
// CHECK-NOT: hspmd
// CHECK: return
func.func @no_layouts(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = nn.neg %x : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
