// loom-opt records the source's names of function arguments as nn.name
// before the command line's pipeline runs, so the output (which prints
// arguments as %argN) still says which argument is which; nn-training-step
// carries them to the step's parameters and data and names the optimizer
// state after its parameter.
// RUN: loom-opt %s -split-input-file | FileCheck %s
// RUN: loom-opt %s -split-input-file --loom-training-pipeline="optimizer=adamw" | FileCheck %s --check-prefix=STEP
// RUN: loom-opt %s -split-input-file --loom-training-pipeline="optimizer=sgd momentum=0.9" | FileCheck %s --check-prefix=SGD
// Names survive printing and parsing again, and a second loom-opt keeps them.
// RUN: loom-opt %s -split-input-file | loom-opt -split-input-file | FileCheck %s
// From standard input too.
// RUN: cat %s | loom-opt -split-input-file | FileCheck %s
// IR printed with its locations and without the names: loom-opt's own
// naming finds no %name tokens (the locations point into this file, the
// tokens are %argN), --nn-name-arguments-from-source reads this file.
// RUN: loom-opt %s -split-input-file --mlir-print-debuginfo | sed -e 's/ {nn.name = "[^"]*"}//g' -e 's/, nn.name = "[^"]*"//g' -e 's/nn.name = "[^"]*", //g' > %t.located.mlir
// RUN: loom-opt %t.located.mlir -split-input-file | FileCheck %s --check-prefix=NONE
// RUN: loom-opt %t.located.mlir -split-input-file --nn-name-arguments-from-source | FileCheck %s --check-prefix=FILES
// NONE-LABEL: func.func @mlp
// NONE-NOT: nn.name
// NONE-LABEL: func.func @unnamed
// NONE-SAME: %arg1: tensor<4xf32>,
// (The sed above removed "given" too: @unnamed's %a is named from its token.)
// FILES-LABEL: func.func @mlp
// FILES-SAME: %arg0: tensor<2x4xf32> {nn.data, nn.name = "x"}
// FILES-SAME: %arg2: tensor<2x3xf32> {nn.data, nn.name = "target.values"}
// FILES-LABEL: func.func @unnamed
// FILES-SAME: %arg0: tensor<4xf32>,
// FILES-SAME: %arg1: tensor<4xf32> {nn.name = "a"},
// FILES-SAME: %arg2: tensor<4xf32> {nn.name = "b"})

// Source names become nn.name on the forward function's arguments.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %arg0: tensor<2x4xf32> {nn.data, nn.name = "x"}
// CHECK-SAME: %arg1: tensor<4x3xf32> {nn.name = "w", nn.param}
// CHECK-SAME: %arg2: tensor<2x3xf32> {nn.data, nn.name = "target.values"}
// The training step's arguments carry the forward's names; AdamW's moments
// are named after their parameter, the step counter has no name.
// STEP-LABEL: func.func @mlp_train_step
// STEP-SAME: %arg0: tensor<4x3xf32> {nn.name = "w", nn.param}
// STEP-SAME: %arg1: tensor<4x3xf32> {nn.name = "w.m", nn.state = 0 : i64}
// STEP-SAME: %arg2: tensor<4x3xf32> {nn.name = "w.v", nn.state = 0 : i64}
// STEP-SAME: %arg3: tensor<i64> {nn.step}
// STEP-SAME: %arg4: tensor<2x4xf32> {nn.data, nn.name = "x"}
// STEP-SAME: %arg5: tensor<2x3xf32> {nn.data, nn.name = "target.values"}
// SGD-LABEL: func.func @mlp_train_step
// SGD-SAME: %arg1: tensor<4x3xf32> {nn.name = "w.momentum", nn.state = 0 : i64}
func.func @mlp(%x: tensor<2x4xf32> {nn.data}, %w: tensor<4x3xf32> {nn.param},
               %target.values: tensor<2x3xf32> {nn.data}) -> tensor<f32> {
  %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %d = nn.sub %y, %target.values : tensor<2x3xf32>, tensor<2x3xf32>
  %s = nn.mul %d, %d : tensor<2x3xf32>, tensor<2x3xf32>
  %l = nn.reduce mean %s dims = [0, 1] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// %argN (how the printer writes arguments) and numbers carry no name; a
// name already given is kept; an argument spelled over several lines is
// named from its own token.
// CHECK-LABEL: func.func @unnamed
// CHECK-SAME: %arg0: tensor<4xf32>,
// CHECK-SAME: %arg1: tensor<4xf32> {nn.name = "given"},
// CHECK-SAME: %arg2: tensor<4xf32> {nn.name = "b"})
func.func @unnamed(%arg0: tensor<4xf32>, %a: tensor<4xf32> {nn.name = "given"},
                   %b: tensor<4xf32>)
    -> tensor<4xf32> {
  %0 = nn.add %arg0, %a : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Declarations have no arguments to name.
// CHECK-LABEL: func.func private @declaration(tensor<4xf32>)
func.func private @declaration(tensor<4xf32>)
