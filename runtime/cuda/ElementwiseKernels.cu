//===- ElementwiseKernels.cu - Element-wise nn ops on the device ----------===//
//
// copy, fill, binary arithmetic with numpy broadcasting, unary maths, gelu
// and its gradient, clamp, compare, select and cast: one thread per result
// element (grid-stride loops), the maths from Math.h. Operands of the
// result's shape are read flat; broadcast operands through a coalesced
// strided space.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <type_traits>

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

template <typename T> __global__ void fillKernel(T *out, int64_t n, T value) {
  LOOM_CUDA_FOR(i, n) out[i] = value;
}

template <typename R, typename A, typename Fn>
__global__ void unaryKernel(R *out, const A *in, int64_t n, Fn fn) {
  LOOM_CUDA_FOR(i, n) out[i] = fn(in[i]);
}

template <typename R, typename A, typename B, typename Fn>
__global__ void binaryFlatKernel(R *out, const A *a, const B *b, int64_t n,
                                 Fn fn) {
  LOOM_CUDA_FOR(i, n) out[i] = fn(a[i], b[i]);
}

template <typename R, typename A, typename B, typename Fn>
__global__ void binaryStridedKernel(R *out, const A *a, const B *b,
                                    Space<2> space, int64_t n, Fn fn) {
  LOOM_CUDA_FOR(i, n) {
    int64_t offsets[2];
    space.offsets(i, offsets);
    out[i] = fn(a[offsets[0]], b[offsets[1]]);
  }
}

template <typename T>
__global__ void selectKernel(T *out, const bool *c, const T *t, const T *f,
                             Space<3> space, int64_t n) {
  LOOM_CUDA_FOR(i, n) {
    int64_t offsets[3];
    space.offsets(i, offsets);
    out[i] = c[offsets[0]] ? t[offsets[1]] : f[offsets[2]];
  }
}

//===----------------------------------------------------------------------===//
// Functors
//===----------------------------------------------------------------------===//

template <typename T> struct ClampFn {
  T lo, hi;
  __device__ T operator()(T x) const { return math::clamp(x, lo, hi); }
};

struct CompareFn {
  math::Predicate predicate;
  template <typename T> __device__ bool operator()(T a, T b) const {
    return math::compare(predicate, a, b);
  }
};

/// One element of nn.cast, as the host kernels convert it.
template <typename To> struct ConvertFn {
  template <typename From> __device__ To operator()(From value) const {
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
      using Unsigned = std::make_unsigned_t<To>;
      return static_cast<To>(
          static_cast<Unsigned>(static_cast<uint64_t>(value)));
    }
  }
};

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

template <typename R, typename A, typename Fn>
void unaryLoop(const char *kernel, R *out, const Shape &outShape, const A *in,
               const Shape &inShape, Fn fn) {
  checkValid(kernel, "the result", outShape);
  checkShape(kernel, "the input", inShape, outShape);
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  unaryKernel<<<gridFor(n), kThreads, 0, stream()>>>(out, in, n, fn);
  checkLaunch(kernel);
}

template <typename R, typename A, typename B, typename Fn>
void binaryLoop(const char *kernel, R *out, const Shape &outShape, const A *a,
                const Shape &aShape, const B *b, const Shape &bShape, Fn fn) {
  checkValid(kernel, "the result", outShape);
  int64_t n = outShape.numElements();
  if (sameShape(aShape, outShape) && sameShape(bShape, outShape)) {
    if (n > 0)
      binaryFlatKernel<<<gridFor(n), kThreads, 0, stream()>>>(out, a, b, n, fn);
  } else {
    Space<2> space(outShape);
    getBroadcastStrides(kernel, aShape, outShape, space.strides[0]);
    getBroadcastStrides(kernel, bShape, outShape, space.strides[1]);
    space.coalesce();
    if (n > 0)
      binaryStridedKernel<<<gridFor(n), kThreads, 0, stream()>>>(out, a, b,
                                                                 space, n, fn);
  }
  checkLaunch(kernel);
}

template <typename T>
void selectLoop(T *out, const Shape &outShape, const bool *c,
                const Shape &cShape, const T *t, const Shape &tShape,
                const T *f, const Shape &fShape) {
  const char *kernel = "select";
  checkValid(kernel, "the result", outShape);
  Space<3> space(outShape);
  getBroadcastStrides(kernel, cShape, outShape, space.strides[0]);
  getBroadcastStrides(kernel, tShape, outShape, space.strides[1]);
  getBroadcastStrides(kernel, fShape, outShape, space.strides[2]);
  space.coalesce();
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  selectKernel<<<gridFor(n), kThreads, 0, stream()>>>(out, c, t, f, space, n);
  checkLaunch(kernel);
}

template <typename T> void fillImpl(T *result, const Shape &shape, T value) {
  checkValid("fill", "the result", shape);
  int64_t n = shape.numElements();
  if (n == 0)
    return;
  fillKernel<<<gridFor(n), kThreads, 0, stream()>>>(result, n, value);
  checkLaunch("fill");
}

template <typename T>
void copyImpl(T *out, const Shape &outShape, const T *in,
              const Shape &inShape) {
  checkSameCount("copy", outShape, inShape);
  if (int64_t count = outShape.numElements()) {
    checkCuda(cudaMemcpyAsync(out, in, static_cast<size_t>(count) * sizeof(T),
                              cudaMemcpyDeviceToDevice, stream()),
              "copy", "cudaMemcpyAsync");
    recordKernel("copy");
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// copy, fill
//===----------------------------------------------------------------------===//

#define DEFINE_COPY(T)                                                         \
  void loom::cuda::copy(T *out, Shape outShape, const T *in, Shape inShape) {  \
    copyImpl(out, outShape, in, inShape);                                      \
  }
DEFINE_COPY(float)
DEFINE_COPY(double)
DEFINE_COPY(int32_t)
DEFINE_COPY(int64_t)
DEFINE_COPY(bool)
#undef DEFINE_COPY

void loom::cuda::fill(float *result, Shape resultShape, double value) {
  fillImpl(result, resultShape, static_cast<float>(value));
}
void loom::cuda::fill(double *result, Shape resultShape, double value) {
  fillImpl(result, resultShape, value);
}
void loom::cuda::fill(int32_t *result, Shape resultShape, double value) {
  fillImpl(result, resultShape, math::floatToInt<int32_t>(value));
}
void loom::cuda::fill(int64_t *result, Shape resultShape, double value) {
  fillImpl(result, resultShape, math::floatToInt<int64_t>(value));
}
void loom::cuda::fill(bool *result, Shape resultShape, double value) {
  fillImpl(result, resultShape, value != 0.0);
}

//===----------------------------------------------------------------------===//
// Binary and unary maths
//===----------------------------------------------------------------------===//

#define DEFINE_BINARY(NAME, FUNCTOR)                                           \
  void loom::cuda::NAME(float *result, Shape resultShape, const float *lhs,    \
                        Shape lhsShape, const float *rhs, Shape rhsShape) {    \
    binaryLoop(#NAME, result, resultShape, lhs, lhsShape, rhs, rhsShape,       \
               math::FUNCTOR{});                                               \
  }                                                                            \
  void loom::cuda::NAME(double *result, Shape resultShape, const double *lhs,  \
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
  void loom::cuda::NAME(float *result, Shape resultShape, const float *input,  \
                        Shape inputShape) {                                    \
    unaryLoop(#NAME, result, resultShape, input, inputShape, math::FUNCTOR{}); \
  }                                                                            \
  void loom::cuda::NAME(double *result, Shape resultShape,                     \
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
  if (parseGeluTanh(kernel, approximate))
    binaryLoop(kernel, result, resultShape, grad, gradShape, input, inputShape,
               math::GeluTanhGrad{});
  else
    binaryLoop(kernel, result, resultShape, grad, gradShape, input, inputShape,
               math::GeluErfGrad{});
}

template <typename T>
void clampImpl(T *result, const Shape &resultShape, const T *input,
               const Shape &inputShape, double max, double min) {
  ClampFn<T> fn{static_cast<T>(min), static_cast<T>(max)};
  unaryLoop("clamp", result, resultShape, input, inputShape, fn);
}

template <typename T>
void compareImpl(bool *result, const Shape &resultShape, const T *lhs,
                 const Shape &lhsShape, const T *rhs, const Shape &rhsShape,
                 const char *predicate) {
  const char *kernel = "compare";
  CompareFn fn{parsePredicate(kernel, predicate)};
  binaryLoop(kernel, result, resultShape, lhs, lhsShape, rhs, rhsShape, fn);
}

} // namespace

void loom::cuda::gelu(float *result, Shape resultShape, const float *input,
                      Shape inputShape, const char *approximate) {
  geluImpl(result, resultShape, input, inputShape, approximate);
}
void loom::cuda::gelu(double *result, Shape resultShape, const double *input,
                      Shape inputShape, const char *approximate) {
  geluImpl(result, resultShape, input, inputShape, approximate);
}

void loom::cuda::gelu_grad(float *result, Shape resultShape, const float *grad,
                           Shape gradShape, const float *input,
                           Shape inputShape, const char *approximate) {
  geluGradImpl(result, resultShape, grad, gradShape, input, inputShape,
               approximate);
}
void loom::cuda::gelu_grad(double *result, Shape resultShape,
                           const double *grad, Shape gradShape,
                           const double *input, Shape inputShape,
                           const char *approximate) {
  geluGradImpl(result, resultShape, grad, gradShape, input, inputShape,
               approximate);
}

void loom::cuda::clamp(float *result, Shape resultShape, const float *input,
                       Shape inputShape, double max, double min) {
  clampImpl(result, resultShape, input, inputShape, max, min);
}
void loom::cuda::clamp(double *result, Shape resultShape, const double *input,
                       Shape inputShape, double max, double min) {
  clampImpl(result, resultShape, input, inputShape, max, min);
}

//===----------------------------------------------------------------------===//
// compare, select, cast
//===----------------------------------------------------------------------===//

#define DEFINE_COMPARE(T)                                                      \
  void loom::cuda::compare(bool *result, Shape resultShape, const T *lhs,      \
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
  void loom::cuda::select(T *result, Shape resultShape, const bool *condition, \
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
  void loom::cuda::cast(TO *result, Shape resultShape, const FROM *input,      \
                        Shape inputShape) {                                    \
    unaryLoop("cast", result, resultShape, input, inputShape,                  \
              ConvertFn<TO>{});                                                \
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
