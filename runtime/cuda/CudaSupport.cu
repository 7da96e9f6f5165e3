//===- CudaSupport.cu - Context, checks and device helpers ----------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using namespace loom::cuda;
using namespace loom::cuda::detail;

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

namespace {
cudaStream_t currentStream = nullptr;
/// setContext's handle; the one created on first use when it is null.
cublasHandle_t givenHandle = nullptr, ownHandle = nullptr;
} // namespace

void loom::cuda::setContext(void *stream, void *cublasHandle) {
  currentStream = static_cast<cudaStream_t>(stream);
  givenHandle = static_cast<cublasHandle_t>(cublasHandle);
}

//===----------------------------------------------------------------------===//
// Kernel times
//===----------------------------------------------------------------------===//

namespace {

/// LOOM_CUDA_KERNEL_TIMES=FILE: the stream is drained after every launch
/// and the wall time since the previous one (or since the last
/// synchronize) goes to the kernel's name; at exit FILE gets a line per
/// kernel: name, launches, seconds. Serialised: launch latency included,
/// no overlap; for profiling runs only.
struct KernelTimes {
  std::string file;
  std::map<std::string, std::pair<int64_t, double>> totals;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();

  static KernelTimes *get() {
    static KernelTimes *times = [] {
      const char *file = std::getenv("LOOM_CUDA_KERNEL_TIMES");
      if (!file || !*file)
        return static_cast<KernelTimes *>(nullptr);
      auto *made = new KernelTimes; // written at exit, never freed
      made->file = file;
      std::atexit([] { get()->write(); });
      return made;
    }();
    return times;
  }

  void write() const {
    FILE *out = std::fopen(file.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "loom::cuda: cannot write the kernel times to %s\n",
                   file.c_str());
      return;
    }
    for (const auto &[name, total] : totals)
      std::fprintf(out, "%s %lld %.9f\n", name.c_str(),
                   static_cast<long long>(total.first), total.second);
    std::fclose(out);
  }
};

} // namespace

void detail::recordKernel(const char *kernel) {
  KernelTimes *times = KernelTimes::get();
  if (!times)
    return;
  checkCuda(cudaStreamSynchronize(currentStream), kernel,
            "cudaStreamSynchronize");
  auto now = std::chrono::steady_clock::now();
  auto &total = times->totals[kernel];
  total.first += 1;
  total.second += std::chrono::duration<double>(now - times->last).count();
  times->last = now;
}

/// Under LOOM_CUDA_KERNEL_TIMES, what came before (the stream drained, a
/// blocking copy) is charged to no kernel.
static void restartKernelClock() {
  if (KernelTimes *times = KernelTimes::get())
    times->last = std::chrono::steady_clock::now();
}

void loom::cuda::synchronize() {
  checkCuda(cudaStreamSynchronize(currentStream), "synchronize",
            "cudaStreamSynchronize");
  restartKernelClock();
}

cudaStream_t detail::stream() { return currentStream; }

cublasHandle_t detail::cublas() {
  cublasHandle_t handle = givenHandle;
  if (!handle) {
    if (!ownHandle) {
      cublasStatus_t status = cublasCreate(&ownHandle);
      LOOM_CUDA_CHECK(status == CUBLAS_STATUS_SUCCESS, "matmul",
                      "cublasCreate failed: %s", cublasGetStatusString(status));
    }
    handle = ownHandle;
  }
  cublasStatus_t status = cublasSetStream(handle, currentStream);
  LOOM_CUDA_CHECK(status == CUBLAS_STATUS_SUCCESS, "matmul",
                  "cublasSetStream failed: %s", cublasGetStatusString(status));
  // The kernels pass alpha and beta from the host.
  status = cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST);
  LOOM_CUDA_CHECK(status == CUBLAS_STATUS_SUCCESS, "matmul",
                  "cublasSetPointerMode failed: %s",
                  cublasGetStatusString(status));
  return handle;
}

int loom::cuda::deviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // Clear the error.
    return 0;
  }
  return count;
}

void *loom::cuda::deviceAlloc(size_t bytes) {
  void *pointer = nullptr;
  checkCuda(cudaMalloc(&pointer, bytes ? bytes : 1), "deviceAlloc",
            "cudaMalloc");
  return pointer;
}

void loom::cuda::deviceFree(void *pointer) {
  if (pointer)
    checkCuda(cudaFree(pointer), "deviceFree", "cudaFree");
}

void loom::cuda::copyToDevice(void *device, const void *host, size_t bytes) {
  synchronize();
  if (bytes)
    checkCuda(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice),
              "copyToDevice", "cudaMemcpy");
  restartKernelClock();
}

void loom::cuda::copyToHost(void *host, const void *device, size_t bytes) {
  synchronize();
  if (bytes)
    checkCuda(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost),
              "copyToHost", "cudaMemcpy");
  restartKernelClock();
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

void detail::fatal(const char *kernel, const char *format, ...) {
  char message[1024];
  int used =
      std::snprintf(message, sizeof(message), "loom::cuda::%s: ", kernel);
  va_list args;
  va_start(args, format);
  if (used >= 0 && static_cast<size_t>(used) < sizeof(message))
    std::vsnprintf(message + used, sizeof(message) - used, format, args);
  va_end(args);
  // In a program library the error goes back to the caller.
  if (loom::host::FailureHandler handler = loom::host::getFailureHandler())
    handler(message); // does not return
  std::fprintf(stderr, "%s%s\n", loom::host::failurePrefix(), message);
  std::fflush(stderr);
  std::abort();
}

void detail::checkCuda(cudaError_t error, const char *kernel,
                       const char *what) {
  if (error != cudaSuccess)
    fatal(kernel, "%s failed: %s", what, cudaGetErrorString(error));
}

void detail::checkLaunch(const char *kernel) {
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    fatal(kernel, "kernel launch failed: %s", cudaGetErrorString(error));
  recordKernel(kernel);
}

const char *detail::formatShape(const Shape &shape, int slot) {
  thread_local char buffers[4][256];
  char *buffer = buffers[slot & 3];
  size_t size = sizeof(buffers[0]), used = 0;
  if (shape.rank < 0 || shape.rank > kMaxRank) {
    std::snprintf(buffer, size, "<rank %lld>",
                  static_cast<long long>(shape.rank));
    return buffer;
  }
  used += std::snprintf(buffer + used, size - used, "[");
  for (int64_t d = 0; d < shape.rank; ++d)
    used += std::snprintf(buffer + used, size - used, d ? ", %lld" : "%lld",
                          static_cast<long long>(shape.dims[d]));
  std::snprintf(buffer + used, size - used, "]");
  return buffer;
}

bool detail::sameShape(const Shape &a, const Shape &b) {
  if (a.rank != b.rank)
    return false;
  for (int64_t d = 0; d < a.rank; ++d)
    if (a.dims[d] != b.dims[d])
      return false;
  return true;
}

void detail::checkShape(const char *kernel, const char *what,
                        const Shape &actual, const Shape &expected) {
  LOOM_CUDA_CHECK(sameShape(actual, expected), kernel,
                  "%s has shape %s, expected %s", what, formatShape(actual, 0),
                  formatShape(expected, 1));
}

void detail::checkValid(const char *kernel, const char *what,
                        const Shape &shape) {
  LOOM_CUDA_CHECK(shape.rank >= 0 && shape.rank <= kMaxRank, kernel,
                  "%s has rank %lld, not in [0, %d]", what,
                  static_cast<long long>(shape.rank), kMaxRank);
  for (int64_t d = 0; d < shape.rank; ++d)
    LOOM_CUDA_CHECK(shape.dims[d] >= 0, kernel, "%s has shape %s", what,
                    formatShape(shape));
}

void detail::checkSameCount(const char *kernel, const Shape &result,
                            const Shape &input) {
  checkValid(kernel, "the result", result);
  checkValid(kernel, "the input", input);
  LOOM_CUDA_CHECK(result.numElements() == input.numElements(), kernel,
                  "the result of shape %s and the input of shape %s hold "
                  "different numbers of elements",
                  formatShape(result, 0), formatShape(input, 1));
}

//===----------------------------------------------------------------------===//
// Keywords
//===----------------------------------------------------------------------===//

bool detail::parseGeluTanh(const char *kernel, const char *keyword) {
  if (!keyword || std::strcmp(keyword, "none") == 0)
    return false;
  if (std::strcmp(keyword, "tanh") == 0)
    return true;
  fatal(kernel, "unknown approximation '%s' (expected none or tanh)", keyword);
}

loom::math::Predicate detail::parsePredicate(const char *kernel,
                                             const char *keyword) {
  using loom::math::Predicate;
  static const struct {
    const char *name;
    Predicate predicate;
  } table[] = {{"eq", Predicate::EQ}, {"ne", Predicate::NE},
               {"lt", Predicate::LT}, {"le", Predicate::LE},
               {"gt", Predicate::GT}, {"ge", Predicate::GE}};
  if (keyword)
    for (const auto &entry : table)
      if (std::strcmp(keyword, entry.name) == 0)
        return entry.predicate;
  fatal(kernel, "unknown predicate '%s' (expected eq, ne, lt, le, gt or ge)",
        keyword ? keyword : "(null)");
}

ReduceKind detail::parseReduceKind(const char *kernel, const char *keyword) {
  if (keyword) {
    if (std::strcmp(keyword, "sum") == 0)
      return ReduceKind::Sum;
    if (std::strcmp(keyword, "mean") == 0)
      return ReduceKind::Mean;
    if (std::strcmp(keyword, "max") == 0)
      return ReduceKind::Max;
  }
  fatal(kernel, "unknown reduction '%s' (expected sum, mean or max)",
        keyword ? keyword : "(null)");
}

MaskKind detail::parseMaskKind(const char *kernel, const char *keyword) {
  if (keyword) {
    if (std::strcmp(keyword, "none") == 0)
      return MaskKind::None;
    if (std::strcmp(keyword, "causal") == 0)
      return MaskKind::Causal;
    if (std::strcmp(keyword, "tree") == 0)
      return MaskKind::Tree;
  }
  fatal(kernel, "unknown mask '%s' (expected none, causal or tree)",
        keyword ? keyword : "(null)");
}

//===----------------------------------------------------------------------===//
// Strides
//===----------------------------------------------------------------------===//

void detail::getRowMajorStrides(const Shape &shape, int64_t *strides) {
  int64_t stride = 1;
  for (int64_t d = shape.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape.dims[d];
  }
}

void detail::getBroadcastStrides(const char *kernel, const Shape &shape,
                                 const Shape &result, int64_t *strides) {
  LOOM_CUDA_CHECK(shape.rank >= 0 && shape.rank <= result.rank, kernel,
                  "operand of shape %s does not broadcast to the result "
                  "shape %s",
                  formatShape(shape, 0), formatShape(result, 1));
  int64_t own[kMaxRank];
  getRowMajorStrides(shape, own);
  int64_t offset = result.rank - shape.rank;
  for (int64_t d = 0; d < offset; ++d)
    strides[d] = 0;
  for (int64_t d = 0; d < shape.rank; ++d) {
    int64_t size = shape.dims[d], target = result.dims[offset + d];
    LOOM_CUDA_CHECK(size == target || size == 1, kernel,
                    "operand of shape %s does not broadcast to the result "
                    "shape %s",
                    formatShape(shape, 0), formatShape(result, 1));
    strides[offset + d] = size == 1 ? 0 : own[d];
  }
}

AxisSplit detail::splitAt(const Shape &shape, int64_t dim) {
  AxisSplit split;
  for (int64_t d = 0; d < shape.rank; ++d) {
    if (d < dim)
      split.outer *= shape.dims[d];
    else if (d == dim)
      split.size = shape.dims[d];
    else
      split.inner *= shape.dims[d];
  }
  return split;
}
