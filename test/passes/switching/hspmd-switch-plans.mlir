// RUN: loom-opt %s --hspmd-switch-plans -split-input-file -o /dev/null | FileCheck %s
// RUN: loom-opt %s --hspmd-switch-plans=relabel=1 -split-input-file -o /dev/null | FileCheck %s --check-prefix=RELABEL
// RUN: loom-opt %s --hspmd-switch-plans=from=dp -split-input-file -o /dev/null | FileCheck %s --check-prefix=FROM

// Three strategies of a two-weight set on four devices of one node: TP2 on
// devices 0, 1, TP4 on 0-3 (overlapping groups), data parallel on 0-3
// (the optimizer's). w is [8, 16] f64 (1024 bytes), b is [16] f64 (128).
// CHECK-LABEL: switch plans @step: 2 tensors, strategies "tp2", "tp4", "dp" (optimizer "dp")
// TP2 -> TP4: w as in the unit test (768 of 1024 bytes move, 512 after
// relabelling), b the same by quarters (96, 64).
// CHECK-NEXT: switch "tp2" -> "tp4"
// CHECK-NEXT:   volume 864 bytes (identity minimum 864, relabelled minimum 576), kept 288
// CHECK-NEXT:   messages 3, largest sent 576 (bound 576), received 288 (bound 288)
// CHECK-NEXT:   cross-node 0 (bound 0), largest link 0 (bound 0)
// TP2 -> DP: device 0 and 1 each lack the other half, 2 and 3 everything.
// CHECK-NEXT: switch "tp2" -> "dp"
// CHECK-NEXT:   volume 3456 bytes (identity minimum 3456, relabelled minimum 3456), kept 1152
// CHECK-NEXT:   messages 6, largest sent 1728 (bound 1728), received 1152 (bound 1152)
// CHECK: switch "dp" -> "tp4"
// CHECK-NEXT:   volume 0 bytes (identity minimum 0, relabelled minimum 0), kept 1152
// CHECK-NEXT:   messages 0, largest sent 0 (bound 0), received 0 (bound 0)
// Relabelled: device 2 takes the role TP4 gave device 1; the other
// switches of the set gain nothing by relabelling.
// RELABEL-LABEL: switch plans @step
// RELABEL-NEXT: switch "tp2" -> "tp4"
// RELABEL-NEXT:   volume 576 bytes (identity minimum 864, relabelled minimum 576), kept 576
// RELABEL-NEXT:   messages 2, largest sent 288 (bound 288), received 288 (bound 288)
// RELABEL-NEXT:   cross-node 0 (bound 0), largest link 0 (bound 0)
// RELABEL-NEXT:   relabelling 1->2, 2->1
// RELABEL-NEXT: switch "tp2" -> "dp"
// RELABEL-NOT: relabelling
// RELABEL: switch plans @hetero
// Only the switches from the optimizer strategy.
// FROM-LABEL: switch plans @step
// FROM-NEXT: switch "dp" -> "tp2"
// FROM: switch "dp" -> "tp4"
// FROM-NOT: switch "tp
// FROM: switch plans @hetero
module {
  func.func @step(
      %w: tensor<8x16xf64> {nn.param, hspmd.layout = #hspmd.strategies<[
          "tp2" = <{[0, 1]: [S1:2]}>, "tp4" = <{[0, 1, 2, 3]: [S1:4]}>,
          "dp" = <{[0, 1, 2, 3]: [D:4]}>], optimizer = "dp">},
      %b: tensor<16xf64> {nn.param, hspmd.layout = #hspmd.strategies<[
          "tp2" = <{[0, 1]: [S0:2]}>, "tp4" = <{[0, 1, 2, 3]: [S0:4]}>,
          "dp" = <{[0, 1, 2, 3]: [D:4]}>], optimizer = "dp">},
      %x: tensor<4x8xf64> {nn.data}) -> tensor<4x16xf64> {
    %y = nn.matmul %x, %w : tensor<4x8xf64>, tensor<8x16xf64>
    return %y : tensor<4x16xf64>
  }
}

// -----

// A heterogeneous mix (TP4 on node 0's h200, TP2 on node 1's 910b, each
// group holding every weight) and data parallel on all six: every piece
// comes from the destination's own node, nothing crosses.
// CHECK-LABEL: switch plans @hetero: 1 tensors, strategies "mix", "dp" (optimizer "dp")
// CHECK-NEXT: switch "mix" -> "dp"
// CHECK-NEXT:   volume 4096 bytes (identity minimum 4096, relabelled minimum 4096), kept 2048
// CHECK-NEXT:   messages 14, largest sent 768 (bound 683), received 768 (bound 768)
// CHECK-NEXT:   cross-node 0 (bound 0), largest link 0 (bound 0)
// From data parallel, the TP2 group's devices each need half of w from their
// own node; nothing crosses either.
// CHECK-NEXT: switch "dp" -> "mix"
// CHECK-NEXT:   volume 0 bytes
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<2, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<3, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<4, "910b", speed = 0.5, mem = 64, node = 1>,
    #hspmd.device<5, "910b", speed = 0.5, mem = 64, node = 1>]>} {
  func.func @hetero(
      %w: tensor<8x16xf64> {nn.param, hspmd.layout = #hspmd.strategies<[
          "mix" = <replicated: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>,
          "dp" = <{[0, 1, 2, 3, 4, 5]: [D:6]}>], optimizer = "dp">}) -> tensor<8x16xf64> {
    return %w : tensor<8x16xf64>
  }
}

// -----

// Two pipeline stages to one across two nodes: stage 0's weight on node 0
// (devices 0, 1), stage 1's on node 1 (2, 3); one stage of data parallel
// on all four. Each device lacks the other stage's weight (256 bytes), all
// of it across nodes, each link forced to carry 512; each keeps its own.
// CHECK-LABEL: switch plans @stages: 2 tensors, strategies "pp", "dp" (optimizer "dp")
// CHECK-NEXT: switch "pp" -> "dp"
// CHECK-NEXT:   volume 1024 bytes (identity minimum 1024, relabelled minimum 1024), kept 1024
// CHECK-NEXT:   messages 4, largest sent 256 (bound 256), received 256 (bound 256)
// CHECK-NEXT:   cross-node 1024 (bound 1024), largest link 512 (bound 512)
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "cpu", speed = 1.0, mem = 16, node = 0>,
    #hspmd.device<1, "cpu", speed = 1.0, mem = 16, node = 0>,
    #hspmd.device<2, "cpu", speed = 1.0, mem = 16, node = 1>,
    #hspmd.device<3, "cpu", speed = 1.0, mem = 16, node = 1>]>} {
  func.func @stages(
      %w0: tensor<4x8xf64> {nn.param, hspmd.layout = #hspmd.strategies<[
          "pp" = <{[0, 1]: [D:2]}>, "dp" = <{[0, 1, 2, 3]: [D:4]}>], optimizer = "dp">},
      %w1: tensor<4x8xf64> {nn.param, hspmd.layout = #hspmd.strategies<[
          "pp" = <{[2, 3]: [D:2]}>, "dp" = <{[0, 1, 2, 3]: [D:4]}>], optimizer = "dp">}) -> tensor<4x8xf64> {
    %s = nn.add %w0, %w1 : tensor<4x8xf64>, tensor<4x8xf64>
    return %s : tensor<4x8xf64>
  }
}
