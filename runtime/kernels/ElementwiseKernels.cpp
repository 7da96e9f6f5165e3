//===- ElementwiseKernels.cpp - Element-wise nn ops on the host -----------===//
//
// copy, fill, binary arithmetic with numpy broadcasting, unary maths, gelu
// and its gradient, clamp, compare, select and cast. The maths is in
// Math.h; this file holds the loops. Element-wise results do not depend on
// the visiting order, so loops are flat where the shapes allow and
// otherwise walk rows of the (coalesced) broadcast space with contiguous
// inner loops.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

#include <cstring>
#include <limits>
#include <type_traits>

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

template <typename R, typename A, typename Fn>
void unaryLoop(const char *kernel, R *out, const Shape &outShape, const A *in,
               const Shape &inShape, Fn fn) {
  checkValid(kernel, "the result", outShape);
  checkShape(kernel, "the input", inShape, outShape);
  for (int64_t i = 0, e = outShape.numElements(); i < e; ++i)
    out[i] = fn(in[i]);
}

/// The inner loop of a broadcast binary op, specialised on whether each
/// operand advances (stride 1) or stays (stride 0).
template <typename R, typename A, typename B, typename Fn>
void binaryRow(R *o, const A *a, int64_t sa, const B *b, int64_t sb, int64_t n,
               Fn fn) {
  if (sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j)
      o[j] = fn(a[j], b[j]);
  } else if (sa == 1 && sb == 0) {
    const B bv = *b;
    for (int64_t j = 0; j < n; ++j)
      o[j] = fn(a[j], bv);
  } else if (sa == 0 && sb == 1) {
    const A av = *a;
    for (int64_t j = 0; j < n; ++j)
      o[j] = fn(av, b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j)
      o[j] = fn(a[j * sa], b[j * sb]);
  }
}

template <typename R, typename A, typename B, typename Fn>
void binaryLoop(const char *kernel, R *out, const Shape &outShape, const A *a,
                const Shape &aShape, const B *b, const Shape &bShape, Fn fn) {
  checkValid(kernel, "the result", outShape);
  if (sameShape(aShape, outShape) && sameShape(bShape, outShape)) {
    for (int64_t i = 0, e = outShape.numElements(); i < e; ++i)
      out[i] = fn(a[i], b[i]);
    return;
  }
  StridedSpace<2> space(outShape);
  getBroadcastStrides(kernel, aShape, outShape, space.strides[0]);
  getBroadcastStrides(kernel, bShape, outShape, space.strides[1]);
  space.coalesce();
  int64_t n = space.inner(), sa = space.innerStride(0),
          sb = space.innerStride(1);
  space.forEachRow([&](int64_t linear, const int64_t *offsets) {
    binaryRow(out + linear, a + offsets[0], sa, b + offsets[1], sb, n, fn);
  });
}

template <typename T>
void selectLoop(T *out, const Shape &outShape, const bool *c,
                const Shape &cShape, const T *t, const Shape &tShape,
                const T *f, const Shape &fShape) {
  const char *kernel = "select";
  checkValid(kernel, "the result", outShape);
  if (sameShape(cShape, outShape) && sameShape(tShape, outShape) &&
      sameShape(fShape, outShape)) {
    for (int64_t i = 0, e = outShape.numElements(); i < e; ++i)
      out[i] = c[i] ? t[i] : f[i];
    return;
  }
  StridedSpace<3> space(outShape);
  getBroadcastStrides(kernel, cShape, outShape, space.strides[0]);
  getBroadcastStrides(kernel, tShape, outShape, space.strides[1]);
  getBroadcastStrides(kernel, fShape, outShape, space.strides[2]);
  space.coalesce();
  int64_t n = space.inner(), sc = space.innerStride(0),
          st = space.innerStride(1), sf = space.innerStride(2);
  space.forEachRow([&](int64_t linear, const int64_t *offsets) {
    T *o = out + linear;
    const bool *cr = c + offsets[0];
    const T *tr = t + offsets[1], *fr = f + offsets[2];
    if (sc == 1 && st == 0 && sf == 0) {
      const T tv = *tr, fv = *fr;
      for (int64_t j = 0; j < n; ++j)
        o[j] = cr[j] ? tv : fv;
    } else if (sc == 1 && st == 1 && sf == 0) {
      const T fv = *fr;
      for (int64_t j = 0; j < n; ++j)
        o[j] = cr[j] ? tr[j] : fv;
    } else {
      for (int64_t j = 0; j < n; ++j)
        o[j] = cr[j * sc] ? tr[j * st] : fr[j * sf];
    }
  });
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// One element of nn.cast, as the interpreter converts it: floats through
/// double (rounding once), float to integer truncating and saturating, to
/// i1 non-zero (NaN included) as true, integer to integer wrapping.
template <typename To, typename From> To convert(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_floating_point_v<From>)
      return static_cast<double>(value) != 0.0;
    else
      return value != 0;
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(value ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From>) {
    if constexpr (std::is_floating_point_v<To>)
      return static_cast<To>(static_cast<double>(value));
    else
      return math::floatToInt<To>(static_cast<double>(value));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else {
    // Integer to integer: sign-extend, or keep the low bits.
    using Unsigned = std::make_unsigned_t<To>;
    return static_cast<To>(static_cast<Unsigned>(static_cast<uint64_t>(value)));
  }
}

template <typename To, typename From>
void castLoop(To *out, const Shape &outShape, const From *in,
              const Shape &inShape) {
  unaryLoop("cast", out, outShape, in, inShape,
            [](From x) { return convert<To>(x); });
}

} // namespace

//===----------------------------------------------------------------------===//
// copy, fill
//===----------------------------------------------------------------------===//

#define DEFINE_COPY(T)                                                         \
  void loom::host::copy(T *out, Shape outShape, const T *in, Shape inShape) {  \
    checkSameCount("copy", outShape, inShape);                                 \
    if (int64_t count = outShape.numElements())                                \
      std::memcpy(out, in, static_cast<size_t>(count) * sizeof(T));            \
  }
DEFINE_COPY(float)
DEFINE_COPY(double)
DEFINE_COPY(int32_t)
DEFINE_COPY(int64_t)
DEFINE_COPY(bool)
#undef DEFINE_COPY

void loom::host::fill(float *result, Shape resultShape, double value) {
  checkValid("fill", "the result", resultShape);
  const float v = static_cast<float>(value);
  for (int64_t i = 0, e = resultShape.numElements(); i < e; ++i)
    result[i] = v;
}
void loom::host::fill(double *result, Shape resultShape, double value) {
  checkValid("fill", "the result", resultShape);
  for (int64_t i = 0, e = resultShape.numElements(); i < e; ++i)
    result[i] = value;
}

#define DEFINE_INTEGER_FILL(T)                                                 \
  void loom::host::fill(T *result, Shape resultShape, double value) {          \
    checkValid("fill", "the result", resultShape);                             \
    const T v = math::floatToInt<T>(value);                                    \
    for (int64_t i = 0, e = resultShape.numElements(); i < e; ++i)             \
      result[i] = v;                                                           \
  }
DEFINE_INTEGER_FILL(int32_t)
DEFINE_INTEGER_FILL(int64_t)
#undef DEFINE_INTEGER_FILL
void loom::host::fill(bool *result, Shape resultShape, double value) {
  checkValid("fill", "the result", resultShape);
  const bool v = value != 0.0;
  for (int64_t i = 0, e = resultShape.numElements(); i < e; ++i)
    result[i] = v;
}

//===----------------------------------------------------------------------===//
// Binary and unary maths
//===----------------------------------------------------------------------===//

#define DEFINE_BINARY(NAME, FUNCTOR)                                           \
  void loom::host::NAME(float *result, Shape resultShape, const float *lhs,    \
                        Shape lhsShape, const float *rhs, Shape rhsShape) {    \
    binaryLoop(#NAME, result, resultShape, lhs, lhsShape, rhs, rhsShape,       \
               math::FUNCTOR{});                                               \
  }                                                                            \
  void loom::host::NAME(double *result, Shape resultShape, const double *lhs,  \
                        Shape lhsShape, const double *rhs, Shape rhsShape) {   \
    binaryLoop(#NAME, result, resultShape, lhs, lhsShape, rhs, rhsShape,       \
               math::FUNCTOR{});                                               \
  }
DEFINE_BINARY(add, Add)
DEFINE_BINARY(sub, Sub)
DEFINE_BINARY(mul, Mul)
DEFINE_BINARY(div, Div)
DEFINE_BINARY(maximum, Maximum)
DEFINE_BINARY(minimum, Minimum)
#undef DEFINE_BINARY

#define DEFINE_UNARY(NAME, FUNCTOR)                                            \
  void loom::host::NAME(float *result, Shape resultShape, const float *input,  \
                        Shape inputShape) {                                    \
    unaryLoop(#NAME, result, resultShape, input, inputShape, math::FUNCTOR{}); \
  }                                                                            \
  void loom::host::NAME(double *result, Shape resultShape,                     \
                        const double *input, Shape inputShape) {               \
    unaryLoop(#NAME, result, resultShape, input, inputShape, math::FUNCTOR{}); \
  }
DEFINE_UNARY(neg, Neg)
DEFINE_UNARY(exp, Exp)
DEFINE_UNARY(log, Log)
DEFINE_UNARY(sqrt, Sqrt)
DEFINE_UNARY(rsqrt, Rsqrt)
DEFINE_UNARY(tanh, Tanh)
DEFINE_UNARY(relu, Relu)
DEFINE_UNARY(silu, Silu)
DEFINE_UNARY(sin, Sin)
DEFINE_UNARY(cos, Cos)
#undef DEFINE_UNARY

namespace {

template <typename T>
void geluImpl(T *result, const Shape &resultShape, const T *input,
              const Shape &inputShape, const char *approximate) {
  if (parseGeluTanh("gelu", approximate))
    unaryLoop("gelu", result, resultShape, input, inputShape, math::GeluTanh{});
  else
    unaryLoop("gelu", result, resultShape, input, inputShape, math::GeluErf{});
}

template <typename T>
void geluGradImpl(T *result, const Shape &resultShape, const T *grad,
                  const Shape &gradShape, const T *input,
                  const Shape &inputShape, const char *approximate) {
  const char *kernel = "gelu_grad";
  checkValid(kernel, "the result", resultShape);
  checkShape(kernel, "grad", gradShape, resultShape);
  checkShape(kernel, "the input", inputShape, resultShape);
  int64_t count = resultShape.numElements();
  if (parseGeluTanh(kernel, approximate)) {
    math::GeluTanhGrad fn;
    for (int64_t i = 0; i < count; ++i)
      result[i] = fn(grad[i], input[i]);
  } else {
    math::GeluErfGrad fn;
    for (int64_t i = 0; i < count; ++i)
      result[i] = fn(grad[i], input[i]);
  }
}

template <typename T>
void clampImpl(T *result, const Shape &resultShape, const T *input,
               const Shape &inputShape, double max, double min) {
  const T lo = static_cast<T>(min), hi = static_cast<T>(max);
  unaryLoop("clamp", result, resultShape, input, inputShape,
            [lo, hi](T x) { return math::clamp(x, lo, hi); });
}

template <typename T>
void compareImpl(bool *result, const Shape &resultShape, const T *lhs,
                 const Shape &lhsShape, const T *rhs, const Shape &rhsShape,
                 const char *predicate) {
  const char *kernel = "compare";
  math::Predicate p = parsePredicate(kernel, predicate);
  // One loop per predicate, so that each vectorises.
  switch (p) {
#define CASE(PRED, EXPR)                                                       \
  case math::Predicate::PRED:                                                  \
    return binaryLoop(kernel, result, resultShape, lhs, lhsShape, rhs,         \
                      rhsShape, [](T a, T b) -> bool { return EXPR; });
    CASE(EQ, a == b)
    CASE(NE, a != b)
    CASE(LT, a < b)
    CASE(LE, a <= b)
    CASE(GT, a > b)
    CASE(GE, a >= b)
#undef CASE
  }
}

} // namespace

void loom::host::gelu(float *result, Shape resultShape, const float *input,
                      Shape inputShape, const char *approximate) {
  geluImpl(result, resultShape, input, inputShape, approximate);
}
void loom::host::gelu(double *result, Shape resultShape, const double *input,
                      Shape inputShape, const char *approximate) {
  geluImpl(result, resultShape, input, inputShape, approximate);
}

void loom::host::gelu_grad(float *result, Shape resultShape, const float *grad,
                           Shape gradShape, const float *input,
                           Shape inputShape, const char *approximate) {
  geluGradImpl(result, resultShape, grad, gradShape, input, inputShape,
               approximate);
}
void loom::host::gelu_grad(double *result, Shape resultShape,
                           const double *grad, Shape gradShape,
                           const double *input, Shape inputShape,
                           const char *approximate) {
  geluGradImpl(result, resultShape, grad, gradShape, input, inputShape,
               approximate);
}

void loom::host::clamp(float *result, Shape resultShape, const float *input,
                       Shape inputShape, double max, double min) {
  clampImpl(result, resultShape, input, inputShape, max, min);
}
void loom::host::clamp(double *result, Shape resultShape, const double *input,
                       Shape inputShape, double max, double min) {
  clampImpl(result, resultShape, input, inputShape, max, min);
}

//===----------------------------------------------------------------------===//
// compare, select, cast
//===----------------------------------------------------------------------===//

#define DEFINE_COMPARE(T)                                                      \
  void loom::host::compare(bool *result, Shape resultShape, const T *lhs,      \
                           Shape lhsShape, const T *rhs, Shape rhsShape,       \
                           const char *predicate) {                            \
    compareImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape, predicate); \
  }
DEFINE_COMPARE(float)
DEFINE_COMPARE(double)
DEFINE_COMPARE(int32_t)
DEFINE_COMPARE(int64_t)
#undef DEFINE_COMPARE

#define DEFINE_SELECT(T)                                                       \
  void loom::host::select(T *result, Shape resultShape, const bool *condition, \
                          Shape conditionShape, const T *trueValue,            \
                          Shape trueShape, const T *falseValue,                \
                          Shape falseShape) {                                  \
    selectLoop(result, resultShape, condition, conditionShape, trueValue,      \
               trueShape, falseValue, falseShape);                             \
  }
DEFINE_SELECT(float)
DEFINE_SELECT(double)
DEFINE_SELECT(int32_t)
DEFINE_SELECT(int64_t)
#undef DEFINE_SELECT

#define DEFINE_CAST(TO, FROM)                                                  \
  void loom::host::cast(TO *result, Shape resultShape, const FROM *input,      \
                        Shape inputShape) {                                    \
    castLoop(result, resultShape, input, inputShape);                          \
  }
#define DEFINE_CASTS_TO(TO)                                                    \
  DEFINE_CAST(TO, float)                                                       \
  DEFINE_CAST(TO, double)                                                      \
  DEFINE_CAST(TO, int32_t)                                                     \
  DEFINE_CAST(TO, int64_t)                                                     \
  DEFINE_CAST(TO, bool)
DEFINE_CASTS_TO(float)
DEFINE_CASTS_TO(double)
DEFINE_CASTS_TO(int32_t)
DEFINE_CASTS_TO(int64_t)
DEFINE_CASTS_TO(bool)
#undef DEFINE_CASTS_TO
#undef DEFINE_CAST
