//===- Buffers.cpp - Moving pieces of tensors around ----------------------===//

#include "runtime/simulator/Buffers.h"
#include "runtime/simulator/Sharding.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "runtime/layout/Shards.h"

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

FailureOr<Tensor> loom::sim::reduce(ArrayRef<const Tensor *> inputs,
                                    hspmd::ReductionKind kind,
                                    std::string &error) {
  Tensor result(inputs.front()->getKind(), inputs.front()->getShape());
  std::vector<const void *> contributions;
  for (const Tensor *input : inputs)
    contributions.push_back(input->rawData());
  if (!layout::reduce(result.rawData(), contributions, result.getNumElements(),
                      toLayoutType(result.getKind()),
                      hspmd::toLayoutCore(kind))) {
    error = "cannot reduce " + result.getTypeString() + " with '" +
            hspmd::stringifyReductionKind(kind).str() + "'";
    return failure();
  }
  return result;
}

Tensor loom::sim::extractBlock(const Tensor &tensor, ArrayRef<int64_t> offsets,
                               ArrayRef<int64_t> sizes) {
  Tensor block(tensor.getKind(), sizes);
  std::vector<int64_t> extent(sizes.begin(), sizes.end());
  layout::copyBox(tensor.rawData(),
                  std::vector<int64_t>(tensor.getShape().begin(),
                                       tensor.getShape().end()),
                  std::vector<int64_t>(offsets.begin(), offsets.end()),
                  block.rawData(), extent,
                  std::vector<int64_t>(sizes.size(), 0), extent,
                  interp::getElementSize(tensor.getKind()));
  return block;
}

void loom::sim::insertBlock(Tensor &tensor, const Tensor &block,
                            ArrayRef<int64_t> offsets) {
  std::vector<int64_t> extent(block.getShape().begin(), block.getShape().end());
  layout::copyBox(block.rawData(), extent,
                  std::vector<int64_t>(extent.size(), 0), tensor.rawData(),
                  std::vector<int64_t>(tensor.getShape().begin(),
                                       tensor.getShape().end()),
                  std::vector<int64_t>(offsets.begin(), offsets.end()), extent,
                  interp::getElementSize(tensor.getKind()));
}
