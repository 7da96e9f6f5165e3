//===- CudaSupport.cuh - Helpers shared by the CUDA kernels ----*- CUDA -*-===//
//
// Internal to runtime/cuda: the current stream and cuBLAS handle, argument
// checks that end the process with a message (the host kernels' checks,
// naming `loom::cuda::<kernel>`), keyword parsing, launch helpers, strided
// index spaces evaluated on the device, stream-ordered scratch memory and a
// deterministic block reduction.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDASUPPORT_CUH
#define LOOM_RUNTIME_CUDA_CUDASUPPORT_CUH

#include "runtime/cuda/CudaKernels.h"
#include "runtime/kernels/Math.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace loom::cuda::detail {

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

/// The stream kernels launch on (setContext's; null is the default stream).
cudaStream_t stream();
/// setContext's cuBLAS handle, or one created on first use; bound to
/// stream().
cublasHandle_t cublas();

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

/// Prints `loom::cuda::<kernel>: <message>` to stderr and aborts.
[[noreturn]] void fatal(const char *kernel, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#define LOOM_CUDA_CHECK(condition, kernel, ...)                                \
  do {                                                                         \
    if (!(condition))                                                          \
      ::loom::cuda::detail::fatal(kernel, __VA_ARGS__);                        \
  } while (false)

/// Ends the process when a CUDA call failed.
void checkCuda(cudaError_t error, const char *kernel, const char *what);
/// Ends the process when the last launch failed (cudaGetLastError).
/// Then records the launch's time where LOOM_CUDA_KERNEL_TIMES asks.
void checkLaunch(const char *kernel);
/// Under LOOM_CUDA_KERNEL_TIMES=FILE, drains the stream and charges the
/// time since the previous record, synchronize or blocking copy to
/// `kernel` (FILE, written at exit: a line per kernel, name launches
/// seconds); nothing otherwise. Every launch, cuBLAS call and device copy
/// of a kernel records; what the runtime itself queues between kernels
/// (collectives, packing copies) falls to the next kernel, or to none
/// where a blocking copy waits for it first.
void recordKernel(const char *kernel);

/// `[4, 8]`, into a thread-local buffer valid until the next call on the
/// thread with the same `slot` (0..3).
const char *formatShape(const Shape &shape, int slot = 0);
bool sameShape(const Shape &a, const Shape &b);
void checkShape(const char *kernel, const char *what, const Shape &actual,
                const Shape &expected);
void checkValid(const char *kernel, const char *what, const Shape &shape);
void checkSameCount(const char *kernel, const Shape &result,
                    const Shape &input);

//===----------------------------------------------------------------------===//
// Keywords and defaults
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max };
enum class MaskKind { None, Causal, Tree };

bool parseGeluTanh(const char *kernel, const char *keyword);
math::Predicate parsePredicate(const char *kernel, const char *keyword);
ReduceKind parseReduceKind(const char *kernel, const char *keyword);
MaskKind parseMaskKind(const char *kernel, const char *keyword);

inline double orDefault(double value, double fallback) {
  return value != value ? fallback : value;
}
inline int64_t orDefault(int64_t value, int64_t fallback) {
  return value == INT64_MIN ? fallback : value;
}

//===----------------------------------------------------------------------===//
// Strides and index spaces
//===----------------------------------------------------------------------===//

void getRowMajorStrides(const Shape &shape, int64_t *strides);
/// numpy broadcasting of `shape` to `result` (ends the process otherwise).
void getBroadcastStrides(const char *kernel, const Shape &shape,
                         const Shape &result, int64_t *strides);

struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAt(const Shape &shape, int64_t dim);

/// A row-major iteration space with N operands, each with its own strides
/// and base offset; set up on the host (passed to kernels by value), where
/// each thread turns a linear index into the operands' offsets.
template <int N> struct Space {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};
  int64_t bases[N] = {};

  explicit Space(const Shape &space) {
    rank = static_cast<int>(space.rank);
    for (int d = 0; d < rank; ++d)
      shape[d] = space.dims[d];
  }

  /// Drops dimensions of size 1 and merges neighbours every operand walks
  /// contiguously (fewer divisions per element); leaves at least one.
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

  /// The operands' offsets of row-major element `linear`.
  __device__ void offsets(int64_t linear, int64_t *out) const {
    for (int k = 0; k < N; ++k)
      out[k] = bases[k];
    for (int d = rank - 1; d >= 0; --d) {
      int64_t size = shape[d];
      int64_t i = linear % size;
      linear /= size;
      for (int k = 0; k < N; ++k)
        out[k] += i * strides[k][d];
    }
  }
};

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

/// Threads per block of the element-wise kernels.
constexpr int kThreads = 256;
/// The largest block of the row kernels (blockReduce's buffer).
constexpr int kMaxBlock = 256;

/// Blocks for `count` elements at `threads` per block; kernels loop with a
/// grid stride, so the count is capped.
inline unsigned gridFor(int64_t count, int threads = kThreads) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > (int64_t{1} << 20))
    blocks = int64_t{1} << 20;
  return static_cast<unsigned>(blocks);
}

/// The block size of a kernel with one block per row of `length`
/// elements: a power of two in [32, kMaxBlock]. Depends only on the shape,
/// so the reduction order, hence the bits, are the same on every run.
inline int rowThreads(int64_t length) {
  int threads = 32;
  while (threads < kMaxBlock && threads < length)
    threads *= 2;
  return threads;
}

/// Grid-stride loop over [0, count).
#define LOOM_CUDA_FOR(i, count)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;             \
       i < (count); i += int64_t{gridDim.x} * blockDim.x)

/// A deterministic sum (or other combination) over the block: the values
/// combine in a fixed tree order that depends only on blockDim.x (a power of
/// two, at most kMaxBlock). Every thread of the block must call it; every
/// thread gets the result.
template <typename T, typename Op>
__device__ inline T blockReduce(T value, Op op) {
  __shared__ T buffer[kMaxBlock];
  unsigned t = threadIdx.x;
  __syncthreads(); // Earlier readers of buffer[0] are done.
  buffer[t] = value;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      buffer[t] = op(buffer[t], buffer[t + s]);
    __syncthreads();
  }
  return buffer[0];
}

struct SumOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    return math::runningMax(a, b);
  }
};
struct OrOp {
  __device__ int operator()(int a, int b) const { return a | b; }
};

//===----------------------------------------------------------------------===//
// Index operands and values
//===----------------------------------------------------------------------===//

/// An IndexPtr that device code reads.
struct DeviceIndex {
  const void *data = nullptr;
  bool is64 = true;

  DeviceIndex() = default;
  explicit DeviceIndex(IndexPtr index) : data(index.data), is64(index.is64) {}
  __device__ int64_t operator[](int64_t i) const {
    return is64 ? static_cast<const int64_t *>(data)[i]
                : static_cast<int64_t>(static_cast<const int32_t *>(data)[i]);
  }
};

/// A quiet NaN for floats, 0 otherwise (out-of-range gathers and lookups).
template <typename T> __device__ inline T undefinedValue() {
  if constexpr (std::is_same_v<T, float>)
    return __int_as_float(0x7fc00000);
  else if constexpr (std::is_same_v<T, double>)
    return __longlong_as_double(0x7ff8000000000000LL);
  else
    return T(0);
}

template <typename T> __device__ inline T negativeInfinity() {
  if constexpr (std::is_same_v<T, float>)
    return __int_as_float(static_cast<int>(0xff800000u));
  else
    return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
}

//===----------------------------------------------------------------------===//
// Scratch
//===----------------------------------------------------------------------===//

/// `count` elements of device memory from the stream-ordered allocator,
/// freed (in stream order) when the object goes out of scope.
template <typename T> class Scratch {
public:
  Scratch(const char *kernel, size_t count) {
    if (count)
      checkCuda(cudaMallocAsync(reinterpret_cast<void **>(&data_),
                                count * sizeof(T), stream()),
                kernel, "cudaMallocAsync");
  }
  ~Scratch() {
    if (data_)
      cudaFreeAsync(data_, stream());
  }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  T *get() const { return data_; }

private:
  T *data_ = nullptr;
};

/// Zeroes `count` elements at `data` (asynchronously, on stream()).
template <typename T> void zero(const char *kernel, T *data, int64_t count) {
  if (count > 0)
    checkCuda(cudaMemsetAsync(data, 0, static_cast<size_t>(count) * sizeof(T),
                              stream()),
              kernel, "cudaMemsetAsync");
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

/// `batch` row-major GEMMs C_i = op(A_i) op(B_i) (m x n, contraction k;
/// A_i = a + i * strideA etc.) through cuBLAS (MatmulKernels.cu), failures
/// reported as `kernel`'s. Every size must be positive and fit in int.
void gemmStridedBatched(const char *kernel, bool transA, bool transB,
                        int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, int64_t strideA, const float *b,
                        int64_t ldb, int64_t strideB, float *c,
                        int64_t strideC, int64_t batch);
void gemmStridedBatched(const char *kernel, bool transA, bool transB,
                        int64_t m, int64_t n, int64_t k, const double *a,
                        int64_t lda, int64_t strideA, const double *b,
                        int64_t ldb, int64_t strideB, double *c,
                        int64_t strideC, int64_t batch);

} // namespace loom::cuda::detail

#endif // LOOM_RUNTIME_CUDA_CUDASUPPORT_CUH
