//===- CudaKernelsTest.cpp - CUDA kernels against the host kernels --------===//
//
// Every CUDA kernel (runtime/cuda/CudaKernels.h) against the host kernel of
// the same op (runtime/kernels/HostKernels.h) on the same random inputs:
// the host kernel writes into host memory, the CUDA kernel into device
// memory filled with garbage it must overwrite, and the results must agree
// within a norm-wise relative error of 1e-12 (f64) or 1e-5 (f32), NaNs and
// infinities in the same places; integer and i1 results exactly. A last
// test checks that repeated runs give the same bits. The element-wise ops,
// compare, select, iota, slice_grad and rope are checked only by the
// kernel conformance suite (test/conformance, against the interpreter with
// the same tolerances); what stays here is what is CUDA's own: device
// helpers, copies, shapes large enough for several thread blocks, in-place
// updates, repeatable bits.
//
// Plain C++: the device is reached through the library's helpers
// (deviceCount, deviceAlloc, copyToDevice, ...). Without a CUDA device
// every test but the first skips.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/kernels/HostKernels.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace cuda = loom::cuda;
namespace host = loom::host;
using loom::host::Shape;

namespace {

//===----------------------------------------------------------------------===//
// Device and buffers
//===----------------------------------------------------------------------===//

bool haveDevice() {
  static const bool have = cuda::deviceCount() > 0;
  return have;
}

#define REQUIRE_DEVICE()                                                       \
  do {                                                                         \
    if (!haveDevice())                                                         \
      GTEST_SKIP() << "no CUDA device";                                        \
  } while (false)

/// Host storage of T (bool as one byte per element, not std::vector<bool>).
template <typename T>
using Storage = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
template <typename T> using Vec = std::vector<Storage<T>>;

template <typename T> T *data(Vec<T> &v) {
  return reinterpret_cast<T *>(v.data());
}
template <typename T> const T *data(const Vec<T> &v) {
  return reinterpret_cast<const T *>(v.data());
}

/// A device copy of a host vector (or garbage of a given size), freed on
/// destruction.
template <typename T> class Dev {
public:
  explicit Dev(const Vec<T> &values) : count_(values.size()) {
    pointer_ = cuda::deviceAlloc(bytes());
    cuda::copyToDevice(pointer_, values.data(), bytes());
  }
  /// `count` elements of 0xA5 bytes.
  static Dev garbage(size_t count) {
    std::vector<uint8_t> bytes(count * sizeof(Storage<T>), 0xA5);
    Vec<T> values(count);
    if (!bytes.empty())
      std::memcpy(values.data(), bytes.data(), bytes.size());
    return Dev(values);
  }
  Dev(Dev &&other) noexcept : pointer_(other.pointer_), count_(other.count_) {
    other.pointer_ = nullptr;
  }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  ~Dev() { cuda::deviceFree(pointer_); }

  T *get() const { return static_cast<T *>(pointer_); }
  Vec<T> read() const {
    Vec<T> values(count_);
    cuda::copyToHost(values.data(), pointer_, bytes());
    return values;
  }

private:
  size_t bytes() const { return count_ * sizeof(Storage<T>); }
  void *pointer_ = nullptr;
  size_t count_ = 0;
};

/// Host garbage of the same pattern.
template <typename T> Vec<T> garbage(size_t count) {
  Vec<T> values(count);
  if (count)
    std::memset(values.data(), 0xA5, count * sizeof(Storage<T>));
  return values;
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

std::mt19937_64 &rng() {
  static std::mt19937_64 generator(20261130);
  return generator;
}

template <typename T>
Vec<T> randomFloat(int64_t count, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec<T> values(static_cast<size_t>(count));
  for (auto &value : values)
    value = static_cast<T>(dist(rng()));
  return values;
}

template <typename T> Vec<T> randomInt(int64_t count, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  Vec<T> values(static_cast<size_t>(count));
  for (auto &value : values)
    value = static_cast<Storage<T>>(dist(rng()));
  return values;
}

/// Small values of any element type (0 or 1 for i1).
template <typename T> Vec<T> randomValues(int64_t count) {
  if constexpr (std::is_same_v<T, bool>)
    return randomInt<T>(count, 0, 1);
  else
    return randomInt<T>(count, -50, 50);
}

int64_t count(const Shape &shape) { return shape.numElements(); }

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

template <typename T> double tolerance() {
  if constexpr (std::is_same_v<T, double>)
    return 1e-12;
  else if constexpr (std::is_same_v<T, float>)
    return 1e-5;
  else
    return 0.0;
}

/// The norm-wise relative error of `actual` against `expected` (NaNs in the
/// same places count as equal, a NaN against a number or unequal
/// infinities as infinite error).
template <typename T>
double relativeError(const Vec<T> &actual, const Vec<T> &expected) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = static_cast<double>(actual[i]),
           e = static_cast<double>(expected[i]);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e))
        return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e)
        return std::numeric_limits<double>::infinity();
      continue;
    }
    diff += (a - e) * (a - e);
    norm += e * e;
  }
  if (diff == 0)
    return 0;
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
}

template <typename T>
void expectClose(const std::string &what, const Vec<T> &actual,
                 const Vec<T> &expected) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  if constexpr (std::is_floating_point_v<T>) {
    double error = relativeError<T>(actual, expected);
    EXPECT_LE(error, tolerance<T>())
        << what << " (" << (sizeof(T) == 4 ? "f32" : "f64") << ")";
  } else {
    size_t mismatches = 0, first = 0;
    for (size_t i = 0; i < expected.size(); ++i)
      if (actual[i] != expected[i] && mismatches++ == 0)
        first = i;
    EXPECT_EQ(mismatches, 0u)
        << what << ": first mismatch at " << first << ": "
        << static_cast<int64_t>(actual[first]) << " instead of "
        << static_cast<int64_t>(expected[first]);
  }
}

/// Runs `hostCall(T *result)` into host garbage and `cudaCall(T *result)`
/// into device garbage, both of `n` elements, and compares.
template <typename T, typename HostCall, typename CudaCall>
void expectSame(const std::string &what, int64_t n, HostCall hostCall,
                CudaCall cudaCall) {
  Vec<T> expected = garbage<T>(static_cast<size_t>(n));
  hostCall(data<T>(expected));
  Dev<T> out = Dev<T>::garbage(static_cast<size_t>(n));
  cudaCall(out.get());
  expectClose<T>(what, out.read(), expected);
}

std::string str(const Shape &shape) {
  std::string text = "[";
  for (int64_t d = 0; d < shape.rank; ++d)
    text += (d ? ", " : "") + std::to_string(shape.dims[d]);
  return text + "]";
}

template <typename T> class CudaKernelsFloat : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaKernelsFloat, FloatTypes);

//===----------------------------------------------------------------------===//
// Device helpers
//===----------------------------------------------------------------------===//

TEST(CudaKernels, DeviceCount) {
  // Runs everywhere: 0 without a device or driver, never a crash.
  EXPECT_GE(cuda::deviceCount(), 0);
  // The default stream and a handle of the library's own.
  cuda::setContext(nullptr, nullptr);
}

TEST(CudaKernels, RoundTrip) {
  REQUIRE_DEVICE();
  Vec<int64_t> values = randomInt<int64_t>(1000, -1000000, 1000000);
  Dev<int64_t> device(values);
  EXPECT_EQ(device.read(), values);
  cuda::synchronize();
}

//===----------------------------------------------------------------------===//
// Copies and constants
//===----------------------------------------------------------------------===//

template <typename T> void checkFillAndCopy(double value) {
  Shape shape{3, 5, 7};
  int64_t n = count(shape);
  expectSame<T>(
      "fill", n, [&](T *out) { host::fill(out, shape, value); },
      [&](T *out) { cuda::fill(out, shape, value); });
  Vec<T> in = randomValues<T>(n);
  Dev<T> dIn(in);
  expectSame<T>(
      "copy", n,
      [&](T *out) { host::copy(out, Shape{105}, data<T>(in), shape); },
      [&](T *out) { cuda::copy(out, Shape{105}, dIn.get(), shape); });
  expectSame<T>(
      "reshape", n,
      [&](T *out) {
        host::reshape(out, Shape{15, 7}, data<T>(in), shape);
      },
      [&](T *out) {
        cuda::reshape(out, Shape{15, 7}, dIn.get(), shape);
      });
}

TEST(CudaKernels, FillAndCopy) {
  REQUIRE_DEVICE();
  for (double value : {0.0, -2.5, 3.75, 1e10}) {
    checkFillAndCopy<float>(value);
    checkFillAndCopy<double>(value);
    checkFillAndCopy<int32_t>(value);
    checkFillAndCopy<int64_t>(value);
    checkFillAndCopy<bool>(value);
  }
  // Empty tensors launch nothing.
  cuda::fill(static_cast<float *>(nullptr), Shape{0, 4}, 1.0);
  cuda::synchronize();
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

TYPED_TEST(CudaKernelsFloat, Matmul) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  struct Case {
    Shape lhs, rhs, result;
    bool transLhs, transRhs;
  };
  const Case cases[] = {
      {{7, 5}, {5, 9}, {7, 9}, false, false},
      {{5, 7}, {5, 9}, {7, 9}, true, false},
      {{7, 5}, {9, 5}, {7, 9}, false, true},
      {{5, 7}, {9, 5}, {7, 9}, true, true},
      {{1, 64}, {64, 1}, {1, 1}, false, false},
      {{33, 70}, {70, 17}, {33, 17}, false, false},
      // Batches: equal, broadcast rhs, broadcast on both sides, ranks
      // differing.
      {{4, 6, 3}, {4, 3, 5}, {4, 6, 5}, false, false},
      {{2, 3, 6, 4}, {4, 5}, {2, 3, 6, 5}, false, false},
      {{3, 1, 4, 6}, {2, 5, 4}, {3, 2, 6, 5}, true, true},
      {{2, 1, 3, 4}, {1, 3, 4, 2}, {2, 3, 3, 2}, false, false},
      // An empty contraction gives zeros.
      {{3, 0}, {0, 4}, {3, 4}, false, false},
  };
  for (const Case &c : cases) {
    Vec<T> lhs = randomFloat<T>(count(c.lhs)),
           rhs = randomFloat<T>(count(c.rhs));
    Dev<T> dLhs(lhs), dRhs(rhs);
    expectSame<T>(
        "matmul " + str(c.lhs) + " x " + str(c.rhs), count(c.result),
        [&](T *out) {
          host::matmul(out, c.result, data<T>(lhs), c.lhs, data<T>(rhs), c.rhs,
                       c.transLhs, c.transRhs);
        },
        [&](T *out) {
          cuda::matmul(out, c.result, dLhs.get(), c.lhs, dRhs.get(), c.rhs,
                       c.transLhs, c.transRhs);
        });
  }
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

template <typename To, typename From> void checkCast(const Vec<From> &in) {
  Shape shape{static_cast<int64_t>(in.size())};
  Dev<From> dIn(in);
  expectSame<To>(
      "cast", count(shape),
      [&](To *out) { host::cast(out, shape, data<From>(in), shape); },
      [&](To *out) { cuda::cast(out, shape, dIn.get(), shape); });
}

template <typename From> void checkCastsFrom(const Vec<From> &in) {
  checkCast<float, From>(in);
  checkCast<double, From>(in);
  checkCast<int32_t, From>(in);
  checkCast<int64_t, From>(in);
  checkCast<bool, From>(in);
}

TEST(CudaKernels, Cast) {
  REQUIRE_DEVICE();
  Vec<double> doubles = randomFloat<double>(64, -1e3, 1e3);
  doubles[0] = std::numeric_limits<double>::quiet_NaN();
  doubles[1] = 1e30;  // Saturates.
  doubles[2] = -1e30; // Saturates.
  doubles[3] = 0.0;
  doubles[4] = -0.75;
  checkCastsFrom<double>(doubles);
  Vec<float> floats(doubles.begin(), doubles.end());
  checkCastsFrom<float>(floats);
  Vec<int64_t> longs = randomInt<int64_t>(64, -5000000000LL, 5000000000LL);
  longs[0] = 0;
  checkCastsFrom<int64_t>(longs);
  checkCastsFrom<int32_t>(randomInt<int32_t>(64, -100000, 100000));
  checkCastsFrom<bool>(randomInt<bool>(64, 0, 1));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TYPED_TEST(CudaKernelsFloat, Reduce) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  struct Case {
    Shape input, dims;
    double lo, hi;
  };
  const Case cases[] = {
      {{6, 7, 5}, {1}, -1, 1},
      {{6, 7, 5}, {0, 2}, -1, 1},
      {{6, 7, 5}, {2}, -1, 1},
      {{6, 7, 5}, {0, 1, 2}, 0.5, 1.5},
      {{6, 7, 5}, {}, -1, 1},
      {{64, 100}, {1}, -1, 1},
      // Few results with many inputs each: one block per result (positive
      // inputs, so that f32 sums in the host's sequential and the device's
      // tree order agree to 1e-5).
      {{3, 5000}, {1}, 0.5, 1.5},
      {{3000, 4}, {0}, 0.5, 1.5},
      {{40, 50, 3}, {0, 1}, 0.5, 1.5},
      {{6000}, {0}, 0.5, 1.5},
      // An empty reduction: 0, NaN (mean) or -inf.
      {{4, 0}, {1}, -1, 1},
  };
  for (const Case &c : cases)
    for (bool keepDims : {false, true})
      for (const char *kind : {"sum", "mean", "max"}) {
        Shape result;
        for (int64_t d = 0; d < c.input.rank; ++d) {
          bool reduced = std::find(c.dims.dims, c.dims.dims + c.dims.rank, d) !=
                         c.dims.dims + c.dims.rank;
          if (!reduced)
            result.dims[result.rank++] = c.input[d];
          else if (keepDims)
            result.dims[result.rank++] = 1;
        }
        Vec<T> in = randomFloat<T>(count(c.input), c.lo, c.hi);
        if (c.lo < 0 && in.size() > 7)
          in[7] = std::numeric_limits<T>::quiet_NaN();
        Dev<T> dIn(in);
        expectSame<T>(
            std::string("reduce ") + kind + " " + str(c.input) + " dims " +
                str(c.dims),
            count(result),
            [&](T *out) {
              host::reduce(out, result, data<T>(in), c.input, c.dims, keepDims,
                           kind);
            },
            [&](T *out) {
              cuda::reduce(out, result, dIn.get(), c.input, c.dims, keepDims,
                           kind);
            });
      }
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

template <typename T> void checkDataMovement() {
  // broadcast: numpy and explicit dimensions.
  {
    Shape in{3, 1}, result{2, 3, 4};
    Vec<T> x = randomValues<T>(count(in));
    Dev<T> dX(x);
    expectSame<T>(
        "broadcast numpy", count(result),
        [&](T *out) {
          host::broadcast(out, result, data<T>(x), in, host::kAbsentShape);
        },
        [&](T *out) {
          cuda::broadcast(out, result, dX.get(), in, cuda::kAbsentShape);
        });
    Shape in2{4, 2};
    Vec<T> y = randomValues<T>(count(in2));
    Dev<T> dY(y);
    Shape result2{4, 3, 2};
    expectSame<T>(
        "broadcast dims", count(result2),
        [&](T *out) {
          host::broadcast(out, result2, data<T>(y), in2, Shape{0, 2});
        },
        [&](T *out) {
          cuda::broadcast(out, result2, dY.get(), in2, Shape{0, 2});
        });
  }
  // transpose
  {
    Shape in{2, 3, 4, 5};
    Vec<T> x = randomValues<T>(count(in));
    Dev<T> dX(x);
    for (Shape perm : {Shape{0, 2, 1, 3}, Shape{3, 2, 1, 0}, Shape{1, 0, 3, 2},
                       Shape{0, 1, 2, 3}}) {
      Shape result;
      result.rank = 4;
      for (int d = 0; d < 4; ++d)
        result.dims[d] = in[perm[d]];
      expectSame<T>(
          "transpose " + str(perm), count(result),
          [&](T *out) { host::transpose(out, result, data<T>(x), in, perm); },
          [&](T *out) { cuda::transpose(out, result, dX.get(), in, perm); });
    }
  }
  // slice
  {
    Shape in{7, 9, 4};
    Vec<T> x = randomValues<T>(count(in));
    Dev<T> dX(x);
    struct Case {
      Shape offsets, sizes, strides;
    };
    for (const Case &c : {Case{{1, 2, 0}, {3, 4, 4}, {1, 1, 1}},
                          Case{{0, 1, 1}, {4, 3, 2}, {2, 3, 2}},
                          Case{{6, 0, 3}, {1, 9, 1}, {1, 1, 1}},
                          Case{{0, 0, 0}, {0, 9, 4}, {1, 1, 1}}})
      expectSame<T>(
          "slice " + str(c.offsets) + " " + str(c.sizes) + " " + str(c.strides),
          count(c.sizes),
          [&](T *out) {
            host::slice(out, c.sizes, data<T>(x), in, c.offsets, c.sizes,
                        c.strides);
          },
          [&](T *out) {
            cuda::slice(out, c.sizes, dX.get(), in, c.offsets, c.sizes,
                        c.strides);
          });
  }
  // concat, both overloads, along each dimension.
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape shapes[3] = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}};
    int64_t sizes[3] = {1, 4, 2};
    Shape result{2, 3, 4};
    result.dims[dim] = 0;
    for (int i = 0; i < 3; ++i) {
      shapes[i].dims[dim] = sizes[i];
      result.dims[dim] += sizes[i];
    }
    Vec<T> a = randomValues<T>(count(shapes[0])),
           b = randomValues<T>(count(shapes[1])),
           c = randomValues<T>(count(shapes[2]));
    Dev<T> dA(a), dB(b), dC(c);
    expectSame<T>(
        "concat dim " + std::to_string(dim), count(result),
        [&](T *out) {
          host::concat(out, result, {data<T>(a), data<T>(b), data<T>(c)},
                       {shapes[0], shapes[1], shapes[2]}, dim);
        },
        [&](T *out) {
          cuda::concat(out, result, {dA.get(), dB.get(), dC.get()},
                       {shapes[0], shapes[1], shapes[2]}, dim);
        });
    const T *pointers[3] = {dA.get(), dB.get(), dC.get()};
    expectSame<T>(
        "concat (arrays) dim " + std::to_string(dim), count(result),
        [&](T *out) {
          host::concat(out, result, {data<T>(a), data<T>(b), data<T>(c)},
                       {shapes[0], shapes[1], shapes[2]}, dim);
        },
        [&](T *out) { cuda::concat(out, result, 3, pointers, shapes, dim); });
  }
  // gather with i64 and i32 indices, some out of range.
  {
    Shape in{5, 6, 3};
    Vec<T> x = randomValues<T>(count(in));
    Dev<T> dX(x);
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape indicesShape = in;
      indicesShape.dims[dim] = 4;
      Vec<int64_t> indices64 =
          randomInt<int64_t>(count(indicesShape), -1, in[dim]);
      Vec<int32_t> indices32(indices64.begin(), indices64.end());
      Dev<int64_t> dIndices64(indices64);
      Dev<int32_t> dIndices32(indices32);
      expectSame<T>(
          "gather i64 dim " + std::to_string(dim), count(indicesShape),
          [&](T *out) {
            host::gather(out, indicesShape, data<T>(x), in, indices64.data(),
                         indicesShape, dim);
          },
          [&](T *out) {
            cuda::gather(out, indicesShape, dX.get(), in,
                         static_cast<const int64_t *>(dIndices64.get()),
                         indicesShape, dim);
          });
      expectSame<T>(
          "gather i32 dim " + std::to_string(dim), count(indicesShape),
          [&](T *out) {
            host::gather(out, indicesShape, data<T>(x), in, indices32.data(),
                         indicesShape, dim);
          },
          [&](T *out) {
            cuda::gather(out, indicesShape, dX.get(), in,
                         static_cast<const int32_t *>(dIndices32.get()),
                         indicesShape, dim);
          });
    }
  }
}

TEST(CudaKernels, DataMovement) {
  REQUIRE_DEVICE();
  checkDataMovement<float>();
  checkDataMovement<double>();
  checkDataMovement<int32_t>();
  checkDataMovement<int64_t>();
  checkDataMovement<bool>();
}

template <typename T> void checkIota() {
  Shape shape{3, 4, 5};
  Vec<int64_t> offset = {7};
  Dev<int64_t> dOffset(offset);
  for (int64_t dim = 0; dim < 3; ++dim) {
    expectSame<T>(
        "iota dim " + std::to_string(dim), count(shape),
        [&](T *out) { host::iota(out, shape, nullptr, Shape{}, dim); },
        [&](T *out) { cuda::iota(out, shape, nullptr, Shape{}, dim); });
    expectSame<T>(
        "iota with offset dim " + std::to_string(dim), count(shape),
        [&](T *out) { host::iota(out, shape, offset.data(), Shape{}, dim); },
        [&](T *out) { cuda::iota(out, shape, dOffset.get(), Shape{}, dim); });
  }
}

TYPED_TEST(CudaKernelsFloat, EmbeddingAndGatherGrad) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  const int64_t vocab = 11, width = 6;
  Shape table{vocab, width}, ids{3, 7}, result{3, 7, width};
  Vec<T> weights = randomFloat<T>(count(table));
  Dev<T> dWeights(weights);
  // Ids in [-1, vocab + 2]: some out of range (NaN rows, or zero rows with
  // an offset).
  Vec<int64_t> ids64 = randomInt<int64_t>(count(ids), -1, vocab + 2);
  Vec<int32_t> ids32(ids64.begin(), ids64.end());
  Dev<int64_t> dIds64(ids64);
  Dev<int32_t> dIds32(ids32);
  Vec<int64_t> offset = {2};
  Dev<int64_t> dOffset(offset);
  for (bool withOffset : {false, true}) {
    const int64_t *hostOffset = withOffset ? offset.data() : nullptr;
    const int64_t *deviceOffset = withOffset ? dOffset.get() : nullptr;
    Shape offsetShape{};
    std::string suffix = withOffset ? " with offset" : "";
    expectSame<T>(
        "embedding i64" + suffix, count(result),
        [&](T *out) {
          host::embedding(out, result, data<T>(weights), table, ids64.data(),
                          ids, hostOffset, offsetShape);
        },
        [&](T *out) {
          cuda::embedding(out, result, dWeights.get(), table,
                          static_cast<const int64_t *>(dIds64.get()), ids,
                          deviceOffset, offsetShape);
        });
    expectSame<T>(
        "embedding i32" + suffix, count(result),
        [&](T *out) {
          host::embedding(out, result, data<T>(weights), table, ids32.data(),
                          ids, hostOffset, offsetShape);
        },
        [&](T *out) {
          cuda::embedding(out, result, dWeights.get(), table,
                          static_cast<const int32_t *>(dIds32.get()), ids,
                          deviceOffset, offsetShape);
        });
  }

  // gather_grad along each dimension, with repeated indices (sums), some
  // out of range, with and without an offset.
  Shape resultShape{6, 5, 4};
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape gradShape = resultShape;
    gradShape.dims[dim] = 9;
    Vec<T> grad = randomFloat<T>(count(gradShape));
    Vec<int64_t> indices64 =
        randomInt<int64_t>(count(gradShape), -1, resultShape[dim] + 2);
    Vec<int32_t> indices32(indices64.begin(), indices64.end());
    Dev<T> dGrad(grad);
    Dev<int64_t> dIndices64(indices64);
    Dev<int32_t> dIndices32(indices32);
    for (bool withOffset : {false, true}) {
      const int64_t *hostOffset = withOffset ? offset.data() : nullptr;
      const int64_t *deviceOffset = withOffset ? dOffset.get() : nullptr;
      std::string name = "gather_grad dim " + std::to_string(dim) +
                         (withOffset ? " with offset" : "");
      expectSame<T>(
          name + " i64", count(resultShape),
          [&](T *out) {
            host::gather_grad(out, resultShape, data<T>(grad), gradShape,
                              indices64.data(), gradShape, hostOffset, Shape{},
                              dim);
          },
          [&](T *out) {
            cuda::gather_grad(out, resultShape, dGrad.get(), gradShape,
                              static_cast<const int64_t *>(dIndices64.get()),
                              gradShape, deviceOffset, Shape{}, dim);
          });
      expectSame<T>(
          name + " i32", count(resultShape),
          [&](T *out) {
            host::gather_grad(out, resultShape, data<T>(grad), gradShape,
                              indices32.data(), gradShape, hostOffset, Shape{},
                              dim);
          },
          [&](T *out) {
            cuda::gather_grad(out, resultShape, dGrad.get(), gradShape,
                              static_cast<const int32_t *>(dIndices32.get()),
                              gradShape, deviceOffset, Shape{}, dim);
          });
    }
  }
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

TYPED_TEST(CudaKernelsFloat, Softmax) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  for (Shape shape : {Shape{4, 7, 9}, Shape{3, 1000}, Shape{2, 300, 3}}) {
    Vec<T> x = randomFloat<T>(count(shape), -5, 5);
    x[1] = -std::numeric_limits<T>::infinity();
    Dev<T> dX(x);
    for (int64_t dim = 0; dim < shape.rank; ++dim) {
      expectSame<T>(
          "softmax " + str(shape) + " dim " + std::to_string(dim), count(shape),
          [&](T *out) { host::softmax(out, shape, data<T>(x), shape, dim); },
          [&](T *out) { cuda::softmax(out, shape, dX.get(), shape, dim); });
      expectSame<T>(
          "log_softmax " + str(shape) + " dim " + std::to_string(dim),
          count(shape),
          [&](T *out) {
            host::log_softmax(out, shape, data<T>(x), shape, dim);
          },
          [&](T *out) { cuda::log_softmax(out, shape, dX.get(), shape, dim); });
    }
  }
}

struct NormCase {
  Shape shape;
  int64_t normalizedDims;
  bool scale, bias;
  double epsilon;
};
const NormCase kNorms[] = {
    {{6, 32}, 1, true, true, 1e-5},
    {{2, 5, 48}, 1, true, false, 1e-5},
    {{4, 3, 7}, 2, false, true, 1e-3},
    {{5, 300}, 1, false, false, 1e-5},
    {{3, 700}, 1, true, true, host::kAbsent},
    {{3, 4, 5}, INT64_MIN, true, true, host::kAbsent},
};

/// The trailing `normalizedDims` dimensions (1 for INT64_MIN).
Shape trailingOf(const NormCase &c) {
  int64_t dims = c.normalizedDims == INT64_MIN ? 1 : c.normalizedDims;
  Shape trailing;
  for (int64_t d = c.shape.rank - dims; d < c.shape.rank; ++d)
    trailing.dims[trailing.rank++] = c.shape[d];
  return trailing;
}

TYPED_TEST(CudaKernelsFloat, LayerNormAndRmsNorm) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  for (const NormCase &c : kNorms) {
    Shape trailing = trailingOf(c), none{};
    int64_t n = count(c.shape);
    Vec<T> x = randomFloat<T>(n, -3, 3), dy = randomFloat<T>(n);
    Vec<T> scale = randomFloat<T>(count(trailing), 0.5, 1.5),
           bias = randomFloat<T>(count(trailing));
    Dev<T> dX(x), dDy(dy), dScale(scale), dBias(bias);
    const T *hScale = c.scale ? data<T>(scale) : nullptr;
    const T *hBias = c.bias ? data<T>(bias) : nullptr;
    const T *gScale = c.scale ? dScale.get() : nullptr;
    const T *gBias = c.bias ? dBias.get() : nullptr;
    Shape scaleShape = c.scale ? trailing : none,
          biasShape = c.bias ? trailing : none;
    std::string name = str(c.shape) + " dims " +
                       std::to_string(c.normalizedDims) +
                       (c.scale ? " scale" : "") + (c.bias ? " bias" : "");
    expectSame<T>(
        "layer_norm " + name, n,
        [&](T *out) {
          host::layer_norm(out, c.shape, data<T>(x), c.shape, hScale,
                           scaleShape, hBias, biasShape, c.epsilon,
                           c.normalizedDims);
        },
        [&](T *out) {
          cuda::layer_norm(out, c.shape, dX.get(), c.shape, gScale, scaleShape,
                           gBias, biasShape, c.epsilon, c.normalizedDims);
        });
    expectSame<T>(
        "layer_norm_grad " + name, n,
        [&](T *out) {
          host::layer_norm_grad(out, c.shape, data<T>(dy), c.shape, data<T>(x),
                                c.shape, hScale, scaleShape, c.epsilon,
                                c.normalizedDims);
        },
        [&](T *out) {
          cuda::layer_norm_grad(out, c.shape, dDy.get(), c.shape, dX.get(),
                                c.shape, gScale, scaleShape, c.epsilon,
                                c.normalizedDims);
        });
    expectSame<T>(
        "rms_norm " + name, n,
        [&](T *out) {
          host::rms_norm(out, c.shape, data<T>(x), c.shape, hScale, scaleShape,
                         c.epsilon, c.normalizedDims);
        },
        [&](T *out) {
          cuda::rms_norm(out, c.shape, dX.get(), c.shape, gScale, scaleShape,
                         c.epsilon, c.normalizedDims);
        });
    expectSame<T>(
        "rms_norm_grad " + name, n,
        [&](T *out) {
          host::rms_norm_grad(out, c.shape, data<T>(dy), c.shape, data<T>(x),
                              c.shape, hScale, scaleShape, c.epsilon,
                              c.normalizedDims);
        },
        [&](T *out) {
          cuda::rms_norm_grad(out, c.shape, dDy.get(), c.shape, dX.get(),
                              c.shape, gScale, scaleShape, c.epsilon,
                              c.normalizedDims);
        });
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t batch, seqQ, seqK, heads, kvHeads, dim, valueDim;
  const char *mask;
  bool positions;
  double scale; // NaN: absent
};

const AttentionCase kAttention[] = {
    {2, 16, 16, 4, 4, 8, 8, "causal", false, NAN},
    {2, 16, 16, 4, 4, 8, 8, "none", false, NAN},
    {3, 9, 9, 4, 2, 8, 6, "causal", false, 0.3},
    {2, 7, 13, 2, 1, 4, 5, "none", false, NAN},
    {2, 8, 16, 4, 2, 8, 8, "causal", true, NAN},
    {2, 12, 12, 2, 2, 4, 4, "tree", false, NAN},
    {1, 6, 12, 2, 1, 4, 3, "tree", true, 0.5},
    // More keys than a block has threads, a head dimension of 64, and a
    // score row too large for shared memory (f32 and f64). Long rows get a
    // large scale: peaked probabilities keep the sums well-conditioned, so
    // the host's sequential and the device's tree order agree to the
    // tolerance.
    {1, 300, 300, 2, 1, 64, 64, "causal", false, 1.0},
    {1, 2, 8300, 1, 1, 4, 4, "none", false, 4.0},
};

/// Random inputs of one attention case, on the host and the device.
template <typename T, typename Index> struct AttentionInputs {
  Shape queryShape, keyShape, valueShape, outShape, subtreeShape,
      positionsShape;
  Vec<T> query, key, value, dout;
  Vec<Index> subtreeEnd, positions;
  Dev<T> dQuery, dKey, dValue, dDout;
  Dev<Index> dSubtreeEnd, dPositions;
  bool tree, hasPositions;

  static Vec<Index> subtreeEnds(const AttentionCase &c) {
    Vec<Index> ends(static_cast<size_t>(c.batch * c.seqK));
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j = 0; j < c.seqK; ++j)
        ends[b * c.seqK + j] =
            static_cast<Index>(randomInt<int64_t>(1, j, c.seqK - 1)[0]);
    return ends;
  }

  explicit AttentionInputs(const AttentionCase &c)
      : queryShape{c.batch, c.seqQ, c.heads, c.dim}, keyShape{c.batch, c.seqK,
                                                              c.kvHeads, c.dim},
        valueShape{c.batch, c.seqK, c.kvHeads, c.valueDim},
        outShape{c.batch, c.seqQ, c.heads, c.valueDim},
        subtreeShape{c.batch, c.seqK}, positionsShape{c.batch, c.seqQ},
        query(randomFloat<T>(count(queryShape), -2, 2)),
        key(randomFloat<T>(count(keyShape), -2, 2)),
        value(randomFloat<T>(count(valueShape))),
        dout(randomFloat<T>(count(outShape))), subtreeEnd(subtreeEnds(c)),
        // Positions in [-1, seq_k): -1 sees no key (a zero row).
        positions(randomInt<Index>(c.batch * c.seqQ, -1, c.seqK - 1)),
        dQuery(query), dKey(key), dValue(value), dDout(dout),
        dSubtreeEnd(subtreeEnd), dPositions(positions),
        tree(std::string(c.mask) == "tree"), hasPositions(c.positions) {}

  host::IndexPtr hostSubtree() const {
    return tree ? host::IndexPtr(subtreeEnd.data()) : nullptr;
  }
  host::IndexPtr hostPositions() const {
    return hasPositions ? host::IndexPtr(positions.data()) : nullptr;
  }
  host::IndexPtr deviceSubtree() const {
    return tree ? host::IndexPtr(static_cast<const Index *>(dSubtreeEnd.get()))
                : nullptr;
  }
  host::IndexPtr devicePositions() const {
    return hasPositions
               ? host::IndexPtr(static_cast<const Index *>(dPositions.get()))
               : nullptr;
  }
  Shape subtreeArg() const { return tree ? subtreeShape : Shape{}; }
  Shape positionsArg() const { return hasPositions ? positionsShape : Shape{}; }
};

template <typename T, typename Index> void checkAttention() {
  for (const AttentionCase &c : kAttention) {
    AttentionInputs<T, Index> in(c);
    double scale = std::isnan(c.scale) ? host::kAbsent : c.scale;
    std::string name = std::string(c.mask) + " " + str(in.queryShape) + " " +
                       str(in.keyShape) + (c.positions ? " positions" : "") +
                       (sizeof(Index) == 4 ? " i32" : " i64");
    expectSame<T>(
        "attention " + name, count(in.outShape),
        [&](T *out) {
          host::attention(out, in.outShape, data<T>(in.query), in.queryShape,
                          data<T>(in.key), in.keyShape, data<T>(in.value),
                          in.valueShape, in.hostSubtree(), in.subtreeArg(),
                          in.hostPositions(), in.positionsArg(), c.mask, scale);
        },
        [&](T *out) {
          cuda::attention(out, in.outShape, in.dQuery.get(), in.queryShape,
                          in.dKey.get(), in.keyShape, in.dValue.get(),
                          in.valueShape, in.deviceSubtree(), in.subtreeArg(),
                          in.devicePositions(), in.positionsArg(), c.mask,
                          scale);
        });

    Vec<T> dq = garbage<T>(count(in.queryShape)),
           dk = garbage<T>(count(in.keyShape)),
           dv = garbage<T>(count(in.valueShape));
    host::attention_grad(data<T>(dq), in.queryShape, data<T>(dk), in.keyShape,
                         data<T>(dv), in.valueShape, data<T>(in.dout),
                         in.outShape, data<T>(in.query), in.queryShape,
                         data<T>(in.key), in.keyShape, data<T>(in.value),
                         in.valueShape, in.hostSubtree(), in.subtreeArg(),
                         in.hostPositions(), in.positionsArg(), c.mask, scale);
    auto gDq = Dev<T>::garbage(dq.size()), gDk = Dev<T>::garbage(dk.size()),
         gDv = Dev<T>::garbage(dv.size());
    cuda::attention_grad(
        gDq.get(), in.queryShape, gDk.get(), in.keyShape, gDv.get(),
        in.valueShape, in.dDout.get(), in.outShape, in.dQuery.get(),
        in.queryShape, in.dKey.get(), in.keyShape, in.dValue.get(),
        in.valueShape, in.deviceSubtree(), in.subtreeArg(),
        in.devicePositions(), in.positionsArg(), c.mask, scale);
    expectClose<T>("attention_grad dquery " + name, gDq.read(), dq);
    expectClose<T>("attention_grad dkey " + name, gDk.read(), dk);
    expectClose<T>("attention_grad dvalue " + name, gDv.read(), dv);
  }
}

TYPED_TEST(CudaKernelsFloat, AttentionAndGrad) {
  REQUIRE_DEVICE();
  checkAttention<TypeParam, int64_t>();
  checkAttention<TypeParam, int32_t>();
}

// The tree-aware kernel on a GRPO-shaped trie (a prompt of 300 tokens, 4
// responses of 100, packed depth first) and on the causal chain of the same
// length: forward and backward within the tolerance of the host's dense
// masked path (the oracle) in f32 and f64; skipping on and off give the
// same bits; every query lists exactly its ancestors and itself (the count
// is heads times the sum of depths + 1); and skipping tests far fewer
// keys than walking every key up to the query (the responses skip their
// siblings).
template <typename T> void checkTreeAttention() {
  const int64_t prompt = 300, response = 100, branches = 4;
  const int64_t seq = prompt + branches * response, heads = 2, dim = 16;
  Vec<int64_t> ends(static_cast<size_t>(seq));
  int64_t depths = 0;
  for (int64_t j = 0; j < seq; ++j) {
    int64_t branchEnd = j < prompt ? seq - 1
                                   : prompt + ((j - prompt) / response + 1) *
                                                  response - 1;
    ends[j] = branchEnd;
    depths += j < prompt ? j + 1 : prompt + (j - prompt) % response + 1;
  }
  Shape qs{1, seq, heads, dim}, os{1, seq, heads, dim};
  Vec<T> q = randomFloat<T>(count(qs), -2, 2), k = randomFloat<T>(count(qs), -2, 2),
         v = randomFloat<T>(count(qs)), dout = randomFloat<T>(count(os));
  Dev<T> devQ(q), devK(k), devV(v), ddout(dout);
  Dev<int64_t> dEnds(ends);
  for (const char *mask : {"tree", "causal"}) {
    bool tree = !std::strcmp(mask, "tree");
    host::IndexPtr hostEnds = tree ? host::IndexPtr(ends.data()) : nullptr;
    host::IndexPtr devEnds =
        tree ? host::IndexPtr(static_cast<const int64_t *>(dEnds.get()))
             : nullptr;
    Shape endsShape = tree ? Shape{1, seq} : Shape{};
    host::setAttentionRangeSkipping(host::AttentionSkipping::Never);
    Vec<T> out(count(os)), gq(count(qs)), gk(count(qs)), gv(count(qs));
    host::attention(data<T>(out), os, data<T>(q), qs, data<T>(k), qs,
                    data<T>(v), qs, hostEnds, endsShape, nullptr, {}, mask,
                    host::kAbsent);
    host::attention_grad(data<T>(gq), qs, data<T>(gk), qs, data<T>(gv), qs,
                         data<T>(dout), os, data<T>(q), qs, data<T>(k), qs,
                         data<T>(v), qs, hostEnds, endsShape, nullptr, {},
                         mask, host::kAbsent);
    host::setAttentionRangeSkipping(host::AttentionSkipping::Auto);
    Vec<T> results[2][4];
    int64_t listed[2], tested[2];
    for (int skip = 0; skip < 2; ++skip) {
      cuda::setAttentionRangeSkipping(skip == 1);
      int64_t listedBefore = cuda::getAttentionKeysVisited(),
              testedBefore = cuda::getAttentionKeysTested();
      auto o = Dev<T>::garbage(count(os));
      cuda::attention(o.get(), os, devQ.get(), qs, devK.get(), qs, devV.get(), qs,
                      devEnds, endsShape, nullptr, {}, mask, host::kAbsent);
      listed[skip] = cuda::getAttentionKeysVisited() - listedBefore;
      tested[skip] = cuda::getAttentionKeysTested() - testedBefore;
      auto a = Dev<T>::garbage(count(qs)), b = Dev<T>::garbage(count(qs)),
           c = Dev<T>::garbage(count(qs));
      cuda::attention_grad(a.get(), qs, b.get(), qs, c.get(), qs, ddout.get(),
                           os, devQ.get(), qs, devK.get(), qs, devV.get(), qs,
                           devEnds, endsShape, nullptr, {}, mask,
                           host::kAbsent);
      results[skip][0] = o.read();
      results[skip][1] = a.read();
      results[skip][2] = b.read();
      results[skip][3] = c.read();
    }
    cuda::setAttentionRangeSkipping(true);
    std::string name = std::string("tree-aware attention, ") + mask;
    expectClose<T>(name + " forward", results[1][0], out);
    expectClose<T>(name + " dquery", results[1][1], gq);
    expectClose<T>(name + " dkey", results[1][2], gk);
    expectClose<T>(name + " dvalue", results[1][3], gv);
    for (int n = 0; n < 4; ++n)
      EXPECT_TRUE(results[0][n].size() == results[1][n].size() &&
                  std::memcmp(results[0][n].data(), results[1][n].data(),
                              results[0][n].size() * sizeof(T)) == 0)
          << name << ": skipping changed result " << n;
    int64_t pairs = tree ? depths : seq * (seq + 1) / 2;
    EXPECT_EQ(listed[1], heads * pairs) << name;
    EXPECT_EQ(listed[0], heads * pairs) << name;
    if (tree)
      EXPECT_LT(tested[1] * 2, tested[0]) << name << ": siblings not skipped";
    else
      EXPECT_EQ(tested[1], tested[0]) << name;
  }
}

TYPED_TEST(CudaKernelsFloat, TreeAwareAttention) {
  REQUIRE_DEVICE();
  checkTreeAttention<TypeParam>();
}

TYPED_TEST(CudaKernelsFloat, Dropout) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  Shape shape{17, 61};
  Vec<T> x = randomFloat<T>(count(shape));
  Vec<int64_t> offset = {12345};
  Dev<T> dX(x);
  Dev<int64_t> dOffset(offset);
  for (bool withOffset : {false, true})
    expectSame<T>(
        std::string("dropout") + (withOffset ? " with offset" : ""),
        count(shape),
        [&](T *out) {
          host::dropout(out, shape, data<T>(x), shape,
                        withOffset ? offset.data() : nullptr, Shape{}, {}, {},
                        host::kAbsentShape, 0.3, 42);
        },
        [&](T *out) {
          cuda::dropout(out, shape, dX.get(), shape,
                        withOffset ? dOffset.get() : nullptr, Shape{}, {}, {},
                        host::kAbsentShape, 0.3, 42);
        });
  // The block [5:22, 3:64] of a 40x70 tensor; its starts are device
  // scalars.
  Vec<int64_t> row = {5}, column = {3};
  Dev<int64_t> dRow(row), dColumn(column);
  expectSame<T>(
      "dropout of a block", count(shape),
      [&](T *out) {
        host::dropout(out, shape, data<T>(x), shape, nullptr, Shape{},
                      {row.data(), column.data()}, {Shape{}, Shape{}},
                      Shape{40, 70}, 0.3, 42);
      },
      [&](T *out) {
        cuda::dropout(out, shape, dX.get(), shape, nullptr, Shape{},
                      {dRow.get(), dColumn.get()}, {Shape{}, Shape{}},
                      Shape{40, 70}, 0.3, 42);
      });
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

TYPED_TEST(CudaKernelsFloat, CrossEntropyAndGrad) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  struct Case {
    Shape logits;
    bool weights, operandNormalizer, badLabel;
  };
  const Case cases[] = {
      {{4, 6, 11}, false, false, false},
      {{24, 11}, true, false, false},
      {{24, 11}, true, true, false},
      {{3, 1500}, false, true, false},
      // A label out of range in a weighted row: NaN loss.
      {{8, 5}, false, false, true},
  };
  for (const Case &c : cases) {
    Shape rows = c.logits;
    --rows.rank;
    int64_t vocab = c.logits[c.logits.rank - 1], n = count(rows);
    Vec<T> logits = randomFloat<T>(count(c.logits), -4, 4);
    Vec<int64_t> labels = randomInt<int64_t>(n, 0, vocab - 1);
    Vec<T> weights = randomFloat<T>(n, 0.5, 1.5);
    if (c.weights) {
      // Zero weights, one with a label out of range (contributes nothing).
      weights[1] = 0;
      weights[2] = 0;
      labels[2] = vocab + 3;
    }
    if (c.badLabel)
      labels[3] = -1;
    Vec<T> normalizer = {static_cast<T>(n) * T(0.75)}, grad = {T(1.25)};
    Dev<T> dLogits(logits), dWeights(weights), dNormalizer(normalizer),
        dGrad(grad);
    Dev<int64_t> dLabels(labels);
    const T *hWeights = c.weights ? data<T>(weights) : nullptr;
    const T *gWeights = c.weights ? dWeights.get() : nullptr;
    Shape weightsShape = c.weights ? rows : Shape{};
    const T *hNorm = c.operandNormalizer ? data<T>(normalizer) : nullptr;
    const T *gNorm = c.operandNormalizer ? dNormalizer.get() : nullptr;
    double attr = c.operandNormalizer ? host::kAbsent : 7.0;
    std::string name = str(c.logits) + (c.weights ? " weights" : "") +
                       (c.operandNormalizer ? " normalizer operand" : "") +
                       (c.badLabel ? " bad label" : "");
    expectSame<T>(
        "cross_entropy " + name, 1,
        [&](T *out) {
          host::cross_entropy(out, Shape{}, data<T>(logits), c.logits,
                              labels.data(), rows, hWeights, weightsShape,
                              hNorm, Shape{}, attr);
        },
        [&](T *out) {
          cuda::cross_entropy(out, Shape{}, dLogits.get(), c.logits,
                              static_cast<const int64_t *>(dLabels.get()), rows,
                              gWeights, weightsShape, gNorm, Shape{}, attr);
        });
    expectSame<T>(
        "cross_entropy_grad " + name, count(c.logits),
        [&](T *out) {
          host::cross_entropy_grad(out, c.logits, data<T>(grad), Shape{},
                                   data<T>(logits), c.logits, labels.data(),
                                   rows, hWeights, weightsShape, hNorm, Shape{},
                                   attr);
        },
        [&](T *out) {
          cuda::cross_entropy_grad(
              out, c.logits, dGrad.get(), Shape{}, dLogits.get(), c.logits,
              static_cast<const int64_t *>(dLabels.get()), rows, gWeights,
              weightsShape, gNorm, Shape{}, attr);
        });
  }
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

TYPED_TEST(CudaKernelsFloat, SgdUpdate) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  Shape shape{37, 29};
  int64_t n = count(shape);
  Vec<T> param = randomFloat<T>(n), grad = randomFloat<T>(n),
         buffer = randomFloat<T>(n);
  struct Case {
    double momentum, weightDecay;
    bool nesterov;
    // A schedule (step 6 of warm-up 2, linear decay over 10 to 0.01), or
    // none and no step.
    bool scheduled;
  };
  Vec<int64_t> step = {6};
  for (const Case &c :
       {Case{0.9, 0.01, false, false}, Case{0.9, 0.0, true, true},
        Case{host::kAbsent, host::kAbsent, false, false}})
    for (bool inPlace : {false, true}) {
      Vec<T> newParam = garbage<T>(n), newBuffer = garbage<T>(n);
      const char *decay = c.scheduled ? "linear" : "constant";
      int64_t warmup = c.scheduled ? 2 : 0, decaySteps = c.scheduled ? 10 : 0;
      double minLr = c.scheduled ? 0.01 : 0.0;
      host::sgd_update(data<T>(newParam), shape, data<T>(newBuffer), shape,
                       data<T>(param), shape, data<T>(grad), shape,
                       data<T>(buffer), shape,
                       c.scheduled ? step.data() : nullptr, Shape{}, decay,
                       decaySteps, 0.05, minLr, c.momentum, c.nesterov, warmup,
                       c.weightDecay);
      Dev<int64_t> dStep(step);
      Dev<T> dParam(param), dGrad(grad), dBuffer(buffer);
      auto dNewParam = Dev<T>::garbage(n), dNewBuffer = Dev<T>::garbage(n);
      T *outParam = inPlace ? dParam.get() : dNewParam.get();
      T *outBuffer = inPlace ? dBuffer.get() : dNewBuffer.get();
      cuda::sgd_update(outParam, shape, outBuffer, shape, dParam.get(), shape,
                       dGrad.get(), shape, dBuffer.get(), shape,
                       c.scheduled ? dStep.get() : nullptr, Shape{}, decay,
                       decaySteps, 0.05, minLr, c.momentum, c.nesterov, warmup,
                       c.weightDecay);
      std::string name = std::string("sgd_update") +
                         (c.nesterov ? " nesterov" : "") +
                         (inPlace ? " in place" : "");
      expectClose<T>(name + " param",
                     inPlace ? dParam.read() : dNewParam.read(), newParam);
      expectClose<T>(name + " momentum",
                     inPlace ? dBuffer.read() : dNewBuffer.read(), newBuffer);
    }
}

TYPED_TEST(CudaKernelsFloat, AdamWUpdate) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  Shape shape{41, 23};
  int64_t n = count(shape);
  Vec<T> param = randomFloat<T>(n), grad = randomFloat<T>(n),
         m = randomFloat<T>(n, -0.1, 0.1), v = randomFloat<T>(n, 0.0, 0.01);
  for (int64_t stepValue : {1, 7, 1000})
    for (bool inPlace : {false, true}) {
      Vec<int64_t> step = {stepValue};
      Vec<T> newParam = garbage<T>(n), newM = garbage<T>(n),
             newV = garbage<T>(n);
      host::adamw_update(
          data<T>(newParam), shape, data<T>(newM), shape, data<T>(newV), shape,
          data<T>(param), shape, data<T>(grad), shape, data<T>(m), shape,
          data<T>(v), shape, step.data(), Shape{}, 0.9, 0.95, "cosine", 500,
          1e-8, 3e-4, 3e-5, 5, 0.1);
      Dev<T> dParam(param), dGrad(grad), dM(m), dV(v);
      Dev<int64_t> dStep(step);
      auto gParam = Dev<T>::garbage(n), gM = Dev<T>::garbage(n),
           gV = Dev<T>::garbage(n);
      T *outParam = inPlace ? dParam.get() : gParam.get();
      T *outM = inPlace ? dM.get() : gM.get();
      T *outV = inPlace ? dV.get() : gV.get();
      cuda::adamw_update(outParam, shape, outM, shape, outV, shape,
                         dParam.get(), shape, dGrad.get(), shape, dM.get(),
                         shape, dV.get(), shape, dStep.get(), Shape{}, 0.9,
                         0.95, "cosine", 500, 1e-8, 3e-4, 3e-5, 5, 0.1);
      std::string name = "adamw_update step " + std::to_string(stepValue) +
                         (inPlace ? " in place" : "");
      expectClose<T>(name + " param", inPlace ? dParam.read() : gParam.read(),
                     newParam);
      expectClose<T>(name + " m", inPlace ? dM.read() : gM.read(), newM);
      expectClose<T>(name + " v", inPlace ? dV.read() : gV.read(), newV);
    }
}

//===----------------------------------------------------------------------===//
// Determinism
//===----------------------------------------------------------------------===//

/// Runs `run(T *result)` twice into fresh device buffers of `n` elements;
/// the two results must be the same bits.
template <typename T, typename Run>
void expectSameBits(const std::string &what, int64_t n, Run run) {
  auto first = Dev<T>::garbage(n), second = Dev<T>::garbage(n);
  run(first.get());
  run(second.get());
  Vec<T> a = first.read(), b = second.read();
  EXPECT_TRUE(
      a.size() == b.size() &&
      (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0))
      << what << " differs between two runs";
}

TYPED_TEST(CudaKernelsFloat, RepeatedRunsGiveTheSameBits) {
  REQUIRE_DEVICE();
  using T = TypeParam;
  Shape big{3, 20000};
  Vec<T> x = randomFloat<T>(count(big)), dy = randomFloat<T>(count(big));
  Dev<T> dX(x), dDy(dy);
  expectSameBits<T>("reduce sum", 3, [&](T *out) {
    cuda::reduce(out, Shape{3}, dX.get(), big, Shape{1}, false, "sum");
  });
  expectSameBits<T>("reduce sum (all)", 1, [&](T *out) {
    cuda::reduce(out, Shape{}, dX.get(), big, Shape{0, 1}, false, "sum");
  });
  expectSameBits<T>("layer_norm_grad", count(big), [&](T *out) {
    cuda::layer_norm_grad(out, big, dDy.get(), big, dX.get(), big, nullptr,
                          Shape{}, 1e-5, 1);
  });
  expectSameBits<T>("softmax", count(big),
                    [&](T *out) { cuda::softmax(out, big, dX.get(), big, 1); });
  Vec<int64_t> labels = randomInt<int64_t>(3, 0, 19999);
  Dev<int64_t> dLabels(labels);
  expectSameBits<T>("cross_entropy", 1, [&](T *out) {
    cuda::cross_entropy(out, Shape{}, dX.get(), big,
                        static_cast<const int64_t *>(dLabels.get()), Shape{3},
                        nullptr, Shape{}, nullptr, Shape{}, 3.0);
  });
  Shape matrix{300, 200};
  expectSameBits<T>("matmul", 300 * 300, [&](T *out) {
    cuda::matmul(out, Shape{300, 300}, dX.get(), matrix, dDy.get(), matrix,
                 false, true);
  });
  Shape table{50, 64};
  Vec<int64_t> tokens = randomInt<int64_t>(400, 0, 49);
  Vec<int64_t> indices(400 * 64);
  for (size_t i = 0; i < indices.size(); ++i)
    indices[i] = tokens[i / 64];
  Dev<int64_t> dIndices(indices);
  expectSameBits<T>("gather_grad", count(table), [&](T *out) {
    cuda::gather_grad(out, table, dDy.get(), Shape{400, 64},
                      static_cast<const int64_t *>(dIndices.get()),
                      Shape{400, 64}, nullptr, Shape{}, 0);
  });
  AttentionCase c{2, 64, 64, 4, 2, 16, 16, "causal", false, NAN};
  AttentionInputs<T, int64_t> in(c);
  auto attentionGrad = [&](T *dq, T *dk, T *dv) {
    cuda::attention_grad(dq, in.queryShape, dk, in.keyShape, dv, in.valueShape,
                         in.dDout.get(), in.outShape, in.dQuery.get(),
                         in.queryShape, in.dKey.get(), in.keyShape,
                         in.dValue.get(), in.valueShape, nullptr, Shape{},
                         nullptr, Shape{}, c.mask, host::kAbsent);
  };
  auto dk1 = Dev<T>::garbage(count(in.keyShape)),
       dk2 = Dev<T>::garbage(count(in.keyShape));
  auto dq = Dev<T>::garbage(count(in.queryShape)),
       dv = Dev<T>::garbage(count(in.valueShape));
  attentionGrad(dq.get(), dk1.get(), dv.get());
  attentionGrad(dq.get(), dk2.get(), dv.get());
  Vec<T> a = dk1.read(), b = dk2.read();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)), 0)
      << "attention_grad dkey differs between two runs";
}

} // namespace
