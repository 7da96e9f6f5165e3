// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// An exchange across device groups, seen from inside one group: the
// dimensions it keeps are one parallel factor of operand and result (a
// group may keep them split across the exchange); one whose extent changes
// (the group's share becomes the whole) has a replicated factor on each
// side; one side empty (a pipeline stage sending or receiving): the other
// side's factors are parallel.
func.func @exchange(%g: tensor<16x4xf32>, %x: tensor<6x4xf32>, %a: tensor<8x4xf32>, %e: tensor<0x0xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 16, j = 4}}}
  %0 = hspmd.exchange %g shape [16, 4] : tensor<16x4xf32> -> tensor<16x4xf32>
      from #hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
  // expected-remark @below {{factor rule: ([i, k]) -> ([j, k]) {i = 6 replicated, j = 8 replicated, k = 4}}}
  %1 = hspmd.exchange %x shape [8, 4] : tensor<6x4xf32> -> tensor<8x4xf32>
      from #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
  // expected-remark @below {{factor rule: ([i, k]) -> ([j, l]) {i = 8, j = 0 replicated, k = 4, l = 0 replicated}}}
  %2 = hspmd.exchange %a shape [8, 4] : tensor<8x4xf32> -> tensor<0x0xf32>
      from #hspmd.union<{[0, 1]: [S0:2]}>
      to #hspmd.union<{[2]: []}>
  // expected-remark @below {{factor rule: ([i, k]) -> ([j, l]) {i = 0 replicated, j = 8, k = 0 replicated, l = 4}}}
  %3 = hspmd.exchange %e shape [8, 4] : tensor<0x0xf32> -> tensor<8x4xf32>
      from #hspmd.union<{[0, 1]: [S0:2]}>
      to #hspmd.union<{[2]: []}>
  return
}
