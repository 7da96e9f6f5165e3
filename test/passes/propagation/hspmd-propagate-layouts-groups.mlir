// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file | FileCheck %s

// Data parallel over two groups, the batch split 3:1: group {0, 1} splits
// its 6 rows again and keeps the weight split by columns, group {2} holds
// its 2 rows and the whole weight. The original stays as it is (the
// single-device reference) and lists its parts; each part holds what its
// group holds. The weight gradient is a partial sum across the groups; the
// exchange makes it replicated, block by block (group {0, 1} keeps its
// column halves). The mean over the split batch is each group's mean
// scaled by its share (6/8, 2/8): the contributions add up to the mean.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: attributes {hspmd.parts = [@step_part0, @step_part1]}
// CHECK-NEXT: nn.matmul %arg0, %arg1 : tensor<8x16xf64>, tensor<16x4xf64>
// CHECK: func.func @step_part0(%arg0: tensor<6x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>, hspmd.whole_layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>, nn.data, nn.name = "x"}
// CHECK-SAME: %arg1: tensor<16x4xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>, hspmd.whole_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>, nn.name = "w", nn.param}
// CHECK-SAME: -> (tensor<f64> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>, hspmd.whole_layout = #hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}>}
// CHECK-SAME: attributes {hspmd.part = 0 : i64, hspmd.part_of = @step}
// CHECK: %[[M0:.*]] = nn.reduce mean {{.*}} : tensor<6x4xf64>
// CHECK: %[[S0:.*]] = nn.fill 7.500000e-01
// CHECK: nn.mul %[[M0]], %[[S0]]
// CHECK: %[[G0:.*]] = nn.matmul %arg0, %{{.*}} transpose_lhs {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]} : tensor<6x16xf64>, tensor<6x4xf64>
// CHECK: hspmd.exchange %[[G0]] shape [16, 4] : tensor<16x4xf64> -> tensor<16x4xf64> from <partial(sum): {[0, 1]: [S1:2]}, {[2]: []}> to <replicated: {[0, 1]: [S1:2]}, {[2]: []}> {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]}
// CHECK: func.func @step_part1(%arg0: tensor<2x16xf64> {hspmd.layout = #hspmd.union<{[2]: []}>
// CHECK-SAME: attributes {hspmd.part = 1 : i64, hspmd.part_of = @step}
// CHECK: nn.reduce mean {{.*}} : tensor<2x4xf64>
// CHECK: nn.fill 2.500000e-01
// CHECK: hspmd.exchange %{{.*}} shape [16, 4] : tensor<16x4xf64> -> tensor<16x4xf64> from <partial(sum): {[0, 1]: [S1:2]}, {[2]: []}> to <replicated: {[0, 1]: [S1:2]}, {[2]: []}> {hspmd.operand_layouts = [#hspmd.union<{[2]: []}>], hspmd.result_layouts = [#hspmd.union<{[2]: []}>]}
func.func @step(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>},
                %w: tensor<16x4xf64> {nn.param, hspmd.layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
    -> (tensor<f64>, tensor<16x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>}) {
  %y = nn.matmul %x, %w : tensor<8x16xf64>, tensor<16x4xf64>
  %m = nn.reduce mean %y dims = [0, 1] : tensor<8x4xf64>
  %g = nn.matmul %x, %y transpose_lhs : tensor<8x16xf64>, tensor<8x4xf64>
  return %m, %g : tensor<f64>, tensor<16x4xf64>
}

// -----

// Positions along a sequence split 3:1 (explicit sizes 12 and 4 are the
// same ratio): each group's iota counts from where its part starts, and
// causal attention on the split queries gets their positions; keys and
// values, needed whole, are exchanged from the split to replicated.
// CHECK-LABEL: func.func @positions_part0(
// CHECK: %[[C0:.*]] = arith.constant {{.*}}dense<0> : tensor<i64>
// CHECK: nn.iota dim = 1 offset %[[C0]] {{.*}}: tensor<2x12xi64>
// CHECK-DAG: %[[K0:.*]] = hspmd.exchange %arg1 shape [2, 16, 1, 4] : tensor<2x12x1x4xf32> -> tensor<2x16x1x4xf32> from <split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}> to <replicated: {[0, 1]: [S0:2]}, {[2]: []}> {{.*}}
// CHECK-DAG: %[[Q0:.*]] = arith.constant {{.*}}dense<0> : tensor<i64>
// CHECK: %[[P0:.*]] = nn.iota dim = 1 offset %[[Q0]] {{.*}}: tensor<2x12xi64>
// CHECK: nn.attention %arg0, %[[K0]], %{{.*}} mask = causal positions %[[P0]]
// CHECK-LABEL: func.func @positions_part1(
// CHECK: %[[C1:.*]] = arith.constant {{.*}}dense<12> : tensor<i64>
// CHECK: nn.iota dim = 1 offset %[[C1]] {{.*}}: tensor<2x4xi64>
// CHECK: %[[Q1:.*]] = arith.constant {{.*}}dense<12> : tensor<i64>
// CHECK: %[[P1:.*]] = nn.iota dim = 1 offset %[[Q1]] {{.*}}: tensor<2x4xi64>
// CHECK: nn.attention %arg0, %{{.*}}, %{{.*}} mask = causal positions %[[P1]]
func.func @positions(%q: tensor<2x16x1x4xf32> {hspmd.layout = #hspmd.union<split(1) sizes [12, 4]: {[0, 1]: [S0:2]}, {[2]: []}>},
                     %k: tensor<2x16x1x4xf32> {hspmd.layout = #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>},
                     %v: tensor<2x16x1x4xf32> {hspmd.layout = #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>})
    -> (tensor<2x16xi64>, tensor<2x16x1x4xf32>) {
  %i = nn.iota dim = 1 : tensor<2x16xi64>
  %a = nn.attention %q, %k, %v mask = causal : tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>, tensor<2x16x1x4xf32>
  %ia = hspmd.annotate %i : tensor<2x16xi64> as #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>
  %aa = hspmd.annotate %a : tensor<2x16x1x4xf32> as #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>
  return %ia, %aa : tensor<2x16xi64>, tensor<2x16x1x4xf32>
}

// -----

// A reshard the user writes across relations: the annotations around it
// hold the user's states inside the group, and the exchange's layouts are
// what the group lays its two sides out as (here the rows split 2 ways are
// resharded to columns split 2 ways before the exchange, block by block).
// CHECK-LABEL: func.func @user_part0(
// CHECK: %[[IN:.*]] = hspmd.annotate %arg0 : tensor<6x4xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
// CHECK: %[[X:.*]] = hspmd.exchange %[[IN]] shape [8, 4] : tensor<6x4xf32> -> tensor<8x4xf32> from <split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}> to <replicated: {[0, 1]: [S1:2]}, {[2]: []}> {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S1:2]}>]
// CHECK: hspmd.annotate %[[X]] : tensor<8x4xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
func.func @user(%x: tensor<8x4xf32> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>}) -> tensor<8x4xf32> {
  %y = hspmd.reshard %x : tensor<8x4xf32>
         from #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>
         to #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
  return %y : tensor<8x4xf32>
}

// -----

// A group that data-parallels inside would sum its gradient inside the
// group (an all-reduce) and then exchange the whole; instead it exchanges
// it split along dimension 0 over its data-parallel pair (reduce-scatter
// before, all-gather after: the hierarchical all-reduce), so each device
// exchanges only its slice.
// CHECK-LABEL: func.func @hierarchical_part0(
// CHECK: %[[G:.*]] = nn.matmul %arg0, %{{.*}} transpose_lhs {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]}
// CHECK: hspmd.exchange %[[G]] shape [16, 4] : tensor<16x4xf64> -> tensor<16x4xf64> from <partial(sum): {[0, 1]: [S0:2]}, {[2]: []}> to <replicated: {[0, 1]: [S0:2]}, {[2]: []}> {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
func.func @hierarchical(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S0:2]}, {[2]: []}>},
                        %w: tensor<16x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>})
    -> (tensor<16x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>}) {
  %y = nn.matmul %x, %w : tensor<8x16xf64>, tensor<16x4xf64>
  %g = nn.matmul %x, %y transpose_lhs : tensor<8x16xf64>, tensor<8x4xf64>
  return %g : tensor<16x4xf64>
}
