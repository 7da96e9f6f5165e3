//===- AttentionKernels.cu - nn.attention and nn.attention_grad -----------===//
//
// The host kernels' semantics ([batch, seq, heads, head_dim] operands,
// grouped key/value heads, none/causal/tree masks, positions), computed
// without atomics:
// * Forward: one block per (batch, head, query): the scores of the visible
//   keys (each a sequential dot product), a masked softmax with fixed-order
//   block reductions, then one thread per output element summing p_j v_j
//   over the keys in order. The score row lives in shared memory when it
//   fits in 32 KiB (the reductions' static shared memory stays under the
//   48 KiB default), else in stream-ordered scratch.
// * Backward, in two kernels. One block per (batch, head, query) recomputes
//   the probabilities p_j and the coefficients c_j = scale * p_j (dp_j -
//   sum_k p_k dp_k), stores both in scratch (batch * heads * seq_q * seq_k
//   each) and writes the query gradient (sum_j c_j k_j, keys in order). Then
//   one block per (batch, key, key/value head) writes the key and value
//   gradients, summing c_j q and p_j dout over the group's heads and the
//   queries in the host kernel's order (heads, then queries): each element
//   has one writer.
// A query that sees no key yields zeros and contributes nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <algorithm>
#include <climits>

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

/// The checked sizes, mask operands and scale of one attention op.
struct Geometry {
  int64_t batch = 0, seqQ = 0, heads = 0, dim = 0;
  int64_t seqK = 0, kvHeads = 0, valueDim = 0, group = 1;
  MaskKind kind = MaskKind::None;
  DeviceIndex subtreeEnd, positions;
  double scale = 1.0;

  /// The key index query `i` of batch `b` sits at.
  __device__ int64_t positionOf(int64_t b, int64_t i) const {
    return positions.data ? positions[b * seqQ + i] : i;
  }
  /// Whether key `j` of batch `b` is visible to a query at key index `p`.
  __device__ bool sees(int64_t b, int64_t j, int64_t p) const {
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
  /// Element offsets of [batch, seq, heads, width] tensors.
  __device__ int64_t qAt(int64_t b, int64_t i, int64_t h, int64_t width) const {
    return ((b * seqQ + i) * heads + h) * width;
  }
  __device__ int64_t kAt(int64_t b, int64_t j, int64_t kvHead,
                         int64_t width) const {
    return ((b * seqK + j) * kvHeads + kvHead) * width;
  }
};

Geometry getGeometry(const char *kernel, const Shape &queryShape,
                     const Shape &keyShape, const Shape &valueShape,
                     IndexPtr subtreeEnd, const Shape &subtreeEndShape,
                     IndexPtr positions, const Shape &positionsShape,
                     const char *mask, double scale) {
  Geometry g;
  for (const Shape *shape : {&queryShape, &keyShape, &valueShape})
    LOOM_CUDA_CHECK(shape->rank == 4, kernel,
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
  LOOM_CUDA_CHECK(keyShape[0] == g.batch && valueShape[0] == g.batch &&
                      valueShape[1] == g.seqK && valueShape[2] == g.kvHeads &&
                      keyShape[3] == g.dim,
                  kernel, "query %s, key %s and value %s do not fit together",
                  formatShape(queryShape, 0), formatShape(keyShape, 1),
                  formatShape(valueShape, 2));
  LOOM_CUDA_CHECK(g.kvHeads > 0 && g.heads % g.kvHeads == 0, kernel,
                  "query heads %lld are not a multiple of key/value heads "
                  "%lld",
                  static_cast<long long>(g.heads),
                  static_cast<long long>(g.kvHeads));
  g.group = g.heads / g.kvHeads;
  g.kind = parseMaskKind(kernel, mask);
  g.subtreeEnd = DeviceIndex(subtreeEnd);
  g.positions = DeviceIndex(positions);
  LOOM_CUDA_CHECK((g.kind == MaskKind::Tree) == bool(subtreeEnd), kernel,
                  "subtree_end must be given exactly for a tree mask");
  if (subtreeEnd)
    checkShape(kernel, "subtree_end", subtreeEndShape, Shape{g.batch, g.seqK});
  if (positions)
    checkShape(kernel, "the positions", positionsShape, Shape{g.batch, g.seqQ});
  LOOM_CUDA_CHECK(
      g.kind == MaskKind::None || positions || g.seqQ == g.seqK, kernel,
      "a masked attention without positions needs seq_q == seq_k, "
      "got %lld and %lld",
      static_cast<long long>(g.seqQ), static_cast<long long>(g.seqK));
  g.scale =
      scale == scale ? scale : 1.0 / std::sqrt(static_cast<double>(g.dim));
  return g;
}

/// The largest score row kept in shared memory.
constexpr size_t kMaxSharedScores = 32 * 1024;

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Row r = (b, h, i), r = (b * heads + h) * seqQ + i. `scratch` holds
/// seqK scores per row, or is null to use dynamic shared memory.
template <typename T>
__global__ void attentionKernel(T *result, const T *query, const T *key,
                                const T *value, Geometry g, T scale, T *scratch,
                                int64_t rows) {
  extern __shared__ __align__(16) unsigned char dynamicShared[];
  const int64_t seqK = g.seqK, dim = g.dim, valueDim = g.valueDim;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t i = r % g.seqQ, h = (r / g.seqQ) % g.heads,
            b = r / (g.seqQ * g.heads);
    int64_t kvHead = h / g.group, pos = g.positionOf(b, i);
    T *p = scratch ? scratch + r * seqK : reinterpret_cast<T *>(dynamicShared);
    const T *q = query + g.qAt(b, i, h, dim);
    T *o = result + g.qAt(b, i, h, valueDim);
    __syncthreads(); // The previous row's readers of p are done.
    T max = negativeInfinity<T>();
    int any = 0;
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x) {
      if (!g.sees(b, j, pos))
        continue;
      const T *k = key + g.kAt(b, j, kvHead, dim);
      T s = 0;
      for (int64_t d = 0; d < dim; ++d)
        s += q[d] * k[d];
      p[j] = scale * s;
      any = 1;
      max = math::runningMax(max, p[j]);
    }
    max = blockReduce(max, MaxOp{});
    any = blockReduce(any, OrOp{});
    if (!any) {
      for (int64_t d = threadIdx.x; d < valueDim; d += blockDim.x)
        o[d] = T(0);
      continue; // Uniform across the block.
    }
    T sum = 0;
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x) {
      p[j] = g.sees(b, j, pos) ? std::exp(p[j] - max) : T(0);
      sum += p[j];
    }
    sum = blockReduce(sum, SumOp{});
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x)
      p[j] /= sum;
    __syncthreads();
    // out = P V over every key (masked ones with p = 0), as the host's GEMM.
    for (int64_t d = threadIdx.x; d < valueDim; d += blockDim.x) {
      T acc = 0;
      for (int64_t j = 0; j < seqK; ++j)
        acc += p[j] * value[g.kAt(b, j, kvHead, valueDim) + d];
      o[d] = acc;
    }
  }
}

template <typename T>
void attentionImpl(T *result, const Shape &resultShape, const T *query,
                   const Shape &queryShape, const T *key, const Shape &keyShape,
                   const T *value, const Shape &valueShape, IndexPtr subtreeEnd,
                   const Shape &subtreeEndShape, IndexPtr positions,
                   const Shape &positionsShape, const char *mask,
                   double scaleAttr) {
  const char *kernel = "attention";
  Geometry g =
      getGeometry(kernel, queryShape, keyShape, valueShape, subtreeEnd,
                  subtreeEndShape, positions, positionsShape, mask, scaleAttr);
  checkShape(kernel, "the result", resultShape,
             Shape{g.batch, g.seqQ, g.heads, g.valueDim});
  int64_t total = resultShape.numElements();
  if (total == 0)
    return;
  if (g.seqK == 0) {
    zero(kernel, result, total); // No key to see.
    return;
  }
  int64_t rows = g.batch * g.heads * g.seqQ;
  size_t rowBytes = static_cast<size_t>(g.seqK) * sizeof(T);
  bool shared = rowBytes <= kMaxSharedScores;
  Scratch<T> scratch(kernel, shared ? 0 : static_cast<size_t>(rows * g.seqK));
  attentionKernel<<<gridFor(rows, 1), rowThreads(std::max(g.seqK, g.valueDim)),
                    shared ? rowBytes : 0, stream()>>>(
      result, query, key, value, g, static_cast<T>(g.scale), scratch.get(),
      rows);
  checkLaunch(kernel);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// Row r = (b, h, i) as in the forward kernel; probabilities[r * seqK + j]
/// and coefficients[r * seqK + j] for the visible keys j.
template <typename T>
__global__ void
attentionGradQueryKernel(T *dq, T *probabilities, T *coefficients,
                         const T *grad, const T *query, const T *key,
                         const T *value, Geometry g, T scale, int64_t rows) {
  const int64_t seqK = g.seqK, dim = g.dim, valueDim = g.valueDim;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t i = r % g.seqQ, h = (r / g.seqQ) % g.heads,
            b = r / (g.seqQ * g.heads);
    int64_t kvHead = h / g.group, pos = g.positionOf(b, i);
    T *p = probabilities + r * seqK;
    T *c = coefficients + r * seqK;
    const T *q = query + g.qAt(b, i, h, dim);
    const T *dout = grad + g.qAt(b, i, h, valueDim);
    T *dqRow = dq + g.qAt(b, i, h, dim);
    T max = negativeInfinity<T>();
    int any = 0;
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x) {
      if (!g.sees(b, j, pos))
        continue;
      const T *k = key + g.kAt(b, j, kvHead, dim);
      T s = 0;
      for (int64_t d = 0; d < dim; ++d)
        s += q[d] * k[d];
      p[j] = scale * s;
      any = 1;
      max = math::runningMax(max, p[j]);
    }
    max = blockReduce(max, MaxOp{});
    any = blockReduce(any, OrOp{});
    if (!any) {
      for (int64_t d = threadIdx.x; d < dim; d += blockDim.x)
        dqRow[d] = T(0);
      continue; // Uniform across the block.
    }
    T sum = 0;
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x) {
      p[j] = g.sees(b, j, pos) ? std::exp(p[j] - max) : T(0);
      sum += p[j];
    }
    sum = blockReduce(sum, SumOp{});
    T pdp = 0;
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x) {
      p[j] /= sum;
      T dp = 0;
      if (g.sees(b, j, pos)) {
        const T *v = value + g.kAt(b, j, kvHead, valueDim);
        for (int64_t d = 0; d < valueDim; ++d)
          dp += dout[d] * v[d];
      }
      c[j] = dp;
      pdp += p[j] * dp;
    }
    pdp = blockReduce(pdp, SumOp{});
    for (int64_t j = threadIdx.x; j < seqK; j += blockDim.x)
      c[j] = scale * (p[j] * (c[j] - pdp));
    __syncthreads();
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
      T acc = 0;
      for (int64_t j = 0; j < seqK; ++j)
        if (g.sees(b, j, pos))
          acc += c[j] * key[g.kAt(b, j, kvHead, dim) + d];
      dqRow[d] = acc;
    }
  }
}

/// Row r = (b, j, kvHead), r = (b * seqK + j) * kvHeads + kvHead.
template <typename T>
__global__ void
attentionGradKeyValueKernel(T *dk, T *dv, const T *probabilities,
                            const T *coefficients, const T *grad,
                            const T *query, Geometry g, int64_t rows) {
  const int64_t seqK = g.seqK, dim = g.dim, valueDim = g.valueDim;
  const int64_t width = dim > valueDim ? dim : valueDim;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t kvHead = r % g.kvHeads, j = (r / g.kvHeads) % seqK,
            b = r / (g.kvHeads * seqK);
    T *dkRow = dk + g.kAt(b, j, kvHead, dim);
    T *dvRow = dv + g.kAt(b, j, kvHead, valueDim);
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
      T dkAcc = 0, dvAcc = 0;
      for (int64_t h = kvHead * g.group; h < (kvHead + 1) * g.group; ++h) {
        for (int64_t i = 0; i < g.seqQ; ++i) {
          if (!g.sees(b, j, g.positionOf(b, i)))
            continue;
          int64_t at = ((b * g.heads + h) * g.seqQ + i) * seqK + j;
          if (d < dim)
            dkAcc += coefficients[at] * query[g.qAt(b, i, h, dim) + d];
          if (d < valueDim)
            dvAcc += probabilities[at] * grad[g.qAt(b, i, h, valueDim) + d];
        }
      }
      if (d < dim)
        dkRow[d] = dkAcc;
      if (d < valueDim)
        dvRow[d] = dvAcc;
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
  Geometry g =
      getGeometry(kernel, queryShape, keyShape, valueShape, subtreeEnd,
                  subtreeEndShape, positions, positionsShape, mask, scaleAttr);
  checkShape(kernel, "grad", gradShape,
             Shape{g.batch, g.seqQ, g.heads, g.valueDim});
  checkShape(kernel, "dquery", dqShape, queryShape);
  checkShape(kernel, "dkey", dkShape, keyShape);
  checkShape(kernel, "dvalue", dvShape, valueShape);
  if (g.seqK == 0) {
    zero(kernel, dq, queryShape.numElements());
    return;
  }
  int64_t rows = g.batch * g.heads * g.seqQ;
  Scratch<T> probabilities(kernel, static_cast<size_t>(rows * g.seqK));
  Scratch<T> coefficients(kernel, static_cast<size_t>(rows * g.seqK));
  const T scale = static_cast<T>(g.scale);
  if (rows > 0) {
    attentionGradQueryKernel<<<
        gridFor(rows, 1), rowThreads(std::max(g.seqK, g.dim)), 0, stream()>>>(
        dq, probabilities.get(), coefficients.get(), grad, query, key, value, g,
        scale, rows);
    checkLaunch(kernel);
  }
  int64_t keyRows = g.batch * g.seqK * g.kvHeads;
  if (keyRows > 0 && (g.dim > 0 || g.valueDim > 0)) {
    attentionGradKeyValueKernel<<<gridFor(keyRows, 1),
                                  rowThreads(std::max(g.dim, g.valueDim)), 0,
                                  stream()>>>(dk, dv, probabilities.get(),
                                              coefficients.get(), grad, query,
                                              g, keyRows);
    checkLaunch(kernel);
  }
}

} // namespace

#define DEFINE_ATTENTION(T)                                                    \
  void loom::cuda::attention(                                                  \
      T *result, Shape resultShape, const T *query, Shape queryShape,          \
      const T *key, Shape keyShape, const T *value, Shape valueShape,          \
      IndexPtr subtreeEnd, Shape subtreeEndShape, IndexPtr positions,          \
      Shape positionsShape, const char *mask, double scale) {                  \
    attentionImpl(result, resultShape, query, queryShape, key, keyShape,       \
                  value, valueShape, subtreeEnd, subtreeEndShape, positions,   \
                  positionsShape, mask, scale);                                \
  }                                                                            \
  void loom::cuda::attention_grad(                                             \
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
