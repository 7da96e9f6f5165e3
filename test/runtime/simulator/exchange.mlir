// Exchanges between device groups on the simulator: groups {0, 1} and {2}
// each run their own function (rank d is device d), the exchange moves
// data by its plan, and the whole results equal the single-device
// program's. Bytes as the simulator counts them equal the communication
// report's.
// RUN: loom-run --interpret %s --simulate 3 --global-entry gather --random-inputs --comm-stats | FileCheck %s --check-prefix=GATHER
// RUN: loom-opt %s --hspmd-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: loom-run --interpret %s --simulate 3 --global-entry sum --random-inputs --comm-stats | FileCheck %s --check-prefix=SUM
// RUN: not loom-run --interpret %s --simulate 3 --global-entry mismatch --random-inputs 2>&1 | FileCheck %s --check-prefix=MISMATCH

// Rows split 1:1 between the groups (group {0, 1} splits its rows by
// columns), made whole on every device. Device 0 and 1 each need the other
// half of their rows (16 bytes each way) and all of group {2}'s rows (64
// bytes); device 2 needs group {0, 1}'s rows (64 bytes, 32 from each).
// GATHER: result #0: tensor<4x4xf64> norm-wise relative error 0.000e+00
// GATHER-NEXT: rank 0 exchange: calls 1, bytes sent 64, received 96
// GATHER-NEXT: rank 1 exchange: calls 1, bytes sent 64, received 96
// GATHER-NEXT: rank 2 exchange: calls 1, bytes sent 128, received 64
// REPORT: comm report @gather_group0: 2 devices, 128 bytes sent per step in all
// REPORT-NEXT: rank 0 exchange: calls 1, bytes sent 64, received 96
// REPORT-NEXT: rank 1 exchange: calls 1, bytes sent 64, received 96
// REPORT: comm report @gather_group1: 1 devices, 128 bytes sent per step in all
// REPORT-NEXT: rank 2 exchange: calls 1, bytes sent 128, received 64
module {
  func.func @gather(%x: tensor<4x4xf64> {hspmd.layout = #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>}) {
    return %x : tensor<4x4xf64>
  }
  func.func @gather_group0(%x: tensor<2x2xf64> {hspmd.global_layout = #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>})
      attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @gather} {
    %0 = hspmd.exchange %x shape [4, 4] : tensor<2x2xf64> -> tensor<4x4xf64>
        from #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>
        to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
    return %0 : tensor<4x4xf64>
  }
  func.func @gather_group1(%x: tensor<2x4xf64> {hspmd.global_layout = #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>})
      attributes {hspmd.group = #hspmd.group<[2]>, hspmd.specializes = @gather} {
    %0 = hspmd.exchange %x shape [4, 4] : tensor<2x4xf64> -> tensor<4x4xf64>
        from #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [S1:2]}, {[2]: []}>
        to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
    return %0 : tensor<4x4xf64>
  }

  // Partial sums across the groups (the input's contribution on group
  // {0, 1}, zeros on group {2}), summed into column halves on group {0, 1}
  // and the whole on {2}: two [4, 2] reductions, each between one device of
  // group {0, 1} and device 2 (64 bytes each way per reduction).
  // SUM: result #0: tensor<4x4xf64> norm-wise relative error 0.000e+00
  // SUM-NEXT: rank 0 exchange: calls 1, bytes sent 64, received 64
  // SUM-NEXT: rank 1 exchange: calls 1, bytes sent 64, received 64
  // SUM-NEXT: rank 2 exchange: calls 1, bytes sent 128, received 128
  func.func @sum(%x: tensor<4x4xf64> {hspmd.layout = #hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>}) {
    return %x : tensor<4x4xf64>
  }
  func.func @sum_group0(%x: tensor<4x2xf64> {hspmd.global_layout = #hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x2xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @sum} {
    %0 = hspmd.exchange %x shape [4, 4] : tensor<4x2xf64> -> tensor<4x2xf64>
        from #hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2]: []}>
        to #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
    return %0 : tensor<4x2xf64>
  }
  func.func @sum_group1(%x: tensor<4x4xf64> {hspmd.global_layout = #hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      attributes {hspmd.group = #hspmd.group<[2]>, hspmd.specializes = @sum} {
    %0 = hspmd.exchange %x shape [4, 4] : tensor<4x4xf64> -> tensor<4x4xf64>
        from #hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2]: []}>
        to #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
    return %0 : tensor<4x4xf64>
  }

  // The groups disagree on the exchange (different targets): reported with
  // both, never a hang.
  // MISMATCH: error: ranks 0 and 2 disagree on an exchange
  func.func @mismatch(%x: tensor<4x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>}) {
    return %x : tensor<4x4xf64>
  }
  func.func @mismatch_group0(%x: tensor<4x2xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x2xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @mismatch} {
    %0 = hspmd.exchange %x shape [4, 4] : tensor<4x2xf64> -> tensor<4x2xf64>
        from #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
        to #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
    return %0 : tensor<4x2xf64>
  }
  func.func @mismatch_group1(%x: tensor<4x4xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      -> (tensor<4x4xf64> {hspmd.global_layout = #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>})
      attributes {hspmd.group = #hspmd.group<[2]>, hspmd.specializes = @mismatch} {
    %0 = hspmd.exchange %x shape [4, 4] : tensor<4x4xf64> -> tensor<4x4xf64>
        from #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[2]: []}>
        to #hspmd.union<replicated: {[0, 1]: [S0:2]}, {[2]: []}>
    return %0 : tensor<4x4xf64>
  }
}
