// loom-opt loads the upstream dialects Loom programs combine with (func,
// arith, tensor, and shard for interop) next to nn and hspmd, and round-trips
// them; generic upstream transforms are available, shard's passes are not.
// RUN: loom-opt %s | FileCheck %s
// RUN: %check-round-trip %s %t
// RUN: loom-opt %s --canonicalize --cse | FileCheck %s --check-prefix=CANON
// RUN: not loom-opt %s --sharding-propagation 2>&1 | FileCheck %s --check-prefix=NOSHARD
// RUN: loom-opt --help | FileCheck %s --check-prefix=HELP

// CHECK: shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @mixed
// CHECK: arith.constant
// CHECK: tensor.empty
// CHECK: shard.sharding @grid split_axes = {{\[\[}}0]]
// CHECK: nn.add
// CHECK: hspmd.annotate
// CANON-LABEL: func.func @mixed
// NOSHARD: Unknown command line argument '--sharding-propagation'
// HELP-DAG: --hspmd-print-shards
// HELP-DAG: --canonicalize
module {
  shard.grid @grid(shape = 2x2)
  func.func @mixed(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, !shard.sharding) {
    %c = arith.constant 1.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %y = nn.add %x, %e : tensor<4x8xf32>, tensor<4x8xf32>
    %z = hspmd.annotate %y : tensor<4x8xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
    return %z, %s : tensor<4x8xf32>, !shard.sharding
  }
}
