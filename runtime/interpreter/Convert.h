//===- Convert.h - Element conversions of nn.cast --------------*- C++ -*-===//
//
// The scalar conversions `nn.cast` documents, shared by the cast kernel and
// Tensor::setDouble. None of them is undefined behaviour for any input.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_CONVERT_H
#define LOOM_RUNTIME_INTERPRETER_CONVERT_H

#include "runtime/interpreter/Tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace loom::interp {

/// Float to integer: truncates toward zero, saturates at the integer range,
/// NaN becomes 0.
template <typename Int> Int floatToInt(double value) {
  static_assert(std::is_signed_v<Int>, "signed integers only");
  if (std::isnan(value))
    return 0;
  const double limit = std::ldexp(1.0, std::numeric_limits<Int>::digits);
  if (value >= limit)
    return std::numeric_limits<Int>::max();
  if (value < -limit)
    return std::numeric_limits<Int>::min();
  return static_cast<Int>(value);
}

/// Integer to bf16, rounded once to nearest even.
inline uint16_t intToBf16(int64_t value) {
  uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value)
                                 : static_cast<uint64_t>(value);
  // bf16 holds 8 significant bits; round the magnitude to 8 bits here, after
  // which the conversion to float is exact.
  int width = 64 - __builtin_clzll(magnitude | 1);
  int shift = width > 8 ? width - 8 : 0;
  uint64_t kept = magnitude >> shift;
  if (shift > 0) {
    uint64_t rest = magnitude & ((uint64_t{1} << shift) - 1);
    uint64_t half = uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (kept & 1)))
      ++kept;
  }
  float result = std::ldexp(static_cast<float>(kept), shift);
  return floatToBf16(value < 0 ? -result : result);
}

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_CONVERT_H
