// Sharded runs from global inputs (loom-run --simulate --global-entry): the
// inputs of @mlp are cut into shards by the hspmd.layout of each argument
// of a hand-specialised function, the ranks run it, the results are put
// back by their layouts (replicas must agree bitwise, partial sums are
// added) and compared with @mlp on one device by norm-wise relative error.
//
// Megatron tensor parallelism on 2 devices: W1 split by columns, W2 by rows,
// one all-reduce of the 8x16 f64 output (1 KiB: each rank sends half and
// receives half in the reduce-scatter, then the same in the all-gather).
// RUN: loom-run --interpret %s --simulate 2 --entry mlp_tp --global-entry mlp --random-inputs --seed 1 --comm-stats | FileCheck %s --check-prefix=TP
// TP: result #0: tensor<8x16xf64> norm-wise relative error {{[0-9.]+e-(1[1-9]|[2-9][0-9])}}
// TP-NEXT: result #1: tensor<8x16xf64> norm-wise relative error {{[0-9.]+e-(1[1-9]|[2-9][0-9])}}
// TP-NEXT: rank 0 all_reduce: calls 1, bytes sent 1024, received 1024
// TP-NEXT: rank 1 all_reduce: calls 1, bytes sent 1024, received 1024
//
// Data parallelism on 2 devices needs no communication for the forward.
// RUN: loom-run --interpret %s --simulate 2 --entry mlp_dp --global-entry mlp --random-inputs --seed 2 --tolerance 1e-14 --comm-stats | FileCheck %s --check-prefix=DP
// (Within 1e-14, not bitwise: each rank's GEMM has half the rows, and
// OpenBLAS may pick other kernels for another shape.)
// DP: result #0: tensor<8x16xf64> norm-wise relative error {{[0-9]\.[0-9]{3}e[-+][0-9]+}}{{$}}
// DP-NOT: rank
//
// 2-D: data parallel 2 x tensor parallel 2 on 4 devices; the all-reduce runs
// over mesh axis 1 only (sub-groups {0, 1} and {2, 3}), each on a 4x16 half.
// RUN: loom-run --interpret %s --simulate 4 --entry mlp_2d --global-entry mlp --random-inputs --seed 3 --comm-stats | FileCheck %s --check-prefix=TWOD
// TWOD: result #0: tensor<8x16xf64> norm-wise relative error {{[0-9.]+e-(1[1-9]|[2-9][0-9])}}
// TWOD-COUNT-4: all_reduce: calls 1, bytes sent 512, received 512
//
// A specialisation that forgets the all-reduce but claims a duplicated
// result is caught when the result is put back.
// RUN: not loom-run --interpret %s --simulate 2 --entry mlp_tp_wrong --global-entry mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=WRONG
// WRONG: error: result #0: devices 0 and 1 should hold the same replica of the block at [0, 0] but differ
// RUN: not loom-run --interpret %s --simulate 3 --entry mlp_tp --global-entry mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: @mlp_tp runs on 2 devices but the simulator has 3 ranks
// RUN: not loom-run --interpret %s --entry mlp_tp --global-entry mlp --random-inputs 2>&1 | FileCheck %s --check-prefix=NEEDS
// NEEDS: error: --global-entry needs --simulate N (and --entry naming the specialised function, or none to run every group's)

func.func @mlp(%x: tensor<8x16xf64>, %w1: tensor<16x32xf64>,
               %w2: tensor<32x16xf64>) -> (tensor<8x16xf64>, tensor<8x16xf64>) {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x32xf64>
  %g = nn.tanh %h : tensor<8x32xf64>
  %y = nn.matmul %g, %w2 : tensor<8x32xf64>, tensor<32x16xf64>
  return %y, %y : tensor<8x16xf64>, tensor<8x16xf64>
}

// Result #1 stays a partial sum; putting it back adds the contributions.
func.func @mlp_tp(
    %x: tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>},
    %w1: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w2: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>},
        tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [P(sum):2]}>}) {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x16xf64>
  %g = nn.tanh %h : tensor<8x16xf64>
  %p = nn.matmul %g, %w2 : tensor<8x16xf64>, tensor<16x16xf64>
  %y = hspmd.all_reduce sum %p over [0] of [2] : tensor<8x16xf64> -> tensor<8x16xf64>
  return %y, %p : tensor<8x16xf64>, tensor<8x16xf64>
}

func.func @mlp_tp_wrong(
    %x: tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>},
    %w1: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S1:2]}>},
    %w2: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>},
        tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [P(sum):2]}>}) {
  %h = nn.matmul %x, %w1 : tensor<8x16xf64>, tensor<16x16xf64>
  %g = nn.tanh %h : tensor<8x16xf64>
  %p = nn.matmul %g, %w2 : tensor<8x16xf64>, tensor<16x16xf64>
  return %p, %p : tensor<8x16xf64>, tensor<8x16xf64>
}

func.func @mlp_dp(
    %x: tensor<4x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %w1: tensor<16x32xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>},
    %w2: tensor<32x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>})
    -> (tensor<4x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S0:2]}>},
        tensor<4x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S0:2]}>}) {
  %h = nn.matmul %x, %w1 : tensor<4x16xf64>, tensor<16x32xf64>
  %g = nn.tanh %h : tensor<4x32xf64>
  %y = nn.matmul %g, %w2 : tensor<4x32xf64>, tensor<32x16xf64>
  return %y, %y : tensor<4x16xf64>, tensor<4x16xf64>
}

func.func @mlp_2d(
    %x: tensor<4x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>},
    %w1: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>},
    %w2: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}>})
    -> (tensor<4x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>},
        tensor<4x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>}) {
  %h = nn.matmul %x, %w1 : tensor<4x16xf64>, tensor<16x16xf64>
  %g = nn.tanh %h : tensor<4x16xf64>
  %p = nn.matmul %g, %w2 : tensor<4x16xf64>, tensor<16x16xf64>
  %y = hspmd.all_reduce sum %p over [1] of [2, 2] : tensor<4x16xf64> -> tensor<4x16xf64>
  return %y, %p : tensor<4x16xf64>, tensor<4x16xf64>
}
