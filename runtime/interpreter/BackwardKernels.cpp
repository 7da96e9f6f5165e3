//===- BackwardKernels.cpp - nn.fill and the backward ops -----------------===//
//
// The ops only gradients need (dialects/nn/IR/NNBackwardOps.td), computed
// exactly as their docs state, in the element type (bf16 in f32) and in a
// fixed order: sums over a normalised group run in index order; scatter-adds
// (gather_grad, the key/value gradients of attention_grad) visit the
// incoming gradient in row-major order. nn.fill rounds its f64 value once to
// the element type.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/AttentionMask.h"
#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Reports unless `tensor` (operand `name`) has the kind of `reference`
/// (operand `referenceName`).
LogicalResult checkSameKind(const KernelCall &call, const Tensor &tensor,
                            StringRef name, const Tensor &reference,
                            StringRef referenceName) {
  if (tensor.getKind() == reference.getKind())
    return success();
  return call.emitError() << name << " has element type "
                          << getElementKindName(tensor.getKind()) << ", the "
                          << referenceName << " "
                          << getElementKindName(reference.getKind());
}

/// The static shape of the op's only result, for ops whose result shape is
/// not determined by their operands.
FailureOr<SmallVector<int64_t>> staticResultShape(const KernelCall &call) {
  auto type = cast<RankedTensorType>(call.getOp()->getResult(0).getType());
  if (!type.hasStaticShape())
    return call.emitError() << "the interpreter needs a static result type, "
                               "got "
                            << type;
  return SmallVector<int64_t>(type.getShape());
}

//===----------------------------------------------------------------------===//
// nn.fill
//===----------------------------------------------------------------------===//

LogicalResult fillKernel(nn::FillOp op, KernelCall &call) {
  FailureOr<SmallVector<int64_t>> shape = staticResultShape(call);
  if (failed(shape))
    return failure();
  ElementKind kind = *getElementKind(op.getType().getElementType());
  Tensor *out = call.addResult(kind, *shape);
  if (!out)
    return failure();
  double value = op.getValue().convertToDouble();
  int64_t count = out->getNumElements();
  switch (kind) {
  case ElementKind::F32:
    std::fill_n(out->data<float>(), count, static_cast<float>(value));
    return success();
  case ElementKind::F64:
    std::fill_n(out->data<double>(), count, value);
    return success();
  case ElementKind::BF16:
    std::fill_n(out->data<uint16_t>(), count, doubleToBf16(value));
    return success();
  default:
    return call.emitError() << "expects a float result, got "
                            << getElementKindName(kind);
  }
}

//===----------------------------------------------------------------------===//
// nn.gelu_grad
//===----------------------------------------------------------------------===//

LogicalResult geluGradKernel(nn::GeluGradOp op, KernelCall &call) {
  const Tensor &grad = call.operand(0), &input = call.operand(1);
  if (failed(checkSameKind(call, grad, "grad", input, "input")) ||
      failed(checkShape(call, "grad", grad.getShape(), input.getShape(),
                        "the shape of the input")))
    return failure();
  bool tanhApprox = op.getApproximate() == nn::GeluApproximation::Tanh;
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *dy = grad.data<T>(), *x = input.data<T>();
    T *dx = out->data<T>();
    const T half = T(0.5), one = T(1);
    const T invSqrt2 = static_cast<T>(1.0 / std::sqrt(2.0));
    const T invSqrt2Pi = static_cast<T>(1.0 / std::sqrt(2.0 * M_PI));
    const T c = static_cast<T>(std::sqrt(2.0 / M_PI));
    const T k = T(0.044715);
    for (int64_t i = 0, e = input.getNumElements(); i < e; ++i) {
      T v = x[i], derivative;
      if (tanhApprox) {
        T t = std::tanh(c * (v + k * v * v * v));
        derivative = half * (one + t) +
                     half * v * (one - t * t) * c * (one + T(3) * k * v * v);
      } else {
        T cdf = (one + std::erf(v * invSqrt2)) * half;
        T pdf = std::exp(-(v * v) * half) * invSqrt2Pi;
        derivative = cdf + v * pdf;
      }
      dx[i] = dy[i] * derivative;
    }
    return success();
  });
}

//===----------------------------------------------------------------------===//
// nn.layer_norm_grad, nn.rms_norm_grad
//===----------------------------------------------------------------------===//

/// Checks a norm gradient's operands; returns (rows, row length).
FailureOr<std::pair<int64_t, int64_t>>
normGradShape(const KernelCall &call, const Tensor &grad, const Tensor &input,
              const Tensor *scale, int64_t normalizedDims) {
  if (failed(checkSameKind(call, grad, "grad", input, "input")) ||
      failed(checkShape(call, "grad", grad.getShape(), input.getShape(),
                        "the shape of the input")))
    return failure();
  int64_t rank = input.getRank();
  if (normalizedDims < 1 || normalizedDims > rank)
    return call.emitError() << "normalized_dims " << normalizedDims
                            << " is not in [1, " << rank << "]";
  ArrayRef<int64_t> trailing = input.getShape().take_back(normalizedDims);
  if (scale &&
      (failed(checkSameKind(call, *scale, "scale", input, "input")) ||
       failed(checkShape(call, "scale", scale->getShape(), trailing,
                         "the normalised trailing shape of the input"))))
    return failure();
  int64_t row = getCheckedNumElements(trailing).value_or(0);
  int64_t rows = row == 0 ? 0 : input.getNumElements() / row;
  return std::make_pair(rows, row);
}

/// Shared body of the two norm gradients: `centre` subtracts the mean
/// (layer norm) or not (rms norm).
LogicalResult normGrad(KernelCall &call, const Tensor *scale,
                       int64_t normalizedDims, double epsilon, bool centre) {
  const Tensor &grad = call.operand(0), &input = call.operand(1);
  auto shape = normGradShape(call, grad, input, scale, normalizedDims);
  if (failed(shape))
    return failure();
  int64_t rows = shape->first, row = shape->second;
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *gamma = scale ? scale->data<T>() : nullptr;
    const T eps = static_cast<T>(epsilon), count = static_cast<T>(row);
    std::vector<T> g(static_cast<size_t>(row)), xhat(static_cast<size_t>(row));
    for (int64_t r = 0; r < rows; ++r) {
      const T *x = input.data<T>() + r * row;
      const T *dy = grad.data<T>() + r * row;
      T *dx = out->data<T>() + r * row;
      T mu = 0;
      if (centre) {
        for (int64_t j = 0; j < row; ++j)
          mu += x[j];
        mu /= count;
      }
      T squares = 0;
      for (int64_t j = 0; j < row; ++j)
        squares += (x[j] - mu) * (x[j] - mu);
      T rstd = T(1) / std::sqrt(squares / count + eps);
      T sumG = 0, sumGX = 0;
      for (int64_t j = 0; j < row; ++j) {
        xhat[j] = (x[j] - mu) * rstd;
        g[j] = gamma ? dy[j] * gamma[j] : dy[j];
        sumG += g[j];
        sumGX += g[j] * xhat[j];
      }
      T meanG = centre ? sumG / count : T(0), meanGX = sumGX / count;
      for (int64_t j = 0; j < row; ++j)
        dx[j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
    }
    return success();
  });
}

LogicalResult layerNormGradKernel(nn::LayerNormGradOp op, KernelCall &call) {
  const Tensor *scale = op.getScale() ? call.operandFor(op.getScale()) : nullptr;
  return normGrad(call, scale, static_cast<int64_t>(op.getNormalizedDims()),
                  op.getEpsilon().convertToDouble(), /*centre=*/true);
}

LogicalResult rmsNormGradKernel(nn::RmsNormGradOp op, KernelCall &call) {
  const Tensor *scale = op.getScale() ? call.operandFor(op.getScale()) : nullptr;
  return normGrad(call, scale, static_cast<int64_t>(op.getNormalizedDims()),
                  op.getEpsilon().convertToDouble(), /*centre=*/false);
}

//===----------------------------------------------------------------------===//
// nn.cross_entropy_grad
//===----------------------------------------------------------------------===//

LogicalResult crossEntropyGradKernel(nn::CrossEntropyGradOp op,
                                     KernelCall &call) {
  const Tensor &grad = call.operand(0), &logits = call.operand(1),
               &labels = call.operand(2);
  if (logits.getRank() < 1)
    return call.emitError() << "logits must have rank at least 1";
  if (failed(checkSameKind(call, grad, "grad", logits, "logits")))
    return failure();
  if (grad.getRank() != 0)
    return call.emitError() << "grad must be a 0-d tensor, got shape "
                            << formatShape(grad.getShape());
  if (failed(checkIndexTensor(call, labels, "labels")))
    return failure();
  ArrayRef<int64_t> rowsShape = logits.getShape().drop_back();
  if (failed(checkShape(call, "labels", labels.getShape(), rowsShape,
                        "the logits shape without the last dimension")))
    return failure();
  const Tensor *weights =
      op.getWeights() ? call.operandFor(op.getWeights()) : nullptr;
  if (weights &&
      (failed(checkSameKind(call, *weights, "weights", logits, "logits")) ||
       failed(checkShape(call, "weights", weights->getShape(), rowsShape,
                         "the logits shape without the last dimension"))))
    return failure();
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
    Tensor *out = call.addResult(logits.getKind(), logits.getShape());
    if (!out)
      return failure();
    const T *w = weights ? weights->data<T>() : nullptr;
    const T dloss = grad.data<T>()[0];
    const T normalizer =
        normalizerValue ? normalizerValue->data<T>()[0]
                        : static_cast<T>(normalizerAttr->convertToDouble());
    for (int64_t n = 0; n < rows; ++n) {
      const T *x = logits.data<T>() + n * vocab;
      T *dx = out->data<T>() + n * vocab;
      // A row with weight 0 (padding) contributes nothing to the loss, so
      // its gradient is zero whatever its logits and label.
      if (w && w[n] == T(0)) {
        std::fill(dx, dx + vocab, T(0));
        continue;
      }
      T coefficient = dloss * (w ? w[n] : T(1)) / normalizer;
      int64_t label = readIndex(labels, n);
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t v = 0; v < vocab; ++v)
        max = (x[v] > max || std::isnan(x[v])) ? x[v] : max;
      T sum = 0;
      for (int64_t v = 0; v < vocab; ++v)
        sum += std::exp(x[v] - max);
      for (int64_t v = 0; v < vocab; ++v) {
        T p = std::exp(x[v] - max) / sum;
        dx[v] = coefficient * (v == label ? p - T(1) : p);
      }
    }
    return success();
  });
}

//===----------------------------------------------------------------------===//
// nn.attention_grad
//===----------------------------------------------------------------------===//

LogicalResult attentionGradKernel(nn::AttentionGradOp op, KernelCall &call) {
  const Tensor &grad = call.operand(0), &query = call.operand(1),
               &key = call.operand(2), &value = call.operand(3);
  for (auto [tensor, name] :
       {std::make_pair(&grad, "grad"), std::make_pair(&query, "query"),
        std::make_pair(&key, "key"), std::make_pair(&value, "value")}) {
    if (tensor->getRank() != 4)
      return call.emitError() << name << " must have rank 4 ([batch, seq, "
                              << "heads, head_dim]), got shape "
                              << formatShape(tensor->getShape());
    if (failed(checkSameKind(call, *tensor, name, query, "query")))
      return failure();
  }
  ArrayRef<int64_t> qs = query.getShape(), ks = key.getShape(),
                    vs = value.getShape();
  int64_t batch = qs[0], seqQ = qs[1], heads = qs[2], dim = qs[3];
  int64_t seqK = ks[1], kvHeads = ks[2], valueDim = vs[3];
  if (ks[0] != batch || vs[0] != batch)
    return call.emitError() << "batch sizes differ: query " << batch
                            << ", key " << ks[0] << ", value " << vs[0];
  if (vs[1] != seqK || vs[2] != kvHeads)
    return call.emitError() << "key of shape " << formatShape(ks)
                            << " and value of shape " << formatShape(vs)
                            << " differ in sequence length or heads";
  if (ks[3] != dim)
    return call.emitError() << "key head_dim " << ks[3]
                            << " differs from the query head_dim " << dim;
  if (kvHeads == 0 || heads % kvHeads != 0)
    return call.emitError() << "query heads " << heads
                            << " are not a multiple of key/value heads "
                            << kvHeads;
  if (failed(checkShape(call, "grad", grad.getShape(),
                        {batch, seqQ, heads, valueDim},
                        "the attention's result [batch, seq_q, heads, "
                        "value_head_dim]")))
    return failure();

  FailureOr<AttentionMask> maskOr =
      getAttentionMask(call, op, batch, seqQ, seqK, dim);
  if (failed(maskOr))
    return failure();
  const AttentionMask &mask = *maskOr;
  int64_t group = heads / kvHeads;
  ElementKind kind = query.getKind();
  return dispatchFloat(call, kind, [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    if (!call.addResult(kind, qs) || !call.addResult(kind, ks) ||
        !call.addResult(kind, vs))
      return failure();
    if (seqK == 0)
      return success();
    T *dq = call.result(0).data<T>();
    T *dk = call.result(1).data<T>();
    T *dv = call.result(2).data<T>();
    const T scale = static_cast<T>(mask.scale);
    std::vector<T> p(static_cast<size_t>(seqK)), ds(static_cast<size_t>(seqK));
    std::vector<uint8_t> visible(static_cast<size_t>(seqK));
    // Row offsets of [batch, seq, heads, width] tensors.
    auto qAt = [&](int64_t b, int64_t i, int64_t h, int64_t width) {
      return ((b * seqQ + i) * heads + h) * width;
    };
    auto kAt = [&](int64_t b, int64_t j, int64_t g, int64_t width) {
      return ((b * seqK + j) * kvHeads + g) * width;
    };
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        int64_t g = h / group;
        for (int64_t i = 0; i < seqQ; ++i) {
          int64_t pos = mask.positionOf(b, i);
          const T *q = query.data<T>() + qAt(b, i, h, dim);
          const T *dout = grad.data<T>() + qAt(b, i, h, valueDim);
          bool any = false;
          T max = -std::numeric_limits<T>::infinity();
          for (int64_t j = 0; j < seqK; ++j) {
            bool sees = mask.sees(b, j, pos);
            visible[j] = sees;
            if (!sees)
              continue;
            any = true;
            const T *k = key.data<T>() + kAt(b, j, g, dim);
            T s = 0;
            for (int64_t d = 0; d < dim; ++d)
              s += q[d] * k[d];
            p[j] = scale * s;
            max = (p[j] > max || std::isnan(p[j])) ? p[j] : max;
          }
          // A query that sees no key contributes nothing.
          if (!any)
            continue;
          T sum = 0;
          for (int64_t j = 0; j < seqK; ++j) {
            p[j] = visible[j] ? std::exp(p[j] - max) : T(0);
            sum += p[j];
          }
          T pdp = 0;
          for (int64_t j = 0; j < seqK; ++j) {
            p[j] /= sum;
            T dp = 0;
            if (visible[j]) {
              const T *v = value.data<T>() + kAt(b, j, g, valueDim);
              for (int64_t d = 0; d < valueDim; ++d)
                dp += dout[d] * v[d];
            }
            ds[j] = dp;
            pdp += p[j] * dp;
          }
          T *dqRow = dq + qAt(b, i, h, dim);
          for (int64_t j = 0; j < seqK; ++j) {
            if (!visible[j])
              continue;
            ds[j] = p[j] * (ds[j] - pdp);
            const T *k = key.data<T>() + kAt(b, j, g, dim);
            T *dkRow = dk + kAt(b, j, g, dim);
            T *dvRow = dv + kAt(b, j, g, valueDim);
            for (int64_t d = 0; d < dim; ++d) {
              dqRow[d] += scale * ds[j] * k[d];
              dkRow[d] += scale * ds[j] * q[d];
            }
            for (int64_t d = 0; d < valueDim; ++d)
              dvRow[d] += p[j] * dout[d];
          }
        }
      }
    }
    return success();
  });
}

//===----------------------------------------------------------------------===//
// nn.gather_grad, nn.slice_grad
//===----------------------------------------------------------------------===//

LogicalResult gatherGradKernel(nn::GatherGradOp op, KernelCall &call) {
  const Tensor &grad = call.operand(0), &indices = call.operand(1);
  if (failed(checkIndexTensor(call, indices, "indices")) ||
      failed(checkShape(call, "grad", grad.getShape(), indices.getShape(),
                        "the shape of the indices")))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = staticResultShape(call);
  if (failed(shape))
    return failure();
  int64_t rank = grad.getRank();
  if (static_cast<int64_t>(shape->size()) != rank)
    return call.emitError() << "result of shape " << formatShape(*shape)
                            << " must have the rank of grad of shape "
                            << formatShape(grad.getShape());
  FailureOr<int64_t> dim =
      checkDim(call, static_cast<int64_t>(op.getDim()), rank);
  if (failed(dim))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *dim && (*shape)[d] != grad.getShape()[d])
      return call.emitError()
             << "grad of shape " << formatShape(grad.getShape())
             << " differs from the result of shape " << formatShape(*shape)
             << " in dimension " << d;
  return dispatchFloat(call, grad.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(grad.getKind(), *shape);
    if (!out)
      return failure();
    SmallVector<int64_t> outStrides = getRowMajorStrides(*shape);
    int64_t dimStride = outStrides[*dim], dimSize = (*shape)[*dim];
    SmallVector<int64_t> walk = outStrides;
    walk[*dim] = 0;
    std::array<SmallVector<int64_t>, 1> strides = {walk};
    const T *dy = grad.data<T>();
    T *dx = out->data<T>();
    // With an offset the result is a block of a larger one along `dim`.
    int64_t offset = op.getOffset() ? readIndex(call.operand(2), 0) : 0;
    forEachStrided<1>(grad.getShape(), strides, {0},
                      [&](int64_t i, const std::array<int64_t, 1> &off) {
                        int64_t index = readIndex(indices, i) - offset;
                        if (index >= 0 && index < dimSize)
                          dx[off[0] + index * dimStride] += dy[i];
                      });
    return success();
  });
}

LogicalResult sliceGradKernel(nn::SliceGradOp op, KernelCall &call) {
  const Tensor &grad = call.operand(0);
  FailureOr<SmallVector<int64_t>> shape = staticResultShape(call);
  if (failed(shape))
    return failure();
  ArrayRef<int64_t> offsets = op.getOffsets(), steps = op.getStrides();
  int64_t rank = grad.getRank();
  if (static_cast<int64_t>(shape->size()) != rank ||
      static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return call.emitError() << "needs a result, one offset and one stride "
                               "per dimension of grad of rank "
                            << rank;
  SmallVector<int64_t> outStrides = getRowMajorStrides(*shape);
  SmallVector<int64_t> strides;
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = grad.getShape()[d], dimSize = (*shape)[d];
    if (offsets[d] < 0 || steps[d] <= 0 ||
        (size > 0 && (offsets[d] >= dimSize ||
                      (size - 1) > (dimSize - 1 - offsets[d]) / steps[d])))
      return call.emitError() << "dimension " << d << " has offset "
                              << offsets[d] << ", stride " << steps[d]
                              << " and " << size
                              << " positions, which do not fit in size "
                              << dimSize;
    base += offsets[d] * outStrides[d];
    strides.push_back(steps[d] * outStrides[d]);
  }
  return dispatchFloat(call, grad.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(grad.getKind(), *shape);
    if (!out)
      return failure();
    if (grad.getNumElements() == 0)
      return success();
    std::array<SmallVector<int64_t>, 1> walk = {strides};
    const T *dy = grad.data<T>();
    T *dx = out->data<T>();
    forEachStrided<1>(grad.getShape(), walk, {base},
                      [&](int64_t i, const std::array<int64_t, 1> &off) {
                        dx[off[0]] = dy[i];
                      });
    return success();
  });
}

} // namespace

void loom::interp::registerBackwardKernels(KernelRegistry &registry) {
  constexpr bool inF32 = true;
  registry.add(fillKernel);
  registry.add(geluGradKernel, inF32);
  registry.add(layerNormGradKernel, inF32);
  registry.add(rmsNormGradKernel, inF32);
  registry.add(crossEntropyGradKernel, inF32);
  registry.add(attentionGradKernel, inF32);
  registry.add(gatherGradKernel, inF32);
  registry.add(sliceGradKernel, inF32);
}
