// RUN: loom-opt %s --loom-plan-arena -o /dev/null | FileCheck %s

// A chain of four 1 KiB values: each dies at the next op, so the transient
// part needs two buffers (a value and the next one being written), not
// three; the last one is written straight into the result.
// CHECK: arena @chain: 4,096 bytes per device (persistent 2,048, transient peak 2,048 of 3,072 without reuse), 5 buffers, 0 updates in place, 0 copied back
func.func @chain(%x: tensor<16x16xf32> {nn.data}) -> tensor<16x16xf32> {
  %a = nn.gelu %x : tensor<16x16xf32>
  %b = nn.gelu %a : tensor<16x16xf32>
  %c = nn.gelu %b : tensor<16x16xf32>
  %d = nn.gelu %c : tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// A value used again later stays alive: %a is read by the last op, so %b
// and %c cannot take its bytes (three buffers at the peak).
// CHECK: arena @long_lived: 4,160 bytes per device (persistent 1,088, transient peak 3,072 of 3,072 without reuse), 5 buffers
func.func @long_lived(%x: tensor<16x16xf32> {nn.data}) -> tensor<f32> {
  %a = nn.gelu %x : tensor<16x16xf32>
  %b = nn.gelu %a : tensor<16x16xf32>
  %c = nn.add %a, %b : tensor<16x16xf32>, tensor<16x16xf32>
  %l = nn.reduce sum %c dims = [0, 1] : tensor<16x16xf32>
  return %l : tensor<f32>
}

// An optimizer update that reads its parameter and state last writes them
// in place: no bytes for the new values.
// (Buffers start at multiples of 64 bytes.)
// CHECK: arena @update: 192 bytes per device (persistent 192, transient peak 0 of 0 without reuse), 3 buffers, 2 updates in place, 0 copied back
func.func @update(%p: tensor<8xf32> {nn.param}, %m: tensor<8xf32> {nn.state = 0 : i64},
                  %g: tensor<8xf32> {nn.data})
    -> (tensor<8xf32> {nn.updates = 0 : i64}, tensor<8xf32> {nn.updates = 1 : i64}) {
  %np, %nm = nn.sgd_update %p, %g, %m {lr = 1.0e-1 : f64} : tensor<8xf32>
  return %np, %nm : tensor<8xf32>, tensor<8xf32>
}

// Read after its update, the parameter cannot be overwritten: its new value
// gets its own bytes and is copied back at the end of the step.
// CHECK: arena @read_after_update: 320 bytes per device (persistent 256, transient peak 64 of 64 without reuse), 5 buffers, 1 updates in place, 1 copied back
func.func @read_after_update(%p: tensor<8xf32> {nn.param}, %m: tensor<8xf32> {nn.state = 0 : i64},
                             %g: tensor<8xf32> {nn.data})
    -> (tensor<8xf32> {nn.updates = 0 : i64}, tensor<8xf32> {nn.updates = 1 : i64}, tensor<8xf32>) {
  %np, %nm = nn.sgd_update %p, %g, %m {lr = 1.0e-1 : f64} : tensor<8xf32>
  %s = nn.add %p, %np : tensor<8xf32>, tensor<8xf32>
  return %np, %nm, %s : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// Reshapes are views: they share their operand's bytes.
// CHECK: arena @views: 2,048 bytes per device (persistent 2,048, transient peak 0 of 0 without reuse), 2 buffers
func.func @views(%x: tensor<16x16xf32> {nn.data}) -> tensor<256xf32> {
  %r = nn.reshape %x : tensor<16x16xf32> to tensor<256xf32>
  %g = nn.gelu %r : tensor<256xf32>
  return %g : tensor<256xf32>
}

// A started gather reads its operands and writes its result until its
// wait: the ids (%i, 64 bytes) and the gathered table (1 KiB) stay alive
// across the chain between them, which reuses only its own two buffers
// (2 KiB); the wait is a view of the start's buffer (no buffer of its
// own). Peak: 64 + 1,024 + 2,048 bytes (3,072 if the ids died at the
// start).
// CHECK: arena @started: 5,824 bytes per device (persistent 2,688, transient peak 3,136 of 4,160 without reuse), 9 buffers
func.func @started(%w: tensor<8x16xf32> {nn.param}, %ids: tensor<16xi64> {nn.data},
                   %x: tensor<16x16xf32> {nn.data}) -> tensor<16x16xf32>
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %i = nn.slice %ids offsets = [0] sizes = [8] strides = [1] : tensor<16xi64>
  %p = hspmd.sparse_all_gather_start %w rows %i over [0] of [2] : tensor<8x16xf32>, tensor<8xi64> -> tensor<16x16xf32>
  %a = nn.gelu %x : tensor<16x16xf32>
  %b = nn.gelu %a : tensor<16x16xf32>
  %c = nn.gelu %b : tensor<16x16xf32>
  %t = hspmd.wait %p keep(%w, %i : tensor<8x16xf32>, tensor<8xi64>) : tensor<16x16xf32>
  %y = nn.add %c, %t : tensor<16x16xf32>, tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
