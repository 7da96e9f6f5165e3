//===- MicroBatches.h - A forward function split into micro-batches -*- C++
//-*-===//
//
// What nn-training-step micro-batches=K builds on: the forward function
// retyped for one K-th of the batch, with the values that must be computed
// over the whole batch (normalisers: sums of the data) taken as arguments.
// See the nn-training-step pass description ("Micro-batches").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_MICROBATCHES_H
#define LOOM_PASSES_MICROBATCHES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

namespace loom {

/// A forward function split into micro-batches.
struct MicroBatchForward {
  /// A detached copy of the forward function for one micro-batch: the same
  /// arguments (split data arguments with a K-th of their rows), then one
  /// argument per whole-batch value.
  mlir::func::FuncOp func;
  /// The rows of the batch (the leading dimension of every split data
  /// argument of the step: the forward's, or with micro-batches of their
  /// own shape, `count` times `rows`) and the number of micro-batches.
  int64_t batch = 0, count = 1;
  /// One micro-batch's rows and sequence length (dimension 1 of the split
  /// data arguments of rank >= 2; 0 when none has it).
  int64_t rows = 0, length = 0;
  /// The forward's data arguments that are split (by index).
  llvm::SmallVector<unsigned> splitArgs;
  /// Values of the original forward function computed from the whole
  /// batch's data alone (no parameter): `func`'s trailing arguments, in
  /// order.
  llvm::SmallVector<mlir::Value> wholeBatch;
};

/// Splits `forward` into `count` micro-batches (count >= 2): checks that
/// its loss is a sum over the rows of the batch (scaled by values of the
/// whole batch), and builds the micro-batch function. Reports each problem
/// at its location and fails.
mlir::FailureOr<MicroBatchForward> splitIntoMicroBatches(
    mlir::func::FuncOp forward, int64_t count);

/// The shape of micro-batches of their own shape (length buckets): `count`
/// micro-batches of `rows` rows of length `length` each.
struct MicroBatchShape {
  int64_t rows = 0, length = 0, count = 1;
};

/// The forward's sequence length: dimension 1 of its data arguments of
/// rank >= 2 (which must all have the same), or 0 when none has one.
/// Reports a mismatch and fails.
mlir::FailureOr<int64_t> sequenceLengthOf(mlir::func::FuncOp forward);

/// Retypes `forward` for `shape.count` micro-batches of `shape.rows` rows of
/// length `shape.length` (the model at another batch size and sequence
/// length): checks, as splitIntoMicroBatches does, that its loss is a sum
/// over the rows; every split data argument becomes
/// [rows, length, ...] (rank >= 2) or [rows, ...]. The values of the whole
/// batch computed from the data (normalisers such as token counts) have no
/// whole batch to be computed from and are refused; normalisers given as
/// attributes stay, so the micro-batches must hold the forward's tokens
/// (checked by the caller, which knows the step's shapes).
mlir::FailureOr<MicroBatchForward>
retypeForMicroBatches(mlir::func::FuncOp forward, MicroBatchShape shape);

/// Micro-batch `index` of `value` (a split data argument of the step, of
/// `split.batch` rows): the rows `index`, `index + count`, ... (a reshape to
/// [batch / count, count, ...], the slice of `index` along dimension 1,
/// and a reshape back), which stay on their device under any split of the
/// rows into blocks of a multiple of `count`.
mlir::Value microBatchOf(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::Value value, const MicroBatchForward &split,
                         int64_t index);

/// Clones into `builder` the ops of `split`'s original forward function
/// that compute its whole-batch values, with the forward's arguments
/// mapped to `args`; returns the values (in `split.wholeBatch`'s order).
llvm::SmallVector<mlir::Value>
cloneWholeBatchValues(mlir::OpBuilder &builder, const MicroBatchForward &split,
                      mlir::ValueRange args);

} // namespace loom

#endif // LOOM_PASSES_MICROBATCHES_H
