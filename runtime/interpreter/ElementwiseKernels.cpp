//===- ElementwiseKernels.cpp - Element-wise nn ops -----------------------===//
//
// Binary arithmetic with numpy broadcasting, unary math, gelu, compare,
// select, clamp and cast. Float kernels compute in the element type (bf16 in
// f32); min/max/clamp/relu propagate NaN, as numpy and PyTorch do.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/Convert.h"
#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

/// Applies `fn(out, in...)` to every element of the broadcast of N operands:
/// `fn(index, offsets)` with the offsets of each operand.
template <size_t N, typename Fn>
void forEachBroadcast(llvm::ArrayRef<int64_t> shape,
                      const std::array<const Tensor *, N> &inputs, Fn &&fn) {
  std::array<llvm::SmallVector<int64_t>, N> strides;
  bool plain = true;
  for (size_t k = 0; k < N; ++k) {
    strides[k] = getBroadcastStrides(inputs[k]->getShape(), shape);
    plain &= inputs[k]->getShape() == shape;
  }
  if (plain) {
    // Same shapes: one flat loop.
    std::optional<int64_t> total = getCheckedNumElements(shape);
    std::array<int64_t, N> offsets;
    for (int64_t i = 0; i < total.value_or(0); ++i) {
      offsets.fill(i);
      fn(i, offsets);
    }
    return;
  }
  std::array<int64_t, N> bases{};
  forEachStrided<N>(shape, strides, bases, fn);
}

template <typename Fn>
LogicalResult floatBinary(KernelCall &call, Fn fn) {
  const Tensor &lhs = call.operand(0), &rhs = call.operand(1);
  if (lhs.getKind() != rhs.getKind())
    return call.emitError() << "operands have element types "
                            << getElementKindName(lhs.getKind()) << " and "
                            << getElementKindName(rhs.getKind());
  FailureOr<llvm::SmallVector<int64_t>> shape =
      broadcastShapes(call, {lhs.getShape(), rhs.getShape()});
  if (failed(shape))
    return failure();
  return dispatchFloat(call, lhs.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(lhs.getKind(), *shape);
    if (!out)
      return failure();
    const T *a = lhs.data<T>(), *b = rhs.data<T>();
    T *o = out->data<T>();
    forEachBroadcast<2>(*shape, {&lhs, &rhs},
                        [&](int64_t i, const std::array<int64_t, 2> &off) {
                          o[i] = fn(a[off[0]], b[off[1]]);
                        });
    return success();
  });
}

template <typename Fn>
LogicalResult floatUnary(KernelCall &call, Fn fn) {
  const Tensor &input = call.operand(0);
  return dispatchFloat(call, input.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(input.getKind(), input.getShape());
    if (!out)
      return failure();
    const T *x = input.data<T>();
    T *y = out->data<T>();
    for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
      y[i] = fn(x[i]);
    return success();
  });
}

template <typename T> T minimum(T a, T b) {
  return (a < b || std::isnan(a)) ? a : b;
}
template <typename T> T maximum(T a, T b) {
  return (a > b || std::isnan(a)) ? a : b;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

#define BINARY_KERNEL(OP, EXPR)                                                \
  LogicalResult OP##Kernel(nn::OP op, KernelCall &call) {                      \
    return floatBinary(call, [](auto a, auto b) { return EXPR; });             \
  }
BINARY_KERNEL(AddOp, a + b)
BINARY_KERNEL(SubOp, a - b)
BINARY_KERNEL(MulOp, a * b)
BINARY_KERNEL(DivOp, a / b)
BINARY_KERNEL(MinimumOp, minimum(a, b))
BINARY_KERNEL(MaximumOp, maximum(a, b))
#undef BINARY_KERNEL

#define UNARY_KERNEL(OP, EXPR)                                                 \
  LogicalResult OP##Kernel(nn::OP op, KernelCall &call) {                      \
    return floatUnary(call, [](auto x) {                                       \
      using T = decltype(x);                                                   \
      (void)sizeof(T);                                                         \
      return EXPR;                                                             \
    });                                                                        \
  }
UNARY_KERNEL(NegOp, -x)
UNARY_KERNEL(ExpOp, std::exp(x))
UNARY_KERNEL(LogOp, std::log(x))
UNARY_KERNEL(SqrtOp, std::sqrt(x))
UNARY_KERNEL(RsqrtOp, T(1) / std::sqrt(x))
UNARY_KERNEL(TanhOp, std::tanh(x))
UNARY_KERNEL(ReluOp, maximum(x, T(0)))
UNARY_KERNEL(SiluOp, x / (T(1) + std::exp(-x)))
UNARY_KERNEL(SinOp, std::sin(x))
UNARY_KERNEL(CosOp, std::cos(x))
#undef UNARY_KERNEL

LogicalResult geluKernel(nn::GeluOp op, KernelCall &call) {
  if (op.getApproximate() == nn::GeluApproximation::Tanh)
    return floatUnary(call, [](auto x) {
      using T = decltype(x);
      const T c = static_cast<T>(0.79788456080286535588); // sqrt(2 / pi)
      T inner = c * (x + T(0.044715) * x * x * x);
      return x * (T(0.5) * (T(1) + std::tanh(inner)));
    });
  return floatUnary(call, [](auto x) {
    using T = decltype(x);
    const T invSqrt2 = static_cast<T>(0.70710678118654752440);
    return x * (T(0.5) * (T(1) + std::erf(x * invSqrt2)));
  });
}

template <typename T> bool comparePredicate(nn::ComparePredicate p, T a, T b) {
  switch (p) {
  case nn::ComparePredicate::EQ:
    return a == b;
  case nn::ComparePredicate::NE:
    return a != b;
  case nn::ComparePredicate::LT:
    return a < b;
  case nn::ComparePredicate::LE:
    return a <= b;
  case nn::ComparePredicate::GT:
    return a > b;
  case nn::ComparePredicate::GE:
    return a >= b;
  }
  return false;
}

LogicalResult compareKernel(nn::CompareOp op, KernelCall &call) {
  const Tensor &lhs = call.operand(0), &rhs = call.operand(1);
  if (lhs.getKind() != rhs.getKind())
    return call.emitError() << "operands have element types "
                            << getElementKindName(lhs.getKind()) << " and "
                            << getElementKindName(rhs.getKind());
  if (lhs.getKind() == ElementKind::I1 || lhs.getKind() == ElementKind::BF16)
    return call.emitError() << "cannot compare "
                            << getElementKindName(lhs.getKind())
                            << " elements";
  FailureOr<llvm::SmallVector<int64_t>> shape =
      broadcastShapes(call, {lhs.getShape(), rhs.getShape()});
  if (failed(shape))
    return failure();
  Tensor *out = call.addResult(ElementKind::I1, *shape);
  if (!out)
    return failure();
  nn::ComparePredicate predicate = op.getPredicate();
  uint8_t *o = out->data<uint8_t>();
  dispatchStorage(lhs.getKind(), [&](auto tag) {
    using T = decltype(tag);
    const T *a = lhs.data<T>(), *b = rhs.data<T>();
    forEachBroadcast<2>(*shape, {&lhs, &rhs},
                        [&](int64_t i, const std::array<int64_t, 2> &off) {
                          o[i] = comparePredicate(predicate, a[off[0]],
                                                  b[off[1]]);
                        });
  });
  return success();
}

LogicalResult selectKernel(nn::SelectOp op, KernelCall &call) {
  const Tensor &cond = call.operand(0), &onTrue = call.operand(1),
               &onFalse = call.operand(2);
  if (cond.getKind() != ElementKind::I1)
    return call.emitError() << "condition must hold i1 elements";
  if (onTrue.getKind() != onFalse.getKind())
    return call.emitError() << "the values have element types "
                            << getElementKindName(onTrue.getKind()) << " and "
                            << getElementKindName(onFalse.getKind());
  FailureOr<llvm::SmallVector<int64_t>> shape = broadcastShapes(
      call, {cond.getShape(), onTrue.getShape(), onFalse.getShape()});
  if (failed(shape))
    return failure();
  Tensor *out = call.addResult(onTrue.getKind(), *shape);
  if (!out)
    return failure();
  const uint8_t *c = cond.data<uint8_t>();
  dispatchStorage(onTrue.getKind(), [&](auto tag) {
    using T = decltype(tag);
    const T *t = onTrue.data<T>(), *f = onFalse.data<T>();
    T *o = out->data<T>();
    forEachBroadcast<3>(*shape, {&cond, &onTrue, &onFalse},
                        [&](int64_t i, const std::array<int64_t, 3> &off) {
                          o[i] = c[off[0]] ? t[off[1]] : f[off[2]];
                        });
  });
  return success();
}

LogicalResult clampKernel(nn::ClampOp op, KernelCall &call) {
  double lo = op.getMin().convertToDouble();
  double hi = op.getMax().convertToDouble();
  // The bounds are rounded to the element type (bf16 too, although the
  // kernel computes in f32).
  if (op.getType().getElementType().isBF16()) {
    lo = bf16ToFloat(doubleToBf16(lo));
    hi = bf16ToFloat(doubleToBf16(hi));
  }
  return floatUnary(call, [lo, hi](auto x) {
    using T = decltype(x);
    return std::isnan(x) ? x
                         : std::min(std::max(x, static_cast<T>(lo)),
                                    static_cast<T>(hi));
  });
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Converts an integer to `kind`, rounding once to nearest (even); integer
/// to integer wraps (two's complement), as arith.trunci does.
void storeFromInt(Tensor &out, int64_t i, int64_t value) {
  switch (out.getKind()) {
  case ElementKind::F32:
    out.data<float>()[i] = static_cast<float>(value);
    return;
  case ElementKind::F64:
    out.data<double>()[i] = static_cast<double>(value);
    return;
  case ElementKind::BF16:
    out.data<uint16_t>()[i] = intToBf16(value);
    return;
  case ElementKind::I1:
    out.data<uint8_t>()[i] = value != 0;
    return;
  case ElementKind::I32:
    out.data<int32_t>()[i] = static_cast<int32_t>(
        static_cast<uint32_t>(static_cast<uint64_t>(value)));
    return;
  case ElementKind::I64:
    out.data<int64_t>()[i] = value;
    return;
  }
}

LogicalResult castKernel(nn::CastOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  ElementKind target =
      *getElementKind(op.getResult().getType().getElementType());
  Tensor *out = call.addResult(target, input.getShape());
  if (!out)
    return failure();
  int64_t count = input.getNumElements();
  switch (input.getKind()) {
  case ElementKind::F32:
  case ElementKind::F64:
  case ElementKind::BF16:
    // Every float value is exact as a double, and setDouble rounds once.
    for (int64_t i = 0; i < count; ++i)
      out->setDouble(i, input.getDouble(i));
    break;
  case ElementKind::I1:
  case ElementKind::I32:
  case ElementKind::I64:
    for (int64_t i = 0; i < count; ++i)
      storeFromInt(*out, i,
                   input.getKind() == ElementKind::I1
                       ? int64_t{input.data<uint8_t>()[i]}
                       : readIndex(input, i));
    break;
  }
  return success();
}

} // namespace

void loom::interp::registerElementwiseKernels(KernelRegistry &registry) {
  constexpr bool inF32 = true;
  registry.add(AddOpKernel, inF32);
  registry.add(SubOpKernel, inF32);
  registry.add(MulOpKernel, inF32);
  registry.add(DivOpKernel, inF32);
  registry.add(MinimumOpKernel, inF32);
  registry.add(MaximumOpKernel, inF32);
  registry.add(NegOpKernel, inF32);
  registry.add(ExpOpKernel, inF32);
  registry.add(LogOpKernel, inF32);
  registry.add(SqrtOpKernel, inF32);
  registry.add(RsqrtOpKernel, inF32);
  registry.add(TanhOpKernel, inF32);
  registry.add(ReluOpKernel, inF32);
  registry.add(SiluOpKernel, inF32);
  registry.add(SinOpKernel, inF32);
  registry.add(CosOpKernel, inF32);
  registry.add(geluKernel, inF32);
  registry.add(compareKernel, inF32);
  registry.add(selectKernel);
  registry.add(clampKernel, inF32);
  registry.add(castKernel);
}
