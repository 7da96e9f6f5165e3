//===- KernelUtils.cpp - Helpers shared by the interpreter's kernels ------===//

#include "runtime/interpreter/KernelUtils.h"

using namespace mlir;
using namespace loom::interp;

LogicalResult loom::interp::checkIndexTensor(const KernelCall &call,
                                             const Tensor &tensor,
                                             llvm::StringRef name) {
  if (isIntegerKind(tensor.getKind()))
    return success();
  return call.emitError() << name << " must hold i32 or i64 elements, got "
                          << getElementKindName(tensor.getKind());
}

FailureOr<llvm::SmallVector<int64_t>>
loom::interp::broadcastShapes(const KernelCall &call,
                              llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (llvm::ArrayRef<int64_t> shape : shapes)
    rank = std::max(rank, shape.size());
  llvm::SmallVector<int64_t> result(rank, 1);
  llvm::SmallVector<int, 4> owner(rank, -1);
  for (auto [k, shape] : llvm::enumerate(shapes)) {
    size_t offset = rank - shape.size();
    for (auto [d, size] : llvm::enumerate(shape)) {
      int64_t &slot = result[offset + d];
      if (size == slot || size == 1)
        continue;
      if (slot == 1) {
        slot = size;
        owner[offset + d] = static_cast<int>(k);
        continue;
      }
      return call.emitError()
             << "operand #" << k << " of shape " << formatShape(shape)
             << " does not broadcast with operand #" << owner[offset + d]
             << " of shape " << formatShape(shapes[owner[offset + d]])
             << " (dimension " << d << " of size " << size << " against "
             << slot << ")";
    }
  }
  return result;
}

llvm::SmallVector<int64_t>
loom::interp::getBroadcastStrides(llvm::ArrayRef<int64_t> shape,
                                  llvm::ArrayRef<int64_t> resultShape) {
  llvm::SmallVector<int64_t> strides(resultShape.size(), 0);
  llvm::SmallVector<int64_t> own = getRowMajorStrides(shape);
  size_t offset = resultShape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    strides[offset + d] = shape[d] == 1 ? 0 : own[d];
  return strides;
}

void loom::interp::copyStrided(const Tensor &in, Tensor &out,
                               llvm::ArrayRef<int64_t> strides, int64_t base) {
  std::array<llvm::SmallVector<int64_t>, 1> allStrides = {
      llvm::SmallVector<int64_t>(strides.begin(), strides.end())};
  dispatchStorage(in.getKind(), [&](auto tag) {
    using T = decltype(tag);
    const T *src = in.data<T>();
    T *dst = out.data<T>();
    forEachStrided<1>(out.getShape(), allStrides, {base},
                      [&](int64_t index, const std::array<int64_t, 1> &off) {
                        dst[index] = src[off[0]];
                      });
  });
}

FailureOr<int64_t> loom::interp::checkDim(const KernelCall &call, int64_t dim,
                                          int64_t rank, llvm::StringRef what) {
  if (dim >= 0 && dim < rank)
    return dim;
  return call.emitError() << what << " " << dim << " is not in [0, " << rank
                          << ")";
}

AxisSplit loom::interp::splitAt(llvm::ArrayRef<int64_t> shape, int64_t dim) {
  AxisSplit split;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim)
      split.outer *= shape[d];
    else if (d == dim)
      split.size = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

LogicalResult loom::interp::checkShape(const KernelCall &call,
                                       llvm::StringRef name,
                                       llvm::ArrayRef<int64_t> actual,
                                       llvm::ArrayRef<int64_t> expected,
                                       llvm::StringRef what) {
  if (actual == expected)
    return success();
  return call.emitError() << name << " has shape " << formatShape(actual)
                          << " but " << what << " is "
                          << formatShape(expected);
}
