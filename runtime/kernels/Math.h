//===- Math.h - Per-element maths of the nn kernels ------------*- C++ -*-===//
//
// The scalar formulas of the nn ops, shared by the host kernels (the loops in
// runtime/kernels/*.cpp) and, later, the CUDA kernels: every function is
// `LOOM_HD` (`__host__ __device__` under nvcc) and uses only <cmath> and
// <cstdint>. Each computes exactly what the reference interpreter computes
// (runtime/interpreter/*Kernels.cpp), in the same order and with the same
// constants, so that f64 results agree with it bit for bit.
//
// Constants are spelled as hexadecimal literals: two of them are the values
// the interpreter computes at run time (`1.0 / std::sqrt(2.0)` is one ulp
// below the correctly rounded 1/sqrt(2) that nn.gelu uses), and a literal is
// usable in device code.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELS_MATH_H
#define LOOM_RUNTIME_KERNELS_MATH_H

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define LOOM_HD __host__ __device__
#else
#define LOOM_HD
#endif

namespace loom::math {

//===----------------------------------------------------------------------===//
// Constants (f64; float kernels round them once with static_cast<float>)
//===----------------------------------------------------------------------===//

/// 1/sqrt(2) correctly rounded (0.70710678118654752440): nn.gelu's erf form.
constexpr double kInvSqrt2 = 0x1.6a09e667f3bcdp-1;
/// `1.0 / std::sqrt(2.0)` in f64, one ulp below kInvSqrt2: nn.gelu_grad.
constexpr double kInvSqrt2Computed = 0x1.6a09e667f3bccp-1;
/// sqrt(2 / pi), both as the literal nn.gelu uses and as nn.gelu_grad
/// computes it (`std::sqrt(2.0 / M_PI)`); the two agree.
constexpr double kSqrt2OverPi = 0x1.9884533d43651p-1;
/// `1.0 / std::sqrt(2.0 * M_PI)`, the normal density's factor.
constexpr double kInvSqrt2Pi = 0x1.9884533d43651p-2;
/// The cubic coefficient of the tanh approximation of GELU.
constexpr double kGeluCubic = 0.044715;

//===----------------------------------------------------------------------===//
// NaN-aware comparisons
//===----------------------------------------------------------------------===//

template <typename T> LOOM_HD inline bool isNaN(T x) { return x != x; }

/// min/max that propagate NaN (numpy's minimum/maximum).
template <typename T> LOOM_HD inline T minimum(T a, T b) {
  return (a < b || isNaN(a)) ? a : b;
}
template <typename T> LOOM_HD inline T maximum(T a, T b) {
  return (a > b || isNaN(a)) ? a : b;
}
/// The running maximum of softmax-like kernels: a NaN, once seen, stays.
template <typename T> LOOM_HD inline T runningMax(T max, T x) {
  return (x > max || isNaN(x)) ? x : max;
}
/// The running maximum of nn.reduce max (keeps the first NaN).
template <typename T> LOOM_HD inline T reduceMax(T slot, T x) {
  if (x > slot || isNaN(x))
    return isNaN(slot) ? slot : x;
  return slot;
}

//===----------------------------------------------------------------------===//
// Element-wise binary and unary ops
//===----------------------------------------------------------------------===//

struct Add {
  template <typename T> LOOM_HD T operator()(T a, T b) const { return a + b; }
};
struct Sub {
  template <typename T> LOOM_HD T operator()(T a, T b) const { return a - b; }
};
struct Mul {
  template <typename T> LOOM_HD T operator()(T a, T b) const { return a * b; }
};
struct Div {
  template <typename T> LOOM_HD T operator()(T a, T b) const { return a / b; }
};
struct Minimum {
  template <typename T> LOOM_HD T operator()(T a, T b) const {
    return minimum(a, b);
  }
};
struct Maximum {
  template <typename T> LOOM_HD T operator()(T a, T b) const {
    return maximum(a, b);
  }
};

struct Neg {
  template <typename T> LOOM_HD T operator()(T x) const { return -x; }
};
struct Exp {
  template <typename T> LOOM_HD T operator()(T x) const { return std::exp(x); }
};
struct Log {
  template <typename T> LOOM_HD T operator()(T x) const { return std::log(x); }
};
struct Sqrt {
  template <typename T> LOOM_HD T operator()(T x) const { return std::sqrt(x); }
};
struct Rsqrt {
  template <typename T> LOOM_HD T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};
struct Tanh {
  template <typename T> LOOM_HD T operator()(T x) const { return std::tanh(x); }
};
struct Relu {
  template <typename T> LOOM_HD T operator()(T x) const {
    return maximum(x, T(0));
  }
};
/// x * sigmoid(x), as x / (1 + exp(-x)).
struct Silu {
  template <typename T> LOOM_HD T operator()(T x) const {
    return x / (T(1) + std::exp(-x));
  }
};
struct Sin {
  template <typename T> LOOM_HD T operator()(T x) const { return std::sin(x); }
};
struct Cos {
  template <typename T> LOOM_HD T operator()(T x) const { return std::cos(x); }
};

/// min(max(x, lo), hi) with NaN kept; the bounds already in the element type.
template <typename T> LOOM_HD inline T clamp(T x, T lo, T hi) {
  if (isNaN(x))
    return x;
  T low = x < lo ? lo : x;    // std::max(x, lo)
  return hi < low ? hi : low; // std::min(low, hi)
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

/// x * Phi(x), Phi(x) = (1 + erf(x / sqrt(2))) / 2.
struct GeluErf {
  template <typename T> LOOM_HD T operator()(T x) const {
    const T invSqrt2 = static_cast<T>(kInvSqrt2);
    return x * (T(0.5) * (T(1) + std::erf(x * invSqrt2)));
  }
};
/// x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2.
struct GeluTanh {
  template <typename T> LOOM_HD T operator()(T x) const {
    const T c = static_cast<T>(kSqrt2OverPi);
    T inner = c * (x + T(kGeluCubic) * x * x * x);
    return x * (T(0.5) * (T(1) + std::tanh(inner)));
  }
};

/// gelu'(x) of the erf form: Phi(x) + x * phi(x).
template <typename T> LOOM_HD inline T geluErfDerivative(T v) {
  const T half = T(0.5), one = T(1);
  const T invSqrt2 = static_cast<T>(kInvSqrt2Computed);
  const T invSqrt2Pi = static_cast<T>(kInvSqrt2Pi);
  T cdf = (one + std::erf(v * invSqrt2)) * half;
  T pdf = std::exp(-(v * v) * half) * invSqrt2Pi;
  return cdf + v * pdf;
}
/// gelu'(x) of the tanh form (see nn.gelu_grad).
template <typename T> LOOM_HD inline T geluTanhDerivative(T v) {
  const T half = T(0.5), one = T(1);
  const T c = static_cast<T>(kSqrt2OverPi);
  const T k = T(kGeluCubic);
  T t = std::tanh(c * (v + k * v * v * v));
  return half * (one + t) +
         half * v * (one - t * t) * c * (one + T(3) * k * v * v);
}
/// grad * gelu'(x).
struct GeluErfGrad {
  template <typename T> LOOM_HD T operator()(T dy, T x) const {
    return dy * geluErfDerivative(x);
  }
};
struct GeluTanhGrad {
  template <typename T> LOOM_HD T operator()(T dy, T x) const {
    return dy * geluTanhDerivative(x);
  }
};

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

/// nn.compare's predicates (the ComparePredicate enum's order).
enum class Predicate : int { EQ, NE, LT, LE, GT, GE };

/// Ordered float comparison: false with a NaN, except `ne`.
template <typename T> LOOM_HD inline bool compare(Predicate p, T a, T b) {
  switch (p) {
  case Predicate::EQ:
    return a == b;
  case Predicate::NE:
    return a != b;
  case Predicate::LT:
    return a < b;
  case Predicate::LE:
    return a <= b;
  case Predicate::GT:
    return a > b;
  case Predicate::GE:
    return a >= b;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Conversions (nn.cast)
//===----------------------------------------------------------------------===//

template <typename Int> struct IntLimits;
template <> struct IntLimits<int32_t> {
  static constexpr int32_t min = -2147483647 - 1, max = 2147483647;
  /// 2^31, the first value past the range.
  static constexpr double limit = 2147483648.0;
};
template <> struct IntLimits<int64_t> {
  static constexpr int64_t min = -9223372036854775807LL - 1,
                           max = 9223372036854775807LL;
  static constexpr double limit = 9223372036854775808.0;
};

/// Float to integer: truncates toward zero, saturates, NaN becomes 0.
template <typename Int> LOOM_HD inline Int floatToInt(double value) {
  if (isNaN(value))
    return 0;
  if (value >= IntLimits<Int>::limit)
    return IntLimits<Int>::max;
  if (value < -IntLimits<Int>::limit)
    return IntLimits<Int>::min;
  return static_cast<Int>(value);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// The learning-rate schedule of nn.sgd_update and nn.adamw_update (their
/// docs, "Learning-rate schedule"): how `lr` decays after the warm-up.
enum class LrDecay : int { Constant = 0, Linear = 1, Cosine = 2 };
/// A schedule's attributes.
struct LrSchedule {
  int64_t warmupSteps = 0;
  LrDecay decay = LrDecay::Constant;
  int64_t decaySteps = 0;
  double minLr = 0.0;
};
/// The decay of the keyword the kernels take ("constant", "linear",
/// "cosine"); a null or unknown keyword is constant (the verifier admits
/// none).
inline LrDecay parseLrDecay(const char *keyword) {
  if (!keyword)
    return LrDecay::Constant;
  auto is = [&](const char *word) {
    const char *k = keyword;
    while (*k && *k == *word)
      ++k, ++word;
    return *k == *word;
  };
  return is("linear") ? LrDecay::Linear
         : is("cosine") ? LrDecay::Cosine
                        : LrDecay::Constant;
}
/// The schedule of a kernel's attributes (their contract's order: decay,
/// decay_steps, min_lr, warmup_steps).
inline LrSchedule makeLrSchedule(const char *decay, int64_t decaySteps,
                                 double minLr, int64_t warmupSteps) {
  LrSchedule s;
  s.warmupSteps = warmupSteps;
  s.decay = parseLrDecay(decay);
  s.decaySteps = decaySteps;
  s.minLr = minLr;
  return s;
}
/// The learning rate of step `step` (from 1) under `s`, in f64.
LOOM_HD inline double scheduledLr(double lr, const LrSchedule &s,
                                  int64_t step) {
  double t = static_cast<double>(step);
  if (s.warmupSteps > 0 && step <= s.warmupSteps)
    return lr * t / static_cast<double>(s.warmupSteps);
  if (s.decay == LrDecay::Constant || s.decaySteps <= 0)
    return lr;
  double p = (t - static_cast<double>(s.warmupSteps)) /
             static_cast<double>(s.decaySteps);
  if (p >= 1.0)
    return s.minLr;
  double f = s.decay == LrDecay::Linear
                 ? 1.0 - p
                 : 0.5 * (1.0 + std::cos(3.14159265358979323846 * p));
  return s.minLr + (lr - s.minLr) * f;
}

/// The coefficients of one nn.sgd_update, rounded to the element type once.
template <typename T> struct SgdCoefficients {
  T lr, momentum, weightDecay;
  bool nesterov;
};
/// One element of nn.sgd_update; reads p, g and m before writing, so the
/// outputs may alias the inputs.
template <typename T>
LOOM_HD inline void sgdStep(const SgdCoefficients<T> &c, T p, T g, T m,
                            T &newParam, T &newBuffer) {
  T decayed = g + c.weightDecay * p;
  T buf = c.momentum * m + decayed;
  T step = c.nesterov ? decayed + c.momentum * buf : buf;
  newParam = p - c.lr * step;
  newBuffer = buf;
}

/// The coefficients of one nn.adamw_update: products and bias corrections
/// computed in f64 and rounded to the element type once.
template <typename T> struct AdamWCoefficients {
  T decay, beta1, beta2, oneMinusBeta1, oneMinusBeta2, correction1, correction2,
      lr, epsilon;
};
template <typename T>
LOOM_HD inline AdamWCoefficients<T>
makeAdamWCoefficients(double peakLr, double beta1, double beta2,
                      double epsilon, double weightDecay, int64_t stepCount,
                      const LrSchedule &schedule = {}) {
  double step = static_cast<double>(stepCount);
  double lr = scheduledLr(peakLr, schedule, stepCount);
  AdamWCoefficients<T> c;
  c.decay = static_cast<T>(lr * weightDecay);
  c.beta1 = static_cast<T>(beta1);
  c.beta2 = static_cast<T>(beta2);
  c.oneMinusBeta1 = static_cast<T>(1.0 - beta1);
  c.oneMinusBeta2 = static_cast<T>(1.0 - beta2);
  c.correction1 = static_cast<T>(1.0 - std::pow(beta1, step));
  c.correction2 = static_cast<T>(1.0 - std::pow(beta2, step));
  c.lr = static_cast<T>(lr);
  c.epsilon = static_cast<T>(epsilon);
  return c;
}
/// One element of nn.adamw_update; reads all inputs before writing.
template <typename T>
LOOM_HD inline void adamwStep(const AdamWCoefficients<T> &c, T p, T g, T m, T v,
                              T &newParam, T &newM, T &newV) {
  T decayed = p - c.decay * p;
  T mi = c.beta1 * m + c.oneMinusBeta1 * g;
  T vi = c.beta2 * v + c.oneMinusBeta2 * g * g;
  T mHat = mi / c.correction1;
  T vHat = vi / c.correction2;
  newParam = decayed - c.lr * mHat / (std::sqrt(vHat) + c.epsilon);
  newM = mi;
  newV = vi;
}

//===----------------------------------------------------------------------===//
// Dropout's random stream
//===----------------------------------------------------------------------===//

/// splitmix64 of key `key` and counter `index`, exactly as nn.dropout's doc.
LOOM_HD inline uint64_t splitmix64(uint64_t key, uint64_t index) {
  uint64_t z = key + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/// A double uniform in [0, 1) from the top 53 bits of `bits`.
LOOM_HD inline double toUnitInterval(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}
/// Whether nn.dropout drops element `index` for key `key` and `rate`.
LOOM_HD inline bool dropped(uint64_t key, uint64_t index, double rate) {
  return toUnitInterval(splitmix64(key, index)) < rate;
}

/// nn.dropout's counter for element `i` (row-major) of a block of sizes
/// `local` whose first element is the element `starts` of a tensor of shape
/// `global` (all `rank` long): the element's row-major index in the tensor.
LOOM_HD inline uint64_t globalElementIndex(int64_t i, int64_t rank,
                                           const int64_t *local,
                                           const int64_t *starts,
                                           const int64_t *global) {
  uint64_t index = 0, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    int64_t coord = i % local[d];
    i /= local[d];
    index += static_cast<uint64_t>(starts[d] + coord) * stride;
    stride *= static_cast<uint64_t>(global[d]);
  }
  return index;
}

} // namespace loom::math

#endif // LOOM_RUNTIME_KERNELS_MATH_H
