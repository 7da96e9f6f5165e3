//===- KernelUtils.h - Helpers shared by the interpreter's kernels -*- C++ -*-//
//
// Dispatch on element kinds, numpy broadcasting, strided iteration and
// copies. Kernels include this header only.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_KERNELUTILS_H
#define LOOM_RUNTIME_INTERPRETER_KERNELUTILS_H

#include "runtime/interpreter/Interpreter.h"
#include "runtime/interpreter/KernelRegistry.h"
#include "runtime/interpreter/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <cstdint>

namespace loom::interp {

/// Calls `fn(T{})` with T = float or double for an f32 or f64 kind and
/// returns its result; reports other kinds (bf16 is widened to f32 before a
/// float kernel runs).
template <typename Fn>
mlir::LogicalResult dispatchFloat(const KernelCall &call, ElementKind kind,
                                  Fn &&fn) {
  switch (kind) {
  case ElementKind::F32:
    return fn(float{});
  case ElementKind::F64:
    return fn(double{});
  default:
    return call.emitError() << "expects f32 or f64 elements, got "
                            << getElementKindName(kind);
  }
}

/// Calls `fn(T{})` with T the storage type of `kind` (uint16_t holds bf16
/// bits, uint8_t i1).
template <typename Fn> auto dispatchStorage(ElementKind kind, Fn &&fn) {
  switch (kind) {
  case ElementKind::F32:
    return fn(float{});
  case ElementKind::F64:
    return fn(double{});
  case ElementKind::BF16:
    return fn(uint16_t{});
  case ElementKind::I1:
    return fn(uint8_t{});
  case ElementKind::I32:
    return fn(int32_t{});
  case ElementKind::I64:
    return fn(int64_t{});
  }
  return fn(float{});
}

/// Element `index` of an i32 or i64 tensor as int64_t.
inline int64_t readIndex(const Tensor &tensor, int64_t index) {
  if (tensor.getKind() == ElementKind::I32)
    return tensor.data<int32_t>()[index];
  return tensor.data<int64_t>()[index];
}

/// Reports unless `tensor` (the op's operand `name`) is an i32 or i64 tensor.
mlir::LogicalResult checkIndexTensor(const KernelCall &call,
                                     const Tensor &tensor,
                                     llvm::StringRef name);

/// The numpy broadcast of `shapes`, or failure with a diagnostic naming the
/// operands (by position) whose dimensions clash.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(const KernelCall &call,
                llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes);

/// Strides (in elements) that read a row-major tensor of `shape` as if it
/// were broadcast to `resultShape` (aligned at the last dimension; a
/// broadcast dimension gets stride 0).
llvm::SmallVector<int64_t> getBroadcastStrides(llvm::ArrayRef<int64_t> shape,
                                               llvm::ArrayRef<int64_t> resultShape);

/// Visits every element of a row-major iteration space `shape` in order and
/// calls `fn(linearIndex, offsets)`, `offsets[k]` being the element offset of
/// operand k, which advances by `strides[k][d]` along dimension d (starting
/// from `bases[k]`).
template <size_t N, typename Fn>
void forEachStrided(llvm::ArrayRef<int64_t> shape,
                    const std::array<llvm::SmallVector<int64_t>, N> &strides,
                    const std::array<int64_t, N> &bases, Fn &&fn) {
  std::optional<int64_t> total = getCheckedNumElements(shape);
  if (!total || *total == 0)
    return;
  std::array<int64_t, N> offsets = bases;
  size_t rank = shape.size();
  if (rank == 0) {
    fn(int64_t{0}, offsets);
    return;
  }
  int64_t inner = shape[rank - 1];
  std::array<int64_t, N> innerStrides;
  for (size_t k = 0; k < N; ++k)
    innerStrides[k] = strides[k][rank - 1];
  llvm::SmallVector<int64_t> index(rank, 0);
  for (int64_t out = 0; out < *total; out += inner) {
    std::array<int64_t, N> current = offsets;
    for (int64_t j = 0; j < inner; ++j) {
      fn(out + j, current);
      for (size_t k = 0; k < N; ++k)
        current[k] += innerStrides[k];
    }
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (++index[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

/// Fills `out` (row-major) with elements of `in` read at `base + sum_d i_d *
/// strides[d]`, for any element kind (both tensors have the same kind).
void copyStrided(const Tensor &in, Tensor &out,
                 llvm::ArrayRef<int64_t> strides, int64_t base = 0);

/// Normalises a dimension attribute against `rank`, or reports it.
mlir::FailureOr<int64_t> checkDim(const KernelCall &call, int64_t dim,
                                  int64_t rank, llvm::StringRef what = "dim");

/// Splits `shape` at `dim` into (outer, size, inner) element counts, for
/// kernels that work along one dimension.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAt(llvm::ArrayRef<int64_t> shape, int64_t dim);

/// Reports unless `actual` equals `expected` (operand `name`'s shape against
/// what the op needs); `what` says why, e.g. "the trailing dimensions of the
/// input".
mlir::LogicalResult checkShape(const KernelCall &call, llvm::StringRef name,
                               llvm::ArrayRef<int64_t> actual,
                               llvm::ArrayRef<int64_t> expected,
                               llvm::StringRef what);

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_KERNELUTILS_H
