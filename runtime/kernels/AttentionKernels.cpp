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
// Under a causal mask, and under a tree mask whose subtrees nest (a
// depth-first packing), each query can visit only the keys it sees: [0,
// p], or its ancestors and itself, found by skipping every subtree that
// ends before it, so the work is the sum of the queries' depths rather than
// the square of the sequence. By default (AttentionSkipping::Auto) both
// passes run blocked: per block of kQueryBlock queries, the runs of keys
// any of them sees (the union of their ancestors, runs closer than kRunGap
// merged), GEMMs over those runs only, the mask applied inside them. The
// work is then the sum over query blocks of the keys their union covers:
// the sum of depths plus, per block, the keys its queries do not share. On
// a causal mask that is half the dense work plus the diagonal blocks. (A
// batch whose inputs hold a NaN or an infinity takes the exact walk: the
// GEMMs' zero probabilities would carry it to queries that do not see it.)
// Always takes the exact scalar walk (per query its own keys, counted in
// getAttentionKeysVisited: the test of the sum of depths); Never the dense
// GEMMs over every key, masked: the oracle. Other tree masks take the
// dense path.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Blas.h"
#include "runtime/kernels/KernelSupport.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

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

/// Whether the range-skipping paths run (setAttentionRangeSkipping), and
/// the keys they visited (getAttentionKeysVisited).
std::atomic<AttentionSkipping> rangeSkipping{AttentionSkipping::Auto};
std::atomic<int64_t> keysVisited{0};

/// Whether batch `b`'s subtree ends nest, as a depth-first packing's do:
/// every key inside a subtree [j, end(j)] ends no later than it.
bool subtreesNest(const AttentionGeometry &g, int64_t b) {
  thread_local std::vector<int64_t> open;
  open.clear();
  for (int64_t k = 0; k < g.seqK; ++k) {
    int64_t end = g.subtreeEnd[b * g.seqK + k];
    while (!open.empty() && open.back() < k)
      open.pop_back();
    if (!open.empty() && end > open.back())
      return false;
    if (end >= k)
      open.push_back(end);
  }
  return true;
}

/// Whether the keys of batch `b` can be found by skipping: a causal mask,
/// or a tree mask whose subtrees nest.
bool canSkip(const AttentionGeometry &g, int64_t b) {
  return rangeSkipping != AttentionSkipping::Never &&
         (g.kind == MaskKind::Causal ||
          (g.kind == MaskKind::Tree && subtreesNest(g, b)));
}

/// Calls `visit(j)` for every key a query at key index `p` of batch `b`
/// sees, in key order, under a causal or nested tree mask: [0, p], or its
/// ancestors and itself, every subtree that ends before `p` skipped whole
/// (the work is the query's depth, not the sequence).
template <typename Visit>
void walkKeys(const AttentionGeometry &g, int64_t b, int64_t p, Visit visit) {
  int64_t last = std::min(p, g.seqK - 1);
  for (int64_t j = 0; j <= last;) {
    // (A causal mask's keys all reach every later position, past the last
    // key too.)
    int64_t end = g.kind == MaskKind::Tree ? g.subtreeEnd[b * g.seqK + j]
                                           : std::numeric_limits<int64_t>::max();
    if (end >= p) {
      visit(j);
      ++j;
    } else {
      j = std::max(j + 1, end + 1);
    }
  }
}

/// How one batch's attention runs (see the file comment).
enum class Path { Dense, Blocked, Walk };

Path pathOf(const AttentionGeometry &g, int64_t b) {
  if (!canSkip(g, b))
    return Path::Dense;
  return rangeSkipping == AttentionSkipping::Always ? Path::Walk
                                                    : Path::Blocked;
}

/// The keys a query at key index `p` of batch `b` sees, in key order, into
/// `keys`: with `skip`, by walkKeys; otherwise by testing every key.
/// `count`: add them to keysVisited.
void findKeys(const AttentionGeometry &g, int64_t b, int64_t p, bool count,
              std::vector<int64_t> &keys, bool skip = true) {
  keys.clear();
  if (!skip) {
    for (int64_t j = 0; j < g.seqK; ++j)
      if (g.sees(b, j, p))
        keys.push_back(j);
    return;
  }
  walkKeys(g, b, p, [&](int64_t j) { keys.push_back(j); });
  if (count)
    keysVisited.fetch_add(static_cast<int64_t>(keys.size()),
                          std::memory_order_relaxed);
}

/// Queries per block of the blocked path, and the gap below which two
/// runs of keys merge into one GEMM (computing and masking the gap's keys
/// costs less than another call on these sizes).
constexpr int64_t kQueryBlock = 64, kRunGap = 16;

/// Keys [begin, end) seen by a block of queries, at column `offset` of the
/// block's compact score rows.
struct KeyRun {
  int64_t begin, end, offset;
};

/// Whether the `count` values at `data` are all finite.
template <typename T> bool allFinite(const T *data, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(data[i]))
      return false;
  return true;
}

/// `count` zeroed flags for blockRuns (which leaves them zeroed).
uint8_t *zeroedMarks(int64_t count) {
  uint8_t *mark = scratch<uint8_t>(1, static_cast<size_t>(count));
  std::fill(mark, mark + count, uint8_t(0));
  return mark;
}

/// The runs of keys queries [i0, i1) of batch `b` see between them, into
/// `runs` (`mark`: seqK zeroed flags, left zeroed); returns the keys they
/// cover.
int64_t blockRuns(const AttentionGeometry &g, int64_t b, int64_t i0,
                  int64_t i1, uint8_t *mark, std::vector<KeyRun> &runs) {
  runs.clear();
  int64_t lo = g.seqK, hi = -1;
  if (g.kind == MaskKind::Causal) {
    // [0, the block's last position]: one run.
    for (int64_t i = i0; i < i1; ++i)
      hi = std::max(hi, std::min(g.positionOf(b, i), g.seqK - 1));
    if (hi >= 0)
      runs.push_back({0, hi + 1, 0});
    return hi + 1 > 0 ? hi + 1 : 0;
  }
  for (int64_t i = i0; i < i1; ++i)
    walkKeys(g, b, g.positionOf(b, i), [&](int64_t j) {
      mark[j] = 1;
      lo = std::min(lo, j);
      hi = std::max(hi, j);
    });
  for (int64_t j = lo; j <= hi;) {
    if (!mark[j]) {
      ++j;
      continue;
    }
    int64_t begin = j;
    while (j <= hi && mark[j])
      mark[j++] = 0;
    if (!runs.empty() && begin - runs.back().end < kRunGap)
      runs.back().end = j;
    else
      runs.push_back({begin, j, 0});
  }
  int64_t covered = 0;
  for (KeyRun &run : runs) {
    run.offset = covered;
    covered += run.end - run.begin;
  }
  return covered;
}

/// The masked softmax of rows [i0, i1) of batch `b` over the block's
/// compact scores (`covered` columns, laid out by `runs`), in place; a row
/// that sees no key becomes zeros. `seen`, if given: per row whether it
/// sees a key.
template <typename T>
void blockSoftmax(const AttentionGeometry &g, int64_t b, int64_t i0,
                  int64_t i1, const std::vector<KeyRun> &runs, int64_t covered,
                  T *scores, uint8_t *seen = nullptr) {
  for (int64_t i = i0; i < i1; ++i) {
    int64_t p = g.positionOf(b, i);
    T *row = scores + (i - i0) * covered;
    T max = -std::numeric_limits<T>::infinity();
    bool any = false;
    for (const KeyRun &run : runs)
      for (int64_t j = run.begin; j < run.end; ++j)
        if (g.sees(b, j, p)) {
          any = true;
          max = math::runningMax(max, row[run.offset + j - run.begin]);
        }
    if (seen)
      seen[i - i0] = any;
    T sum = 0;
    for (const KeyRun &run : runs)
      for (int64_t j = run.begin; j < run.end; ++j) {
        T &s = row[run.offset + j - run.begin];
        s = any && g.sees(b, j, p) ? std::exp(s - max) : T(0);
        sum += s;
      }
    if (any)
      for (int64_t c = 0; c < covered; ++c)
        row[c] /= sum;
  }
}

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
  uint8_t *visible = scratch<uint8_t>(0, static_cast<size_t>(seqK));
  uint8_t *mark = zeroedMarks(seqK);
  const T scale = static_cast<T>(g.scale);
  std::vector<int64_t> keys;
  std::vector<KeyRun> runs;
  for (int64_t b = 0; b < g.batch; ++b) {
    Path path = pathOf(g, b);
    // (P V multiplies hidden keys' values by exact zeros, which would carry
    // a NaN or an infinity to a query that does not see it: such a batch
    // takes the exact walk.)
    if (path == Path::Blocked &&
        !allFinite(value + b * seqK * kvHeads * valueDim,
                   seqK * kvHeads * valueDim))
      path = Path::Walk;
    if (path == Path::Blocked) {
      for (int64_t i0 = 0; i0 < seqQ; i0 += kQueryBlock) {
        int64_t i1 = std::min(seqQ, i0 + kQueryBlock), rows = i1 - i0;
        int64_t covered = blockRuns(g, b, i0, i1, mark, runs);
        T *scores = scratch<T>(1, static_cast<size_t>(rows * covered));
        for (int64_t h = 0; h < heads; ++h) {
          int64_t kvHead = h / g.group;
          const T *q = query + ((b * seqQ + i0) * heads + h) * dim;
          T *o = result + ((b * seqQ + i0) * heads + h) * valueDim;
          if (runs.empty()) {
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t d = 0; d < valueDim; ++d)
                o[r * heads * valueDim + d] = T(0);
            continue;
          }
          for (const KeyRun &run : runs)
            gemm(false, true, rows, run.end - run.begin, dim, scale, q,
                 heads * dim,
                 key + ((b * seqK + run.begin) * kvHeads + kvHead) * dim,
                 kvHeads * dim, T(0), scores + run.offset, covered);
          blockSoftmax(g, b, i0, i1, runs, covered, scores);
          for (size_t n = 0; n < runs.size(); ++n)
            gemm(false, false, rows, valueDim, runs[n].end - runs[n].begin,
                 T(1), scores + runs[n].offset, covered,
                 value + ((b * seqK + runs[n].begin) * kvHeads + kvHead) *
                             valueDim,
                 kvHeads * valueDim, n == 0 ? T(0) : T(1), o,
                 heads * valueDim);
        }
      }
      continue;
    }
    if (path == Path::Walk) {
      // (Scores of one query's visible keys: linear, not quadratic, scratch.)
      T *scores = scratch<T>(1, static_cast<size_t>(seqK));
      // Only the visible keys: per query its key list, then per head the
      // scores, the softmax in key order and the weighted values.
      for (int64_t i = 0; i < seqQ; ++i) {
        findKeys(g, b, g.positionOf(b, i),
                 /*count=*/rangeSkipping == AttentionSkipping::Always, keys);
        for (int64_t h = 0; h < heads; ++h) {
          int64_t kvHead = h / g.group;
          const T *q = query + ((b * seqQ + i) * heads + h) * dim;
          T *o = result + ((b * seqQ + i) * heads + h) * valueDim;
          for (int64_t d = 0; d < valueDim; ++d)
            o[d] = T(0);
          if (keys.empty())
            continue;
          T max = -std::numeric_limits<T>::infinity();
          for (size_t n = 0; n < keys.size(); ++n) {
            const T *k = key + ((b * seqK + keys[n]) * kvHeads + kvHead) * dim;
            T s = 0;
            for (int64_t d = 0; d < dim; ++d)
              s += q[d] * k[d];
            scores[n] = scale * s;
            max = math::runningMax(max, scores[n]);
          }
          T sum = 0;
          for (size_t n = 0; n < keys.size(); ++n) {
            scores[n] = std::exp(scores[n] - max);
            sum += scores[n];
          }
          for (size_t n = 0; n < keys.size(); ++n) {
            const T weight = scores[n] / sum;
            const T *v =
                value + ((b * seqK + keys[n]) * kvHeads + kvHead) * valueDim;
            for (int64_t d = 0; d < valueDim; ++d)
              o[d] += weight * v[d];
          }
        }
      }
      continue;
    }
    T *scores = scratch<T>(0, static_cast<size_t>(seqQ * seqK));
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
  // Row offsets of [batch, seq, heads, width] tensors.
  auto qAt = [&](int64_t b, int64_t i, int64_t h, int64_t width) {
    return ((b * seqQ + i) * heads + h) * width;
  };
  auto kAt = [&](int64_t b, int64_t j, int64_t kvHead, int64_t width) {
    return ((b * seqK + j) * kvHeads + kvHead) * width;
  };
  // Per query its visible keys in key order (found by skipping where the
  // mask allows: the work follows the visible keys, not the sequence).
  std::vector<int64_t> keys;
  // (The walk runs in the dense loops' order, batch, head, query, so that
  // the key and value gradients accumulate as they do: its results are the
  // dense path's bit for bit, the skipped keys having added zeros there.)
  uint8_t *mark = zeroedMarks(seqK);
  uint8_t seen[kQueryBlock];
  std::vector<KeyRun> runs;
  for (int64_t b = 0; b < g.batch; ++b) {
    Path path = pathOf(g, b);
    // (The GEMMs multiply hidden pairs by exact zeros, which keeps a NaN or
    // an infinity where the query does not see it: such a batch takes the
    // exact walk, which never touches a hidden pair.)
    if (path == Path::Blocked &&
        !(allFinite(query + qAt(b, 0, 0, dim), seqQ * heads * dim) &&
          allFinite(grad + qAt(b, 0, 0, valueDim), seqQ * heads * valueDim) &&
          allFinite(key + kAt(b, 0, 0, dim), seqK * kvHeads * dim) &&
          allFinite(value + kAt(b, 0, 0, valueDim), seqK * kvHeads * valueDim)))
      path = Path::Walk;
    if (path == Path::Blocked) {
      // Per query block and head, over the block's runs of keys: P as
      // forward; dP = dO V^T; dS = P (dP - rowsum(P dP)); dQ += scale dS K,
      // dK += scale dS^T Q, dV += P^T dO (GEMMs into the gradients in
      // place).
      for (int64_t i0 = 0; i0 < seqQ; i0 += kQueryBlock) {
        int64_t i1 = std::min(seqQ, i0 + kQueryBlock), rows = i1 - i0;
        int64_t covered = blockRuns(g, b, i0, i1, mark, runs);
        if (runs.empty())
          continue;
        T *probs = scratch<T>(2, static_cast<size_t>(rows * covered));
        T *dprobs = scratch<T>(3, static_cast<size_t>(rows * covered));
        for (int64_t h = 0; h < heads; ++h) {
          int64_t kvHead = h / g.group;
          const T *q = query + qAt(b, i0, h, dim);
          const T *dout = grad + qAt(b, i0, h, valueDim);
          T *dqBlock = dq + qAt(b, i0, h, dim);
          for (const KeyRun &run : runs) {
            int64_t len = run.end - run.begin;
            gemm(false, true, rows, len, dim, scale, q, heads * dim,
                 key + kAt(b, run.begin, kvHead, dim), kvHeads * dim, T(0),
                 probs + run.offset, covered);
            gemm(false, true, rows, len, valueDim, T(1), dout,
                 heads * valueDim, value + kAt(b, run.begin, kvHead, valueDim),
                 kvHeads * valueDim, T(0), dprobs + run.offset, covered);
          }
          blockSoftmax(g, b, i0, i1, runs, covered, probs, seen);
          for (int64_t r = 0; r < rows; ++r) {
            const T *pRow = probs + r * covered;
            T *dRow = dprobs + r * covered;
            T pdp = 0;
            // (A query that sees no key contributes nothing, as the dense
            // path's.)
            if (!seen[r]) {
              std::fill(dRow, dRow + covered, T(0));
              continue;
            }
            for (int64_t c = 0; c < covered; ++c)
              pdp += pRow[c] * dRow[c];
            for (int64_t c = 0; c < covered; ++c)
              dRow[c] = scale * pRow[c] * (dRow[c] - pdp);
          }
          for (const KeyRun &run : runs) {
            int64_t len = run.end - run.begin;
            gemm(false, false, rows, dim, len, T(1), dprobs + run.offset,
                 covered, key + kAt(b, run.begin, kvHead, dim), kvHeads * dim,
                 T(1), dqBlock, heads * dim);
            gemm(true, false, len, dim, rows, T(1), dprobs + run.offset,
                 covered, q, heads * dim, T(1), dk + kAt(b, run.begin, kvHead, dim),
                 kvHeads * dim);
            gemm(true, false, len, valueDim, rows, T(1), probs + run.offset,
                 covered, dout, heads * valueDim, T(1),
                 dv + kAt(b, run.begin, kvHead, valueDim), kvHeads * valueDim);
          }
        }
      }
      continue;
    }
    bool skip = path != Path::Dense,
         count = rangeSkipping == AttentionSkipping::Always;
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvHead = h / g.group;
      for (int64_t i = 0; i < seqQ; ++i) {
        int64_t pos = g.positionOf(b, i);
        findKeys(g, b, pos, skip && count && h == 0, keys, skip);
        if (keys.empty())
          continue;
        const T *q = query + qAt(b, i, h, dim);
        const T *dout = grad + qAt(b, i, h, valueDim);
        T max = -std::numeric_limits<T>::infinity();
        for (size_t n = 0; n < keys.size(); ++n) {
          const T *k = key + kAt(b, keys[n], kvHead, dim);
          T s = 0;
          for (int64_t d = 0; d < dim; ++d)
            s += q[d] * k[d];
          p[n] = scale * s;
          max = math::runningMax(max, p[n]);
        }
        T sum = 0;
        for (size_t n = 0; n < keys.size(); ++n) {
          p[n] = std::exp(p[n] - max);
          sum += p[n];
        }
        T pdp = 0;
        for (size_t n = 0; n < keys.size(); ++n) {
          p[n] /= sum;
          T dp = 0;
          const T *v = value + kAt(b, keys[n], kvHead, valueDim);
          for (int64_t d = 0; d < valueDim; ++d)
            dp += dout[d] * v[d];
          ds[n] = dp;
          pdp += p[n] * dp;
        }
        T *dqRow = dq + qAt(b, i, h, dim);
        for (size_t n = 0; n < keys.size(); ++n) {
          int64_t j = keys[n];
          ds[n] = p[n] * (ds[n] - pdp);
          const T coefficient = scale * ds[n];
          const T *k = key + kAt(b, j, kvHead, dim);
          T *dkRow = dk + kAt(b, j, kvHead, dim);
          T *dvRow = dv + kAt(b, j, kvHead, valueDim);
          for (int64_t d = 0; d < dim; ++d) {
            dqRow[d] += coefficient * k[d];
            dkRow[d] += coefficient * q[d];
          }
          const T pj = p[n];
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

void loom::host::setAttentionRangeSkipping(AttentionSkipping mode) {
  rangeSkipping.store(mode, std::memory_order_relaxed);
}

int64_t loom::host::getAttentionKeysVisited() {
  return keysVisited.load(std::memory_order_relaxed);
}
