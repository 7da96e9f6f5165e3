//===- RopeDropoutKernels.cpp - nn.rope and nn.dropout --------------------===//
//
// RoPE computes each angle and its sine and cosine in f64 and rounds them to
// the element type; the rotation itself is in the element type. Dropout
// draws its mask with splitmix64 exactly as the op doc specifies and scales
// kept elements by 1 / (1 - rate) rounded to the element type.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"
#include "runtime/interpreter/Random.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

LogicalResult ropeKernel(nn::RopeOp op, KernelCall &call) {
  const Tensor &input = call.operand(0), &positions = call.operand(1);
  if (input.getRank() < 3)
    return call.emitError() << "input must have rank at least 3, got shape "
                            << formatShape(input.getShape());
  if (failed(checkIndexTensor(call, positions, "positions")) ||
      failed(checkShape(call, "positions", positions.getShape(),
                        input.getShape().drop_back(2),
                        "the input shape without its last two dimensions")))
    return failure();
  int64_t heads = input.getShape()[input.getRank() - 2];
  int64_t headDim = input.getShape()[input.getRank() - 1];
  if (headDim % 2 != 0)
    return call.emitError() << "head_dim " << headDim << " is odd";
  int64_t half = headDim / 2;
  double theta = op.getTheta().convertToDouble();
  // `inverse` rotates the other way: every angle is negated.
  double direction = op.getInverse() ? -1.0 : 1.0;
  llvm::SmallVector<double> inverseFrequency(half);
  for (int64_t i = 0; i < half; ++i)
    inverseFrequency[i] =
        direction * std::pow(theta, -2.0 * static_cast<double>(i) /
                                        static_cast<double>(headDim));
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *x = input.data<T>();
    T *y = out->data<T>();
    llvm::SmallVector<T> cosines(half), sines(half);
    for (int64_t token = 0, e = positions.getNumElements(); token < e;
         ++token) {
      double position = static_cast<double>(readIndex(positions, token));
      for (int64_t i = 0; i < half; ++i) {
        double angle = position * inverseFrequency[i];
        cosines[i] = static_cast<T>(std::cos(angle));
        sines[i] = static_cast<T>(std::sin(angle));
      }
      for (int64_t h = 0; h < heads; ++h) {
        int64_t base = (token * heads + h) * headDim;
        for (int64_t i = 0; i < half; ++i) {
          T a = x[base + i], b = x[base + i + half];
          y[base + i] = a * cosines[i] - b * sines[i];
          y[base + i + half] = a * sines[i] + b * cosines[i];
        }
      }
    }
    return success();
  });
}

LogicalResult dropoutKernel(nn::DropoutOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  uint64_t key = op.getSeed();
  if (op.getOffset()) {
    const Tensor *offset = call.operandFor(op.getOffset());
    if (!offset || offset->getKind() != ElementKind::I64 ||
        offset->getNumElements() != 1)
      return call.emitError() << "offset must be a 0-d i64 tensor";
    key += static_cast<uint64_t>(offset->data<int64_t>()[0]);
  }
  // A block of a larger tensor: each element's mask is drawn by its index
  // there (the op's verifier checked the counts).
  SmallVector<int64_t> starts;
  ArrayRef<int64_t> globalShape = op.getGlobalShape().value_or(
      ArrayRef<int64_t>());
  for (auto [d, value] : llvm::enumerate(op.getStarts())) {
    const Tensor *start = call.operandFor(value);
    if (!start || start->getKind() != ElementKind::I64 ||
        start->getNumElements() != 1)
      return call.emitError() << "start #" << d << " must be a 0-d i64 tensor";
    int64_t first = start->data<int64_t>()[0];
    if (first < 0 || first + input.getShape()[d] > globalShape[d])
      return call.emitError()
             << "the block of size " << input.getShape()[d] << " at " << first
             << " along dimension " << d << " does not lie in the global size "
             << globalShape[d];
    starts.push_back(first);
  }
  double rate = op.getRate().convertToDouble();
  // The scale is rounded to the element type (bf16 too, although the kernel
  // computes in f32).
  double scaleValue = 1.0 / (1.0 - rate);
  if (op.getType().getElementType().isBF16())
    scaleValue = bf16ToFloat(doubleToBf16(scaleValue));
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *x = input.data<T>();
    T *y = out->data<T>();
    T scale = static_cast<T>(scaleValue);
    // The local element's global index, kept with an odometer over the
    // local multi-index (an independent way of the runtimes' division).
    ArrayRef<int64_t> shape = input.getShape();
    int64_t rank = static_cast<int64_t>(shape.size());
    SmallVector<uint64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0 && !starts.empty(); --d)
      strides[d] = strides[d + 1] * static_cast<uint64_t>(globalShape[d + 1]);
    SmallVector<int64_t> at(rank, 0);
    for (int64_t i = 0, e = input.getNumElements(); i < e; ++i) {
      uint64_t index = static_cast<uint64_t>(i);
      if (!starts.empty()) {
        index = 0;
        for (int64_t d = 0; d < rank; ++d)
          index += static_cast<uint64_t>(starts[d] + at[d]) * strides[d];
        for (int64_t d = rank - 1; d >= 0 && ++at[d] == shape[d]; --d)
          at[d] = 0;
      }
      double u = toUnitInterval(splitmix64(key, index));
      y[i] = u < rate ? T(0) : x[i] * scale;
    }
    return success();
  });
}

} // namespace

void loom::interp::registerRopeDropoutKernels(KernelRegistry &registry) {
  constexpr bool inF32 = true;
  registry.add(ropeKernel, inF32);
  registry.add(dropoutKernel, inF32);
}
