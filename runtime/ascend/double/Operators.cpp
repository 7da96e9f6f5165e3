//===- Operators.cpp - The aclnn operators of the test double -------------===//
//
// Part of the CPU test double of CANN (see Double.h): the CANN aclnn
// operators Loom calls, each on Loom's host kernels (runtime/kernels) where
// one fits, and only for the cases the double can compute exactly as those
// kernels do. Anything else is refused with ACLNN_ERR_PARAM_INVALID and a
// message saying what the double does not implement, never approximated.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

/// numpy broadcasting of two shapes (aligned at the last dimension).
bool broadcastShapes(const host::Shape &a, const host::Shape &b,
                     host::Shape &result) {
  int64_t rank = std::max(a.rank, b.rank);
  result = host::Shape();
  result.rank = rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t x = d - (rank - a.rank) >= 0 ? a[d - (rank - a.rank)] : 1;
    int64_t y = d - (rank - b.rank) >= 0 ? b[d - (rank - b.rank)] : 1;
    if (x != y && x != 1 && y != 1)
      return false;
    result.dims[d] = x == 1 ? y : x;
  }
  return true;
}

template <typename T>
void copyTyped(char *dst, const int64_t *dstStrides, const char *src,
               const int64_t *srcStrides, const host::Shape &shape) {
  auto *out = reinterpret_cast<T *>(dst);
  const auto *in = reinterpret_cast<const T *>(src);
  forEachIndex(shape, dstStrides, srcStrides,
               [&](int64_t a, int64_t b) { out[a] = in[b]; });
}

/// Copies element by element (bits, whatever the type) over `shape`.
void copyElements(uint64_t elementBytes, char *dst, const int64_t *dstStrides,
                  const char *src, const int64_t *srcStrides,
                  const host::Shape &shape) {
  // Both sides row-major: one block.
  int64_t rowMajor[host::kMaxRank];
  rowMajorStrides(shape, rowMajor);
  bool dense = true;
  for (int64_t d = 0; d < shape.rank; ++d)
    dense &= shape[d] == 1 ||
             (dstStrides[d] == rowMajor[d] && srcStrides[d] == rowMajor[d]);
  if (dense) {
    if (int64_t count = shape.numElements())
      std::memcpy(dst, src, static_cast<size_t>(count) * elementBytes);
    return;
  }
  switch (elementBytes) {
  case 1:
    return copyTyped<uint8_t>(dst, dstStrides, src, srcStrides, shape);
  case 2:
    return copyTyped<uint16_t>(dst, dstStrides, src, srcStrides, shape);
  case 4:
    return copyTyped<uint32_t>(dst, dstStrides, src, srcStrides, shape);
  default:
    return copyTyped<uint64_t>(dst, dstStrides, src, srcStrides, shape);
  }
}

/// Wraps a dimension in [-rank, rank) (torch); false when out of range.
bool wrapDim(int64_t dim, int64_t rank, int64_t &wrapped) {
  if (dim < -rank || dim >= rank)
    return false;
  wrapped = dim < 0 ? dim + rank : dim;
  return true;
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

/// `out` has the shape `self` and `other` broadcast to (numpy rules).
aclnnStatus requireBroadcast(Plan &plan, const TensorArg &a, const TensorArg &b,
                             const Output &o) {
  host::Shape shape;
  if (!broadcastShapes(a.shape, b.shape, shape))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "self of shape %s and other of shape %s do not "
                     "broadcast",
                     formatShape(a.shape).c_str(),
                     formatShape(b.shape).c_str());
  return plan.requireShape(o.arg, shape);
}

/// Add, Sub (with alpha), Mul, Div, Maximum, Minimum: contiguous f32/f64
/// operands of one type, broadcast as numpy does.
template <typename Kernel>
aclnnStatus planBinary(const char *op, const aclTensor *self,
                       const aclTensor *other, const aclScalar *alpha,
                       bool hasAlpha, aclTensor *out, uint64_t *workspaceSize,
                       aclOpExecutor **executor, Kernel kernel) {
  Plan plan(op);
  TensorArg a, b;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  LOOM_DOUBLE_TRY(plan.contiguous(other, "other", b));
  LOOM_DOUBLE_TRY(plan.requireSameType(b, a));
  if (hasAlpha) {
    LOOM_DOUBLE_TRY(plan.scalar(alpha, "alpha"));
    if (scalarValue(alpha) != 1.0)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "alpha != 1 is not implemented by the test double");
  }
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a, &b}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(requireBroadcast(plan, a, b, o));
  return plan.finish(
      [a, b, o, kernel](char *workspace) {
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          kernel(o.as<T>(workspace), o.arg.shape, a.as<T>(), a.shape, b.as<T>(),
                 b.shape);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

/// Exp, Neg, ...: a contiguous f32/f64 input and a result of its shape.
template <typename Kernel>
aclnnStatus planUnary(const char *op, const aclTensor *self,
                      const aclTensor *out, uint64_t *workspaceSize,
                      aclOpExecutor **executor, Kernel kernel) {
  Plan plan(op);
  TensorArg a;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, a.shape));
  return plan.finish(
      [a, o, kernel](char *workspace) {
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          kernel(o.as<T>(workspace), o.arg.shape, a.as<T>(), a.shape);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// One operand of a matrix product as host::matmul takes it: the stored
/// (row-major) shape and whether to transpose its last two dimensions.
struct MatmulOperand {
  Input in;
  host::Shape stored;
  bool transpose = false;
};

aclnnStatus planMatmulOperand(Plan &plan, const aclTensor *t, const char *what,
                              MatmulOperand &operand) {
  // A transposed view of contiguous storage goes to the kernel as the
  // stored tensor with the transpose flag; other strided views are
  // gathered into the workspace.
  TensorArg arg;
  LOOM_DOUBLE_TRY(plan.tensor(t, what, arg));
  LOOM_DOUBLE_TRY(plan.requireFloat(arg));
  if (arg.shape.rank < 2)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "%s has rank %lld; operands of rank 1 (torch.matmul's "
                     "vector cases) are not implemented by the test double",
                     what, static_cast<long long>(arg.shape.rank));
  operand.in = Input();
  operand.in.arg = arg;
  operand.stored = arg.shape;
  operand.transpose = false;
  if (arg.contiguous)
    return ACLNN_SUCCESS;
  if (isTransposedContiguous(arg, operand.stored)) {
    operand.transpose = true;
    return ACLNN_SUCCESS;
  }
  operand.stored = arg.shape;
  operand.in.gathered = true;
  operand.in.slot = plan.reserve(arg.bytes());
  return ACLNN_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

aclnnStatus planReduce(const char *op, const aclTensor *self,
                       const aclIntArray *dim, bool keepDims,
                       const aclDataType *dtype, aclTensor *out,
                       const char *kind, uint64_t *workspaceSize,
                       aclOpExecutor **executor) {
  Plan plan(op);
  Input in;
  Output o;
  LOOM_DOUBLE_TRY(plan.input(self, "self", in));
  const TensorArg &a = in.arg;
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  if (dtype && enumValue(*dtype) != a.dtype)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dtype %s differs from self's %s; reductions that convert "
                     "are not implemented by the test double",
                     dtypeName(enumValue(*dtype)), dtypeName(a.dtype));
  if (!dim)
    return plan.fail(ACLNN_ERR_PARAM_NULLPTR, "dim is null");
  if (!isLive(dim))
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "dim is not a live int array");
  int64_t rank = a.shape.rank;
  bool reduced[host::kMaxRank] = {};
  if (dim->values.empty()) {
    // As torch: no dimensions means all of them.
    for (int64_t d = 0; d < rank; ++d)
      reduced[d] = true;
  }
  for (int64_t value : dim->values) {
    int64_t d = 0;
    // A 0-d tensor takes dimension 0 or -1, as in torch.
    if (!wrapDim(value, std::max<int64_t>(rank, 1), d))
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "dimension %lld is out of range for self of rank %lld",
                       static_cast<long long>(value),
                       static_cast<long long>(rank));
    if (rank == 0)
      continue;
    if (reduced[d])
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "dimension %lld appears twice in dim",
                       static_cast<long long>(d));
    reduced[d] = true;
  }
  host::Shape dims, expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d])
      dims.dims[dims.rank++] = d;
    if (keepDims || !reduced[d])
      expected.dims[expected.rank++] = reduced[d] ? 1 : a.shape[d];
  }
  // The result is staged in the workspace and copied out at the end, as a
  // device reduction writes partial results to its workspace.
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a}, /*stage=*/true));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, expected));
  std::string reduction = kind;
  return plan.finish(
      [in, o, dims, keepDims, reduction](char *workspace) {
        in.prepare(workspace);
        dispatchFloat(in.arg.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::reduce(o.as<T>(workspace), o.arg.shape, in.as<T>(workspace),
                       in.arg.shape, dims, keepDims, reduction.c_str());
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

/// softmax along a wrapped dim of a contiguous f32/f64 tensor.
aclnnStatus planSoftmax(const char *op, const aclTensor *self, int64_t dim,
                        aclTensor *out, uint64_t *workspaceSize,
                        aclOpExecutor **executor, bool log) {
  Plan plan(op);
  TensorArg a;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  int64_t axis = 0;
  if (!wrapDim(dim, a.shape.rank, axis))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dim %lld is out of range for self of rank %lld",
                     static_cast<long long>(dim),
                     static_cast<long long>(a.shape.rank));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, a.shape));
  return plan.finish(
      [a, o, axis, log](char *workspace) {
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          if (log)
            host::log_softmax(o.as<T>(workspace), o.arg.shape, a.as<T>(),
                              a.shape, axis);
          else
            host::softmax(o.as<T>(workspace), o.arg.shape, a.as<T>(), a.shape,
                          axis);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

} // namespace

//===----------------------------------------------------------------------===//
// Binary and unary operators
//===----------------------------------------------------------------------===//

#define LOOM_DOUBLE_HOST(NAME) [](auto... args) { host::NAME(args...); }

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self,
                                     const aclTensor *other,
                                     const aclScalar *alpha, aclTensor *out,
                                     uint64_t *workspaceSize,
                                     aclOpExecutor **executor) {
  return planBinary("aclnnAdd", self, other, alpha, /*hasAlpha=*/true, out,
                    workspaceSize, executor, LOOM_DOUBLE_HOST(add));
}

aclnnStatus aclnnSubGetWorkspaceSize(const aclTensor *self,
                                     const aclTensor *other,
                                     const aclScalar *alpha, aclTensor *out,
                                     uint64_t *workspaceSize,
                                     aclOpExecutor **executor) {
  return planBinary("aclnnSub", self, other, alpha, /*hasAlpha=*/true, out,
                    workspaceSize, executor, LOOM_DOUBLE_HOST(sub));
}

#define LOOM_DOUBLE_BINARY(OP, KERNEL)                                         \
  aclnnStatus OP##GetWorkspaceSize(                                            \
      const aclTensor *self, const aclTensor *other, aclTensor *out,           \
      uint64_t *workspaceSize, aclOpExecutor **executor) {                     \
    return planBinary(#OP, self, other, nullptr, /*hasAlpha=*/false, out,      \
                      workspaceSize, executor, LOOM_DOUBLE_HOST(KERNEL));      \
  }
LOOM_DOUBLE_BINARY(aclnnMul, mul)
LOOM_DOUBLE_BINARY(aclnnDiv, div)
LOOM_DOUBLE_BINARY(aclnnMaximum, maximum)
LOOM_DOUBLE_BINARY(aclnnMinimum, minimum)
#undef LOOM_DOUBLE_BINARY

#define LOOM_DOUBLE_UNARY(OP, KERNEL)                                          \
  aclnnStatus OP##GetWorkspaceSize(const aclTensor *self, aclTensor *out,      \
                                   uint64_t *workspaceSize,                    \
                                   aclOpExecutor **executor) {                 \
    return planUnary(#OP, self, out, workspaceSize, executor,                  \
                     LOOM_DOUBLE_HOST(KERNEL));                                \
  }
LOOM_DOUBLE_UNARY(aclnnExp, exp)
LOOM_DOUBLE_UNARY(aclnnNeg, neg)
LOOM_DOUBLE_UNARY(aclnnLog, log)
LOOM_DOUBLE_UNARY(aclnnSqrt, sqrt)
LOOM_DOUBLE_UNARY(aclnnRsqrt, rsqrt)
LOOM_DOUBLE_UNARY(aclnnTanh, tanh)
LOOM_DOUBLE_UNARY(aclnnSilu, silu)
LOOM_DOUBLE_UNARY(aclnnSin, sin)
LOOM_DOUBLE_UNARY(aclnnCos, cos)
#undef LOOM_DOUBLE_UNARY

// NN activation/relu declares its result const.
aclnnStatus aclnnReluGetWorkspaceSize(const aclTensor *self,
                                      const aclTensor *out,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
  return planUnary("aclnnRelu", self, out, workspaceSize, executor,
                   LOOM_DOUBLE_HOST(relu));
}
#undef LOOM_DOUBLE_HOST

//===----------------------------------------------------------------------===//
// In-place operators
//===----------------------------------------------------------------------===//

aclnnStatus aclnnInplaceMulsGetWorkspaceSize(aclTensor *selfRef,
                                             const aclScalar *other,
                                             uint64_t *workspaceSize,
                                             aclOpExecutor **executor) {
  Plan plan("aclnnInplaceMuls");
  TensorArg x;
  LOOM_DOUBLE_TRY(plan.tensor(selfRef, "selfRef", x));
  LOOM_DOUBLE_TRY(plan.requireFloat(x));
  LOOM_DOUBLE_TRY(plan.requireNoSelfOverlap(x));
  LOOM_DOUBLE_TRY(plan.scalar(other, "other"));
  double value = scalarValue(other);
  return plan.finish(
      [x, value](char *) {
        dispatchFloat(x.dtype, [&](auto zero) {
          using T = decltype(zero);
          // The scalar converted to the tensor's type; the product in it.
          const T factor = static_cast<T>(value);
          T *data = x.as<T>();
          int64_t zeros[host::kMaxRank] = {};
          forEachIndex(x.shape, x.strides, zeros,
                       [&](int64_t i, int64_t) { data[i] = data[i] * factor; });
        });
      },
      workspaceSize, executor);
}

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef,
                                             const aclTensor *src,
                                             uint64_t *workspaceSize,
                                             aclOpExecutor **executor) {
  Plan plan("aclnnInplaceCopy");
  TensorArg dst, from;
  LOOM_DOUBLE_TRY(plan.tensor(selfRef, "selfRef", dst));
  LOOM_DOUBLE_TRY(plan.requireNoSelfOverlap(dst));
  LOOM_DOUBLE_TRY(plan.tensor(src, "src", from));
  LOOM_DOUBLE_TRY(plan.requireSameType(from, dst));
  // src broadcasts to selfRef's shape (numpy rules): strides per dimension
  // of selfRef, 0 where src repeats.
  int64_t rank = dst.shape.rank, srcRank = from.shape.rank;
  bool fits = srcRank <= rank;
  int64_t rowMajor[host::kMaxRank];
  rowMajorStrides(from.shape, rowMajor);
  int64_t viewStrides[host::kMaxRank] = {}, stagedStrides[host::kMaxRank] = {};
  for (int64_t d = 0; fits && d < srcRank; ++d) {
    int64_t target = d + rank - srcRank;
    if (from.shape[d] == dst.shape[target]) {
      viewStrides[target] = from.strides[d];
      stagedStrides[target] = rowMajor[d];
    } else if (from.shape[d] != 1) {
      fits = false;
    }
  }
  if (!fits)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "src of shape %s does not broadcast to selfRef's shape %s",
                     formatShape(from.shape).c_str(),
                     formatShape(dst.shape).c_str());
  // Overlapping source and destination: the source is gathered into the
  // workspace first.
  bool stage = overlaps(dst, from);
  uint64_t slot = stage ? plan.reserve(from.bytes()) : 0;
  std::vector<int64_t> strides(stage ? stagedStrides : viewStrides,
                               (stage ? stagedStrides : viewStrides) + rank);
  return plan.finish(
      [dst, from, stage, slot, strides](char *workspace) {
        const char *source = from.base;
        if (stage) {
          gatherView(workspace + slot, from);
          source = workspace + slot;
        }
        copyElements(dst.elementBytes, dst.base, dst.strides, source,
                     strides.data(), dst.shape);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnInplaceFillScalarGetWorkspaceSize(aclTensor *selfRef,
                                                   const aclScalar *value,
                                                   uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
  Plan plan("aclnnInplaceFillScalar");
  TensorArg x;
  LOOM_DOUBLE_TRY(plan.tensor(selfRef, "selfRef", x));
  LOOM_DOUBLE_TRY(plan.requireNoSelfOverlap(x));
  LOOM_DOUBLE_TRY(plan.scalar(value, "value"));
  // The value in the tensor's type: an integer into an integer type
  // exactly (refused when out of range), anything else as host::fill
  // converts a double.
  bool integral = value->dtype != ACL_FLOAT && value->dtype != ACL_DOUBLE;
  bool outOfRange = false;
  unsigned char bytes[8] = {};
  bool converted = dispatchData(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    T element{};
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      int64_t v = value->integer;
      if (!integral)
        host::fill(&element, host::Shape{}, value->floating);
      else if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
               v > static_cast<int64_t>(std::numeric_limits<T>::max()))
        outOfRange = true;
      else
        element = static_cast<T>(v);
    } else {
      host::fill(&element, host::Shape{}, scalarValue(value));
    }
    std::memcpy(bytes, &element, sizeof(T));
  });
  if (!converted)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "selfRef has element type %s; the test double fills f32, "
                     "f64, i32, i64 and bool",
                     dtypeName(x.dtype));
  if (outOfRange)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "the value %lld does not fit selfRef's element type %s",
                     static_cast<long long>(value->integer),
                     dtypeName(x.dtype));
  std::vector<unsigned char> element(bytes, bytes + x.elementBytes);
  return plan.finish(
      [x, element](char *) {
        int64_t zeros[host::kMaxRank] = {};
        copyElements(x.elementBytes, x.base, x.strides,
                     reinterpret_cast<const char *>(element.data()), zeros,
                     x.shape);
      },
      workspaceSize, executor);
}

//===----------------------------------------------------------------------===//
// Matmul, reductions, cat, softmax
//===----------------------------------------------------------------------===//

aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self,
                                        const aclTensor *mat2, aclTensor *out,
                                        int8_t cubeMathType,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor) {
  Plan plan("aclnnMatmul");
  if (cubeMathType != 0 && cubeMathType != 1)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "cubeMathType %d is not implemented by the test double "
                     "(0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION; both "
                     "compute in the inputs' type)",
                     static_cast<int>(cubeMathType));
  MatmulOperand lhs, rhs;
  Output o;
  LOOM_DOUBLE_TRY(planMatmulOperand(plan, self, "self", lhs));
  LOOM_DOUBLE_TRY(planMatmulOperand(plan, mat2, "mat2", rhs));
  const TensorArg &a = lhs.in.arg, &b = rhs.in.arg;
  LOOM_DOUBLE_TRY(plan.requireSameType(b, a));
  // aclnnMatmul takes float, float16 and bfloat16.
  if (a.dtype == ACL_DOUBLE)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "aclnnMatmul: self is DOUBLE; aclnnMatmul takes FLOAT, "
                     "FLOAT16 and BF16");
  int64_t lr = a.shape.rank, rr = b.shape.rank;
  int64_t m = a.shape[lr - 2], k = a.shape[lr - 1];
  int64_t k2 = b.shape[rr - 2], n = b.shape[rr - 1];
  if (k != k2)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "self of shape %s and mat2 of shape %s: the contracting "
                     "dimensions differ",
                     formatShape(a.shape).c_str(),
                     formatShape(b.shape).c_str());
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "matrix dimensions above 2^31 - 1 are not implemented by "
                     "the test double");
  host::Shape lhsBatch, rhsBatch, shape;
  lhsBatch.rank = lr - 2;
  rhsBatch.rank = rr - 2;
  for (int64_t d = 0; d < lr - 2; ++d)
    lhsBatch.dims[d] = a.shape[d];
  for (int64_t d = 0; d < rr - 2; ++d)
    rhsBatch.dims[d] = b.shape[d];
  if (!broadcastShapes(lhsBatch, rhsBatch, shape))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "the batch dimensions of self %s and mat2 %s do not "
                     "broadcast",
                     formatShape(a.shape).c_str(),
                     formatShape(b.shape).c_str());
  shape.dims[shape.rank++] = m;
  shape.dims[shape.rank++] = n;
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a, &b}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, shape));
  return plan.finish(
      [lhs, rhs, o](char *workspace) {
        lhs.in.prepare(workspace);
        rhs.in.prepare(workspace);
        dispatchFloat(lhs.in.arg.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::matmul(o.as<T>(workspace), o.arg.shape, lhs.in.as<T>(workspace),
                       lhs.stored, rhs.in.as<T>(workspace), rhs.stored,
                       lhs.transpose, rhs.transpose);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self,
                                           const aclIntArray *dim,
                                           bool keepDims, aclDataType dtype,
                                           aclTensor *out,
                                           uint64_t *workspaceSize,
                                           aclOpExecutor **executor) {
  return planReduce("aclnnReduceSum", self, dim, keepDims, &dtype, out, "sum",
                    workspaceSize, executor);
}

aclnnStatus aclnnMeanGetWorkspaceSize(const aclTensor *self,
                                      const aclIntArray *dim, bool keepDim,
                                      aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
  return planReduce("aclnnMean", self, dim, keepDim, &dtype, out, "mean",
                    workspaceSize, executor);
}

aclnnStatus aclnnAmaxGetWorkspaceSize(const aclTensor *self,
                                      const aclIntArray *dim, bool keepDim,
                                      aclTensor *out, uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
  return planReduce("aclnnAmax", self, dim, keepDim, nullptr, out, "max",
                    workspaceSize, executor);
}

aclnnStatus aclnnCatGetWorkspaceSize(const aclTensorList *tensors, int64_t dim,
                                     aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor) {
  Plan plan("aclnnCat");
  LOOM_DOUBLE_TRY(plan.list(tensors, "tensors"));
  size_t count = tensors->tensors.size();
  if (count == 0)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "tensors is empty");
  std::vector<TensorArg> inputs(count);
  std::vector<std::string> names(count);
  for (size_t i = 0; i < count; ++i) {
    names[i] = format("tensors[%zu]", i);
    LOOM_DOUBLE_TRY(plan.contiguous(tensors->tensors[i],
                                    "an element of tensors", inputs[i]));
  }
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(out, "out", o.arg));
  for (size_t i = 0; i < count; ++i)
    if (inputs[i].dtype != o.arg.dtype)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "%s has element type %s but out has %s (the test "
                       "double does not convert)",
                       names[i].c_str(), dtypeName(inputs[i].dtype),
                       dtypeName(o.arg.dtype));
  if (!dispatchData(o.arg.dtype, [](auto) {}))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "element type %s; the test double concatenates f32, f64, "
                     "i32, i64 and bool",
                     dtypeName(o.arg.dtype));
  int64_t rank = o.arg.shape.rank, axis = 0;
  if (!wrapDim(dim, rank, axis))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dim %lld is out of range for out of rank %lld",
                     static_cast<long long>(dim), static_cast<long long>(rank));
  int64_t total = 0;
  bool stage = false;
  for (size_t i = 0; i < count; ++i) {
    const host::Shape &shape = inputs[i].shape;
    bool fits = shape.rank == rank;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == axis || shape[d] == o.arg.shape[d];
    if (!fits)
      return plan.fail(ACLNN_ERR_PARAM_INVALID,
                       "%s of shape %s does not fit out of shape %s outside "
                       "dimension %lld",
                       names[i].c_str(), formatShape(shape).c_str(),
                       formatShape(o.arg.shape).c_str(),
                       static_cast<long long>(axis));
    total += shape[axis];
    stage |= overlaps(o.arg, inputs[i]);
  }
  if (total != o.arg.shape[axis])
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "the inputs have %lld elements along dimension %lld, out "
                     "of shape %s",
                     static_cast<long long>(total),
                     static_cast<long long>(axis),
                     formatShape(o.arg.shape).c_str());
  if (stage) {
    o.staged = true;
    o.slot = plan.reserve(o.arg.bytes());
  }
  return plan.finish(
      [inputs, o, axis](char *workspace) {
        dispatchData(o.arg.dtype, [&](auto zero) {
          using T = decltype(zero);
          std::vector<const T *> pointers;
          std::vector<host::Shape> shapes;
          for (const TensorArg &input : inputs) {
            pointers.push_back(input.as<T>());
            shapes.push_back(input.shape);
          }
          host::concat(o.as<T>(workspace), o.arg.shape,
                       static_cast<int64_t>(pointers.size()), pointers.data(),
                       shapes.data(), axis);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim,
                                         aclTensor *out,
                                         uint64_t *workspaceSize,
                                         aclOpExecutor **executor) {
  return planSoftmax("aclnnSoftmax", self, dim, out, workspaceSize, executor,
                     /*log=*/false);
}

aclnnStatus aclnnLogSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim,
                                            aclTensor *out,
                                            uint64_t *workspaceSize,
                                            aclOpExecutor **executor) {
  return planSoftmax("aclnnLogSoftmax", self, dim, out, workspaceSize, executor,
                     /*log=*/true);
}

//===----------------------------------------------------------------------===//
// Comparisons, casts, clamp, select
//===----------------------------------------------------------------------===//

namespace {

/// Calls `fn(T{})` for the element types host::compare and host::select
/// take besides bool: f32, f64, i32, i64. False for any other.
template <typename Fn> bool dispatchNumber(aclDataType dtype, Fn &&fn) {
  if (dtype == ACL_BOOL)
    return false;
  return dispatchData(dtype, [&](auto zero) {
    if constexpr (!std::is_same_v<decltype(zero), bool>)
      fn(zero);
  });
}

/// EqTensor, NeTensor, ...: contiguous operands of one numeric type,
/// broadcast, into a BOOL result.
aclnnStatus planCompare(const char *op, const char *predicate,
                        const aclTensor *self, const aclTensor *other,
                        aclTensor *out, uint64_t *workspaceSize,
                        aclOpExecutor **executor) {
  Plan plan(op);
  TensorArg a, b;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.contiguous(other, "other", b));
  LOOM_DOUBLE_TRY(plan.requireSameType(b, a));
  if (!dispatchNumber(a.dtype, [](auto) {}))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "self has element type %s (the double compares f32, "
                     "f64, i32 and i64)",
                     dtypeName(a.dtype));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a, &b}));
  if (o.arg.dtype != ACL_BOOL)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "out must be BOOL, not %s",
                     dtypeName(o.arg.dtype));
  LOOM_DOUBLE_TRY(requireBroadcast(plan, a, b, o));
  std::string keyword = predicate;
  return plan.finish(
      [a, b, o, keyword](char *workspace) {
        dispatchNumber(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::compare(o.as<bool>(workspace), o.arg.shape, a.as<T>(), a.shape,
                        b.as<T>(), b.shape, keyword.c_str());
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

} // namespace

#define LOOM_DOUBLE_COMPARE(OP, PREDICATE)                                     \
  aclnnStatus OP##GetWorkspaceSize(                                            \
      const aclTensor *self, const aclTensor *other, aclTensor *out,           \
      uint64_t *workspaceSize, aclOpExecutor **executor) {                     \
    return planCompare(#OP, PREDICATE, self, other, out, workspaceSize,        \
                       executor);                                              \
  }
LOOM_DOUBLE_COMPARE(aclnnEqTensor, "eq")
LOOM_DOUBLE_COMPARE(aclnnNeTensor, "ne")
LOOM_DOUBLE_COMPARE(aclnnLtTensor, "lt")
LOOM_DOUBLE_COMPARE(aclnnLeTensor, "le")
LOOM_DOUBLE_COMPARE(aclnnGtTensor, "gt")
LOOM_DOUBLE_COMPARE(aclnnGeTensor, "ge")
#undef LOOM_DOUBLE_COMPARE

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self,
                                      const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
  Plan plan("aclnnCast");
  TensorArg a;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a}));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, a.shape));
  int to = enumValue(dtype);
  if (to != static_cast<int>(o.arg.dtype))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "dtype %d differs from out's element type %s", to,
                     dtypeName(o.arg.dtype));
  if (!dispatchData(a.dtype, [](auto) {}) ||
      !dispatchData(o.arg.dtype, [](auto) {}))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "casts from %s to %s are not implemented by the test "
                     "double (f32, f64, i32, i64, bool)",
                     dtypeName(a.dtype), dtypeName(o.arg.dtype));
  return plan.finish(
      [a, o](char *workspace) {
        dispatchData(o.arg.dtype, [&](auto toZero) {
          using To = decltype(toZero);
          dispatchData(a.dtype, [&](auto fromZero) {
            using From = decltype(fromZero);
            host::cast(o.as<To>(workspace), o.arg.shape, a.as<From>(), a.shape);
          });
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnClampGetWorkspaceSize(const aclTensor *self,
                                       const aclScalar *clipValueMin,
                                       const aclScalar *clipValueMax,
                                       aclTensor *out, uint64_t *workspaceSize,
                                       aclOpExecutor **executor) {
  Plan plan("aclnnClamp");
  TensorArg a;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.requireFloat(a));
  if (!clipValueMin && !clipValueMax)
    return plan.fail(ACLNN_ERR_PARAM_NULLPTR,
                     "clipValueMin and clipValueMax are both null");
  if (clipValueMin)
    LOOM_DOUBLE_TRY(plan.scalar(clipValueMin, "clipValueMin"));
  if (clipValueMax)
    LOOM_DOUBLE_TRY(plan.scalar(clipValueMax, "clipValueMax"));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&a}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, a.shape));
  double low = clipValueMin ? scalarValue(clipValueMin) : host::kAbsent;
  double high = clipValueMax ? scalarValue(clipValueMax) : host::kAbsent;
  return plan.finish(
      [a, o, low, high](char *workspace) {
        dispatchFloat(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::clamp(o.as<T>(workspace), o.arg.shape, a.as<T>(), a.shape, high,
                      low);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

aclnnStatus aclnnSWhereGetWorkspaceSize(const aclTensor *condition,
                                        const aclTensor *self,
                                        const aclTensor *other, aclTensor *out,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor) {
  Plan plan("aclnnSWhere");
  TensorArg c, a, b;
  Output o;
  LOOM_DOUBLE_TRY(plan.contiguous(condition, "condition", c));
  if (c.dtype != ACL_BOOL)
    return plan.fail(ACLNN_ERR_PARAM_INVALID, "condition must be BOOL, not %s",
                     dtypeName(c.dtype));
  LOOM_DOUBLE_TRY(plan.contiguous(self, "self", a));
  LOOM_DOUBLE_TRY(plan.contiguous(other, "other", b));
  LOOM_DOUBLE_TRY(plan.requireSameType(b, a));
  if (!dispatchNumber(a.dtype, [](auto) {}))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "self has element type %s (the double selects f32, f64, "
                     "i32 and i64)",
                     dtypeName(a.dtype));
  LOOM_DOUBLE_TRY(plan.output(out, "out", o, {&c, &a, &b}));
  LOOM_DOUBLE_TRY(plan.requireSameType(o.arg, a));
  host::Shape ab, shape;
  if (!broadcastShapes(a.shape, b.shape, ab) ||
      !broadcastShapes(c.shape, ab, shape))
    return plan.fail(ACLNN_ERR_PARAM_INVALID,
                     "condition, self and other do not broadcast");
  LOOM_DOUBLE_TRY(plan.requireShape(o.arg, shape));
  return plan.finish(
      [c, a, b, o](char *workspace) {
        dispatchNumber(a.dtype, [&](auto zero) {
          using T = decltype(zero);
          host::select(o.as<T>(workspace), o.arg.shape, c.as<bool>(), c.shape,
                       a.as<T>(), a.shape, b.as<T>(), b.shape);
        });
        o.commit(workspace);
      },
      workspaceSize, executor);
}

bool testdouble::isTransposedContiguous(const TensorArg &arg, host::Shape &stored) {
  int64_t rank = arg.shape.rank;
  if (rank < 2)
    return false;
  stored = arg.shape;
  std::swap(stored.dims[rank - 1], stored.dims[rank - 2]);
  int64_t expected[host::kMaxRank];
  rowMajorStrides(stored, expected);
  std::swap(expected[rank - 1], expected[rank - 2]);
  for (int64_t d = 0; d < rank; ++d)
    if (arg.shape[d] > 1 && arg.strides[d] != expected[d])
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

#define LOOM_DOUBLE_LAUNCH(OP)                                                 \
  aclnnStatus OP(void *workspace, uint64_t workspaceSize,                      \
                 aclOpExecutor *executor, aclrtStream stream) {                \
    return launch(#OP, workspace, workspaceSize, executor, stream);            \
  }
LOOM_ASCEND_OPAPI_OPERATORS(LOOM_DOUBLE_LAUNCH)
#undef LOOM_DOUBLE_LAUNCH
