// RUN: loom-opt %s --loom-plan-arena -o /dev/null | FileCheck %s
// RUN: loom-translate --loom-to-host-cpp --loom-entry swap %s | FileCheck %s --check-prefix=CPP

// Two parameters swapped by the step: each copy back reads the argument
// the other one overwrites, so both values are first saved (snapshots in
// the persistent part), then copied back.
// CHECK: arena @swap: 256 bytes per device (persistent 256, transient peak 0 of 0 without reuse), 4 buffers, 0 updates in place, 2 copied back
// CPP: void run() {
// CPP-NEXT: loom::host::copy(previous_b, {8}, b, {8});
// CPP-NEXT: loom::host::copy(previous_a, {8}, a, {8});
// CPP-NEXT: loom::host::copy(a, {8}, previous_b, {8});
// CPP-NEXT: loom::host::copy(b, {8}, previous_a, {8});
func.func @swap(%a: tensor<8xf32> {nn.param, nn.name = "a"},
                %b: tensor<8xf32> {nn.param, nn.name = "b"})
    -> (tensor<8xf32> {nn.updates = 0 : i64}, tensor<8xf32> {nn.updates = 1 : i64}) {
  return %b, %a : tensor<8xf32>, tensor<8xf32>
}
