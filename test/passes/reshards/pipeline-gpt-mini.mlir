// The GPT-mini training step on 4 devices, data parallel 2 x tensor
// parallel 2 (the layouts of hspmd-propagate-layouts-gpt-mini.mlir),
// through propagation, reshard insertion and lowering: every reshard
// becomes verified global-view collectives (the row-parallel pending sums
// and the data-parallel gradients all-reduced, the rest reduce-scattered,
// sliced or gathered), none is left, and the lowered step computes on the
// interpreter exactly what the unpartitioned step does.
// RUN: sed -e 's/%%tokens: tensor<8x16xi64> {nn.data}/%%tokens: tensor<8x16xi64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>}/' \
// RUN:     -e 's/\(%%l[01]_w[q1]: tensor<32x[0-9]*xf32>\) {nn.param}/\1 {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>}/' \
// RUN:     %loom_src_root/examples/gpt_mini.mlir > %t.mlir
// RUN: loom-opt %t.mlir --loom-training-pipeline > %t.step.mlir
// RUN: loom-opt %t.step.mlir --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards > %t.lowered.mlir
// RUN: FileCheck %s < %t.lowered.mlir
// RUN: loom-run --interpret %t.step.mlir --entry gpt_mini_train_step --random-inputs --seed 5 --print > %t.step.out
// RUN: loom-run --interpret %t.lowered.mlir --entry gpt_mini_train_step --random-inputs --seed 5 --print > %t.lowered.out
// RUN: diff %t.step.out %t.lowered.out

// CHECK-LABEL: func.func @gpt_mini_train_step
// CHECK-NOT: hspmd.reshard
// CHECK: hspmd.all_reduce sum {{.*}} from <{[0, 1, 2, 3]: [S0:2, P(sum):2]}> to <{[0, 1, 2, 3]: [S0:2, D:2]}>
// CHECK-NOT: hspmd.reshard
// CHECK: return
