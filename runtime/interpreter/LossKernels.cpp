//===- LossKernels.cpp - nn.cross_entropy ---------------------------------===//
//
// loss = sum_n w[n] * (logsumexp(logits[n]) - logits[n, label[n]]) / normalizer,
// summed over rows in row-major order in the element type. A row with weight
// 0 contributes nothing whatever its label (padding); a label outside
// [0, vocab) in a weighted row makes the loss NaN.
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

LogicalResult crossEntropyKernel(nn::CrossEntropyOp op, KernelCall &call) {
  const Tensor &logits = call.operand(0), &labels = call.operand(1);
  if (logits.getRank() < 1)
    return call.emitError() << "logits must have rank at least 1";
  if (failed(checkIndexTensor(call, labels, "labels")))
    return failure();
  llvm::ArrayRef<int64_t> rowsShape = logits.getShape().drop_back();
  if (failed(checkShape(call, "labels", labels.getShape(), rowsShape,
                        "the logits shape without the last dimension")))
    return failure();
  const Tensor *weights =
      op.getWeights() ? call.operandFor(op.getWeights()) : nullptr;
  if (weights &&
      (weights->getKind() != logits.getKind() ||
       failed(checkShape(call, "weights", weights->getShape(), rowsShape,
                         "the logits shape without the last dimension"))))
    return weights->getKind() != logits.getKind()
               ? LogicalResult(call.emitError()
                               << "weights must have the logits' element type")
               : failure();
  const Tensor *normalizerValue =
      op.getNormalizerValue() ? call.operandFor(op.getNormalizerValue())
                              : nullptr;
  std::optional<APFloat> normalizerAttr = op.getNormalizer();
  if ((normalizerValue != nullptr) == normalizerAttr.has_value())
    return call.emitError() << "needs exactly one normalizer, an attribute or "
                               "an operand";
  if (normalizerValue && (normalizerValue->getKind() != logits.getKind() ||
                          normalizerValue->getRank() != 0))
    return call.emitError() << "the normalizer operand must be a 0-d tensor "
                               "of the logits' element type";

  int64_t vocab = logits.getShape().back();
  int64_t rows = labels.getNumElements();
  return dispatchFloat(call, logits.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(logits.getKind(), {});
    if (!out)
      return failure();
    const T *w = weights ? weights->data<T>() : nullptr;
    T total = 0;
    for (int64_t n = 0; n < rows; ++n) {
      T weight = w ? w[n] : T(1);
      if (weight == T(0))
        continue;
      int64_t label = readIndex(labels, n);
      if (label < 0 || label >= vocab) {
        total = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
      const T *x = logits.data<T>() + n * vocab;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < vocab; ++j)
        max = (x[j] > max || std::isnan(x[j])) ? x[j] : max;
      T sum = 0;
      for (int64_t j = 0; j < vocab; ++j)
        sum += std::exp(x[j] - max);
      T logSumExp = max + std::log(sum);
      total += weight * (logSumExp - x[label]);
    }
    T normalizer = normalizerValue
                       ? normalizerValue->data<T>()[0]
                       : static_cast<T>(normalizerAttr->convertToDouble());
    out->data<T>()[0] = total / normalizer;
    return success();
  });
}

} // namespace

void loom::interp::registerLossKernels(KernelRegistry &registry) {
  registry.add(crossEntropyKernel, /*computesBf16InF32=*/true);
}
