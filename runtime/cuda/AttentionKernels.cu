//===- AttentionKernels.cu - nn.attention and nn.attention_grad -----------===//
//
// The host kernels' semantics ([batch, seq, heads, head_dim] operands,
// grouped key/value heads, none/causal/tree masks, positions), computed
// without atomics:
// * Each query finds the keys it sees, in key order, into a list: window by
//   window of blockDim keys, each thread testing one (a block-wide scan
//   places the visible ones). Under a causal or tree mask the walk stops at
//   the query's position; under a tree mask whose subtrees nest (a
//   depth-first packing: checked once per call by nestingKernel) a window
//   also ends past the furthest subtree of its hidden keys, so a query
//   tests its depth plus about one window per branch it skips, not the
//   sequence: the tree-aware kernel. Queries attend over their lists only.
//   setAttentionRangeSkipping(false) walks every key (the oracle);
//   getAttentionKeysVisited counts the listed keys.
// * Forward: one block per (batch, head, query): its key list, the scores
//   of those keys (each a sequential dot product), a masked softmax with
//   fixed-order block reductions, then one thread per output element
//   summing p_j v_j over the list in key order. The score row and the list
//   live in shared memory when they fit in 32 KiB (the reductions' static
//   shared memory stays under the 48 KiB default), else in stream-ordered
//   scratch.
// * Backward, in two kernels. One block per (batch, head, query) recomputes
//   the probabilities p_j and the coefficients c_j = scale * p_j (dp_j -
//   sum_k p_k dp_k) over its list, stores both in scratch (batch * heads *
//   seq_q * seq_k each, at the listed keys only) and writes the query
//   gradient (sum_j c_j k_j, keys in order). Then one block per (batch,
//   key, key/value head) writes the key and value gradients, summing c_j q
//   and p_j dout over the group's heads and the queries that see the key in
//   the host kernel's order (heads, then queries): each element has one
//   writer. Without query positions, the queries that see key j under a
//   causal or tree mask are [j, seq) or [j, subtree_end(j)]: the loop runs
//   over those only.
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

/// setAttentionRangeSkipping's setting.
bool rangeSkipping = true;

/// The checked sizes, mask operands and scale of one attention op.
struct Geometry {
  int64_t batch = 0, seqQ = 0, heads = 0, dim = 0;
  int64_t seqK = 0, kvHeads = 0, valueDim = 0, group = 1;
  MaskKind kind = MaskKind::None;
  DeviceIndex subtreeEnd, positions;
  double scale = 1.0;
  /// Per batch, nonzero where the subtree ends do not nest (nestingKernel);
  /// null: walk every key.
  const int *crossing = nullptr;
  /// Whether key lists skip (setAttentionRangeSkipping).
  bool skip = true;

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
  LOOM_CUDA_CHECK(g.seqK <= INT_MAX, kernel,
                  "%lld keys are too many (at most %d)",
                  static_cast<long long>(g.seqK), INT_MAX);
  g.scale =
      scale == scale ? scale : 1.0 / std::sqrt(static_cast<double>(g.dim));
  g.skip = rangeSkipping;
  return g;
}

//===----------------------------------------------------------------------===//
// Key lists
//===----------------------------------------------------------------------===//

/// Marks crossing[b] for every batch b holding a key k whose subtree
/// [k, end(k)] holds a key ending later: ends that do not nest. Thread per
/// key; the work is the sum of the subtrees' sizes (the sum of depths when
/// they nest).
__global__ void nestingKernel(Geometry g, int *crossing) {
  LOOM_CUDA_FOR(at, g.batch * g.seqK) {
    int64_t b = at / g.seqK, k = at % g.seqK;
    int64_t end = g.subtreeEnd[at];
    int64_t last = end < g.seqK - 1 ? end : g.seqK - 1;
    for (int64_t m = k + 1; m <= last; ++m)
      if (g.subtreeEnd[b * g.seqK + m] > end) {
        atomicOr(crossing + b, 1);
        break;
      }
  }
}

/// An exclusive prefix sum over the block (a power of two, at most
/// kMaxBlock threads) in a fixed order; `total`: the block's sum. Every
/// thread must call it.
__device__ inline int blockExclusiveScan(int value, int &total) {
  __shared__ int buffer[kMaxBlock];
  unsigned t = threadIdx.x;
  __syncthreads(); // Earlier readers of buffer are done.
  buffer[t] = value;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s <<= 1) {
    int add = t >= s ? buffer[t - s] : 0;
    __syncthreads();
    buffer[t] += add;
    __syncthreads();
  }
  total = buffer[blockDim.x - 1];
  return buffer[t] - value;
}

/// The keys listed and the keys tested (getAttentionKeysVisited,
/// getAttentionKeysTested).
__device__ unsigned long long keysVisitedCounter, keysTestedCounter;

/// Writes the keys a query at key index `pos` of batch `b` sees, in key
/// order, to keys[0, n) and returns n (on every thread; every thread must
/// call it). See the file comment.
__device__ int64_t findKeys(const Geometry &g, int64_t b, int64_t pos,
                            int *keys) {
  int64_t last = g.seqK - 1;
  if (g.kind != MaskKind::None && pos < last)
    last = pos; // (No key after the query is visible.)
  bool jump = g.skip && g.crossing && !g.crossing[b];
  int64_t n = 0, tested = 0;
  for (int64_t j = 0; j <= last;) {
    tested += last - j + 1 < blockDim.x ? last - j + 1 : blockDim.x;
    int64_t k = j + threadIdx.x;
    bool visible = k <= last && g.sees(b, k, pos);
    // A hidden key hides its whole subtree when the ends nest.
    int64_t next = jump && k <= last && !visible
                       ? static_cast<int64_t>(g.subtreeEnd[b * g.seqK + k]) + 1
                       : 0;
    int total = 0;
    int at = blockExclusiveScan(visible ? 1 : 0, total);
    if (visible)
      keys[n + at] = static_cast<int>(k);
    n += total;
    int64_t furthest = blockReduce(next, MaxOp{});
    j = j + blockDim.x > furthest ? j + blockDim.x : furthest;
  }
  if (threadIdx.x == 0) {
    atomicAdd(&keysVisitedCounter, static_cast<unsigned long long>(n));
    atomicAdd(&keysTestedCounter, static_cast<unsigned long long>(tested));
  }
  return n;
}

/// The nesting flags of a tree mask's batches, or null (no tree mask, or
/// skipping off), in `flags`.
const int *nestingFlags(const char *kernel, Geometry &g, Scratch<int> &flags) {
  if (g.kind != MaskKind::Tree || !g.skip || g.batch * g.seqK == 0)
    return nullptr;
  zero(kernel, flags.get(), g.batch);
  nestingKernel<<<gridFor(g.batch * g.seqK), kThreads, 0, stream()>>>(
      g, flags.get());
  checkLaunch(kernel);
  return flags.get();
}

/// The largest score row kept in shared memory.
constexpr size_t kMaxSharedScores = 32 * 1024;

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Row r = (b, h, i), r = (b * heads + h) * seqQ + i. `scratch` holds
/// seqK scores per row and `keyScratch` seqK keys per row, or both are
/// null to use dynamic shared memory (the scores, then the keys).
template <typename T>
__global__ void attentionKernel(T *result, const T *query, const T *key,
                                const T *value, Geometry g, T scale, T *scratch,
                                int *keyScratch, int64_t rows) {
  extern __shared__ __align__(16) unsigned char dynamicShared[];
  const int64_t seqK = g.seqK, dim = g.dim, valueDim = g.valueDim;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t i = r % g.seqQ, h = (r / g.seqQ) % g.heads,
            b = r / (g.seqQ * g.heads);
    int64_t kvHead = h / g.group, pos = g.positionOf(b, i);
    T *p = scratch ? scratch + r * seqK : reinterpret_cast<T *>(dynamicShared);
    int *keys = keyScratch ? keyScratch + r * seqK
                           : reinterpret_cast<int *>(dynamicShared +
                                                     seqK * sizeof(T));
    const T *q = query + g.qAt(b, i, h, dim);
    T *o = result + g.qAt(b, i, h, valueDim);
    __syncthreads(); // The previous row's readers of p and keys are done.
    int64_t n = findKeys(g, b, pos, keys);
    if (n == 0) {
      for (int64_t d = threadIdx.x; d < valueDim; d += blockDim.x)
        o[d] = T(0);
      continue; // Uniform across the block.
    }
    T max = negativeInfinity<T>();
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x) {
      const T *k = key + g.kAt(b, keys[at], kvHead, dim);
      T s = 0;
      for (int64_t d = 0; d < dim; ++d)
        s += q[d] * k[d];
      p[at] = scale * s;
      max = math::runningMax(max, p[at]);
    }
    max = blockReduce(max, MaxOp{});
    T sum = 0;
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x) {
      p[at] = std::exp(p[at] - max);
      sum += p[at];
    }
    sum = blockReduce(sum, SumOp{});
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x)
      p[at] /= sum;
    __syncthreads();
    // out = P V over the listed keys, in key order.
    for (int64_t d = threadIdx.x; d < valueDim; d += blockDim.x) {
      T acc = 0;
      for (int64_t at = 0; at < n; ++at)
        acc += p[at] * value[g.kAt(b, keys[at], kvHead, valueDim) + d];
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
  size_t rowBytes = static_cast<size_t>(g.seqK) * (sizeof(T) + sizeof(int));
  bool shared = rowBytes <= kMaxSharedScores;
  Scratch<T> scratch(kernel, shared ? 0 : static_cast<size_t>(rows * g.seqK));
  Scratch<int> keyScratch(kernel,
                          shared ? 0 : static_cast<size_t>(rows * g.seqK));
  Scratch<int> flags(kernel, static_cast<size_t>(g.batch));
  g.crossing = nestingFlags(kernel, g, flags);
  attentionKernel<<<gridFor(rows, 1), rowThreads(std::max(g.seqK, g.valueDim)),
                    shared ? rowBytes : 0, stream()>>>(
      result, query, key, value, g, static_cast<T>(g.scale), scratch.get(),
      keyScratch.get(), rows);
  checkLaunch(kernel);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// Row r = (b, h, i) as in the forward kernel; probabilities[r * seqK + j]
/// and coefficients[r * seqK + j] for the visible keys j (listed in
/// keyLists[r * seqK ...]).
template <typename T>
__global__ void
attentionGradQueryKernel(T *dq, T *probabilities, T *coefficients,
                         int *keyLists, const T *grad, const T *query,
                         const T *key, const T *value, Geometry g, T scale,
                         int64_t rows) {
  const int64_t seqK = g.seqK, dim = g.dim, valueDim = g.valueDim;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t i = r % g.seqQ, h = (r / g.seqQ) % g.heads,
            b = r / (g.seqQ * g.heads);
    int64_t kvHead = h / g.group, pos = g.positionOf(b, i);
    T *p = probabilities + r * seqK;
    T *c = coefficients + r * seqK;
    int *keys = keyLists + r * seqK;
    const T *q = query + g.qAt(b, i, h, dim);
    const T *dout = grad + g.qAt(b, i, h, valueDim);
    T *dqRow = dq + g.qAt(b, i, h, dim);
    int64_t n = findKeys(g, b, pos, keys);
    if (n == 0) {
      for (int64_t d = threadIdx.x; d < dim; d += blockDim.x)
        dqRow[d] = T(0);
      continue; // Uniform across the block.
    }
    T max = negativeInfinity<T>();
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x) {
      int64_t j = keys[at];
      const T *k = key + g.kAt(b, j, kvHead, dim);
      T s = 0;
      for (int64_t d = 0; d < dim; ++d)
        s += q[d] * k[d];
      p[j] = scale * s;
      max = math::runningMax(max, p[j]);
    }
    max = blockReduce(max, MaxOp{});
    T sum = 0;
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x) {
      int64_t j = keys[at];
      p[j] = std::exp(p[j] - max);
      sum += p[j];
    }
    sum = blockReduce(sum, SumOp{});
    T pdp = 0;
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x) {
      int64_t j = keys[at];
      p[j] /= sum;
      T dp = 0;
      const T *v = value + g.kAt(b, j, kvHead, valueDim);
      for (int64_t d = 0; d < valueDim; ++d)
        dp += dout[d] * v[d];
      c[j] = dp;
      pdp += p[j] * dp;
    }
    pdp = blockReduce(pdp, SumOp{});
    for (int64_t at = threadIdx.x; at < n; at += blockDim.x) {
      int64_t j = keys[at];
      c[j] = scale * (p[j] * (c[j] - pdp));
    }
    __syncthreads();
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
      T acc = 0;
      for (int64_t at = 0; at < n; ++at)
        acc += c[keys[at]] * key[g.kAt(b, keys[at], kvHead, dim) + d];
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
    // The queries that may see key j (see the file comment).
    int64_t first = 0, last = g.seqQ - 1;
    if (g.skip && !g.positions.data && g.kind != MaskKind::None) {
      first = j;
      if (g.kind == MaskKind::Tree && g.subtreeEnd[b * seqK + j] < last)
        last = g.subtreeEnd[b * seqK + j];
    }
    for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
      T dkAcc = 0, dvAcc = 0;
      for (int64_t h = kvHead * g.group; h < (kvHead + 1) * g.group; ++h) {
        for (int64_t i = first; i <= last; ++i) {
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
  Scratch<int> keyLists(kernel, static_cast<size_t>(rows * g.seqK));
  Scratch<int> flags(kernel, static_cast<size_t>(g.batch));
  g.crossing = nestingFlags(kernel, g, flags);
  const T scale = static_cast<T>(g.scale);
  if (rows > 0) {
    attentionGradQueryKernel<<<
        gridFor(rows, 1), rowThreads(std::max(g.seqK, g.dim)), 0, stream()>>>(
        dq, probabilities.get(), coefficients.get(), keyLists.get(), grad,
        query, key, value, g, scale, rows);
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

void loom::cuda::setAttentionRangeSkipping(bool skip) { rangeSkipping = skip; }

namespace {
int64_t readCounter(const unsigned long long &counter) {
  synchronize();
  unsigned long long count = 0;
  checkCuda(cudaMemcpyFromSymbol(&count, counter, sizeof(count)), "attention",
            "cudaMemcpyFromSymbol");
  return static_cast<int64_t>(count);
}
} // namespace

int64_t loom::cuda::getAttentionKeysVisited() {
  return readCounter(keysVisitedCounter);
}

int64_t loom::cuda::getAttentionKeysTested() {
  return readCounter(keysTestedCounter);
}
