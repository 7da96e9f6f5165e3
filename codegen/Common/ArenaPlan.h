//===- ArenaPlan.h - Static memory plan of a local program -----*- C++ -*-===//
//
// Code generation places every tensor of a per-device program at a fixed
// byte offset of one arena, decided at compile time (docs/architecture.md,
// "The static arena"). The arena has two parts:
//
//   persistent  the function's arguments (parameters, optimizer state, data,
//               the step counter) and the results that are not updates of
//               an argument (the loss): they outlive a step, the driver
//               fills and reads them;
//   transient   every other value, alive from the op that defines it to its
//               last use; buffers whose lives do not overlap share bytes
//               (first fit over the free ranges, in program order).
//
// Views share their operand's buffer: `nn.reshape` (row-major, so the bytes
// are the same), `hspmd.annotate` (the identity on one device). A result
// marked `nn.updates = i` replaces argument i after the step: where it is
// computed by an element-wise optimizer update that reads argument i last,
// the update writes it in place, into argument i's buffer; otherwise it is
// copied there at the end of the step.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_ARENAPLAN_H
#define LOOM_CODEGEN_COMMON_ARENAPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::codegen {

/// Where a value lives: a byte range of the arena (`offset` -1 for a value
/// of no bytes, which needs no memory).
struct Buffer {
  int64_t offset = -1;
  int64_t bytes = 0;
  /// The name generated code gives the buffer.
  std::string name;
  bool persistent = false;
};

struct ArenaPlan {
  /// Every tensor value of the function (views map to their root's buffer).
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  std::vector<Buffer> buffers;
  /// Per argument and per result, its buffer.
  std::vector<unsigned> argBuffers, resultBuffers;
  /// Results copied into their argument's buffer at the end of the step:
  /// (result index, argument index).
  std::vector<std::pair<unsigned, unsigned>> copiesBack;
  /// Results returned by copying another buffer (an argument returned
  /// unchanged, a value returned twice): (result index, source value).
  std::vector<std::pair<unsigned, mlir::Value>> resultCopies;
  /// Updates written in place, into their argument's buffer.
  unsigned inPlaceUpdates = 0;
  int64_t persistentBytes = 0;
  /// The high-water mark of the transient part.
  int64_t transientPeak = 0;
  /// The transient bytes without reuse (every value its own buffer).
  int64_t transientTotal = 0;
  int64_t getArenaBytes() const { return persistentBytes + transientPeak; }
};

/// Buffers start at multiples of this many bytes.
constexpr int64_t kBufferAlignment = 64;

/// Plans `func`, a single-block function over static tensors. Fails, after a
/// diagnostic at the offending op or argument, on values that are not
/// statically shaped tensors of f32, f64, i64, i32 or i1.
mlir::FailureOr<ArenaPlan> planArena(mlir::func::FuncOp func);

/// Whether `value`'s op only reinterprets its operand's bytes.
bool isView(mlir::Operation *op);

/// The C++ element type of a tensor element type ("float", ...), or empty.
llvm::StringRef getCppElementType(mlir::Type type);

/// `{1, 2, 3}`: a braced list, as generated C++ writes shapes and tables.
std::string formatIntList(llvm::ArrayRef<int64_t> values);

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_ARENAPLAN_H
