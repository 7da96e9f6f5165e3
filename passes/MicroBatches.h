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
  /// argument) and the number of micro-batches.
  int64_t batch = 0, count = 1;
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

/// Micro-batch `index` of `value` (a split data argument of `split.batch`
/// rows): the rows `index`, `index + count`, ... (a reshape to
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
