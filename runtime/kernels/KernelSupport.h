//===- KernelSupport.h - Helpers shared by the host kernels ----*- C++ -*-===//
//
// Internal to runtime/kernels: argument checks that end the process with a
// message, keyword parsing, strided iteration over row-major tensors (with
// numpy broadcasting), and thread-local scratch buffers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELS_KERNELSUPPORT_H
#define LOOM_RUNTIME_KERNELS_KERNELSUPPORT_H

#include "runtime/kernels/HostKernels.h"
#include "runtime/kernels/Math.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::host::detail {

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

/// Prints `loom::host::<kernel>: <message>` to stderr and aborts.
[[noreturn]] void fatal(const char *kernel, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#define LOOM_HOST_CHECK(condition, kernel, ...)                                \
  do {                                                                         \
    if (!(condition))                                                          \
      ::loom::host::detail::fatal(kernel, __VA_ARGS__);                        \
  } while (false)

/// `[4, 8]`, into a thread-local buffer valid until the next call on the
/// thread with the same `slot` (0..3).
const char *formatShape(const Shape &shape, int slot = 0);

/// Whether two shapes have the same rank and sizes.
bool sameShape(const Shape &a, const Shape &b);

/// Ends the process unless `actual` equals `expected`.
void checkShape(const char *kernel, const char *what, const Shape &actual,
                const Shape &expected);
/// Ends the process unless `shape` is a valid tensor shape (rank in
/// [0, kMaxRank], sizes non-negative).
void checkValid(const char *kernel, const char *what, const Shape &shape);
/// Ends the process unless `a` and `b` hold the same number of elements.
void checkSameCount(const char *kernel, const Shape &result,
                    const Shape &input);

//===----------------------------------------------------------------------===//
// Keywords of enumeration attributes
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max };
enum class MaskKind { None, Causal, Tree };

/// "none" (or null) -> false, "tanh" -> true.
bool parseGeluTanh(const char *kernel, const char *keyword);
math::Predicate parsePredicate(const char *kernel, const char *keyword);
ReduceKind parseReduceKind(const char *kernel, const char *keyword);
MaskKind parseMaskKind(const char *kernel, const char *keyword);

/// `value`, or `fallback` when it is kAbsent (any NaN).
inline double orDefault(double value, double fallback) {
  return value != value ? fallback : value;
}
/// `value`, or `fallback` when it is INT64_MIN.
inline int64_t orDefault(int64_t value, int64_t fallback) {
  return value == INT64_MIN ? fallback : value;
}

//===----------------------------------------------------------------------===//
// Strided iteration
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape` into `strides`.
void getRowMajorStrides(const Shape &shape, int64_t *strides);

/// Strides that read a row-major tensor of `shape` as if broadcast (numpy
/// rules, aligned at the last dimension) to `result`; ends the process when
/// the shapes do not broadcast.
void getBroadcastStrides(const char *kernel, const Shape &shape,
                         const Shape &result, int64_t *strides);

/// An iteration space in row-major order with N element offsets that
/// advance by their strides along each dimension.
template <int N> struct StridedSpace {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};
  int64_t bases[N] = {};

  /// Starts from `shape` with all strides zero.
  explicit StridedSpace(const Shape &space) {
    rank = static_cast<int>(space.rank);
    for (int d = 0; d < rank; ++d)
      shape[d] = space.dims[d];
  }

  /// Drops dimensions of size 1 and merges neighbours that every operand
  /// walks contiguously; row-major order, hence every operand's visiting
  /// order, is unchanged. Leaves at least one dimension.
  void coalesce() {
    int out = 0;
    for (int d = 0; d < rank; ++d) {
      if (shape[d] == 1)
        continue;
      if (out > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k)
          merge &= strides[k][out - 1] == strides[k][d] * shape[d];
        if (merge) {
          shape[out - 1] *= shape[d];
          for (int k = 0; k < N; ++k)
            strides[k][out - 1] = strides[k][d];
          continue;
        }
      }
      shape[out] = shape[d];
      for (int k = 0; k < N; ++k)
        strides[k][out] = strides[k][d];
      ++out;
    }
    if (out == 0) {
      shape[0] = 1;
      for (int k = 0; k < N; ++k)
        strides[k][0] = 0;
      out = 1;
    }
    rank = out;
  }

  int64_t numElements() const {
    int64_t count = 1;
    for (int d = 0; d < rank; ++d)
      count *= shape[d];
    return count;
  }
  /// The length and the strides of the innermost dimension (after
  /// coalesce(), rank >= 1).
  int64_t inner() const { return shape[rank - 1]; }
  int64_t innerStride(int k) const { return strides[k][rank - 1]; }

  /// Calls `fn(linear, offsets)` for every row of the innermost dimension in
  /// row-major order: `linear` is the row-major index of the row's first
  /// element, `offsets[k]` operand k's offset there. Call coalesce() first.
  template <typename Fn> void forEachRow(Fn &&fn) const {
    int64_t total = numElements();
    if (total == 0)
      return;
    int64_t inner = shape[rank - 1];
    int64_t index[kMaxRank] = {};
    int64_t offsets[N];
    for (int k = 0; k < N; ++k)
      offsets[k] = bases[k];
    for (int64_t linear = 0; linear < total; linear += inner) {
      fn(linear, static_cast<const int64_t *>(offsets));
      for (int d = rank - 2; d >= 0; --d) {
        for (int k = 0; k < N; ++k)
          offsets[k] += strides[k][d];
        if (++index[d] < shape[d])
          break;
        for (int k = 0; k < N; ++k)
          offsets[k] -= strides[k][d] * shape[d];
        index[d] = 0;
      }
    }
  }
};

/// out[i] = in[base + sum_d i_d * strides[d]] over the row-major space
/// `outShape`.
template <typename T>
void copyStrided(T *out, const Shape &outShape, const T *in,
                 const int64_t *strides, int64_t base) {
  StridedSpace<1> space(outShape);
  for (int d = 0; d < space.rank; ++d)
    space.strides[0][d] = strides[d];
  space.bases[0] = base;
  space.coalesce();
  int64_t inner = space.inner(), stride = space.innerStride(0);
  space.forEachRow([&](int64_t linear, const int64_t *offsets) {
    T *o = out + linear;
    const T *x = in + offsets[0];
    if (stride == 1) {
      for (int64_t j = 0; j < inner; ++j)
        o[j] = x[j];
    } else if (stride == 0) {
      T value = *x;
      for (int64_t j = 0; j < inner; ++j)
        o[j] = value;
    } else {
      for (int64_t j = 0; j < inner; ++j)
        o[j] = x[j * stride];
    }
  });
}

/// (outer, size, inner) element counts of `shape` split at `dim`.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAt(const Shape &shape, int64_t dim);

//===----------------------------------------------------------------------===//
// Scratch
//===----------------------------------------------------------------------===//

/// A thread-local buffer of at least `count` elements for scratch slot
/// `slot` (0..3): it grows as needed and is reused by later calls on the
/// thread. Contents are unspecified.
template <typename T> T *scratch(int slot, size_t count) {
  thread_local std::vector<T> buffers[4];
  std::vector<T> &buffer = buffers[slot];
  if (buffer.size() < count)
    buffer.resize(count);
  return buffer.data();
}

} // namespace loom::host::detail

#endif // LOOM_RUNTIME_KERNELS_KERNELSUPPORT_H
