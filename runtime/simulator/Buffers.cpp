//===- Buffers.cpp - Moving pieces of tensors around ----------------------===//

#include "runtime/simulator/Buffers.h"

#include "runtime/interpreter/Convert.h"

#include "llvm/ADT/STLExtras.h"

#include <cstring>

using namespace mlir;
using namespace loom;
using interp::ElementKind;
using interp::Tensor;

namespace {

/// A tensor seen as [outer, size, inner] around dimension `dim`, in bytes
/// for the inner part.
struct DimView {
  int64_t outer = 1, size = 1, innerBytes = 1;
};

DimView viewAround(const Tensor &tensor, int64_t dim) {
  DimView view;
  ArrayRef<int64_t> shape = tensor.getShape();
  for (int64_t d = 0; d < dim; ++d)
    view.outer *= shape[d];
  view.size = shape[dim];
  view.innerBytes =
      static_cast<int64_t>(interp::getElementSize(tensor.getKind()));
  for (int64_t d = dim + 1, e = shape.size(); d < e; ++d)
    view.innerBytes *= shape[d];
  return view;
}

template <typename T> T combine(T acc, T value, hspmd::ReductionKind kind) {
  switch (kind) {
  case hspmd::ReductionKind::Sum:
  case hspmd::ReductionKind::Mean:
    return acc + value;
  case hspmd::ReductionKind::Max:
    return acc >= value || acc != acc ? acc : value;
  case hspmd::ReductionKind::Min:
    return acc <= value || acc != acc ? acc : value;
  }
  return acc;
}

/// Calls `fn(blockOffset, tensorOffset)` (element offsets) for every
/// innermost row of a block of `sizes` at `offsets` in a tensor of `shape`.
void forEachRow(ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets,
                ArrayRef<int64_t> sizes,
                llvm::function_ref<void(int64_t, int64_t)> fn) {
  int64_t rank = shape.size();
  if (rank == 0) {
    fn(0, 0);
    return;
  }
  for (int64_t size : sizes)
    if (size == 0)
      return;
  SmallVector<int64_t> index(rank - 1, 0);
  int64_t blockOffset = 0;
  while (true) {
    int64_t tensorOffset = 0;
    for (int64_t d = 0; d < rank; ++d)
      tensorOffset =
          tensorOffset * shape[d] + offsets[d] + (d < rank - 1 ? index[d] : 0);
    fn(blockOffset, tensorOffset);
    blockOffset += sizes[rank - 1];
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

} // namespace

/// Block `index` of `count` equal blocks of `tensor` along `dim`.
Tensor loom::sim::getBlock(const Tensor &tensor, int64_t dim, int64_t count,
                           int64_t index) {
  DimView view = viewAround(tensor, dim);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] /= count;
  Tensor block(tensor.getKind(), shape);
  int64_t rowBytes = shape[dim] * view.innerBytes;
  for (int64_t o = 0; o < view.outer; ++o)
    std::memcpy(block.rawData() + o * rowBytes,
                tensor.rawData() +
                    (o * view.size + index * shape[dim]) * view.innerBytes,
                rowBytes);
  return block;
}

/// The concatenation of equally shaped `parts` along `dim`.
Tensor loom::sim::concatenate(ArrayRef<const Tensor *> parts, int64_t dim) {
  const Tensor &first = *parts.front();
  DimView view = viewAround(first, dim);
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] *= parts.size();
  Tensor result(first.getKind(), shape);
  int64_t partBytes = view.size * view.innerBytes;
  for (int64_t o = 0; o < view.outer; ++o)
    for (auto [p, part] : llvm::enumerate(parts))
      std::memcpy(result.rawData() + (o * parts.size() + p) * partBytes,
                  part->rawData() + o * partBytes, partBytes);
  return result;
}

/// The elementwise reduction of `inputs`, combined in order (input 0 first),
/// in the element type; a mean divides the sum by the count at the end.
FailureOr<Tensor> loom::sim::reduce(ArrayRef<const Tensor *> inputs,
                                    hspmd::ReductionKind kind,
                                    std::string &error) {
  Tensor result = *inputs.front();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    MutableArrayRef<T> acc = result.values<T>();
    for (const Tensor *input : inputs.drop_front())
      for (auto [a, v] : llvm::zip_equal(acc, input->values<T>()))
        a = combine<T>(a, v, kind);
    if (kind == hspmd::ReductionKind::Mean)
      for (T &a : acc)
        a = a / static_cast<T>(inputs.size());
  };
  switch (result.getKind()) {
  case ElementKind::F32:
    run(float{});
    return result;
  case ElementKind::F64:
    run(double{});
    return result;
  case ElementKind::BF16: {
    MutableArrayRef<uint16_t> acc = result.values<uint16_t>();
    for (const Tensor *input : inputs.drop_front())
      for (auto [a, v] : llvm::zip_equal(acc, input->values<uint16_t>()))
        a = interp::floatToBf16(combine<float>(interp::bf16ToFloat(a),
                                               interp::bf16ToFloat(v), kind));
    if (kind == hspmd::ReductionKind::Mean)
      for (uint16_t &a : acc)
        a = interp::floatToBf16(interp::bf16ToFloat(a) /
                                static_cast<float>(inputs.size()));
    return result;
  }
  case ElementKind::I32:
  case ElementKind::I64:
    if (kind == hspmd::ReductionKind::Mean)
      break;
    if (result.getKind() == ElementKind::I32)
      run(int32_t{});
    else
      run(int64_t{});
    return result;
  case ElementKind::I1:
    break;
  }
  error = "cannot reduce " + result.getTypeString() + " with '" +
          hspmd::stringifyReductionKind(kind).str() + "'";
  return failure();
}

Tensor loom::sim::extractBlock(const Tensor &tensor, ArrayRef<int64_t> offsets,
                               ArrayRef<int64_t> sizes) {
  Tensor block(tensor.getKind(), sizes);
  int64_t element = interp::getElementSize(tensor.getKind());
  int64_t rowBytes = (sizes.empty() ? 1 : sizes.back()) * element;
  forEachRow(tensor.getShape(), offsets, sizes,
             [&](int64_t blockOffset, int64_t tensorOffset) {
               std::memcpy(block.rawData() + blockOffset * element,
                           tensor.rawData() + tensorOffset * element, rowBytes);
             });
  return block;
}

void loom::sim::insertBlock(Tensor &tensor, const Tensor &block,
                            ArrayRef<int64_t> offsets) {
  ArrayRef<int64_t> sizes = block.getShape();
  int64_t element = interp::getElementSize(tensor.getKind());
  int64_t rowBytes = (sizes.empty() ? 1 : sizes.back()) * element;
  forEachRow(tensor.getShape(), offsets, sizes,
             [&](int64_t blockOffset, int64_t tensorOffset) {
               std::memcpy(tensor.rawData() + tensorOffset * element,
                           block.rawData() + blockOffset * element, rowBytes);
             });
}
