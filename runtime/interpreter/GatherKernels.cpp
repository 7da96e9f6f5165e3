//===- GatherKernels.cpp - nn.embedding and nn.gather ---------------------===//
//
// Both move elements (any kind, bf16 as bits). An index outside the input
// gives an undefined element per the op docs; the interpreter makes it NaN
// for floats and 0 for integers and i1, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

/// The value the interpreter gives undefined elements.
template <typename T> T undefinedValue() {
  if constexpr (std::is_same_v<T, uint16_t>)
    return 0x7fc0; // bf16 quiet NaN
  else if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::quiet_NaN();
  else
    return T(0);
}

LogicalResult embeddingKernel(nn::EmbeddingOp op, KernelCall &call) {
  const Tensor &table = call.operand(0), &ids = call.operand(1);
  if (table.getRank() < 2)
    return call.emitError() << "table must have rank 2 or more, got shape "
                            << formatShape(table.getShape());
  if (failed(checkIndexTensor(call, ids, "ids")))
    return failure();
  // A row is everything after the first dimension, looked up as a whole.
  int64_t vocab = table.getShape()[0];
  int64_t width = 1;
  for (int64_t dim : table.getShape().drop_front())
    width *= dim;
  // With an offset the table is a block of rows of a larger one: other ids
  // read zeros (a vocabulary-split lookup).
  std::optional<int64_t> offset;
  if (op.getOffset())
    offset = readIndex(call.operand(2), 0);
  llvm::SmallVector<int64_t> shape(ids.getShape());
  llvm::append_range(shape, table.getShape().drop_front());
  Tensor *out = call.addResult(table.getKind(), shape);
  if (!out)
    return failure();
  dispatchStorage(table.getKind(), [&](auto tag) {
    using T = decltype(tag);
    const T *rows = table.data<T>();
    T *o = out->data<T>();
    for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i) {
      int64_t id = readIndex(ids, i) - offset.value_or(0);
      T *dst = o + i * width;
      if (id < 0 || id >= vocab)
        std::fill(dst, dst + width, offset ? T(0) : undefinedValue<T>());
      else
        std::copy(rows + id * width, rows + (id + 1) * width, dst);
    }
  });
  return success();
}

LogicalResult gatherKernel(nn::GatherOp op, KernelCall &call) {
  const Tensor &input = call.operand(0), &indices = call.operand(1);
  if (failed(checkIndexTensor(call, indices, "indices")))
    return failure();
  int64_t rank = input.getRank();
  if (indices.getRank() != rank)
    return call.emitError() << "indices of shape "
                            << formatShape(indices.getShape())
                            << " must have the rank of the input of shape "
                            << formatShape(input.getShape());
  FailureOr<int64_t> dim =
      checkDim(call, static_cast<int64_t>(op.getDim()), rank);
  if (failed(dim))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *dim && indices.getShape()[d] != input.getShape()[d])
      return call.emitError()
             << "indices of shape " << formatShape(indices.getShape())
             << " differ from the input of shape "
             << formatShape(input.getShape()) << " in dimension " << d;
  Tensor *out = call.addResult(input.getKind(), indices.getShape());
  if (!out)
    return failure();
  llvm::SmallVector<int64_t> inStrides = getRowMajorStrides(input.getShape());
  int64_t dimStride = inStrides[*dim], dimSize = input.getShape()[*dim];
  llvm::SmallVector<int64_t> walk = inStrides;
  walk[*dim] = 0;
  std::array<llvm::SmallVector<int64_t>, 1> strides = {walk};
  dispatchStorage(input.getKind(), [&](auto tag) {
    using T = decltype(tag);
    const T *src = input.data<T>();
    T *o = out->data<T>();
    forEachStrided<1>(indices.getShape(), strides, {0},
                      [&](int64_t i, const std::array<int64_t, 1> &off) {
                        int64_t index = readIndex(indices, i);
                        o[i] = index < 0 || index >= dimSize
                                   ? undefinedValue<T>()
                                   : src[off[0] + index * dimStride];
                      });
  });
  return success();
}

} // namespace

void loom::interp::registerGatherKernels(KernelRegistry &registry) {
  registry.add(embeddingKernel);
  registry.add(gatherKernel);
}
