//===- Kernels.cpp - nn ops as aclnn operator calls -----------------------===//
//
// Each kernel of AscendKernels.h as one aclnn operator (Internal.h's
// launch: GetWorkspaceSize, workspace, launch on the rank's stream). Data
// movement (slices, broadcasts, transposes) is aclnnInplaceCopy from a
// strided view of the input; matmul's transposes are strided views too.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/Internal.h"
#include "runtime/host/Collectives.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace loom;
using namespace loom::ascend;
using namespace loom::ascend::internal;
using detail::Arg;

void internal::fail(const std::string &message) {
  rt::Runtime::get().fail("loom::ascend::" + message);
}

namespace {

/// out = the view (strided copy).
void copyFrom(const Arg &out, aclTensor *source) {
  LOOM_ACLNN(aclnnInplaceCopy, tensor(out), source);
}

} // namespace


void detail::copy(Arg out, Arg in) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnInplaceCopy, tensor(out), tensor(in));
}

void detail::reshape(Arg out, Arg in) {
  // The input's elements in the result's shape.
  copy(out, Arg{in.data, out.shape, in.type});
}

void detail::fill(Arg out, double value) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnInplaceFillScalar, tensor(out), scalar(value, out.type));
}

void detail::matmul(Arg out, Arg lhs, Arg rhs, bool transposeLhs,
                    bool transposeRhs) {
  if (empty(out))
    return;
  // A transposed operand is a view of its storage with the last two
  // dimensions (and strides) swapped.
  auto operand = [](const Arg &arg, bool transposed) {
    if (!transposed)
      return tensor(arg);
    if (arg.shape.rank < 2)
      fail("matmul: a transposed operand of rank < 2");
    int64_t strides[host::kMaxRank];
    contiguousStrides(arg.shape, strides);
    Shape shape = arg.shape;
    int64_t r = shape.rank;
    std::swap(shape.dims[r - 1], shape.dims[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
    return viewOf(arg, shape, strides, 0);
  };
  LOOM_ACLNN(aclnnMatmul, operand(lhs, transposeLhs),
             operand(rhs, transposeRhs), tensor(out),
             static_cast<int8_t>(0) /* KEEP_DTYPE */);
}

namespace {

void binary(const char *op, Arg out, Arg lhs, Arg rhs) {
  if (empty(out))
    return;
  aclTensor *a = tensor(lhs), *b = tensor(rhs), *result = tensor(out);
  if (!std::strcmp(op, "add"))
    LOOM_ACLNN(aclnnAdd, a, b, scalar(1.0, out.type), result);
  else if (!std::strcmp(op, "sub"))
    LOOM_ACLNN(aclnnSub, a, b, scalar(1.0, out.type), result);
  else if (!std::strcmp(op, "mul"))
    LOOM_ACLNN(aclnnMul, a, b, result);
  else if (!std::strcmp(op, "div"))
    LOOM_ACLNN(aclnnDiv, a, b, result);
  else if (!std::strcmp(op, "maximum"))
    LOOM_ACLNN(aclnnMaximum, a, b, result);
  else if (!std::strcmp(op, "minimum"))
    LOOM_ACLNN(aclnnMinimum, a, b, result);
  else
    fail(std::string(op) + ": no aclnn operator");
}

void unary(const char *op, Arg out, Arg in) {
  if (empty(out))
    return;
  aclTensor *a = tensor(in), *result = tensor(out);
#define LOOM_UNARY_CASE(NAME, OP)                                              \
  if (!std::strcmp(op, NAME))                                                  \
    return LOOM_ACLNN(OP, a, result);
  LOOM_UNARY_CASE("neg", aclnnNeg)
  LOOM_UNARY_CASE("exp", aclnnExp)
  LOOM_UNARY_CASE("log", aclnnLog)
  LOOM_UNARY_CASE("sqrt", aclnnSqrt)
  LOOM_UNARY_CASE("rsqrt", aclnnRsqrt)
  LOOM_UNARY_CASE("tanh", aclnnTanh)
  LOOM_UNARY_CASE("relu", aclnnRelu)
  LOOM_UNARY_CASE("silu", aclnnSilu)
  LOOM_UNARY_CASE("sin", aclnnSin)
  LOOM_UNARY_CASE("cos", aclnnCos)
#undef LOOM_UNARY_CASE
  fail(std::string(op) + ": no aclnn operator");
}

} // namespace

#define LOOM_BINARY(NAME)                                                      \
  void detail::NAME(Arg result, Arg lhs, Arg rhs) {                            \
    binary(#NAME, result, lhs, rhs);                                           \
  }
LOOM_BINARY(add)
LOOM_BINARY(sub)
LOOM_BINARY(mul)
LOOM_BINARY(div)
LOOM_BINARY(maximum)
LOOM_BINARY(minimum)
#undef LOOM_BINARY

#define LOOM_UNARY(NAME)                                                       \
  void detail::NAME(Arg result, Arg input) { unary(#NAME, result, input); }
LOOM_UNARY(neg)
LOOM_UNARY(exp)
LOOM_UNARY(log)
LOOM_UNARY(sqrt)
LOOM_UNARY(rsqrt)
LOOM_UNARY(tanh)
LOOM_UNARY(relu)
LOOM_UNARY(silu)
LOOM_UNARY(sin)
LOOM_UNARY(cos)
#undef LOOM_UNARY

void detail::reduce(Arg out, Arg in, Shape dims, bool keepDims,
                    const char *kind) {
  if (empty(out))
    return;
  aclIntArray *axes = intArray(dims.dims, dims.rank < 0 ? 0 : dims.rank);
  if (!std::strcmp(kind, "sum"))
    LOOM_ACLNN(aclnnReduceSum, tensor(in), axes, keepDims, out.type,
               tensor(out));
  else if (!std::strcmp(kind, "mean"))
    LOOM_ACLNN(aclnnMean, tensor(in), axes, keepDims, out.type, tensor(out));
  else if (!std::strcmp(kind, "max"))
    LOOM_ACLNN(aclnnAmax, tensor(in), axes, keepDims, tensor(out));
  else
    fail(std::string("reduce: unknown kind '") + kind + "'");
}

void detail::broadcast(Arg out, Arg in, Shape broadcastDims) {
  if (empty(out))
    return;
  // The input seen with the result's shape: stride 0 along broadcast
  // dimensions.
  int64_t inStrides[host::kMaxRank], strides[host::kMaxRank] = {};
  contiguousStrides(in.shape, inStrides);
  for (int64_t i = 0; i < in.shape.rank; ++i) {
    int64_t d = broadcastDims.isAbsent() ? i + out.shape.rank - in.shape.rank
                                         : broadcastDims[i];
    if (d < 0 || d >= out.shape.rank)
      fail("broadcast: dimension out of range");
    if (in.shape[i] == out.shape[d])
      strides[d] = inStrides[i];
  }
  copyFrom(out, viewOf(in, out.shape, strides, 0));
}

void detail::transpose(Arg out, Arg in, Shape permutation) {
  if (empty(out))
    return;
  int64_t inStrides[host::kMaxRank], strides[host::kMaxRank];
  contiguousStrides(in.shape, inStrides);
  for (int64_t d = 0; d < out.shape.rank; ++d)
    strides[d] = inStrides[permutation[d]];
  copyFrom(out, viewOf(in, out.shape, strides, 0));
}

void detail::slice(Arg out, Arg in, Shape offsets, Shape /*sizes*/,
                   Shape steps) {
  if (empty(out))
    return;
  int64_t inStrides[host::kMaxRank], strides[host::kMaxRank];
  contiguousStrides(in.shape, inStrides);
  int64_t offset = 0;
  for (int64_t d = 0; d < in.shape.rank; ++d) {
    int64_t step = steps.isAbsent() || steps.rank <= d ? 1 : steps[d];
    offset += (offsets.isAbsent() ? 0 : offsets[d]) * inStrides[d];
    strides[d] = inStrides[d] * step;
  }
  copyFrom(out, viewOf(in, out.shape, strides, offset));
}

void detail::concat(Arg out, const std::vector<Arg> &inputs, int64_t dim) {
  if (empty(out))
    return;
  std::vector<aclTensor *> tensors;
  for (const Arg &input : inputs)
    if (!empty(input))
      tensors.push_back(tensor(input));
  LOOM_ACLNN(aclnnCat,
             tensorList(tensors.data(), static_cast<int64_t>(tensors.size())),
             dim, tensor(out));
}

void detail::softmax(Arg out, Arg in, int64_t dim) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnSoftmax, tensor(in), dim, tensor(out));
}

void detail::compare(Arg out, Arg lhs, Arg rhs, const char *predicate) {
  if (empty(out))
    return;
  aclTensor *a = tensor(lhs), *b = tensor(rhs), *result = tensor(out);
  std::string p = predicate ? predicate : "";
  if (p == "eq")
    LOOM_ACLNN(aclnnEqTensor, a, b, result);
  else if (p == "ne")
    LOOM_ACLNN(aclnnNeTensor, a, b, result);
  else if (p == "lt")
    LOOM_ACLNN(aclnnLtTensor, a, b, result);
  else if (p == "le")
    LOOM_ACLNN(aclnnLeTensor, a, b, result);
  else if (p == "gt")
    LOOM_ACLNN(aclnnGtTensor, a, b, result);
  else if (p == "ge")
    LOOM_ACLNN(aclnnGeTensor, a, b, result);
  else
    fail("compare: unknown predicate '" + p + "'");
}

void detail::cast(Arg out, Arg in) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnCast, tensor(in), out.type, tensor(out));
}

void detail::clamp(Arg out, Arg in, double max, double min) {
  if (empty(out))
    return;
  // An absent bound (NaN) is no bound: a null scalar.
  aclScalar *low = std::isnan(min) ? nullptr : scalar(min, out.type);
  aclScalar *high = std::isnan(max) ? nullptr : scalar(max, out.type);
  if (!low && !high)
    return copy(out, in);
  LOOM_ACLNN(aclnnClamp, tensor(in), low, high, tensor(out));
}

void detail::select(Arg out, Arg condition, Arg whenTrue, Arg whenFalse) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnSWhere, tensor(condition), tensor(whenTrue),
             tensor(whenFalse), tensor(out));
}

void detail::slice_grad(Arg out, Arg grad, Shape offsets, Shape steps) {
  if (empty(out))
    return;
  // Zeros, then the gradient into the slice's strided view of the result.
  fill(out, 0.0);
  if (empty(grad))
    return;
  int64_t outStrides[host::kMaxRank], strides[host::kMaxRank];
  contiguousStrides(out.shape, outStrides);
  int64_t offset = 0;
  for (int64_t d = 0; d < out.shape.rank; ++d) {
    int64_t step = steps.isAbsent() || steps.rank <= d ? 1 : steps[d];
    offset += (offsets.isAbsent() ? 0 : offsets[d]) * outStrides[d];
    strides[d] = outStrides[d] * step;
  }
  LOOM_ACLNN(aclnnInplaceCopy, viewOf(out, grad.shape, strides, offset),
             tensor(grad));
}

//===----------------------------------------------------------------------===//
// Loom's operators (LoomOps.h)
//===----------------------------------------------------------------------===//

void detail::log_softmax(Arg out, Arg in, int64_t dim) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnLogSoftmax, tensor(in), dim, tensor(out));
}

void detail::gelu(Arg out, Arg in, const char *approximate) {
  if (empty(out))
    return;
  // GeluV2's approximate: 0 erf ("none", the default), 1 tanh.
  std::string kind = approximate ? approximate : "none";
  if (kind != "none" && kind != "tanh")
    fail("gelu: unknown approximation '" + kind + "'");
  LOOM_ACLNN(aclnnGeluV2, tensor(in), static_cast<int64_t>(kind == "tanh"),
             tensor(out));
}

void detail::layer_norm(Arg out, Arg in, Arg scale, Arg bias, double epsilon,
                       int64_t normalizedDims) {
  if (empty(out))
    return;
  // Over the trailing `normalizedDims` dimensions (default 1); no mean or
  // rstd outputs (Loom's gradient recomputes them).
  int64_t dims = normalizedDims == INT64_MIN ? 1 : normalizedDims;
  if (dims < 1 || dims > in.shape.rank)
    fail("layer_norm: normalized_dims " + std::to_string(dims) +
         " does not fit an input of rank " + std::to_string(in.shape.rank));
  aclIntArray *normalized =
      intArray(in.shape.dims + (in.shape.rank - dims), dims);
  LOOM_ACLNN(aclnnLayerNorm, tensor(in), normalized, tensor(scale),
             tensor(bias), epsilon, tensor(out), nullptr, nullptr);
}

void detail::embedding(Arg out, Arg table, Arg ids, Arg offset) {
  if (empty(out))
    return;
  // Both operators take a table of rank 2: a table of higher rank (its
  // rows looked up whole) goes as `[vocab, width]`, the result as the ids'
  // shape and `width`; both views are of the same contiguous elements.
  if (table.shape.rank < 2 || ids.shape.rank >= host::kMaxRank)
    fail("embedding: needs a table of rank 2 or more and ids of rank below " +
         std::to_string(host::kMaxRank));
  Shape rows{};
  rows.rank = 2;
  rows.dims[0] = table.shape[0];
  rows.dims[1] = 1;
  for (int i = 1; i < table.shape.rank; ++i)
    rows.dims[1] *= table.shape[i];
  Shape expected = ids.shape;
  for (int i = 1; i < table.shape.rank && expected.rank < host::kMaxRank; ++i)
    expected.dims[expected.rank++] = table.shape[i];
  bool fits = table.shape.rank + ids.shape.rank - 1 <= host::kMaxRank &&
              out.shape.rank == expected.rank;
  for (int64_t d = 0; fits && d < expected.rank; ++d)
    fits = out.shape[d] == expected[d];
  if (!fits)
    fail("embedding: the result must have the ids' shape and a table "
         "row's");
  Shape flat = ids.shape;
  flat.dims[flat.rank++] = rows.dims[1];
  int64_t rowStrides[host::kMaxRank], flatStrides[host::kMaxRank];
  contiguousStrides(rows, rowStrides);
  contiguousStrides(flat, flatStrides);
  aclTensor *tableView = viewOf(table, rows, rowStrides, 0);
  aclTensor *outView = viewOf(out, flat, flatStrides, 0);
  // Without a vocabulary offset, aclnn's; a shard of the vocabulary
  // (ids offset, out-of-shard rows zero) is Loom's operator.
  if (!offset.data)
    LOOM_ACLNN(aclnnEmbedding, tableView, tensor(ids), outView);
  else
    LOOM_ACLNN(aclnnLoomEmbedding, tableView, tensor(ids), tensor(offset),
               outView);
}

void detail::gather(Arg out, Arg in, Arg indices, int64_t dim) {
  if (empty(out))
    return;
  LOOM_ACLNN(aclnnGather, tensor(in), dim, tensor(indices), tensor(out));
}

// The kernels that are one call of Loom's own operator, generated from the
// ops' kernel contracts (`ascendLoomOperator`).
#include "runtime/ascend/AscendKernels.cpp.inc"
