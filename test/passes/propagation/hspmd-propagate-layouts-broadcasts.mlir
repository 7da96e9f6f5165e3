// A broadcast with several users gets a copy a user (hspmd-propagate-layouts
// unties it first): each copy takes the layout its user needs along the
// broadcast dimensions with no communication. Shared, the value had one
// layout, and the other user's reshard was an all-to-all; now it is a
// local slice. Copies that end with their original's layouts fold back.
// RUN: loom-opt %s --loom-partition-pipeline | FileCheck %s
// RUN: loom-opt %s --loom-partition-pipeline | loom-run --interpret - --entry shared_group0 --global-entry shared --simulate 2 --random-inputs --tolerance 0 --comm-stats | FileCheck %s --check-prefix=SIM --implicit-check-not=all_to_all

// CHECK-LABEL: func.func @shared_group0
// CHECK-COUNT-2: nn.broadcast
// CHECK-NOT: hspmd.all_to_all
// CHECK: return

// Both users want the same layout: one broadcast stays.
// CHECK-LABEL: func.func @agreed_group0
// CHECK: nn.broadcast
// CHECK-NOT: nn.broadcast
// CHECK: return

// SIM: result #0: tensor<4x8xf32> norm-wise relative error 0.000e+00
// SIM: result #1: tensor<4x8xf32> norm-wise relative error 0.000e+00
// SIM: rank 0 local_slice: calls 1

func.func @shared(%a: tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                  %b: tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                  %v: tensor<4x1xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
    -> (tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
        tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) {
  %bc = nn.broadcast %v : tensor<4x1xf32> to tensor<4x8xf32>
  %x = nn.add %a, %bc : tensor<4x8xf32>, tensor<4x8xf32>
  %y = nn.add %b, %bc : tensor<4x8xf32>, tensor<4x8xf32>
  return %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

func.func @agreed(%a: tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                  %b: tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
                  %v: tensor<4x1xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
    -> (tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>},
        tensor<4x8xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>}) {
  %bc = nn.broadcast %v : tensor<4x1xf32> to tensor<4x8xf32>
  %x = nn.add %a, %bc : tensor<4x8xf32>, tensor<4x8xf32>
  %y = nn.add %b, %bc : tensor<4x8xf32>, tensor<4x8xf32>
  return %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
}
