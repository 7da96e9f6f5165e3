//===- AscendKernels.h - Ascend kernels generated code calls ----*- C++ -*-===//
//
// The Ascend counterparts of the host kernels (runtime/kernels/HostKernels.h)
// that the Ascend target supports: `loom::ascend::<op>` with exactly the
// parameters of `loom::host::<op>` and the same conventions, on DEVICE
// pointers (the arena is device memory). Each is one aclnn operator,
// called in two phases (aclnn<Op>GetWorkspaceSize, then aclnn<Op> on the
// rank's stream with a workspace from aclrtMalloc that is freed only after
// the stream has been synchronised):
//
//   matmul                     aclnnMatmul (transposes as strided views)
//   add sub mul div maximum minimum, exp neg log sqrt rsqrt tanh relu silu
//   sin cos                    the aclnn operator of the same name
//   reduce                     aclnnReduceSum / aclnnMean / aclnnAmax
//   copy reshape broadcast transpose slice
//                              aclnnInplaceCopy from a strided view
//   fill                       aclnnInplaceFillScalar
//   concat                     aclnnCat
//   softmax log_softmax        aclnnSoftmax, aclnnLogSoftmax
//   gelu                       aclnnGeluV2
//   layer_norm                 aclnnLayerNorm
//   gather                     aclnnGather
//   embedding                  aclnnEmbedding (Loom's with an offset)
//   compare                    aclnnEqTensor, aclnnNeTensor, ... (by predicate)
//   cast, clamp, select        aclnnCast, aclnnClamp, aclnnSWhere
//   slice_grad                 aclnnInplaceFillScalar (0), then
//                              aclnnInplaceCopy into a strided view
//   gelu_grad layer_norm_grad attention attention_grad cross_entropy
//   cross_entropy_grad gather_grad iota dropout rms_norm rms_norm_grad rope
//   adamw_update sgd_update    Loom's own operators (LoomOps.h)
//
// Every nn op with a host kernel is here; codegen/Ascend/EmitAscend.cpp
// refuses, with a diagnostic, any other (a guard for ops added later).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_ASCENDKERNELS_H
#define LOOM_RUNTIME_ASCEND_ASCENDKERNELS_H

#include "runtime/ascend/AscendApi.h"
#include "runtime/kernels/HostKernels.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace loom::ascend {

using loom::host::IndexPtr;
using loom::host::kAbsent;
using loom::host::kAbsentShape;
using loom::host::Shape;

namespace detail {

template <typename T> struct Identity { using Type = T; };

template <typename T> constexpr aclDataType dtypeOf();
template <> constexpr aclDataType dtypeOf<float>() { return ACL_FLOAT; }
template <> constexpr aclDataType dtypeOf<double>() { return ACL_DOUBLE; }
template <> constexpr aclDataType dtypeOf<int32_t>() { return ACL_INT32; }
template <> constexpr aclDataType dtypeOf<int64_t>() { return ACL_INT64; }
template <> constexpr aclDataType dtypeOf<bool>() { return ACL_BOOL; }

/// A tensor argument: device pointer (null: absent), shape, element type.
struct Arg {
  const void *data = nullptr;
  Shape shape;
  aclDataType type = ACL_DT_UNDEFINED;
};
template <typename T> Arg arg(const T *data, Shape shape) {
  return {data, shape, dtypeOf<T>()};
}
inline Arg indexArg(IndexPtr ids, Shape shape) {
  return {ids.data, shape, ids.is64 ? ACL_INT64 : ACL_INT32};
}

void copy(Arg out, Arg in);
void fill(Arg out, double value);
void matmul(Arg out, Arg lhs, Arg rhs, bool transposeLhs, bool transposeRhs);
void binary(const char *op, Arg out, Arg lhs, Arg rhs);
void unary(const char *op, Arg out, Arg in);
void reduce(Arg out, Arg in, Shape dims, bool keepDims, const char *kind);
void broadcast(Arg out, Arg in, Shape broadcastDims);
void transpose(Arg out, Arg in, Shape permutation);
void slice(Arg out, Arg in, Shape offsets, Shape strides);
void concat(Arg out, int64_t count, const Arg *inputs, int64_t dim);
void softmax(Arg out, Arg in, int64_t dim);
void logSoftmax(Arg out, Arg in, int64_t dim);
void gelu(Arg out, Arg in, const char *approximate);
void geluGrad(Arg out, Arg grad, Arg in, const char *approximate);
void layerNorm(Arg out, Arg in, Arg scale, Arg bias, double epsilon,
               int64_t normalizedDims);
void layerNormGrad(Arg out, Arg grad, Arg in, Arg scale, double epsilon,
                   int64_t normalizedDims);
void attention(Arg out, Arg query, Arg key, Arg value, Arg subtreeEnd,
               Arg positions, const char *mask, double scale);
void attentionGrad(Arg dquery, Arg dkey, Arg dvalue, Arg grad, Arg query,
                   Arg key, Arg value, Arg subtreeEnd, Arg positions,
                   const char *mask, double scale);
void crossEntropy(Arg out, Arg logits, Arg labels, Arg weights,
                  Arg normalizerValue, double normalizer);
void crossEntropyGrad(Arg out, Arg grad, Arg logits, Arg labels, Arg weights,
                      Arg normalizerValue, double normalizer);
void embedding(Arg out, Arg table, Arg ids, Arg offset);
void gatherGrad(Arg out, Arg grad, Arg indices, Arg offset, int64_t dim);
void iota(Arg out, Arg offset, int64_t dim);
void adamw(Arg newParam, Arg newM, Arg newV, Arg param, Arg grad, Arg m, Arg v,
           Arg step, double beta1, double beta2, double epsilon, double lr,
           double weightDecay);
void compare(Arg out, Arg lhs, Arg rhs, const char *predicate);
void cast(Arg out, Arg in);
void clamp(Arg out, Arg in, double max, double min);
void select(Arg out, Arg condition, Arg whenTrue, Arg whenFalse);
void sliceGrad(Arg out, Arg grad, Shape offsets, Shape strides);
void gather(Arg out, Arg in, Arg indices, int64_t dim);
void dropout(Arg out, Arg in, Arg offset, int64_t count, const Arg *starts,
             Shape globalShape, double rate, int64_t seed);
void rmsNorm(Arg out, Arg in, Arg scale, double epsilon,
             int64_t normalizedDims);
void rmsNormGrad(Arg out, Arg grad, Arg in, Arg scale, double epsilon,
                 int64_t normalizedDims);
void rope(Arg out, Arg in, Arg positions, bool inverse, double theta);
void sgd(Arg newParam, Arg newMomentumBuffer, Arg param, Arg grad,
         Arg momentumBuffer, double lr, double momentum, bool nesterov,
         double weightDecay);

} // namespace detail

/// Operands take the result's element type without deducing it, so that
/// an absent optional operand can be `nullptr`.
template <typename T> using Same = typename detail::Identity<T>::Type;

template <typename T>
void copy(T *out, Shape outShape, const Same<T> *in, Shape) {
  detail::copy(detail::arg(out, outShape), detail::arg(in, outShape));
}
template <typename T>
void reshape(T *out, Shape outShape, const Same<T> *in, Shape) {
  detail::copy(detail::arg(out, outShape), detail::arg(in, outShape));
}
template <typename T> void fill(T *out, Shape outShape, double value) {
  detail::fill(detail::arg(out, outShape), value);
}
template <typename T>
void matmul(T *result, Shape resultShape, const Same<T> *lhs, Shape lhsShape,
            const Same<T> *rhs, Shape rhsShape, bool transposeLhs,
            bool transposeRhs) {
  detail::matmul(detail::arg(result, resultShape), detail::arg(lhs, lhsShape),
                 detail::arg(rhs, rhsShape), transposeLhs, transposeRhs);
}

#define LOOM_ASCEND_BINARY(NAME)                                               \
  template <typename T>                                                        \
  void NAME(T *result, Shape resultShape, const Same<T> *lhs, Shape lhsShape,  \
            const Same<T> *rhs, Shape rhsShape) {                              \
    detail::binary(#NAME, detail::arg(result, resultShape),                    \
                   detail::arg(lhs, lhsShape), detail::arg(rhs, rhsShape));    \
  }
LOOM_ASCEND_BINARY(add)
LOOM_ASCEND_BINARY(sub)
LOOM_ASCEND_BINARY(mul)
LOOM_ASCEND_BINARY(div)
LOOM_ASCEND_BINARY(maximum)
LOOM_ASCEND_BINARY(minimum)
#undef LOOM_ASCEND_BINARY

#define LOOM_ASCEND_UNARY(NAME)                                                \
  template <typename T>                                                        \
  void NAME(T *result, Shape resultShape, const Same<T> *input,                \
            Shape inputShape) {                                                \
    detail::unary(#NAME, detail::arg(result, resultShape),                     \
                  detail::arg(input, inputShape));                             \
  }
LOOM_ASCEND_UNARY(neg)
LOOM_ASCEND_UNARY(exp)
LOOM_ASCEND_UNARY(log)
LOOM_ASCEND_UNARY(sqrt)
LOOM_ASCEND_UNARY(rsqrt)
LOOM_ASCEND_UNARY(tanh)
LOOM_ASCEND_UNARY(relu)
LOOM_ASCEND_UNARY(silu)
LOOM_ASCEND_UNARY(sin)
LOOM_ASCEND_UNARY(cos)
#undef LOOM_ASCEND_UNARY

template <typename T>
void gelu(T *result, Shape resultShape, const Same<T> *input, Shape inputShape,
          const char *approximate) {
  detail::gelu(detail::arg(result, resultShape), detail::arg(input, inputShape),
               approximate);
}
template <typename T>
void gelu_grad(T *result, Shape resultShape, const Same<T> *grad,
               Shape gradShape, const Same<T> *input, Shape inputShape,
               const char *approximate) {
  detail::geluGrad(detail::arg(result, resultShape),
                   detail::arg(grad, gradShape), detail::arg(input, inputShape),
                   approximate);
}
template <typename T>
void reduce(T *result, Shape resultShape, const Same<T> *input,
            Shape inputShape, Shape dims, bool keepDims, const char *kind) {
  detail::reduce(detail::arg(result, resultShape),
                 detail::arg(input, inputShape), dims, keepDims, kind);
}
template <typename T>
void broadcast(T *result, Shape resultShape, const Same<T> *input,
               Shape inputShape, Shape broadcastDims) {
  detail::broadcast(detail::arg(result, resultShape),
                    detail::arg(input, inputShape), broadcastDims);
}
template <typename T>
void transpose(T *result, Shape resultShape, const Same<T> *input,
               Shape inputShape, Shape permutation) {
  detail::transpose(detail::arg(result, resultShape),
                    detail::arg(input, inputShape), permutation);
}
template <typename T>
void slice(T *result, Shape resultShape, const Same<T> *input, Shape inputShape,
           Shape offsets, Shape, Shape strides) {
  detail::slice(detail::arg(result, resultShape),
                detail::arg(input, inputShape), offsets, strides);
}
template <typename T>
void concat(T *result, Shape resultShape, int64_t count,
            const Same<T> *const *inputs, const Shape *inputShapes,
            int64_t dim) {
  std::vector<detail::Arg> args(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    args[static_cast<size_t>(i)] = detail::arg(inputs[i], inputShapes[i]);
  detail::concat(detail::arg(result, resultShape), count, args.data(), dim);
}
template <typename T>
void concat(T *result, Shape resultShape,
            std::initializer_list<const Same<T> *> inputs,
            std::initializer_list<Shape> inputShapes, int64_t dim) {
  // Qualified: argument-dependent lookup would find the host kernel.
  loom::ascend::concat<T>(result, resultShape,
                          static_cast<int64_t>(inputs.size()), inputs.begin(),
                          inputShapes.begin(), dim);
}
template <typename T>
void softmax(T *result, Shape resultShape, const Same<T> *input,
             Shape inputShape, int64_t dim) {
  detail::softmax(detail::arg(result, resultShape),
                  detail::arg(input, inputShape), dim);
}
template <typename T>
void log_softmax(T *result, Shape resultShape, const Same<T> *input,
                 Shape inputShape, int64_t dim) {
  detail::logSoftmax(detail::arg(result, resultShape),
                     detail::arg(input, inputShape), dim);
}
template <typename T>
void layer_norm(T *result, Shape resultShape, const Same<T> *input,
                Shape inputShape, const Same<T> *scale, Shape scaleShape,
                const Same<T> *bias, Shape biasShape, double epsilon,
                int64_t normalizedDims) {
  detail::layerNorm(detail::arg(result, resultShape),
                    detail::arg(input, inputShape),
                    detail::arg(scale, scaleShape),
                    detail::arg(bias, biasShape), epsilon, normalizedDims);
}
template <typename T>
void layer_norm_grad(T *result, Shape resultShape, const Same<T> *grad,
                     Shape gradShape, const Same<T> *input, Shape inputShape,
                     const Same<T> *scale, Shape scaleShape, double epsilon,
                     int64_t normalizedDims) {
  detail::layerNormGrad(
      detail::arg(result, resultShape), detail::arg(grad, gradShape),
      detail::arg(input, inputShape), detail::arg(scale, scaleShape), epsilon,
      normalizedDims);
}
template <typename T>
void attention(T *result, Shape resultShape, const Same<T> *query,
               Shape queryShape, const Same<T> *key, Shape keyShape,
               const Same<T> *value, Shape valueShape, IndexPtr subtreeEnd,
               Shape subtreeEndShape, IndexPtr positions, Shape positionsShape,
               const char *mask, double scale) {
  detail::attention(detail::arg(result, resultShape),
                    detail::arg(query, queryShape), detail::arg(key, keyShape),
                    detail::arg(value, valueShape),
                    detail::indexArg(subtreeEnd, subtreeEndShape),
                    detail::indexArg(positions, positionsShape), mask, scale);
}
template <typename T>
void attention_grad(T *dquery, Shape dqueryShape, T *dkey, Shape dkeyShape,
                    T *dvalue, Shape dvalueShape, const Same<T> *grad,
                    Shape gradShape, const Same<T> *query, Shape queryShape,
                    const Same<T> *key, Shape keyShape, const Same<T> *value,
                    Shape valueShape, IndexPtr subtreeEnd,
                    Shape subtreeEndShape, IndexPtr positions,
                    Shape positionsShape, const char *mask, double scale) {
  detail::attentionGrad(
      detail::arg(dquery, dqueryShape), detail::arg(dkey, dkeyShape),
      detail::arg(dvalue, dvalueShape), detail::arg(grad, gradShape),
      detail::arg(query, queryShape), detail::arg(key, keyShape),
      detail::arg(value, valueShape),
      detail::indexArg(subtreeEnd, subtreeEndShape),
      detail::indexArg(positions, positionsShape), mask, scale);
}
template <typename T>
void cross_entropy(T *result, Shape resultShape, const Same<T> *logits,
                   Shape logitsShape, IndexPtr labels, Shape labelsShape,
                   const Same<T> *weights, Shape weightsShape,
                   const Same<T> *normalizerValue, Shape normalizerValueShape,
                   double normalizer) {
  detail::crossEntropy(
      detail::arg(result, resultShape), detail::arg(logits, logitsShape),
      detail::indexArg(labels, labelsShape), detail::arg(weights, weightsShape),
      detail::arg(normalizerValue, normalizerValueShape), normalizer);
}
template <typename T>
void cross_entropy_grad(T *result, Shape resultShape, const Same<T> *grad,
                        Shape gradShape, const Same<T> *logits,
                        Shape logitsShape, IndexPtr labels, Shape labelsShape,
                        const Same<T> *weights, Shape weightsShape,
                        const Same<T> *normalizerValue,
                        Shape normalizerValueShape, double normalizer) {
  detail::crossEntropyGrad(
      detail::arg(result, resultShape), detail::arg(grad, gradShape),
      detail::arg(logits, logitsShape), detail::indexArg(labels, labelsShape),
      detail::arg(weights, weightsShape),
      detail::arg(normalizerValue, normalizerValueShape), normalizer);
}
template <typename T>
void embedding(T *result, Shape resultShape, const Same<T> *table,
               Shape tableShape, IndexPtr ids, Shape idsShape,
               const int64_t *offset, Shape offsetShape) {
  detail::embedding(
      detail::arg(result, resultShape), detail::arg(table, tableShape),
      detail::indexArg(ids, idsShape), detail::arg(offset, offsetShape));
}
template <typename T>
void gather_grad(T *result, Shape resultShape, const Same<T> *grad,
                 Shape gradShape, IndexPtr indices, Shape indicesShape,
                 const int64_t *offset, Shape offsetShape, int64_t dim) {
  detail::gatherGrad(detail::arg(result, resultShape),
                     detail::arg(grad, gradShape),
                     detail::indexArg(indices, indicesShape),
                     detail::arg(offset, offsetShape), dim);
}
template <typename T>
void iota(T *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim) {
  detail::iota(detail::arg(result, resultShape),
               detail::arg(offset, offsetShape), dim);
}
template <typename T>
void adamw_update(T *newParam, Shape newParamShape, T *newM, Shape newMShape,
                  T *newV, Shape newVShape, const Same<T> *param,
                  Shape paramShape, const Same<T> *grad, Shape gradShape,
                  const Same<T> *m, Shape mShape, const Same<T> *v,
                  Shape vShape, const int64_t *step, Shape stepShape,
                  double beta1, double beta2, double epsilon, double lr,
                  double weightDecay) {
  detail::adamw(detail::arg(newParam, newParamShape),
                detail::arg(newM, newMShape), detail::arg(newV, newVShape),
                detail::arg(param, paramShape), detail::arg(grad, gradShape),
                detail::arg(m, mShape), detail::arg(v, vShape),
                detail::arg(step, stepShape), beta1, beta2, epsilon, lr,
                weightDecay);
}
template <typename T>
void sgd_update(T *newParam, Shape newParamShape, T *newMomentumBuffer,
                Shape newMomentumBufferShape, const Same<T> *param,
                Shape paramShape, const Same<T> *grad, Shape gradShape,
                const Same<T> *momentumBuffer, Shape momentumBufferShape,
                double lr, double momentum, bool nesterov, double weightDecay) {
  detail::sgd(detail::arg(newParam, newParamShape),
              detail::arg(newMomentumBuffer, newMomentumBufferShape),
              detail::arg(param, paramShape), detail::arg(grad, gradShape),
              detail::arg(momentumBuffer, momentumBufferShape), lr, momentum,
              nesterov, weightDecay);
}

template <typename T>
void compare(bool *result, Shape resultShape, const T *lhs, Shape lhsShape,
             const Same<T> *rhs, Shape rhsShape, const char *predicate) {
  detail::compare(detail::arg(result, resultShape), detail::arg(lhs, lhsShape),
                  detail::arg(rhs, rhsShape), predicate);
}
template <typename To, typename From>
void cast(To *result, Shape resultShape, const From *input, Shape inputShape) {
  detail::cast(detail::arg(result, resultShape),
               detail::arg(input, inputShape));
}
template <typename T>
void clamp(T *result, Shape resultShape, const Same<T> *input, Shape inputShape,
           double max, double min) {
  detail::clamp(detail::arg(result, resultShape),
                detail::arg(input, inputShape), max, min);
}
template <typename T>
void select(T *result, Shape resultShape, const bool *condition,
            Shape conditionShape, const Same<T> *trueValue, Shape trueShape,
            const Same<T> *falseValue, Shape falseShape) {
  detail::select(
      detail::arg(result, resultShape), detail::arg(condition, conditionShape),
      detail::arg(trueValue, trueShape), detail::arg(falseValue, falseShape));
}
template <typename T>
void slice_grad(T *result, Shape resultShape, const Same<T> *grad,
                Shape gradShape, Shape offsets, Shape strides) {
  detail::sliceGrad(detail::arg(result, resultShape),
                    detail::arg(grad, gradShape), offsets, strides);
}
template <typename T>
void gather(T *result, Shape resultShape, const Same<T> *input,
            Shape inputShape, IndexPtr indices, Shape indicesShape,
            int64_t dim) {
  detail::gather(detail::arg(result, resultShape),
                 detail::arg(input, inputShape),
                 detail::indexArg(indices, indicesShape), dim);
}
template <typename T>
void dropout(T *result, Shape resultShape, const Same<T> *input,
             Shape inputShape, const int64_t *offset, Shape offsetShape,
             int64_t count, const int64_t *const *starts,
             const Shape *startsShapes, Shape globalShape, double rate,
             int64_t seed) {
  std::vector<detail::Arg> args(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    args[static_cast<size_t>(i)] = detail::arg(starts[i], startsShapes[i]);
  detail::dropout(detail::arg(result, resultShape),
                  detail::arg(input, inputShape),
                  detail::arg(offset, offsetShape), count, args.data(),
                  globalShape, rate, seed);
}
template <typename T>
void dropout(T *result, Shape resultShape, const Same<T> *input,
             Shape inputShape, const int64_t *offset, Shape offsetShape,
             std::initializer_list<const int64_t *> starts,
             std::initializer_list<Shape> startsShapes, Shape globalShape,
             double rate, int64_t seed) {
  // Qualified: argument-dependent lookup would find the host kernel.
  loom::ascend::dropout<T>(result, resultShape, input, inputShape, offset,
                           offsetShape, static_cast<int64_t>(starts.size()),
                           starts.begin(), startsShapes.begin(), globalShape,
                           rate, seed);
}
template <typename T>
void rms_norm(T *result, Shape resultShape, const Same<T> *input,
              Shape inputShape, const Same<T> *scale, Shape scaleShape,
              double epsilon, int64_t normalizedDims) {
  detail::rmsNorm(detail::arg(result, resultShape),
                  detail::arg(input, inputShape),
                  detail::arg(scale, scaleShape), epsilon, normalizedDims);
}
template <typename T>
void rms_norm_grad(T *result, Shape resultShape, const Same<T> *grad,
                   Shape gradShape, const Same<T> *input, Shape inputShape,
                   const Same<T> *scale, Shape scaleShape, double epsilon,
                   int64_t normalizedDims) {
  detail::rmsNormGrad(detail::arg(result, resultShape),
                      detail::arg(grad, gradShape),
                      detail::arg(input, inputShape),
                      detail::arg(scale, scaleShape), epsilon, normalizedDims);
}
template <typename T>
void rope(T *result, Shape resultShape, const Same<T> *input, Shape inputShape,
          IndexPtr positions, Shape positionsShape, bool inverse,
          double theta) {
  detail::rope(detail::arg(result, resultShape), detail::arg(input, inputShape),
               detail::indexArg(positions, positionsShape), inverse, theta);
}

} // namespace loom::ascend

#endif // LOOM_RUNTIME_ASCEND_ASCENDKERNELS_H
