// Tensors above the interpreter's size limit (4 GiB by default) are a
// diagnostic, not an allocation failure.
// RUN: split-file --leading-lines %s %t
// RUN: not loom-run --interpret %t/empty.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not loom-run --interpret %t/broadcast.mlir --random-inputs 2>&1 | FileCheck %s --check-prefix=BROADCAST

//--- empty.mlir
// EMPTY: empty.mlir:[[@LINE+2]]:8: error: 'tensor.empty' op a tensor of shape [100000000000] of f32 exceeds the interpreter's limit of 4294967296 bytes
func.func @main() -> tensor<100000000000xf32> {
  %0 = tensor.empty() : tensor<100000000000xf32>
  return %0 : tensor<100000000000xf32>
}

//--- broadcast.mlir
// BROADCAST: broadcast.mlir:[[@LINE+2]]:8: error: 'nn.broadcast' op a tensor of shape [100000, 100000] of f32 exceeds
func.func @main(%a: tensor<1xf32>) -> tensor<100000x100000xf32> {
  %0 = nn.broadcast %a : tensor<1xf32> to tensor<100000x100000xf32>
  return %0 : tensor<100000x100000xf32>
}
