//===- LoomOperators.cpp - Loom's operator package in the test double -----===//
//
// Part of the CPU test double of CANN (see Double.h): the operators of
// libloom_opapi.so (LoomOps.h), each the host kernel of the same nn op
// (HostKernels.h). The operands come first here and the results last; the
// host kernels take results first. Every check a host kernel would end the
// process for is made here first and refused with a status and a message.
// Tensors are contiguous; index operands i32 or i64; offsets and steps 0-d
// i64. The attention operators stage their results in the workspace.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <string>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

/// Checks a float tensor of the same type as `like` (when given).
aclnnStatus floatOperand(Plan &plan, const aclTensor *t, const char *what,
                         TensorArg &arg, const TensorArg *like = nullptr,
                         bool optional = false) {
  LOOM_DOUBLE_TRY(plan.contiguous(t, what, arg, optional));
  LOOM_DOUBLE_TRY(plan.requireFloat(arg));
  if (like)
    LOOM_DOUBLE_TRY(plan.requireSameType(arg, *like));
  return ACLNN_SUCCESS;
}

aclnnStatus indexOperand(Plan &plan, const aclTensor *t, const char *what,
                         TensorArg &arg, bool optional = false) {
  LOOM_DOUBLE_TRY(plan.contiguous(t, what, arg, optional));
  return plan.requireIndex(arg);
}

aclnnStatus scalarIndexOperand(Plan &plan, const aclTensor *t, const char *what,
                               TensorArg &arg, bool optional = true) {
  LOOM_DOUBLE_TRY(plan.contiguous(t, what, arg, optional));
  return plan.requireScalarIndex(arg);
}

/// A result of the type of `like` and shape `shape`.
aclnnStatus result(Plan &plan, const aclTensor *t, const char *what,
                   Output &out, std::initializer_list<const TensorArg *> reads,
                   const TensorArg &like, const host::Shape &shape,
                   bool stage = false, const TensorArg *alias = nullptr) {
  LOOM_DOUBLE_TRY(plan.output(t, what, out, reads, stage, alias));
  LOOM_DOUBLE_TRY(plan.requireSameType(out.arg, like));
  return plan.requireShape(out.arg, shape);
}

aclnnStatus requireRank(Plan &plan, const TensorArg &arg, int64_t rank) {
  if (arg.shape.rank != rank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "%s must have rank %lld",
                     arg.what, static_cast<long long>(rank));
  return ACLNN_SUCCESS;
}

/// The keyword of an enumeration attribute, one of `allowed` (null:
/// `fallback`, where the host kernel has a default).
aclnnStatus keyword(Plan &plan, const char *value, const char *what,
                    std::initializer_list<const char *> allowed,
                    const char *fallback, std::string &keywordOut) {
  if (!value) {
    if (!fallback)
      return plan.fail(ACLNN_ERR_PARAM_NULLPTR, "%s is null", what);
    value = fallback;
  }
  for (const char *candidate : allowed)
    if (std::strcmp(value, candidate) == 0) {
      keywordOut = value;
      return ACLNN_SUCCESS;
    }
  return plan.fail(ACLNN_ERR_PARAM_INVALID,
                   "%s '%s' is not one the host "
                   "kernel knows",
                   what, value);
}

/// The shape checks of host::layer_norm and its gradient: returns the
/// normalised trailing shape.
aclnnStatus normShape(Plan &plan, const TensorArg &input,
                      int64_t normalizedDims, host::Shape &trailing) {
  int64_t dims = normalizedDims == INT64_MIN ? 1 : normalizedDims;
  int64_t rank = input.shape.rank;
  if (dims < 1 || dims > rank)
    return plan.fail(
        ACLNN_ERR_PARAM_INVALID, "normalizedDims %lld is not in [1, %lld]",
        static_cast<long long>(dims), static_cast<long long>(rank));
  trailing = host::Shape();
  for (int64_t d = rank - dims; d < rank; ++d)
    trailing.dims[trailing.rank++] = input.shape[d];
  return ACLNN_SUCCESS;
}

/// The operands of both attention operators, checked as host::attention
/// checks them.
struct Attention {
  TensorArg query, key, value, subtreeEnd, positions;
  std::string mask;
  host::Shape resultShape;
};

aclnnStatus planAttention(Plan &plan, const aclTensor *query,
                          const aclTensor *key, const aclTensor *value,
                          const aclTensor *subtreeEnd,
                          const aclTensor *positions, const char *mask,
                          Attention &a) {
  LOOM_DOUBLE_TRY(floatOperand(plan, query, "query", a.query));
  LOOM_DOUBLE_TRY(floatOperand(plan, key, "key", a.key, &a.query));
  LOOM_DOUBLE_TRY(floatOperand(plan, value, "value", a.value, &a.query));
  for (const TensorArg *arg : {&a.query, &a.key, &a.value})
    LOOM_DOUBLE_TRY(requireRank(plan, *arg, 4));
  LOOM_DOUBLE_TRY(
      indexOperand(plan, subtreeEnd, "subtreeEnd", a.subtreeEnd, true));
  LOOM_DOUBLE_TRY(
      indexOperand(plan, positions, "positions", a.positions, true));
  LOOM_DOUBLE_TRY(
      keyword(plan, mask, "mask", {"none", "causal", "tree"}, nullptr, a.mask));
  const host::Shape &q = a.query.shape, &k = a.key.shape, &v = a.value.shape;
  int64_t batch = q[0], seqQ = q[1], heads = q[2], dim = q[3];
  int64_t seqK = k[1], kvHeads = k[2], valueDim = v[3];
  if (k[0] != batch || v[0] != batch || v[1] != seqK || v[2] != kvHeads ||
      k[3] != dim)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "query, key and value shapes do not fit together");
  if (kvHeads <= 0 || heads % kvHeads != 0)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "query heads %lld are not a multiple of key/value heads "
                     "%lld",
                     static_cast<long long>(heads),
                     static_cast<long long>(kvHeads));
  for (int64_t size : {seqQ, seqK, heads * dim, kvHeads * dim,
                       kvHeads * valueDim, heads * valueDim})
    if (size > INT_MAX)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "dimension %lld is too large for BLAS",
                       static_cast<long long>(size));
  if ((a.mask == "tree") != a.subtreeEnd.present)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "subtreeEnd must be given exactly for a tree mask");
  LOOM_DOUBLE_TRY(plan.requireShape(a.subtreeEnd, host::Shape{batch, seqK}));
  LOOM_DOUBLE_TRY(plan.requireShape(a.positions, host::Shape{batch, seqQ}));
  if (a.mask != "none" && !a.positions.present && seqQ != seqK)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "a masked attention without positions needs seq_q == "
                     "seq_k, got %lld and %lld",
                     static_cast<long long>(seqQ),
                     static_cast<long long>(seqK));
  a.resultShape = host::Shape{batch, seqQ, heads, valueDim};
  return ACLNN_SUCCESS;
}

/// The operands of both cross-entropy operators, checked as
/// host::cross_entropy checks them.
struct Loss {
  TensorArg logits, labels, weights, normalizerValue;
};

aclnnStatus planLoss(Plan &plan, const aclTensor *logits,
                     const aclTensor *labels, const aclTensor *weights,
                     const aclTensor *normalizerValue, double normalizer,
                     Loss &l) {
  LOOM_DOUBLE_TRY(floatOperand(plan, logits, "logits", l.logits));
  if (l.logits.shape.rank < 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "logits must have rank at least 1");
  LOOM_DOUBLE_TRY(indexOperand(plan, labels, "labels", l.labels));
  LOOM_DOUBLE_TRY(
      floatOperand(plan, weights, "weights", l.weights, &l.logits, true));
  LOOM_DOUBLE_TRY(floatOperand(plan, normalizerValue, "normalizerValue",
                               l.normalizerValue, &l.logits, true));
  host::Shape rows = l.logits.shape;
  --rows.rank;
  LOOM_DOUBLE_TRY(plan.requireShape(l.labels, rows));
  LOOM_DOUBLE_TRY(plan.requireShape(l.weights, rows));
  LOOM_DOUBLE_TRY(plan.requireShape(l.normalizerValue, host::Shape{}));
  if (l.normalizerValue.present == !std::isnan(normalizer))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "needs exactly one normalizer: the normalizer attribute "
                     "(NaN when absent) or the normalizerValue operand");
  return ACLNN_SUCCESS;
}

/// A plain pointer to a present operand's elements of type T.
template <typename T> const T *maybe(const TensorArg &arg) {
  return arg.present ? arg.as<T>() : nullptr;
}

} // namespace

//===----------------------------------------------------------------------===//
// GELU, layer norm
//===----------------------------------------------------------------------===//

aclnnStatus aclnnGeluV2GetWorkspaceSize(const aclTensor *input,
                                        int64_t approximate, aclTensor *out,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor) {
  Plan plan("aclnnGeluV2");
  TensorArg x;
  Output o;
  // 0: the erf form ("none"), 1: the tanh approximation.
  if (approximate != 0 && approximate != 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "approximate %lld is neither 0 (none) nor 1 (tanh)",
                     static_cast<long long>(approximate));
  std::string approx = approximate ? "tanh" : "none";
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "x", x));
  LOOM_DOUBLE_TRY(result(plan, out, "y", o, {&x}, x, x.shape));
  return plan.finish(
      [x, o, approx](char *workspace) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::gelu(o.as<T>(workspace), o.arg.shape, x.as<T>(), x.shape,
                     approx.c_str());
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomGeluBackwardGetWorkspaceSize(
    const aclTensor *grad, const aclTensor *input, const char *approximate,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLoomGeluBackward");
  TensorArg g, x;
  Output o;
  std::string approx;
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g));
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "input", x, &g));
  LOOM_DOUBLE_TRY(plan.requireShape(g, x.shape));
  LOOM_DOUBLE_TRY(keyword(plan, approximate, "approximate", {"none", "tanh"},
                          "none", approx));
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&g, &x}, x, x.shape));
  return plan.finish(
      [g, x, o, approx](char *workspace) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::gelu_grad(o.as<T>(workspace), o.arg.shape, g.as<T>(), g.shape,
                          x.as<T>(), x.shape, approx.c_str());
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape,
    const aclTensor *weightOptional, const aclTensor *biasOptional, double eps,
    aclTensor *out, aclTensor *meanOutOptional, aclTensor *rstdOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLayerNorm");
  TensorArg x, s, b;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "input", x));
  LOOM_DOUBLE_TRY(
      floatOperand(plan, weightOptional, "weightOptional", s, &x, true));
  LOOM_DOUBLE_TRY(
      floatOperand(plan, biasOptional, "biasOptional", b, &x, true));
  if (!normalizedShape)
    return plan.fail(ACLNN_ERR_PARAM_NULLPTR, "normalizedShape is null");
  if (!isLive(normalizedShape))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "normalizedShape is not a live int array");
  // normalizedShape: the input's trailing dimensions.
  int64_t dims = static_cast<int64_t>(normalizedShape->values.size());
  bool trails = dims >= 1 && dims <= x.shape.rank;
  host::Shape trailing;
  for (int64_t d = 0; trails && d < dims; ++d) {
    int64_t size = normalizedShape->values[static_cast<size_t>(d)];
    trails = size == x.shape[x.shape.rank - dims + d];
    trailing.dims[trailing.rank++] = size;
  }
  if (!trails)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "normalizedShape is not the trailing shape of input %s",
                     formatShape(x.shape).c_str());
  if (meanOutOptional || rstdOutOptional)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "meanOutOptional and rstdOutOptional are not implemented "
                     "by the test double (pass null)");
  LOOM_DOUBLE_TRY(plan.requireShape(s, trailing));
  LOOM_DOUBLE_TRY(plan.requireShape(b, trailing));
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&x, &s, &b}, x, x.shape));
  double epsilon = eps;
  int64_t normalizedDims = dims;
  return plan.finish(
      [x, s, b, o, epsilon, normalizedDims](char *workspace) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::layer_norm(o.as<T>(workspace), o.arg.shape, x.as<T>(), x.shape,
                           maybe<T>(s), s.shape, maybe<T>(b), b.shape, epsilon,
                           normalizedDims);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

/// The gradient of a normalisation over the last `normalizedDims`
/// dimensions (layer norm, RMS norm): `kernel(T{}, result, grad, input,
/// scale)` with Loom's host kernel.
template <typename Kernel>
aclnnStatus planNormBackward(const char *op, const aclTensor *grad,
                             const aclTensor *input, const aclTensor *scale,
                             int64_t normalizedDims, aclTensor *out,
                             uint64_t *workspaceSize, aclOpExecutor **executor,
                             Kernel kernel) {
  Plan plan(op);
  TensorArg g, x, s;
  Output o;
  host::Shape trailing;
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g));
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "input", x, &g));
  LOOM_DOUBLE_TRY(floatOperand(plan, scale, "scale", s, &g, true));
  LOOM_DOUBLE_TRY(plan.requireShape(g, x.shape));
  LOOM_DOUBLE_TRY(normShape(plan, x, normalizedDims, trailing));
  LOOM_DOUBLE_TRY(plan.requireShape(s, trailing));
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&g, &x, &s}, x, x.shape));
  return plan.finish(
      [g, x, s, o, kernel](char *workspace) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          kernel(zero, o.as<T>(workspace), o.arg.shape, g, x, s);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomLayerNormBackwardGetWorkspaceSize(
    const aclTensor *grad, const aclTensor *input, const aclTensor *scale,
    double epsilon, int64_t normalizedDims, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return planNormBackward(
      "aclnnLoomLayerNormBackward", grad, input, scale, normalizedDims, out,
      workspaceSize, executor,
      [epsilon, normalizedDims](auto zero, auto *result,
                                const host::Shape &shape, const TensorArg &g,
                                const TensorArg &x, const TensorArg &s) {
        using T = decltype(zero);
        host::layer_norm_grad(result, shape, g.as<T>(), g.shape, x.as<T>(),
                              x.shape, maybe<T>(s), s.shape, epsilon,
                              normalizedDims);
      });
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

aclnnStatus aclnnLoomAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value,
    const aclTensor *subtreeEnd, const aclTensor *positions, const char *mask,
    double scale, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  Plan plan("aclnnLoomAttention");
  Attention a;
  Output o;
  LOOM_DOUBLE_TRY(
      planAttention(plan, query, key, value, subtreeEnd, positions, mask, a));
  // Staged in the workspace, as a device kernel keeps its partial results
  // there.
  LOOM_DOUBLE_TRY(
      result(plan, out, "out", o,
             {&a.query, &a.key, &a.value, &a.subtreeEnd, &a.positions}, a.query,
             a.resultShape, /*stage=*/true));
  return plan.finish(
      [a, o, scale](char *workspace) {
        dispatchFloat(a.query.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::attention(
              o.as<T>(workspace), o.arg.shape, a.query.as<T>(), a.query.shape,
              a.key.as<T>(), a.key.shape, a.value.as<T>(), a.value.shape,
              indexPtr(a.subtreeEnd), a.subtreeEnd.shape, indexPtr(a.positions),
              a.positions.shape, a.mask.c_str(), scale);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomAttentionBackwardGetWorkspaceSize(
    const aclTensor *grad, const aclTensor *query, const aclTensor *key,
    const aclTensor *value, const aclTensor *subtreeEnd,
    const aclTensor *positions, const char *mask, double scale,
    aclTensor *dquery, aclTensor *dkey, aclTensor *dvalue,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLoomAttentionBackward");
  Attention a;
  TensorArg g;
  Output dq, dk, dv;
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g));
  LOOM_DOUBLE_TRY(
      planAttention(plan, query, key, value, subtreeEnd, positions, mask, a));
  LOOM_DOUBLE_TRY(plan.requireSameType(g, a.query));
  LOOM_DOUBLE_TRY(plan.requireShape(g, a.resultShape));
  std::initializer_list<const TensorArg *> reads = {
      &g, &a.query, &a.key, &a.value, &a.subtreeEnd, &a.positions};
  LOOM_DOUBLE_TRY(result(plan, dquery, "dquery", dq, reads, a.query,
                         a.query.shape, /*stage=*/true));
  LOOM_DOUBLE_TRY(result(plan, dkey, "dkey", dk, reads, a.query, a.key.shape,
                         /*stage=*/true));
  LOOM_DOUBLE_TRY(result(plan, dvalue, "dvalue", dv, reads, a.query,
                         a.value.shape, /*stage=*/true));
  LOOM_DOUBLE_TRY(plan.disjoint({&dq, &dk, &dv}));
  return plan.finish(
      [a, g, dq, dk, dv, scale](char *workspace) {
        dispatchFloat(a.query.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::attention_grad(
              dq.as<T>(workspace), dq.arg.shape, dk.as<T>(workspace),
              dk.arg.shape, dv.as<T>(workspace), dv.arg.shape, g.as<T>(),
              g.shape, a.query.as<T>(), a.query.shape, a.key.as<T>(),
              a.key.shape, a.value.as<T>(), a.value.shape,
              indexPtr(a.subtreeEnd), a.subtreeEnd.shape, indexPtr(a.positions),
              a.positions.shape, a.mask.c_str(), scale);
        });
        dq.commit(workspace);
        dk.commit(workspace);
        dv.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

aclnnStatus aclnnLoomCrossEntropyGetWorkspaceSize(
    const aclTensor *logits, const aclTensor *labels, const aclTensor *weights,
    const aclTensor *normalizerValue, double normalizer, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLoomCrossEntropy");
  Loss l;
  Output o;
  LOOM_DOUBLE_TRY(
      planLoss(plan, logits, labels, weights, normalizerValue, normalizer, l));
  LOOM_DOUBLE_TRY(result(plan, out, "out", o,
                         {&l.logits, &l.labels, &l.weights, &l.normalizerValue},
                         l.logits, host::Shape{}));
  return plan.finish(
      [l, o, normalizer](char *workspace) {
        dispatchFloat(l.logits.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::cross_entropy(o.as<T>(workspace), o.arg.shape, l.logits.as<T>(),
                              l.logits.shape, indexPtr(l.labels),
                              l.labels.shape, maybe<T>(l.weights),
                              l.weights.shape, maybe<T>(l.normalizerValue),
                              l.normalizerValue.shape, normalizer);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomCrossEntropyBackwardGetWorkspaceSize(
    const aclTensor *grad, const aclTensor *logits, const aclTensor *labels,
    const aclTensor *weights, const aclTensor *normalizerValue,
    double normalizer, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  Plan plan("aclnnLoomCrossEntropyBackward");
  Loss l;
  TensorArg g;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g));
  LOOM_DOUBLE_TRY(
      planLoss(plan, logits, labels, weights, normalizerValue, normalizer, l));
  LOOM_DOUBLE_TRY(plan.requireSameType(g, l.logits));
  LOOM_DOUBLE_TRY(plan.requireShape(g, host::Shape{}));
  LOOM_DOUBLE_TRY(
      result(plan, out, "out", o,
             {&g, &l.logits, &l.labels, &l.weights, &l.normalizerValue},
             l.logits, l.logits.shape));
  return plan.finish(
      [l, g, o, normalizer](char *workspace) {
        dispatchFloat(l.logits.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::cross_entropy_grad(
              o.as<T>(workspace), o.arg.shape, g.as<T>(), g.shape,
              l.logits.as<T>(), l.logits.shape, indexPtr(l.labels),
              l.labels.shape, maybe<T>(l.weights), l.weights.shape,
              maybe<T>(l.normalizerValue), l.normalizerValue.shape, normalizer);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Embedding, gather gradient, iota, log-softmax
//===----------------------------------------------------------------------===//

aclnnStatus aclnnLoomEmbeddingGetWorkspaceSize(
    const aclTensor *table, const aclTensor *ids, const aclTensor *offset,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLoomEmbedding");
  TensorArg t, i, off;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, table, "table", t));
  LOOM_DOUBLE_TRY(requireRank(plan, t, 2));
  LOOM_DOUBLE_TRY(indexOperand(plan, ids, "ids", i));
  if (i.shape.rank >= host::kMaxRank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "ids must have rank below %d",
                     host::kMaxRank);
  LOOM_DOUBLE_TRY(scalarIndexOperand(plan, offset, "offset", off));
  host::Shape shape = i.shape;
  shape.dims[shape.rank++] = t.shape[1];
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&t, &i, &off}, t, shape));
  return plan.finish(
      [t, i, off, o](char *workspace) {
        dispatchFloat(t.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::embedding(o.as<T>(workspace), o.arg.shape, t.as<T>(), t.shape,
                          indexPtr(i), i.shape, scalarIndexPtr(off), off.shape);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnEmbeddingGetWorkspaceSize(const aclTensor *weight,
                                           const aclTensor *indices,
                                           const aclTensor *out,
                                           uint64_t *workspaceSize,
                                           aclOpExecutor **executor) {
  Plan plan("aclnnEmbedding");
  TensorArg t, i;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, weight, "weight", t));
  LOOM_DOUBLE_TRY(requireRank(plan, t, 2));
  LOOM_DOUBLE_TRY(indexOperand(plan, indices, "indices", i));
  if (i.shape.rank >= host::kMaxRank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "indices must have rank below %d",
                     host::kMaxRank);
  host::Shape shape = i.shape;
  shape.dims[shape.rank++] = t.shape[1];
  LOOM_DOUBLE_TRY(
      result(plan, const_cast<aclTensor *>(out), "out", o, {&t, &i}, t, shape));
  return plan.finish(
      [t, i, o](char *workspace) {
        dispatchFloat(t.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::embedding(o.as<T>(workspace), o.arg.shape, t.as<T>(), t.shape,
                          indexPtr(i), i.shape, nullptr, {});
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomGatherBackwardGetWorkspaceSize(const aclTensor *grad,
                                                    const aclTensor *indices,
                                                    const aclTensor *offset,
                                                    int64_t dim, aclTensor *out,
                                                    uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
  Plan plan("aclnnLoomGatherBackward");
  TensorArg g, i, off;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g));
  LOOM_DOUBLE_TRY(indexOperand(plan, indices, "indices", i));
  LOOM_DOUBLE_TRY(plan.requireShape(i, g.shape));
  LOOM_DOUBLE_TRY(scalarIndexOperand(plan, offset, "offset", off));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&g, &i, &off}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, g));
  int64_t rank = g.shape.rank;
  if (dim < 0 || dim >= rank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "dim %lld is not in [0, %lld)",
                     static_cast<long long>(dim), static_cast<long long>(rank));
  bool fits = o.arg.shape.rank == rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == dim || o.arg.shape[d] == g.shape[d];
  if (!fits)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "out does not have grad's shape outside dimension %lld",
                     static_cast<long long>(dim));
  return plan.finish(
      [g, i, off, o, dim](char *workspace) {
        dispatchFloat(g.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::gather_grad(o.as<T>(workspace), o.arg.shape, g.as<T>(), g.shape,
                            indexPtr(i), i.shape, scalarIndexPtr(off),
                            off.shape, dim);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomIotaGetWorkspaceSize(const aclTensor *offset, int64_t dim,
                                          aclTensor *out,
                                          uint64_t *workspaceSize,
                                          aclOpExecutor **executor) {
  Plan plan("aclnnLoomIota");
  TensorArg off;
  Output o;
  LOOM_DOUBLE_TRY(scalarIndexOperand(plan, offset, "offset", off));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&off}));
  aclDataType dtype = o.arg.dtype;
  if (dtype != ACL_FLOAT && dtype != ACL_DOUBLE && dtype != ACL_INT32 &&
      dtype != ACL_INT64)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "out has element type %s; iota fills f32, f64, i32 and "
                     "i64",
                     dtypeName(dtype));
  int64_t rank = o.arg.shape.rank;
  if (dim < 0 || dim >= rank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "dim %lld is not in [0, %lld)",
                     static_cast<long long>(dim), static_cast<long long>(rank));
  return plan.finish(
      [off, o, dim](char *workspace) {
        auto run = [&](auto zero) {
          using T = decltype(zero);
          host::iota(o.as<T>(workspace), o.arg.shape, scalarIndexPtr(off),
                     off.shape, dim);
        };
        switch (o.arg.dtype) {
        case ACL_FLOAT:
          run(float{});
          break;
        case ACL_DOUBLE:
          run(double{});
          break;
        case ACL_INT32:
          run(int32_t{});
          break;
        default:
          run(int64_t{});
          break;
        }
        o.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

aclnnStatus aclnnLoomAdamWGetWorkspaceSize(
    const aclTensor *param, const aclTensor *grad, const aclTensor *m,
    const aclTensor *v, const aclTensor *step, double beta1, double beta2,
    const char *decay, int64_t decaySteps, double epsilon, double lr,
    double minLr, int64_t warmupSteps, double weightDecay,
    aclTensor *newParam, aclTensor *newM, aclTensor *newV,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLoomAdamW");
  std::string decayKeyword;
  LOOM_DOUBLE_TRY(keyword(plan, decay, "decay",
                          {"constant", "linear", "cosine"}, "constant",
                          decayKeyword));
  TensorArg p, g, mArg, vArg, s;
  Output np, nm, nv;
  LOOM_DOUBLE_TRY(floatOperand(plan, param, "param", p));
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g, &p));
  LOOM_DOUBLE_TRY(floatOperand(plan, m, "m", mArg, &p));
  LOOM_DOUBLE_TRY(floatOperand(plan, v, "v", vArg, &p));
  for (const TensorArg *arg : {&g, &mArg, &vArg})
    LOOM_DOUBLE_TRY(plan.requireShape(*arg, p.shape));
  LOOM_DOUBLE_TRY(scalarIndexOperand(plan, step, "step", s,
                                     /*optional=*/false));
  std::initializer_list<const TensorArg *> reads = {&p, &g, &mArg, &vArg, &s};
  // Each result may alias the state it updates (in place).
  LOOM_DOUBLE_TRY(
      result(plan, newParam, "newParam", np, reads, p, p.shape, false, &p));
  LOOM_DOUBLE_TRY(
      result(plan, newM, "newM", nm, reads, p, p.shape, false, &mArg));
  LOOM_DOUBLE_TRY(
      result(plan, newV, "newV", nv, reads, p, p.shape, false, &vArg));
  LOOM_DOUBLE_TRY(plan.disjoint({&np, &nm, &nv}));
  return plan.finish(
      [p, g, mArg, vArg, s, np, nm, nv, beta1, beta2, decayKeyword,
       decaySteps, epsilon, lr, minLr, warmupSteps,
       weightDecay](char *workspace) {
        dispatchFloat(p.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::adamw_update(
              np.as<T>(workspace), np.arg.shape, nm.as<T>(workspace),
              nm.arg.shape, nv.as<T>(workspace), nv.arg.shape, p.as<T>(),
              p.shape, g.as<T>(), g.shape, mArg.as<T>(), mArg.shape,
              vArg.as<T>(), vArg.shape, scalarIndexPtr(s), s.shape, beta1,
              beta2, decayKeyword.c_str(), decaySteps, epsilon, lr, minLr,
              warmupSteps, weightDecay);
        });
        np.commit(workspace);
        nm.commit(workspace);
        nv.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomSgdGetWorkspaceSize(
    const aclTensor *param, const aclTensor *grad,
    const aclTensor *momentumBuffer, const aclTensor *step, const char *decay,
    int64_t decaySteps, double lr, double minLr, double momentum,
    bool nesterov, int64_t warmupSteps, double weightDecay,
    aclTensor *newParam, aclTensor *newMomentumBuffer,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  Plan plan("aclnnLoomSgd");
  TensorArg p, g, b, s;
  std::string decayKeyword;
  LOOM_DOUBLE_TRY(keyword(plan, decay, "decay",
                          {"constant", "linear", "cosine"}, "constant",
                          decayKeyword));
  Output np, nb;
  LOOM_DOUBLE_TRY(floatOperand(plan, param, "param", p));
  LOOM_DOUBLE_TRY(floatOperand(plan, grad, "grad", g, &p));
  LOOM_DOUBLE_TRY(floatOperand(plan, momentumBuffer, "momentumBuffer", b, &p));
  LOOM_DOUBLE_TRY(plan.requireShape(g, p.shape));
  LOOM_DOUBLE_TRY(plan.requireShape(b, p.shape));
  LOOM_DOUBLE_TRY(scalarIndexOperand(plan, step, "step", s));
  std::initializer_list<const TensorArg *> reads = {&p, &g, &b, &s};
  LOOM_DOUBLE_TRY(
      result(plan, newParam, "newParam", np, reads, p, p.shape, false, &p));
  LOOM_DOUBLE_TRY(result(plan, newMomentumBuffer, "newMomentumBuffer", nb,
                         reads, p, p.shape, false, &b));
  LOOM_DOUBLE_TRY(plan.disjoint({&np, &nb}));
  return plan.finish(
      [p, g, b, s, np, nb, decayKeyword, decaySteps, lr, minLr, momentum,
       nesterov, warmupSteps, weightDecay](char *workspace) {
        dispatchFloat(p.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::sgd_update(np.as<T>(workspace), np.arg.shape,
                           nb.as<T>(workspace), nb.arg.shape, p.as<T>(),
                           p.shape, g.as<T>(), g.shape, b.as<T>(), b.shape,
                           scalarIndexPtr(s), s.shape, decayKeyword.c_str(),
                           decaySteps, lr, minLr, momentum, nesterov,
                           warmupSteps, weightDecay);
        });
        np.commit(workspace);
        nb.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Gather, dropout, RMS norm, rotary embedding
//===----------------------------------------------------------------------===//

aclnnStatus aclnnGatherGetWorkspaceSize(const aclTensor *self,
                                        const int64_t dim,
                                        const aclTensor *index, aclTensor *out,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor) {
  Plan plan("aclnnGather");
  TensorArg x, i;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", x));
  LOOM_DOUBLE_TRY(indexOperand(plan, index, "index", i));
  // As torch.gather: indices of the input's rank, equal to it outside
  // `dim`; the result has the indices' shape.
  int64_t rank = x.shape.rank;
  bool fits = i.shape.rank == rank && dim >= 0 && dim < rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == dim || i.shape[d] == x.shape[d];
  if (!fits)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "indices of shape %s and dim %lld do not fit the input "
                     "of shape %s",
                     formatShape(i.shape).c_str(), static_cast<long long>(dim),
                     formatShape(x.shape).c_str());
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&x, &i}, x, i.shape));
  return plan.finish(
      [x, i, o, dim](char *workspace) {
        dispatchData(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::gather(o.as<T>(workspace), o.arg.shape, x.as<T>(), x.shape,
                       indexPtr(i), i.shape, dim);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomDropoutGetWorkspaceSize(
    const aclTensor *input, const aclTensor *offset,
    const aclTensorList *startsOptional, const aclIntArray *globalShapeOptional,
    double rate, int64_t seed, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  Plan plan("aclnnLoomDropout");
  TensorArg x, off;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "input", x));
  LOOM_DOUBLE_TRY(scalarIndexOperand(plan, offset, "offset", off));
  if (!(rate >= 0 && rate < 1))
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "rate %g is not in [0, 1)", rate);
  // A block of a larger tensor: one 0-d i64 start per dimension and the
  // global shape, both or neither.
  if (!startsOptional != !globalShapeOptional)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "startsOptional and globalShapeOptional go together");
  std::vector<TensorArg> starts;
  host::Shape global = host::kAbsentShape;
  if (startsOptional) {
    LOOM_DOUBLE_TRY(plan.list(startsOptional, "startsOptional"));
    if (!isLive(globalShapeOptional))
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "globalShapeOptional is not a live int array");
    const std::vector<int64_t> &sizes = globalShapeOptional->values;
    size_t rank = static_cast<size_t>(x.shape.rank);
    if (startsOptional->tensors.size() != rank || sizes.size() != rank)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "needs one start and one global size per dimension of "
                       "the rank-%zu input, got %zu and %zu",
                       rank, startsOptional->tensors.size(), sizes.size());
    starts.resize(rank);
    global.rank = 0;
    for (size_t d = 0; d < rank; ++d) {
      LOOM_DOUBLE_TRY(scalarIndexOperand(plan, startsOptional->tensors[d],
                                         "an element of startsOptional",
                                         starts[d], /*optional=*/false));
      global.dims[global.rank++] = sizes[d];
    }
  }
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&x, &off}, x, x.shape));
  return plan.finish(
      [x, off, starts, global, o, rate, seed](char *workspace) {
        std::vector<const int64_t *> pointers;
        std::vector<host::Shape> shapes;
        for (const TensorArg &start : starts) {
          pointers.push_back(scalarIndexPtr(start));
          shapes.push_back(start.shape);
        }
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::dropout(o.as<T>(workspace), o.arg.shape, x.as<T>(), x.shape,
                        scalarIndexPtr(off), off.shape,
                        static_cast<int64_t>(pointers.size()), pointers.data(),
                        shapes.data(), global, rate, seed);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus
aclnnLoomRmsNormGetWorkspaceSize(const aclTensor *input, const aclTensor *scale,
                                 double epsilon, int64_t normalizedDims,
                                 aclTensor *out, uint64_t *workspaceSize,
                                 aclOpExecutor **executor) {
  Plan plan("aclnnLoomRmsNorm");
  TensorArg x, s;
  Output o;
  host::Shape trailing;
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "input", x));
  LOOM_DOUBLE_TRY(floatOperand(plan, scale, "scale", s, &x, true));
  LOOM_DOUBLE_TRY(normShape(plan, x, normalizedDims, trailing));
  LOOM_DOUBLE_TRY(plan.requireShape(s, trailing));
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&x, &s}, x, x.shape));
  return plan.finish(
      [x, s, o, epsilon, normalizedDims](char *workspace) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::rms_norm(o.as<T>(workspace), o.arg.shape, x.as<T>(), x.shape,
                         maybe<T>(s), s.shape, epsilon, normalizedDims);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnLoomRmsNormBackwardGetWorkspaceSize(
    const aclTensor *grad, const aclTensor *input, const aclTensor *scale,
    double epsilon, int64_t normalizedDims, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return planNormBackward(
      "aclnnLoomRmsNormBackward", grad, input, scale, normalizedDims, out,
      workspaceSize, executor,
      [epsilon, normalizedDims](auto zero, auto *result,
                                const host::Shape &shape, const TensorArg &g,
                                const TensorArg &x, const TensorArg &s) {
        using T = decltype(zero);
        host::rms_norm_grad(result, shape, g.as<T>(), g.shape, x.as<T>(),
                            x.shape, maybe<T>(s), s.shape, epsilon,
                            normalizedDims);
      });
}

aclnnStatus aclnnLoomRopeGetWorkspaceSize(const aclTensor *input,
                                          const aclTensor *positions,
                                          bool inverse, double theta,
                                          aclTensor *out,
                                          uint64_t *workspaceSize,
                                          aclOpExecutor **executor) {
  Plan plan("aclnnLoomRope");
  TensorArg x, p;
  Output o;
  LOOM_DOUBLE_TRY(floatOperand(plan, input, "input", x));
  LOOM_DOUBLE_TRY(indexOperand(plan, positions, "positions", p));
  if (x.shape.rank < 3 || x.shape[x.shape.rank - 1] % 2 != 0)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "input of shape %s: rotary embedding needs rank >= 3 "
                     "and an even last dimension",
                     formatShape(x.shape).c_str());
  // One position per token: the input's shape without (heads, head_dim).
  host::Shape tokens = x.shape;
  tokens.rank -= 2;
  LOOM_DOUBLE_TRY(plan.requireShape(p, tokens));
  LOOM_DOUBLE_TRY(result(plan, out, "out", o, {&x, &p}, x, x.shape));
  return plan.finish(
      [x, p, o, inverse, theta](char *workspace) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::rope(o.as<T>(workspace), o.arg.shape, x.as<T>(), x.shape,
                     indexPtr(p), p.shape, inverse, theta);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

#define LOOM_DOUBLE_LAUNCH(OP)                                                 \
  aclnnStatus OP(void *workspace, uint64_t workspaceSize,                      \
                 aclOpExecutor *executor, aclrtStream stream) {                \
    return launch(#OP, workspace, workspaceSize, executor, stream);            \
  }
LOOM_ASCEND_LOOM_OPERATORS(LOOM_DOUBLE_LAUNCH)
#undef LOOM_DOUBLE_LAUNCH

// Every operator is defined with its declaration's parameters (LoomOps.h.inc,
// generated from the ops' kernel contracts): a definition with others would
// be a C++ overload, not the exported C function, and taking the address of
// an overloaded name does not compile.
#define LOOM_DOUBLE_ONE_DEFINITION(OP)                                         \
  static_assert(sizeof(&OP##GetWorkspaceSize) != 0 && sizeof(&OP) != 0);
LOOM_ASCEND_LOOM_OPERATORS(LOOM_DOUBLE_ONE_DEFINITION)
#undef LOOM_DOUBLE_ONE_DEFINITION
