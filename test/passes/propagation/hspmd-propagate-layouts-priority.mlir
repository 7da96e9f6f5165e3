// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file | FileCheck %s

// Param beats data: the annotations (boundaries, so only hints to their
// operands) give the data argument x a split of the contraction k (data
// priority) and the parameter w a split of the columns j (param priority).
// The matmul follows w: its result is split by columns, and x is needed
// duplicated (a reshard from its own split).
// CHECK-LABEL: func.func @param_beats_data
// CHECK-SAME: %{{.*}}: tensor<16x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "w", nn.param}
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>, #hspmd.union<{[0, 1]: [S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]}
func.func @param_beats_data(%x: tensor<8x16xf32> {nn.data}, %w: tensor<16x4xf32> {nn.param})
    -> (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32>) {
  %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %xa = hspmd.annotate %x : tensor<8x16xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  %wa = hspmd.annotate %w : tensor<16x4xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  return %y, %xa, %wa : tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32>
}

// -----

// User beats param: x's own layout splits k; w's hint would split j. The
// matmul contracts the split k: w is needed split by rows, the result is a
// pending sum. w's layout follows (user beats its param hint), and the
// annotation on w reshards it.
// CHECK-LABEL: func.func @user_beats_param
// CHECK-SAME: %{{.*}}: tensor<16x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>, nn.name = "w", nn.param}
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>, #hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
func.func @user_beats_param(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                            %w: tensor<16x4xf32> {nn.param})
    -> (tensor<8x4xf32>, tensor<16x4xf32>) {
  %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %wa = hspmd.annotate %w : tensor<16x4xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  return %y, %wa : tensor<8x4xf32>, tensor<16x4xf32>
}

// -----

// Data beats derived: w has no role, so its hint is only derived; x's
// (data) wins and w is needed split by rows.
// CHECK-LABEL: func.func @data_beats_derived
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>, #hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
func.func @data_beats_derived(%x: tensor<8x16xf32> {nn.data}, %w: tensor<16x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32>) {
  %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %wa = hspmd.annotate %w : tensor<16x4xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  %xa = hspmd.annotate %x : tensor<8x16xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  return %y, %xa, %wa : tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32>
}

// -----

// Backward flow: a user layout on a late operand (b) reaches the values
// computed before it, through the add, the relu and the matmul, down to the
// arguments: x is split by rows, w duplicated.
// CHECK-LABEL: func.func @backward_flow
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.name = "x"}
// CHECK-SAME: %{{.*}}: tensor<16x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w"}
// CHECK: nn.matmul {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]}
// CHECK: nn.relu {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]}
// CHECK: nn.add {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
func.func @backward_flow(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>,
    %b: tensor<8x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>}) -> tensor<8x4xf32> {
  %h = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %r = nn.relu %h : tensor<8x4xf32>
  %z = nn.add %r, %b : tensor<8x4xf32>, tensor<8x4xf32>
  return %z : tensor<8x4xf32>
}

// -----

// An annotation is a boundary: its result has the annotated layout, and
// its operand takes it only where nothing decides otherwise. x is
// unconstrained, so the annotation on neg's result reaches it backward; y
// is laid out by its producer (split by columns like w) and keeps that
// layout: the annotation's operand layout differs from the producer's (a
// reshard goes in between).
// CHECK-LABEL: func.func @annotation_boundary
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>, nn.name = "x"}
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>, nn.name = "z"}
// CHECK: nn.neg {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
// CHECK: hspmd.annotate {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
// CHECK: nn.matmul {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]
// CHECK: hspmd.annotate {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
func.func @annotation_boundary(%x: tensor<8x16xf32>, %z: tensor<8x16xf32>,
    %w: tensor<16x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>}) -> (tensor<8x16xf32>, tensor<8x4xf32>) {
  %n = nn.neg %x : tensor<8x16xf32>
  %a = hspmd.annotate %n : tensor<8x16xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
  %y = nn.matmul %z, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %b = hspmd.annotate %y : tensor<8x4xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
  return %a, %b : tensor<8x16xf32>, tensor<8x4xf32>
}
