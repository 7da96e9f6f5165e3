//===- ReductionKernels.cpp - nn.reduce -----------------------------------===//
//
// Each result element accumulates its inputs in row-major order of the
// input, in the element type: a fixed order, so results are reproducible.
// `max` propagates NaN; an empty reduction gives 0 (sum), NaN (mean) or
// -inf (max).
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

LogicalResult reduceKernel(nn::ReduceOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  int64_t rank = input.getRank();
  llvm::SmallVector<bool> reduced(rank, false);
  for (int64_t dim : op.getDims()) {
    if (failed(checkDim(call, dim, rank, "reduced dimension")))
      return failure();
    reduced[dim] = true;
  }
  llvm::ArrayRef<int64_t> inShape = input.getShape();
  llvm::SmallVector<int64_t> keptShape, resultShape;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : inShape[d]);
    if (reduced[d])
      count *= inShape[d];
    else
      resultShape.push_back(inShape[d]);
  }
  if (op.getKeepDims())
    resultShape = keptShape;

  // Strides that map an input element to its result element.
  llvm::SmallVector<int64_t> outStrides = getRowMajorStrides(keptShape);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      outStrides[d] = 0;
  std::array<llvm::SmallVector<int64_t>, 1> strides = {outStrides};

  nn::ReduceKind kind = op.getKind();
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), resultShape);
    if (!out)
      return failure();
    T *acc = out->data<T>();
    const T *x = input.data<T>();
    if (kind == nn::ReduceKind::Max) {
      for (T &value : out->values<T>())
        value = -std::numeric_limits<T>::infinity();
      forEachStrided<1>(inShape, strides, {0},
                        [&](int64_t i, const std::array<int64_t, 1> &off) {
                          T &slot = acc[off[0]];
                          if (x[i] > slot || std::isnan(x[i]))
                            slot = std::isnan(slot) ? slot : x[i];
                        });
      return success();
    }
    forEachStrided<1>(inShape, strides, {0},
                      [&](int64_t i, const std::array<int64_t, 1> &off) {
                        acc[off[0]] += x[i];
                      });
    if (kind == nn::ReduceKind::Mean)
      for (T &value : out->values<T>())
        value /= static_cast<T>(count);
    return success();
  });
}

} // namespace

void loom::interp::registerReductionKernels(KernelRegistry &registry) {
  registry.add(reduceKernel, /*computesBf16InF32=*/true);
}
