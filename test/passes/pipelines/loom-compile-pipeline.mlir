// --loom-compile-pipeline: the call layer, then the target's emission; its
// result printed as C++ is what loom-translate's translations print (they
// call the same pipeline). A single-device training step of one parameter.
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd lr=0.1" -o %t.step.mlir
// RUN: loom-opt %t.step.mlir --loom-compile-pipeline="target=host entry=f_train_step" | FileCheck %s
// RUN: loom-opt %t.step.mlir --loom-compile-pipeline=target=host | loom-translate --mlir-to-cpp -o %t.opt.cpp
// RUN: loom-translate --loom-to-host-cpp %t.step.mlir -o %t.translate.cpp
// RUN: diff %t.opt.cpp %t.translate.cpp
// RUN: FileCheck %s --check-prefix=CPP < %t.opt.cpp
// RUN: loom-opt %t.step.mlir --loom-compile-pipeline=target=cuda | loom-translate --mlir-to-cpp | FileCheck %s --check-prefix=CUDA
// RUN: loom-opt %t.step.mlir --loom-compile-pipeline=target=ascend | loom-translate --mlir-to-cpp | FileCheck %s --check-prefix=ASCEND
// A target Loom does not have, and a step that does not exist.
// RUN: not loom-opt %t.step.mlir --loom-compile-pipeline=target=tpu 2>&1 | FileCheck %s --check-prefix=TPU
// RUN: not loom-opt %t.step.mlir --loom-compile-pipeline=entry=nope 2>&1 | FileCheck %s --check-prefix=ENTRY

// The buffers carry the source's names (nn.name, recorded by loom-opt and
// kept by nn-training-step; the momentum named after its parameter).
// CHECK-LABEL: emitc.class @f_train_step
// CHECK: emitc.field @w : !emitc.ptr<f32>
// CHECK: emitc.field @w_momentum : !emitc.ptr<f32>
// CHECK: emitc.field @x : !emitc.ptr<f32>
// CHECK: emitc.func @main

// CPP: #include "runtime/host/Program.h"
// CPP: class f_train_step {
// CPP: loom::host::matmul(
// CUDA: #include "runtime/cuda/Program.h"
// CUDA: loom::cuda::matmul(
// ASCEND: #include "runtime/ascend/Program.h"
// ASCEND: loom::ascend::matmul(

// TPU: for the --target option: Cannot find option named 'tpu'!
// ENTRY: error: no function @nope to lower

func.func @f(%x: tensor<2x4xf32> {nn.data}, %w: tensor<4x3xf32> {nn.param})
    -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %s = nn.mul %y, %y : tensor<2x3xf32>, tensor<2x3xf32>
  %l = nn.reduce mean %s dims = [0, 1] : tensor<2x3xf32>
  return %l : tensor<f32>
}
