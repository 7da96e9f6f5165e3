//===- MoeOperators.cpp - The test double's mixture-of-experts operators --===//
//
// Part of the CPU test double of CANN (see Double.h): aclnnTopk,
// aclnnIndexAdd and aclnnGroupedMatmulV4, the CANN operators the Ascend
// kernels of Loom's MoE ops call (runtime/ascend/Kernels.cpp), for the
// cases Loom uses, computed as the host kernels compute (host::topk, the
// host GEMM per group) so that the Ascend target agrees with the host bit
// for bit here. What CANN's documentation leaves undefined the double
// fills with NaN (a group of no rows in a K-grouped matmul), so that a
// caller relying on it shows; what it forbids (group sizes that do not
// cover x) is refused at the launch, when the sizes can be read.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"
#include "runtime/kernels/Blas.h"

#include <climits>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

/// Element offsets of row-major `shape` split at `dim`: the elements
/// before it (outer), along it and after it (inner).
void splitAt(const host::Shape &shape, int64_t dim, int64_t &outer,
             int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1; d < shape.rank; ++d)
    inner *= shape[d];
}

int64_t indexAt(const TensorArg &index, int64_t i) {
  if (index.dtype == ACL_INT32)
    return index.as<const int32_t>()[i];
  return index.as<const int64_t>()[i];
}

} // namespace

//===----------------------------------------------------------------------===//
// Topk
//===----------------------------------------------------------------------===//

aclnnStatus aclnnTopkGetWorkspaceSize(const aclTensor *self, int64_t k,
                                      int64_t dim, bool largest, bool sorted,
                                      aclTensor *valuesOut,
                                      aclTensor *indicesOut,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
  Plan plan("aclnnTopk");
  TensorArg a;
  Output values, indices;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  int64_t rank = a.shape.rank;
  if (rank < 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "self of rank 0 is not implemented by the test double");
  if (dim < -rank || dim >= rank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dim %lld is out of range for self of rank %lld",
                     static_cast<long long>(dim),
                     static_cast<long long>(rank));
  if ((dim < 0 ? dim + rank : dim) != rank - 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dim %lld: the test double implements the last "
                     "dimension only",
                     static_cast<long long>(dim));
  int64_t n = a.shape[rank - 1];
  if (k < 0 || k > n)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "k = %lld is not in [0, %lld]", static_cast<long long>(k),
                     static_cast<long long>(n));
  if (!largest || !sorted)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "largest = %d, sorted = %d: the test double implements "
                     "the largest elements, sorted",
                     largest, sorted);
  host::Shape shape = a.shape;
  shape.dims[rank - 1] = k;
  LOOM_DOUBLE_TRY(plan.output(valuesOut, "valuesOut", values, {&a}));
  LOOM_DOUBLE_TRY(plan.requireSameType(values.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(values.arg, shape));
  LOOM_DOUBLE_TRY(plan.output(indicesOut, "indicesOut", indices, {&a}));
  if (indices.arg.dtype != ACL_INT64)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "indicesOut must be INT64, not %s",
                     dtypeName(indices.arg.dtype));
  LOOM_DOUBLE_TRY(plan.requireShape(indices.arg, shape));
  LOOM_DOUBLE_TRY(plan.disjoint({&values, &indices}));
  return plan.finish(
      [a, values, indices, k, n](char *workspace) {
        if (k == 0 || a.numElements() == 0)
          return;
        // Ties in index order and NaN above any number, as host::topk
        // (CANN documents neither; torch.topk orders NaN first too).
        int64_t *picked = indices.as<int64_t>(workspace);
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::topk(picked, indices.arg.shape, a.as<const T>(), a.shape, k);
          T *out = values.as<T>(workspace);
          int64_t rows = a.numElements() / n;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < k; ++j)
              out[r * k + j] = a.as<const T>()[r * n + picked[r * k + j]];
        });
        values.commit(workspace);
        indices.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// IndexAdd
//===----------------------------------------------------------------------===//

aclnnStatus aclnnIndexAddGetWorkspaceSize(const aclTensor *self,
                                          const int64_t dim,
                                          const aclTensor *index,
                                          const aclTensor *source,
                                          const aclScalar *alpha,
                                          aclTensor *out,
                                          uint64_t *workspaceSize,
                                          aclOpExecutor **executor) {
  Plan plan("aclnnIndexAdd");
  TensorArg a, i, s;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  int64_t rank = a.shape.rank, axis = 0;
  if (rank < 1 || dim < -rank || dim >= rank)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dim %lld does not fit self of rank %lld",
                     static_cast<long long>(dim),
                     static_cast<long long>(rank));
  axis = dim < 0 ? dim + rank : dim;
  LOOM_DOUBLE_TRY(plan.contiguous(index, "index", i));
  LOOM_DOUBLE_TRY(plan.requireIndex(i));
  if (i.shape.rank != 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "index of shape %s must have rank 1",
                     formatShape(i.shape).c_str());
  LOOM_DOUBLE_TRY(plan.contiguous(source, "source", s));
  LOOM_DOUBLE_TRY(plan.requireSameType(s, a));
  host::Shape sourceShape = a.shape;
  sourceShape.dims[axis] = i.shape[0];
  LOOM_DOUBLE_TRY(plan.requireShape(s, sourceShape));
  LOOM_DOUBLE_TRY(plan.scalar(alpha, "alpha"));
  double factor = scalarValue(alpha);
  // out may be self exactly (in place); any other overlap is staged.
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a, &i, &s}, false, &a));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, a.shape));
  int64_t outer = 1, inner = 1;
  splitAt(a.shape, axis, outer, inner);
  return plan.finishChecked(
      [a, i, s, o, axis, outer, inner, factor](char *workspace) {
        int64_t rows = a.shape[axis], count = i.shape[0];
        // The indices are checked before anything is written.
        for (int64_t n = 0; n < count; ++n) {
          int64_t row = indexAt(i, n);
          if (row < 0 || row >= rows)
            return fail(ACLNN_ERR_RUNTIME_ERROR,
                        "aclnnIndexAdd: index[%lld] = %lld is outside [0, "
                        "%lld)",
                        static_cast<long long>(n),
                        static_cast<long long>(row),
                        static_cast<long long>(rows));
        }
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          T *y = o.as<T>(workspace);
          if (y != a.as<T>())
            std::memcpy(y, a.as<const T>(), a.bytes());
          const T *x = s.as<const T>();
          T scale = static_cast<T>(factor);
          // In index order, so that a row named twice sums in a fixed order.
          for (int64_t p = 0; p < outer; ++p)
            for (int64_t n = 0; n < count; ++n) {
              T *to = y + (p * rows + indexAt(i, n)) * inner;
              const T *from = x + (p * count + n) * inner;
              if (factor == 1.0)
                for (int64_t h = 0; h < inner; ++h)
                  to[h] += from[h];
              else
                for (int64_t h = 0; h < inner; ++h)
                  to[h] += scale * from[h];
            }
        });
        o.commit(workspace);
        return ACLNN_SUCCESS;
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// GroupedMatmulV4
//===----------------------------------------------------------------------===//

namespace {

/// The one tensor of a list Loom passes as a single tensor (splitItem 2 or
/// 3).
aclnnStatus single(Plan &plan, const aclTensorList *list, const char *what,
                   TensorArg &arg) {
  LOOM_DOUBLE_TRY(plan.list(list, what));
  if (list->tensors.size() != 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "%s holds %zu tensors; the test double implements single "
                     "tensors (one x, one weight, one out)",
                     what, list->tensors.size());
  return plan.tensor(list->tensors[0], what, arg);
}

/// Whether `arg` is the row-major tensor of its shape, or the transpose
/// of one in its last two dimensions (`transposed`).
bool denseOrTransposed(const TensorArg &arg, bool &transposed) {
  host::Shape stored;
  transposed = !arg.contiguous;
  return arg.contiguous || isTransposedContiguous(arg, stored);
}

} // namespace

aclnnStatus aclnnGroupedMatmulV4GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight,
    const aclTensorList *biasOptional, const aclTensorList *scaleOptional,
    const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional,
    const aclTensorList *antiquantOffsetOptional,
    const aclTensorList *perTokenScaleOptional,
    const aclTensor *groupListOptional,
    const aclTensorList *activationInputOptional,
    const aclTensorList *activationQuantScaleOptional,
    const aclTensorList *activationQuantOffsetOptional, int64_t splitItem,
    int64_t groupType, int64_t groupListType, int64_t actType,
    aclTensorList *out, aclTensorList *activationFeatureOutOptional,
    aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  Plan plan("aclnnGroupedMatmulV4");
  if (biasOptional || scaleOptional || offsetOptional ||
      antiquantScaleOptional || antiquantOffsetOptional ||
      perTokenScaleOptional || activationInputOptional ||
      activationQuantScaleOptional || activationQuantOffsetOptional ||
      activationFeatureOutOptional || dynQuantScaleOutOptional)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "bias, quantisation and activation operands are not "
                     "implemented by the test double (pass null)");
  if (splitItem != 2 && splitItem != 3)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "splitItem %lld: the test double implements single "
                     "tensors (2 or 3)",
                     static_cast<long long>(splitItem));
  if (groupType != 0 && groupType != 2)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "groupType %lld: the test double implements 0 (M) and 2 "
                     "(K)",
                     static_cast<long long>(groupType));
  if (groupListType != 0 && groupListType != 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "groupListType %lld: the test double implements 0 "
                     "(running sums) and 1 (sizes)",
                     static_cast<long long>(groupListType));
  if (actType != 0)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "actType %lld: activations are not implemented by the "
                     "test double",
                     static_cast<long long>(actType));
  TensorArg a, w, g;
  LOOM_DOUBLE_TRY(single(plan, x, "x", a));
  if (a.dtype != ACL_FLOAT)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "x is %s; the test double implements FLOAT (CANN's "
                     "grouped matmul takes no f64)",
                     dtypeName(a.dtype));
  LOOM_DOUBLE_TRY(single(plan, weight, "weight", w));
  LOOM_DOUBLE_TRY(plan.requireSameType(w, a));
  LOOM_DOUBLE_TRY(plan.list(out, "out"));
  if (out->tensors.size() != 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "out holds %zu tensors, not 1",
                     out->tensors.size());
  Output o;
  LOOM_DOUBLE_TRY(plan.output(out->tensors[0], "out", o, {&a, &w}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  if (!groupListOptional)
    return plan.fail(ACLNN_ERR_PARAM_NULLPTR,
                     "groupListOptional is null (single tensors need it)");
  LOOM_DOUBLE_TRY(plan.contiguous(groupListOptional, "groupListOptional", g));
  if (g.dtype != ACL_INT64 || g.shape.rank != 1 || g.shape[0] < 1 ||
      g.shape[0] > 1024)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "groupListOptional must be INT64 of shape [g], 1 <= g <= "
                     "1024, not %s %s",
                     dtypeName(g.dtype), formatShape(g.shape).c_str());
  int64_t groups = g.shape[0];
  bool transposeX = false, transposeW = false;
  if (a.shape.rank != 2 || !denseOrTransposed(a, transposeX))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "x must be a matrix, row-major or transposed");
  // M grouping: x [M, K] row-major, weight [g, K, N] (or transposed), out
  // [M, N]. K grouping: x [M, K] transposed, weight [K, N] row-major, out
  // [g, M, N].
  int64_t m = a.shape[0], depth = a.shape[1], n = 0;
  if (groupType == 0) {
    if (transposeX)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "x transposed with groupType 0 (CANN does not "
                       "support it)");
    if (w.shape.rank != 3 || w.shape[0] != groups || w.shape[1] != depth ||
        !denseOrTransposed(w, transposeW))
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "weight %s does not fit x %s and %lld groups (it must "
                       "be [g, K, N], row-major or transposed)",
                       formatShape(w.shape).c_str(),
                       formatShape(a.shape).c_str(),
                       static_cast<long long>(groups));
    n = w.shape[2];
    LOOM_DOUBLE_TRY(plan.requireShape(o.arg, host::Shape{m, n}));
  } else {
    if (!transposeX && m > 1 && depth > 1)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "groupType 2 needs x transposed");
    if (w.shape.rank != 2 || w.shape[0] != depth || !w.contiguous)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "weight %s does not fit x %s (it must be a row-major "
                       "[K, N])",
                       formatShape(w.shape).c_str(),
                       formatShape(a.shape).c_str());
    n = w.shape[1];
    LOOM_DOUBLE_TRY(plan.requireShape(o.arg, host::Shape{groups, m, n}));
  }
  // Atlas A2/A3: every dimension's last axis below 65536; the host GEMM
  // takes int sizes.
  if (a.shape[1] >= 65536 || n >= 65536 || w.shape[w.shape.rank - 1] >= 65536)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "the last dimensions of x (%lld) and weight (%lld) must "
                     "be below 65536 (Atlas A2/A3)",
                     static_cast<long long>(a.shape[1]),
                     static_cast<long long>(w.shape[w.shape.rank - 1]));
  if (m > INT_MAX || depth > INT_MAX || groups * m > INT_MAX)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "x %s is too large for the test double's GEMM",
                     formatShape(a.shape).c_str());
  int64_t grouped = groupType == 0 ? m : depth;
  return plan.finishChecked(
      [a, w, g, o, groups, groupType, groupListType, transposeW, m, depth, n,
       grouped](char *workspace) {
        // The group sizes, checked as CANN's constraints state them for
        // single tensors on Atlas A2/A3: non-negative (sizes) or
        // non-decreasing (running sums), covering the grouped axis exactly.
        std::vector<int64_t> sizes(static_cast<size_t>(groups));
        const int64_t *list = g.as<const int64_t>();
        int64_t total = 0;
        for (int64_t e = 0; e < groups; ++e) {
          // (Compared before any arithmetic: sizes near INT64_MAX must not
          // wrap into a plausible total.)
          int64_t previous = groupListType == 1 || e == 0 ? 0 : list[e - 1];
          bool fits = groupListType == 1
                          ? list[e] >= 0 && list[e] <= grouped - total
                          : list[e] >= previous && list[e] <= grouped;
          if (!fits)
            return fail(ACLNN_ERR_RUNTIME_ERROR,
                        "aclnnGroupedMatmulV4: group %lld (list value %lld) "
                        "is negative or runs past the %lld rows of the "
                        "grouped axis",
                        static_cast<long long>(e),
                        static_cast<long long>(list[e]),
                        static_cast<long long>(grouped));
          sizes[e] = groupListType == 1 ? list[e] : list[e] - previous;
          total += sizes[e];
        }
        if (total != grouped)
          return fail(ACLNN_ERR_RUNTIME_ERROR,
                      "aclnnGroupedMatmulV4: the groups hold %lld rows but "
                      "the grouped axis has %lld (on Atlas A2/A3 they must "
                      "be equal)",
                      static_cast<long long>(total),
                      static_cast<long long>(grouped));
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          const T *xs = a.as<const T>(), *ws = w.as<const T>();
          T *ys = o.as<T>(workspace);
          int64_t start = 0;
          for (int64_t e = 0; e < groups; ++e) {
            int64_t size = sizes[e];
            if (groupType == 0) {
              // Rows [start, start + size) of x times weight[e].
              host::detail::gemm(false, transposeW, size, n, depth, T(1),
                                 xs + start * depth, depth,
                                 ws + e * depth * n, transposeW ? depth : n,
                                 T(0), ys + start * n, n);
            } else if (size == 0) {
              // An empty group: CANN does not say what it writes.
              std::fill(ys + e * m * n, ys + (e + 1) * m * n,
                        std::numeric_limits<T>::quiet_NaN());
            } else {
              // x's columns [start, start + size) (its storage's rows) times
              // weight's rows.
              host::detail::gemm(true, false, m, n, size, T(1),
                                 xs + start * m, m, ws + start * n, n, T(0),
                                 ys + e * m * n, n);
            }
            start += size;
          }
        });
        o.commit(workspace);
        return ACLNN_SUCCESS;
      },
      workspaceSize, executor);
}
