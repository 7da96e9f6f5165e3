//===- Random.h - The splitmix64 stream nn.dropout specifies ---*- C++ -*-===//
//
// `nn.dropout` defines its mask bit for bit with splitmix64; loom-run's random
// inputs use the same generator so that runs are reproducible everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_RANDOM_H
#define LOOM_RUNTIME_INTERPRETER_RANDOM_H

#include <cstdint>

namespace loom::interp {

/// The splitmix64 output for key `key` and counter `index`, exactly as the
/// nn.dropout doc writes it: z = key + (index + 1) * golden, then the
/// finaliser. All arithmetic is mod 2^64.
inline uint64_t splitmix64(uint64_t key, uint64_t index) {
  uint64_t z = key + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A double uniform in [0, 1) from the top 53 bits of `bits`.
inline double toUnitInterval(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_RANDOM_H
