// The device library calls the communication report predicts
// (--hspmd-comm-report=calls=1): what the CUDA and Ascend runtimes must
// record at their NCCL/HCCL call sites (test/e2e/check_calls.py compares
// them with real runs). Per device, in program order, numbered among its
// collectives: the communicator is the device's sub-group over the axes,
// members in the mixed-radix order of the axes' digits (device 1 = digits
// (0, 1) of the 2 x 2 mesh: over axis 0 {1, 3}, over axis 1 {0, 1}); an
// all-reduce's count is the operand's elements, an all-gather's the
// operand's (per member), a reduce-scatter's the result's (4x4 over 2:
// 8); an all-to-all sends and receives 1/k of the operand to and from
// every member, itself included; local_slice calls nothing; a permute
// by perm [1, 0] swaps devices 1 and 2 (digits (0, 1) and (1, 0)) and
// leaves 0 and 3 in place, which call nothing. An op over another group
// than its function's (a cell) uses the op's group; mesh axes need not
// be adjacent (axes [0, 2] of a 2 x 2 x 2 mesh: device 5 = (1, 0, 1) is in
// {0, 1, 4, 5}).
// RUN: loom-opt %s --hspmd-comm-report=calls=1 -o /dev/null | grep '^call' | FileCheck %s
// Without the option, no call lines.
// RUN: loom-opt %s --hspmd-comm-report -o /dev/null | FileCheck %s --check-prefix=NONE
// NONE-NOT: call rank
// CHECK: call rank 0 #1 all_reduce: all_reduce f64 x 7 over {0, 1, 2, 3}
// CHECK-NEXT: call rank 0 #2 all_reduce: all_reduce f64 x 7 over {0, 1}
// CHECK-NEXT: call rank 0 #3 all_gather: all_gather f64 x 6 over {0, 2}
// CHECK-NEXT: call rank 0 #4 reduce_scatter: reduce_scatter f32 x 8 over {0, 1}
// CHECK-NEXT: call rank 0 #5 all_to_all: send f32 x 8 over {0, 2} to 0
// CHECK-NEXT: call rank 0 #5 all_to_all: recv f32 x 8 over {0, 2} from 0
// CHECK-NEXT: call rank 0 #5 all_to_all: send f32 x 8 over {0, 2} to 2
// CHECK-NEXT: call rank 0 #5 all_to_all: recv f32 x 8 over {0, 2} from 2
// CHECK-NEXT: call rank 1 #1 all_reduce: all_reduce f64 x 7 over {0, 1, 2, 3}
// CHECK-NEXT: call rank 1 #2 all_reduce: all_reduce f64 x 7 over {0, 1}
// CHECK-NEXT: call rank 1 #3 all_gather: all_gather f64 x 6 over {1, 3}
// CHECK-NEXT: call rank 1 #4 reduce_scatter: reduce_scatter f32 x 8 over {0, 1}
// CHECK-NEXT: call rank 1 #5 all_to_all: send f32 x 8 over {1, 3} to 1
// CHECK-NEXT: call rank 1 #5 all_to_all: recv f32 x 8 over {1, 3} from 1
// CHECK-NEXT: call rank 1 #5 all_to_all: send f32 x 8 over {1, 3} to 3
// CHECK-NEXT: call rank 1 #5 all_to_all: recv f32 x 8 over {1, 3} from 3
// CHECK-NEXT: call rank 1 #6 permute: send f64 x 6 over {0, 1, 2, 3} to 2
// CHECK-NEXT: call rank 1 #6 permute: recv f64 x 6 over {0, 1, 2, 3} from 2
// CHECK-NEXT: call rank 2 #1 all_reduce: all_reduce f64 x 7 over {0, 1, 2, 3}
// CHECK-NEXT: call rank 2 #2 all_reduce: all_reduce f64 x 7 over {2, 3}
// CHECK-NEXT: call rank 2 #3 all_gather: all_gather f64 x 6 over {0, 2}
// CHECK-NEXT: call rank 2 #4 reduce_scatter: reduce_scatter f32 x 8 over {2, 3}
// CHECK-NEXT: call rank 2 #5 all_to_all: send f32 x 8 over {0, 2} to 0
// CHECK-NEXT: call rank 2 #5 all_to_all: recv f32 x 8 over {0, 2} from 0
// CHECK-NEXT: call rank 2 #5 all_to_all: send f32 x 8 over {0, 2} to 2
// CHECK-NEXT: call rank 2 #5 all_to_all: recv f32 x 8 over {0, 2} from 2
// CHECK-NEXT: call rank 2 #6 permute: send f64 x 6 over {0, 1, 2, 3} to 1
// CHECK-NEXT: call rank 2 #6 permute: recv f64 x 6 over {0, 1, 2, 3} from 1
// CHECK-NEXT: call rank 3 #1 all_reduce: all_reduce f64 x 7 over {0, 1, 2, 3}
// CHECK-NEXT: call rank 3 #2 all_reduce: all_reduce f64 x 7 over {2, 3}
// CHECK-NEXT: call rank 3 #3 all_gather: all_gather f64 x 6 over {1, 3}
// CHECK-NEXT: call rank 3 #4 reduce_scatter: reduce_scatter f32 x 8 over {2, 3}
// CHECK-NEXT: call rank 3 #5 all_to_all: send f32 x 8 over {1, 3} to 1
// CHECK-NEXT: call rank 3 #5 all_to_all: recv f32 x 8 over {1, 3} from 1
// CHECK-NEXT: call rank 3 #5 all_to_all: send f32 x 8 over {1, 3} to 3
// CHECK-NEXT: call rank 3 #5 all_to_all: recv f32 x 8 over {1, 3} from 3
// CHECK-NEXT: call rank 4 #1 all_gather: all_gather i64 x 6 over {4, 5}
// CHECK-NEXT: call rank 5 #1 all_gather: all_gather i64 x 6 over {4, 5}
// CHECK-NEXT: call rank 0 #1 all_reduce: all_reduce f32 x 5 over {0, 1, 4, 5}
// CHECK-NEXT: call rank 1 #1 all_reduce: all_reduce f32 x 5 over {0, 1, 4, 5}
// CHECK-NEXT: call rank 2 #1 all_reduce: all_reduce f32 x 5 over {2, 3, 6, 7}
// CHECK-NEXT: call rank 3 #1 all_reduce: all_reduce f32 x 5 over {2, 3, 6, 7}
// CHECK-NEXT: call rank 4 #1 all_reduce: all_reduce f32 x 5 over {0, 1, 4, 5}
// CHECK-NEXT: call rank 5 #1 all_reduce: all_reduce f32 x 5 over {0, 1, 4, 5}
// CHECK-NEXT: call rank 6 #1 all_reduce: all_reduce f32 x 5 over {2, 3, 6, 7}
// CHECK-NEXT: call rank 7 #1 all_reduce: all_reduce f32 x 5 over {2, 3, 6, 7}
// CHECK-NOT: call

func.func @mix(%a: tensor<7xf64>, %b: tensor<2x3xf64>, %c: tensor<4x4xf32>)
    -> (tensor<7xf64>, tensor<4x3xf64>, tensor<2x4xf32>, tensor<8x2xf32>, tensor<4x2xf32>, tensor<2x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3]>} {
  %0 = hspmd.all_reduce sum %a over [0, 1] of [2, 2] : tensor<7xf64> -> tensor<7xf64>
  %1 = hspmd.all_reduce max %0 over [1] of [2, 2] : tensor<7xf64> -> tensor<7xf64>
  %2 = hspmd.all_gather %b dim 0 over [0] of [2, 2] : tensor<2x3xf64> -> tensor<4x3xf64>
  %3 = hspmd.reduce_scatter sum %c dim 0 over [1] of [2, 2] : tensor<4x4xf32> -> tensor<2x4xf32>
  %4 = hspmd.all_to_all %c split 1 concat 0 over [0] of [2, 2] : tensor<4x4xf32> -> tensor<8x2xf32>
  %5 = hspmd.local_slice %c dim 1 over [1] of [2, 2] : tensor<4x4xf32> -> tensor<4x2xf32>
  %6 = hspmd.permute %b perm [1, 0] over [0, 1] of [2, 2] : tensor<2x3xf64> -> tensor<2x3xf64>
  return %1, %2, %3, %4, %5, %6 : tensor<7xf64>, tensor<4x3xf64>, tensor<2x4xf32>, tensor<8x2xf32>, tensor<4x2xf32>, tensor<2x3xf64>
}
func.func @cell(%b: tensor<2x3xi64>) -> tensor<4x3xi64>
    attributes {hspmd.group = #hspmd.group<[4, 5]>} {
  %0 = hspmd.all_gather %b dim 0 over [0] of [2, 2] : tensor<2x3xi64> -> tensor<4x3xi64> {hspmd.group = #hspmd.group<[2, 4, 3, 5]>}
  return %0 : tensor<4x3xi64>
}
func.func @wide(%a: tensor<5xf32>) -> tensor<5xf32>
    attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3, 4, 5, 6, 7]>} {
  %0 = hspmd.all_reduce sum %a over [0, 2] of [2, 2, 2] : tensor<5xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
