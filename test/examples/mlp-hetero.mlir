// The bundled example (the README's main job): it verifies, round-trips, and
// every annotated value's shards are the ones the 3:1 heterogeneous layout
// implies.
// RUN: loom-opt %loom_src_root/examples/mlp_hetero.mlir --hspmd-print-shards -o /dev/null | FileCheck %s
// RUN: %check-round-trip %loom_src_root/examples/mlp_hetero.mlir %t

// CHECK-LABEL: value %0 : tensor<64x128xf32> at "{{.*}}examples/mlp_hetero.mlir":30:11
// CHECK-NEXT: layout #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, D:2]}, {[4, 5]: [D:2]}>
// CHECK-NEXT: device 0 (h200): shard 24x128 at [0, 0], replica 0/2
// CHECK-NEXT: device 1 (h200): shard 24x128 at [0, 0], replica 1/2
// CHECK-NEXT: device 2 (h200): shard 24x128 at [24, 0], replica 0/2
// CHECK-NEXT: device 3 (h200): shard 24x128 at [24, 0], replica 1/2
// CHECK-NEXT: device 4 (910b): shard 16x128 at [48, 0], replica 0/2
// CHECK-NEXT: device 5 (910b): shard 16x128 at [48, 0], replica 1/2
// CHECK-LABEL: value %1 : tensor<128x512xf32> at "{{.*}}examples/mlp_hetero.mlir":34:12
// CHECK-NEXT: layout #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK-NEXT: device 0 (h200): shard 128x256 at [0, 0], replica 0/3
// CHECK-NEXT: device 1 (h200): shard 128x256 at [0, 256], replica 0/3
// CHECK-NEXT: device 2 (h200): shard 128x256 at [0, 0], replica 1/3
// CHECK-NEXT: device 3 (h200): shard 128x256 at [0, 256], replica 1/3
// CHECK-NEXT: device 4 (910b): shard 128x256 at [0, 0], replica 2/3
// CHECK-NEXT: device 5 (910b): shard 128x256 at [0, 256], replica 2/3
// CHECK-LABEL: value %3 : tensor<64x512xf32> at "{{.*}}examples/mlp_hetero.mlir":37:11
// CHECK-NEXT: layout #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK-NEXT: device 0 (h200): shard 24x256 at [0, 0]
// CHECK-NEXT: device 1 (h200): shard 24x256 at [0, 256]
// CHECK-NEXT: device 2 (h200): shard 24x256 at [24, 0]
// CHECK-NEXT: device 3 (h200): shard 24x256 at [24, 256]
// CHECK-NEXT: device 4 (910b): shard 16x256 at [48, 0]
// CHECK-NEXT: device 5 (910b): shard 16x256 at [48, 256]
// CHECK-LABEL: value %5 : tensor<512x64xf32> at "{{.*}}examples/mlp_hetero.mlir":41:12
// CHECK-NEXT: layout #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S0:2]}, {[4, 5]: [S0:2]}>
// CHECK-NEXT: device 0 (h200): shard 256x64 at [0, 0], replica 0/3
// CHECK-NEXT: device 1 (h200): shard 256x64 at [256, 0], replica 0/3
// CHECK-NEXT: device 2 (h200): shard 256x64 at [0, 0], replica 1/3
// CHECK-NEXT: device 3 (h200): shard 256x64 at [256, 0], replica 1/3
// CHECK-NEXT: device 4 (910b): shard 256x64 at [0, 0], replica 2/3
// CHECK-NEXT: device 5 (910b): shard 256x64 at [256, 0], replica 2/3
// CHECK-LABEL: value %7 : tensor<64x64xf32> at "{{.*}}examples/mlp_hetero.mlir":44:16
// CHECK-NEXT: layout #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, P(sum):2]}, {[4, 5]: [P(sum):2]}>
// CHECK-NEXT: device 0 (h200): shard 24x64 at [0, 0], partial 0/2 (sum)
// CHECK-NEXT: device 1 (h200): shard 24x64 at [0, 0], partial 1/2 (sum)
// CHECK-NEXT: device 2 (h200): shard 24x64 at [24, 0], partial 0/2 (sum)
// CHECK-NEXT: device 3 (h200): shard 24x64 at [24, 0], partial 1/2 (sum)
// CHECK-NEXT: device 4 (910b): shard 16x64 at [48, 0], partial 0/2 (sum)
// CHECK-NEXT: device 5 (910b): shard 16x64 at [48, 0], partial 1/2 (sum)
