//===- NormKernels.cpp - softmax, log_softmax, layer_norm, rms_norm -------===//
//
// Sums run in the element type, in index order along the reduced
// dimension(s). Softmax subtracts the maximum first, as the op doc says.
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

template <typename OpTy>
LogicalResult softmaxLike(OpTy op, KernelCall &call, bool logarithm) {
  const Tensor &input = call.operand(0);
  FailureOr<int64_t> dim =
      checkDim(call, static_cast<int64_t>(op.getDim()), input.getRank());
  if (failed(dim))
    return failure();
  AxisSplit split = splitAt(input.getShape(), *dim);
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *x = input.data<T>();
    T *y = out->data<T>();
    for (int64_t o = 0; o < split.outer; ++o) {
      for (int64_t in = 0; in < split.inner; ++in) {
        int64_t base = o * split.size * split.inner + in;
        auto at = [&](int64_t s) { return base + s * split.inner; };
        T max = -std::numeric_limits<T>::infinity();
        for (int64_t s = 0; s < split.size; ++s)
          max = (x[at(s)] > max || std::isnan(x[at(s)])) ? x[at(s)] : max;
        T sum = 0;
        for (int64_t s = 0; s < split.size; ++s)
          sum += std::exp(x[at(s)] - max);
        if (logarithm) {
          T logSum = std::log(sum);
          for (int64_t s = 0; s < split.size; ++s)
            y[at(s)] = (x[at(s)] - max) - logSum;
        } else {
          for (int64_t s = 0; s < split.size; ++s)
            y[at(s)] = std::exp(x[at(s)] - max) / sum;
        }
      }
    }
    return success();
  });
}

LogicalResult softmaxKernel(nn::SoftmaxOp op, KernelCall &call) {
  return softmaxLike(op, call, /*logarithm=*/false);
}
LogicalResult logSoftmaxKernel(nn::LogSoftmaxOp op, KernelCall &call) {
  return softmaxLike(op, call, /*logarithm=*/true);
}

/// The number of rows and the row length of `input` normalised over its last
/// `normalizedDims` dimensions, after checking `scale` and `bias`.
FailureOr<std::pair<int64_t, int64_t>>
normShape(KernelCall &call, const Tensor &input, int64_t normalizedDims,
          std::initializer_list<std::pair<const Tensor *, const char *>>
              affine) {
  int64_t rank = input.getRank();
  if (normalizedDims < 1 || normalizedDims > rank)
    return call.emitError() << "normalized_dims " << normalizedDims
                            << " is not in [1, " << rank << "]";
  llvm::ArrayRef<int64_t> trailing =
      input.getShape().take_back(normalizedDims);
  for (auto [tensor, name] : affine) {
    if (!tensor)
      continue;
    if (tensor->getKind() != input.getKind())
      return call.emitError() << name << " has element type "
                              << getElementKindName(tensor->getKind())
                              << ", the input "
                              << getElementKindName(input.getKind());
    if (failed(checkShape(call, name, tensor->getShape(), trailing,
                          "the normalised trailing shape of the input")))
      return failure();
  }
  int64_t row = getCheckedNumElements(trailing).value_or(0);
  int64_t rows = row == 0 ? 0 : input.getNumElements() / row;
  return std::make_pair(rows, row);
}

LogicalResult layerNormKernel(nn::LayerNormOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  const Tensor *scale = op.getScale() ? call.operandFor(op.getScale()) : nullptr;
  const Tensor *bias = op.getBias() ? call.operandFor(op.getBias()) : nullptr;
  auto shape = normShape(call, input,
                         static_cast<int64_t>(op.getNormalizedDims()),
                         {{scale, "scale"}, {bias, "bias"}});
  if (failed(shape))
    return failure();
  int64_t rows = shape->first, row = shape->second;
  double epsilon = op.getEpsilon().convertToDouble();
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *g = scale ? scale->data<T>() : nullptr;
    const T *b = bias ? bias->data<T>() : nullptr;
    T eps = static_cast<T>(epsilon), count = static_cast<T>(row);
    for (int64_t r = 0; r < rows; ++r) {
      const T *x = input.data<T>() + r * row;
      T *y = out->data<T>() + r * row;
      T sum = 0;
      for (int64_t j = 0; j < row; ++j)
        sum += x[j];
      T mean = sum / count;
      T squares = 0;
      for (int64_t j = 0; j < row; ++j)
        squares += (x[j] - mean) * (x[j] - mean);
      T denom = std::sqrt(squares / count + eps);
      for (int64_t j = 0; j < row; ++j) {
        T value = (x[j] - mean) / denom;
        if (g)
          value *= g[j];
        if (b)
          value += b[j];
        y[j] = value;
      }
    }
    return success();
  });
}

LogicalResult rmsNormKernel(nn::RmsNormOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  const Tensor *scale = op.getScale() ? call.operandFor(op.getScale()) : nullptr;
  auto shape = normShape(call, input,
                         static_cast<int64_t>(op.getNormalizedDims()),
                         {{scale, "scale"}});
  if (failed(shape))
    return failure();
  int64_t rows = shape->first, row = shape->second;
  double epsilon = op.getEpsilon().convertToDouble();
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *g = scale ? scale->data<T>() : nullptr;
    T eps = static_cast<T>(epsilon), count = static_cast<T>(row);
    for (int64_t r = 0; r < rows; ++r) {
      const T *x = input.data<T>() + r * row;
      T *y = out->data<T>() + r * row;
      T squares = 0;
      for (int64_t j = 0; j < row; ++j)
        squares += x[j] * x[j];
      T denom = std::sqrt(squares / count + eps);
      for (int64_t j = 0; j < row; ++j)
        y[j] = g ? x[j] / denom * g[j] : x[j] / denom;
    }
    return success();
  });
}

} // namespace

void loom::interp::registerNormKernels(KernelRegistry &registry) {
  constexpr bool inF32 = true;
  registry.add(softmaxKernel, inF32);
  registry.add(logSoftmaxKernel, inF32);
  registry.add(layerNormKernel, inF32);
  registry.add(rmsNormKernel, inF32);
}
