// Bad inputs and bad programs get a diagnostic that names the value and what
// was expected, and a non-zero exit; nothing crashes.

// RUN: %python -c "import numpy as np; p = '%t'; \
// RUN:   np.save(p + '.x.npy', np.zeros((4, 8), np.float32)); \
// RUN:   np.save(p + '.b.npy', np.zeros((8,), np.float32)); \
// RUN:   np.save(p + '.shape.npy', np.zeros((4, 9), np.float32)); \
// RUN:   np.save(p + '.rank.npy', np.zeros((32,), np.float32)); \
// RUN:   np.save(p + '.f64.npy', np.zeros((4, 8))); \
// RUN:   np.save(p + '.u8.npy', np.zeros((4, 8), np.uint8)); \
// RUN:   np.save(p + '.big.npy', np.zeros((4, 8), '>f4')); \
// RUN:   np.save(p + '.fortran.npy', np.asfortranarray(np.zeros((4, 8), np.float32))); \
// RUN:   data = open(p + '.x.npy', 'rb').read(); \
// RUN:   open(p + '.short.npy', 'wb').write(data[:-4]); \
// RUN:   open(p + '.garbage.npy', 'w').write('not numpy')"

// RUN: not loom-run %s 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: pass --interpret

// RUN: not loom-run --interpret %s 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: errors.mlir:[[@LINE+30]]:1: error: @main takes 2 arguments, got 0
// NONE: note: missing argument #0 of type 'tensor<4x8xf32>'

// RUN: not loom-run --interpret %s --input %t.x.npy 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: @main takes 2 arguments, got 1
// ONE: note: missing argument #1 of type 'tensor<8xf32>'

// RUN: not loom-run --interpret %s --input %t.x.npy --input %t.b.npy --input %t.b.npy 2>&1 | FileCheck %s --check-prefix=MANY
// MANY: error: got 3 --input files but @main takes 2 arguments

// RUN: not loom-run --interpret %s --input %t.shape.npy --input %t.b.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: argument #0 of @main (from '{{.*}}.shape.npy') has shape [4, 9], expected 'tensor<4x8xf32>'

// RUN: not loom-run --interpret %s --input %t.x.npy --input %t.rank.npy 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: error: argument #1 of @main (from '{{.*}}.rank.npy') has shape [32], expected 'tensor<8xf32>'

// RUN: not loom-run --interpret %s --input %t.f64.npy --input %t.b.npy 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: argument #0 of @main (from '{{.*}}.f64.npy') has element type f64, expected 'tensor<4x8xf32>'

// RUN: not loom-run --interpret %s --input %t.x.npy --random-inputs --int-range 5,5 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: --int-range expects LO,HI with LO < HI, got '5,5'

// RUN: not loom-run --interpret %s --entry nope 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: no function '@nope' in the module
// ENTRY: note: functions: @main, @dynamic, @index, @declared

// RUN: not loom-run --interpret %s --entry declared 2>&1 | FileCheck %s --check-prefix=DECL
// DECL: error: function '@declared' is a declaration without a body

// The main function; the diagnostics above point at its line.
func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = nn.add %x, %b : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// Dynamic shapes are checked when the values arrive.
// RUN: not loom-run --interpret %s --entry dynamic --input %t.b.npy --input %t.rank.npy 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: errors.mlir:[[@LINE+4]]:8: error: 'nn.add' op operand #1 of shape [32] does not broadcast with operand #0 of shape [8] (dimension 0 of size 32 against 8)
// RUN: not loom-run --interpret %s --entry dynamic --random-inputs 2>&1 | FileCheck %s --check-prefix=DYNRANDOM
// DYNRANDOM: error: cannot generate argument #0 of @dynamic: random inputs need a static tensor type
func.func @dynamic(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = nn.add %a, %b : tensor<?xf32>, tensor<?xf32>
  return %0 : tensor<?xf32>
}

// RUN: not loom-run --interpret %s --entry index 2>&1 | FileCheck %s --check-prefix=INDEX
// INDEX: error: argument #0 of @index has type 'index'; the interpreter supports ranked tensors of f32, f64, bf16, i1, i32 or i64
func.func @index(%i: index) -> index {
  return %i : index
}

func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

// Files that are not what the argument needs.
// RUN: not loom-run --interpret %s --input %t.missing.npy 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: input for argument #0 of @main: '{{.*}}.missing.npy': cannot read: {{[Nn]}}o such file or directory
// RUN: not loom-run --interpret %s --input %t.garbage.npy 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: error: input for argument #0 of @main: '{{.*}}.garbage.npy': not a .npy file
// RUN: not loom-run --interpret %s --input %t.short.npy 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: '{{.*}}.short.npy': holds 124 bytes of data but shape [4, 8] of '<f4' needs 128
// RUN: not loom-run --interpret %s --input %t.u8.npy 2>&1 | FileCheck %s --check-prefix=U8
// U8: '{{.*}}.u8.npy': unsupported element type '|u1' (expected '<f4', '<f8', '<i4', '<i8', '|b1' or '<u2' for bf16 bits)
// RUN: not loom-run --interpret %s --input %t.big.npy 2>&1 | FileCheck %s --check-prefix=BIG
// BIG: '{{.*}}.big.npy': big-endian data ('>f4') is not supported; store it little-endian
// RUN: not loom-run --interpret %s --input %t.fortran.npy 2>&1 | FileCheck %s --check-prefix=FORTRAN
// FORTRAN: '{{.*}}.fortran.npy': Fortran-order data is not supported
