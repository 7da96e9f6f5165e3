//===- Buffers.h - Moving pieces of tensors around -------------*- C++ -*-===//
//
// The data movement the simulator and the sharded runs share: equal blocks
// along a dimension, concatenation, N-D blocks at offsets, and elementwise
// reductions in a fixed order in the element type.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SIMULATOR_BUFFERS_H
#define LOOM_RUNTIME_SIMULATOR_BUFFERS_H

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "runtime/interpreter/Tensor.h"

#include "mlir/Support/LLVM.h"

#include <string>

namespace loom::sim {

/// Block `index` of `count` equal blocks of `tensor` along `dim` (`count`
/// divides the dimension).
interp::Tensor getBlock(const interp::Tensor &tensor, int64_t dim,
                        int64_t count, int64_t index);

/// The concatenation of equally shaped `parts` along `dim`.
interp::Tensor concatenate(llvm::ArrayRef<const interp::Tensor *> parts,
                           int64_t dim);

/// The block of `tensor` at `offsets` with `sizes` (within bounds).
interp::Tensor extractBlock(const interp::Tensor &tensor,
                            llvm::ArrayRef<int64_t> offsets,
                            llvm::ArrayRef<int64_t> sizes);

/// Writes `block` into `tensor` at `offsets` (same kind, within bounds).
void insertBlock(interp::Tensor &tensor, const interp::Tensor &block,
                 llvm::ArrayRef<int64_t> offsets);

/// The elementwise reduction of equally shaped `inputs`, combined in order
/// (input 0 first) in the element type (bf16 through f32, rounded after
/// each step); a mean divides the sum by the count at the end. Fails, with
/// `error` set, for kinds that cannot be reduced (i1; a mean of integers).
mlir::FailureOr<interp::Tensor>
reduce(llvm::ArrayRef<const interp::Tensor *> inputs, hspmd::ReductionKind kind,
       std::string &error);

} // namespace loom::sim

#endif // LOOM_RUNTIME_SIMULATOR_BUFFERS_H
