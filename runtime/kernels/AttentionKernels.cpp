//===- AttentionKernels.cpp - nn.attention and nn.attention_grad ----------===//
//
// As the interpreter. Forward, per batch and query head: scores = scale *
// Q K^T (one GEMM reading the [batch, seq, heads, head_dim] layout in place
// through leading dimensions), a masked softmax over the visible keys in
// key order, out = P V (one GEMM). Backward, per batch, head and query: the
// probabilities again, then the three gradients accumulated in that order
// (the key and value gradients are scatter-adds over heads and queries).
// A query that sees no key yields zeros and contributes nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Blas.h"
#include "runtime/kernels/KernelSupport.h"

#include <climits>
#include <cmath>
#include <limits>

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

/// The checked sizes, mask operands and scale of one attention op.
struct AttentionGeometry {
  int64_t batch = 0, seqQ = 0, heads = 0, dim = 0;
  int64_t seqK = 0, kvHeads = 0, valueDim = 0, group = 1;
  MaskKind kind = MaskKind::None;
  IndexPtr subtreeEnd = nullptr, positions = nullptr;
  double scale = 1.0;

  /// The key index query `i` of batch `b` sits at.
  int64_t positionOf(int64_t b, int64_t i) const {
    return positions ? positions[b * seqQ + i] : i;
  }
  /// Whether key `j` of batch `b` is visible to a query at key index `p`.
  bool sees(int64_t b, int64_t j, int64_t p) const {
    switch (kind) {
    case MaskKind::None:
      return true;
    case MaskKind::Causal:
      return j <= p;
    case MaskKind::Tree:
      return j <= p && p <= subtreeEnd[b * seqK + j];
    }
    return false;
  }
};

AttentionGeometry getGeometry(const char *kernel, const Shape &queryShape,
                              const Shape &keyShape, const Shape &valueShape,
                              IndexPtr subtreeEnd, const Shape &subtreeEndShape,
                              IndexPtr positions, const Shape &positionsShape,
                              const char *mask, double scale) {
  AttentionGeometry g;
  for (const Shape *shape : {&queryShape, &keyShape, &valueShape})
    LOOM_HOST_CHECK(shape->rank == 4, kernel,
                    "query, key and value must have rank 4 ([batch, seq, "
                    "heads, head_dim]), got shape %s",
                    formatShape(*shape));
  checkValid(kernel, "the query", queryShape);
  checkValid(kernel, "the key", keyShape);
  checkValid(kernel, "the value", valueShape);
  g.batch = queryShape[0];
  g.seqQ = queryShape[1];
  g.heads = queryShape[2];
  g.dim = queryShape[3];
  g.seqK = keyShape[1];
  g.kvHeads = keyShape[2];
  g.valueDim = valueShape[3];
  LOOM_HOST_CHECK(keyShape[0] == g.batch && valueShape[0] == g.batch &&
                      valueShape[1] == g.seqK && valueShape[2] == g.kvHeads &&
                      keyShape[3] == g.dim,
                  kernel, "query %s, key %s and value %s do not fit together",
                  formatShape(queryShape, 0), formatShape(keyShape, 1),
                  formatShape(valueShape, 2));
  LOOM_HOST_CHECK(g.kvHeads > 0 && g.heads % g.kvHeads == 0, kernel,
                  "query heads %lld are not a multiple of key/value heads "
                  "%lld",
                  static_cast<long long>(g.heads),
                  static_cast<long long>(g.kvHeads));
  for (int64_t size : {g.seqQ, g.seqK, g.heads * g.dim, g.kvHeads * g.dim,
                       g.kvHeads * g.valueDim, g.heads * g.valueDim})
    LOOM_HOST_CHECK(size <= INT_MAX, kernel,
                    "dimension %lld is too large for BLAS",
                    static_cast<long long>(size));
  g.group = g.heads / g.kvHeads;
  g.kind = parseMaskKind(kernel, mask);
  g.subtreeEnd = subtreeEnd;
  g.positions = positions;
  LOOM_HOST_CHECK((g.kind == MaskKind::Tree) == bool(subtreeEnd), kernel,
                  "subtree_end must be given exactly for a tree mask");
  if (subtreeEnd)
    checkShape(kernel, "subtree_end", subtreeEndShape, Shape{g.batch, g.seqK});
  if (positions)
    checkShape(kernel, "the positions", positionsShape, Shape{g.batch, g.seqQ});
  LOOM_HOST_CHECK(
      g.kind == MaskKind::None || positions || g.seqQ == g.seqK, kernel,
      "a masked attention without positions needs seq_q == seq_k, "
      "got %lld and %lld",
      static_cast<long long>(g.seqQ), static_cast<long long>(g.seqK));
  g.scale =
      scale == scale ? scale : 1.0 / std::sqrt(static_cast<double>(g.dim));
  return g;
}

template <typename T>
void attentionImpl(T *result, const Shape &resultShape, const T *query,
                   const Shape &queryShape, const T *key, const Shape &keyShape,
                   const T *value, const Shape &valueShape, IndexPtr subtreeEnd,
                   const Shape &subtreeEndShape, IndexPtr positions,
                   const Shape &positionsShape, const char *mask,
                   double scaleAttr) {
  const char *kernel = "attention";
  AttentionGeometry g =
      getGeometry(kernel, queryShape, keyShape, valueShape, subtreeEnd,
                  subtreeEndShape, positions, positionsShape, mask, scaleAttr);
  checkShape(kernel, "the result", resultShape,
             Shape{g.batch, g.seqQ, g.heads, g.valueDim});
  const int64_t seqQ = g.seqQ, seqK = g.seqK, heads = g.heads, dim = g.dim,
                kvHeads = g.kvHeads, valueDim = g.valueDim;
  int64_t total = resultShape.numElements();
  if (total == 0)
    return;
  if (seqK == 0) {
    // No key to see: zeros.
    for (int64_t i = 0; i < total; ++i)
      result[i] = T(0);
    return;
  }
  T *scores = scratch<T>(0, static_cast<size_t>(seqQ * seqK));
  uint8_t *visible = scratch<uint8_t>(0, static_cast<size_t>(seqK));
  const T scale = static_cast<T>(g.scale);
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvHead = h / g.group;
      const T *q = query + (b * seqQ * heads + h) * dim;
      const T *k = key + (b * seqK * kvHeads + kvHead) * dim;
      const T *v = value + (b * seqK * kvHeads + kvHead) * valueDim;
      T *o = result + (b * seqQ * heads + h) * valueDim;
      gemm(false, true, seqQ, seqK, dim, scale, q, heads * dim, k,
           kvHeads * dim, T(0), scores, seqK);
      for (int64_t i = 0; i < seqQ; ++i) {
        int64_t p = g.positionOf(b, i);
        T *row = scores + i * seqK;
        T max = -std::numeric_limits<T>::infinity();
        bool any = false;
        for (int64_t j = 0; j < seqK; ++j) {
          bool sees = g.sees(b, j, p);
          visible[j] = sees;
          if (sees) {
            any = true;
            max = math::runningMax(max, row[j]);
          }
        }
        if (!any) {
          for (int64_t j = 0; j < seqK; ++j)
            row[j] = T(0);
          continue;
        }
        T sum = 0;
        for (int64_t j = 0; j < seqK; ++j) {
          row[j] = visible[j] ? std::exp(row[j] - max) : T(0);
          sum += row[j];
        }
        for (int64_t j = 0; j < seqK; ++j)
          row[j] /= sum;
      }
      gemm(false, false, seqQ, valueDim, seqK, T(1), scores, seqK, v,
           kvHeads * valueDim, T(0), o, heads * valueDim);
    }
  }
}

template <typename T>
void attentionGradImpl(T *dq, const Shape &dqShape, T *dk, const Shape &dkShape,
                       T *dv, const Shape &dvShape, const T *grad,
                       const Shape &gradShape, const T *query,
                       const Shape &queryShape, const T *key,
                       const Shape &keyShape, const T *value,
                       const Shape &valueShape, IndexPtr subtreeEnd,
                       const Shape &subtreeEndShape, IndexPtr positions,
                       const Shape &positionsShape, const char *mask,
                       double scaleAttr) {
  const char *kernel = "attention_grad";
  AttentionGeometry g =
      getGeometry(kernel, queryShape, keyShape, valueShape, subtreeEnd,
                  subtreeEndShape, positions, positionsShape, mask, scaleAttr);
  const int64_t seqQ = g.seqQ, seqK = g.seqK, heads = g.heads, dim = g.dim,
                kvHeads = g.kvHeads, valueDim = g.valueDim;
  checkShape(kernel, "grad", gradShape, Shape{g.batch, seqQ, heads, valueDim});
  checkShape(kernel, "dquery", dqShape, queryShape);
  checkShape(kernel, "dkey", dkShape, keyShape);
  checkShape(kernel, "dvalue", dvShape, valueShape);
  for (int64_t i = 0, e = queryShape.numElements(); i < e; ++i)
    dq[i] = T(0);
  for (int64_t i = 0, e = keyShape.numElements(); i < e; ++i)
    dk[i] = T(0);
  for (int64_t i = 0, e = valueShape.numElements(); i < e; ++i)
    dv[i] = T(0);
  if (seqK == 0)
    return;
  const T scale = static_cast<T>(g.scale);
  T *p = scratch<T>(0, static_cast<size_t>(seqK));
  T *ds = scratch<T>(1, static_cast<size_t>(seqK));
  uint8_t *visible = scratch<uint8_t>(0, static_cast<size_t>(seqK));
  // Row offsets of [batch, seq, heads, width] tensors.
  auto qAt = [&](int64_t b, int64_t i, int64_t h, int64_t width) {
    return ((b * seqQ + i) * heads + h) * width;
  };
  auto kAt = [&](int64_t b, int64_t j, int64_t kvHead, int64_t width) {
    return ((b * seqK + j) * kvHeads + kvHead) * width;
  };
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvHead = h / g.group;
      for (int64_t i = 0; i < seqQ; ++i) {
        int64_t pos = g.positionOf(b, i);
        const T *q = query + qAt(b, i, h, dim);
        const T *dout = grad + qAt(b, i, h, valueDim);
        bool any = false;
        T max = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < seqK; ++j) {
          bool sees = g.sees(b, j, pos);
          visible[j] = sees;
          if (!sees)
            continue;
          any = true;
          const T *k = key + kAt(b, j, kvHead, dim);
          T s = 0;
          for (int64_t d = 0; d < dim; ++d)
            s += q[d] * k[d];
          p[j] = scale * s;
          max = math::runningMax(max, p[j]);
        }
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
            const T *v = value + kAt(b, j, kvHead, valueDim);
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
          const T coefficient = scale * ds[j];
          const T *k = key + kAt(b, j, kvHead, dim);
          T *dkRow = dk + kAt(b, j, kvHead, dim);
          T *dvRow = dv + kAt(b, j, kvHead, valueDim);
          for (int64_t d = 0; d < dim; ++d) {
            dqRow[d] += coefficient * k[d];
            dkRow[d] += coefficient * q[d];
          }
          const T pj = p[j];
          for (int64_t d = 0; d < valueDim; ++d)
            dvRow[d] += pj * dout[d];
        }
      }
    }
  }
}

} // namespace

#define DEFINE_ATTENTION(T)                                                    \
  void loom::host::attention(                                                  \
      T *result, Shape resultShape, const T *query, Shape queryShape,          \
      const T *key, Shape keyShape, const T *value, Shape valueShape,          \
      IndexPtr subtreeEnd, Shape subtreeEndShape, IndexPtr positions,          \
      Shape positionsShape, const char *mask, double scale) {                  \
    attentionImpl(result, resultShape, query, queryShape, key, keyShape,       \
                  value, valueShape, subtreeEnd, subtreeEndShape, positions,   \
                  positionsShape, mask, scale);                                \
  }                                                                            \
  void loom::host::attention_grad(                                             \
      T *dquery, Shape dqueryShape, T *dkey, Shape dkeyShape, T *dvalue,       \
      Shape dvalueShape, const T *grad, Shape gradShape, const T *query,       \
      Shape queryShape, const T *key, Shape keyShape, const T *value,          \
      Shape valueShape, IndexPtr subtreeEnd, Shape subtreeEndShape,            \
      IndexPtr positions, Shape positionsShape, const char *mask,              \
      double scale) {                                                          \
    attentionGradImpl(                                                         \
        dquery, dqueryShape, dkey, dkeyShape, dvalue, dvalueShape, grad,       \
        gradShape, query, queryShape, key, keyShape, value, valueShape,        \
        subtreeEnd, subtreeEndShape, positions, positionsShape, mask, scale);  \
  }
DEFINE_ATTENTION(float)
DEFINE_ATTENTION(double)
#undef DEFINE_ATTENTION
