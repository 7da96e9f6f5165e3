// --loom-partition-pipeline is the hand-listed chain of partitioning passes:
// the same IR, byte for byte. With select-shares (and its alignment) and
// bucketing, as scripts/run.sh partitions the bundled heterogeneous MLP:
// RUN: loom-opt %loom_src_root/examples/mlp_hetero.mlir --loom-training-pipeline="optimizer=sgd lr=0.2 momentum=0.9" --hspmd-select-shares=alignment=16 --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize --hspmd-moe-sparse-exchange --hspmd-bucket-gradients --hspmd-overlap-fetches -o %t.chain.mlir
// RUN: loom-opt %loom_src_root/examples/mlp_hetero.mlir --loom-training-pipeline="optimizer=sgd lr=0.2 momentum=0.9" --loom-partition-pipeline="select-shares=true alignment=16" -o %t.named.mlir
// RUN: diff %t.chain.mlir %t.named.mlir
// RUN: FileCheck %s < %t.named.mlir
// The defaults (no share selection, bucketing of 25 MiB) against the chain
// of the run-config path, and bucket=false against the chain without it.
// RUN: loom-opt %s --loom-training-pipeline --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize --hspmd-moe-sparse-exchange --hspmd-bucket-gradients --hspmd-overlap-fetches -o %t.chain2.mlir
// RUN: loom-opt %s --loom-training-pipeline --loom-partition-pipeline -o %t.named2.mlir
// RUN: diff %t.chain2.mlir %t.named2.mlir
// RUN: loom-opt %s --loom-training-pipeline --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize --hspmd-moe-sparse-exchange --hspmd-bucket-gradients=bucket-bytes=64 --hspmd-overlap-fetches -o %t.chain3.mlir
// RUN: loom-opt %s --loom-training-pipeline --loom-partition-pipeline=bucket-bytes=64 -o %t.named3.mlir
// RUN: diff %t.chain3.mlir %t.named3.mlir
// RUN: loom-opt %s --loom-training-pipeline --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize --hspmd-moe-sparse-exchange -o %t.chain4.mlir
// RUN: loom-opt %s --loom-training-pipeline --loom-partition-pipeline="bucket=false overlap=false" -o %t.named4.mlir
// RUN: diff %t.chain4.mlir %t.named4.mlir
// RUN: loom-opt %s --loom-partition-pipeline="moe-sparse=false overlap=false" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DENSE
// The passes it runs, in order.
// RUN: loom-opt %s --loom-partition-pipeline="select-shares=true" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE
// A bad option is an error that names it.
// RUN: not loom-opt %s --loom-partition-pipeline="alignment=sixteen" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @mlp_loss_train_step_group0
// CHECK-SAME: hspmd.group = #hspmd.group<[0, 1, 2, 3]
// CHECK-LABEL: func.func @mlp_loss_train_step_group1
// CHECK-SAME: hspmd.group = #hspmd.group<[4, 5]

// (loom-opt first records the source's argument names; strategy sets
// become one function per strategy before anything else.)
// PIPELINE: nn-name-arguments-from-source,
// PIPELINE-NEXT: hspmd-specialize-strategies{max-strategies=16},
// PIPELINE-NEXT: hspmd-select-shares{alignment=1 reserved-gib=0.000000e+00},
// PIPELINE-NEXT: hspmd-propagate-layouts,
// PIPELINE-NEXT: hspmd-insert-reshards,
// PIPELINE-NEXT: hspmd-lower-reshards,
// PIPELINE-NEXT: hspmd-specialize,
// PIPELINE-NEXT: hspmd-moe-sparse-exchange,
// PIPELINE-NEXT: hspmd-bucket-gradients{bucket-bytes=26214400},
// PIPELINE-NEXT: hspmd-overlap-fetches
// DENSE: hspmd-specialize,
// DENSE-NEXT: hspmd-bucket-gradients
// DENSE-NOT: hspmd-overlap-fetches

// BAD: for the --alignment option: 'sixteen' value invalid for {{.*}} argument!

// A data-parallel step on two devices whose gradients the pipeline buckets.
func.func @dp(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
              %w: tensor<16x4xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>},
              %b: tensor<4xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
    -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %z = nn.add %y, %b : tensor<8x4xf32>, tensor<4xf32>
  %s = nn.mul %z, %z : tensor<8x4xf32>, tensor<8x4xf32>
  %l = nn.reduce mean %s dims = [0, 1] : tensor<8x4xf32>
  return %l : tensor<f32>
}
