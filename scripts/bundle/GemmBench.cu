//===- GemmBench.cu - Loom's matmul against cuBLAS on the same shapes ------===//
//
// For every GEMM of the bundle's programs (gemms.txt: result, lhs and rhs
// shapes and the two transpose flags, as the generated CUDA code calls
// loom::cuda::matmul), times Loom's kernel and cuBLAS's own f32 GEMM
// (cublasSgemmStridedBatched, called directly on the same row-major
// operands) on the same stream, each the median of 7 timed runs of a
// repeat count that makes a run last about a millisecond, and prints both
// throughputs and Loom's fraction of cuBLAS's. Shapes whose batch
// dimensions broadcast other than whole (an operand's batch absent or
// equal to the result's) are timed for Loom alone. Loom's matmul is itself
// a cuBLAS GEMM (cublasGemmStridedBatchedEx, f32 compute) behind its shape
// checks and its batching (one call per row of a broadcast batch): the
// fraction is what Loom's kernel costs over calling cuBLAS directly.
//   gemm-bench GEMMS.txt...
//   gemm-bench --devices      prints the number of CUDA devices
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using loom::host::Shape;

namespace {

void check(cudaError_t code, const char *what) {
  if (code != cudaSuccess) {
    std::fprintf(stderr, "gemm-bench: %s: %s\n", what,
                 cudaGetErrorString(code));
    std::exit(1);
  }
}

bool parseShape(const std::string &text, Shape &shape) {
  std::istringstream in(text);
  shape = Shape();
  int64_t size;
  while (in >> size) {
    if (shape.rank == loom::host::kMaxRank || size < 0)
      return false;
    shape.dims[shape.rank++] = size;
  }
  return in.eof();
}

std::string format(const Shape &shape) {
  std::string text;
  for (int64_t d = 0; d < shape.rank; ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  return text.empty() ? "scalar" : text;
}

/// Seconds per call of `fn`: the median of 7 runs of `repeats` calls.
double timeCalls(cudaStream_t stream, int repeats,
                 const std::function<void()> &fn) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> runs;
  for (int run = 0; run < 7; ++run) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < repeats; ++i)
      fn();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    runs.push_back(ms / 1e3 / repeats);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(runs.begin(), runs.end());
  return runs[3];
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gemm-bench GEMMS.txt... | --devices\n");
    return 2;
  }
  if (std::string(argv[1]) == "--devices") {
    // No device is 0; any other error (a driver too old for this CUDA)
    // is an error.
    int count = 0;
    cudaError_t code = cudaGetDeviceCount(&count);
    if (code == cudaErrorNoDevice)
      count = 0;
    else if (code != cudaSuccess) {
      std::fprintf(stderr, "gemm-bench: cudaGetDeviceCount: %s\n",
                   cudaGetErrorString(code));
      return 1;
    }
    std::printf("%d\n", count);
    return 0;
  }
  if (loom::cuda::deviceCount() == 0) {
    std::printf("gemm-bench: no CUDA device; skipped\n");
    return 0;
  }
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gemm-bench: cannot create a cuBLAS handle\n");
    return 1;
  }
  loom::cuda::setContext(stream, blas);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  double loomSeconds = 0, blasSeconds = 0, flopsTotal = 0;
  int compared = 0;
  std::printf("%-34s %6s %12s %12s %9s\n", "gemm (result = lhs rhs)", "flags",
              "loom GF/s", "cublas GF/s", "fraction");
  for (int f = 1; f < argc; ++f) {
    std::ifstream file(argv[f]);
    if (!file) {
      std::fprintf(stderr, "gemm-bench: cannot read %s\n", argv[f]);
      return 1;
    }
    std::string line;
    while (std::getline(file, line)) {
      std::vector<std::string> fields;
      std::istringstream in(line);
      for (std::string field; std::getline(in, field, '|');)
        fields.push_back(field);
      Shape result, lhs, rhs;
      if (fields.size() != 5 || !parseShape(fields[0], result) ||
          !parseShape(fields[1], lhs) || !parseShape(fields[2], rhs) ||
          result.rank < 2 || lhs.rank < 2 || rhs.rank < 2) {
        std::fprintf(stderr, "gemm-bench: %s: bad line '%s'\n", argv[f],
                     line.c_str());
        return 1;
      }
      bool transLhs = std::stoi(fields[3]) != 0,
           transRhs = std::stoi(fields[4]) != 0;
      int64_t m = result[result.rank - 2], n = result[result.rank - 1];
      int64_t k = transLhs ? lhs[lhs.rank - 2] : lhs[lhs.rank - 1];
      int64_t batch = result.numElements() / std::max<int64_t>(1, m * n);
      std::vector<float *> buffers;
      for (const Shape *shape : {&result, &lhs, &rhs}) {
        std::vector<float> host(static_cast<size_t>(shape->numElements()));
        for (float &value : host)
          value = uniform(random);
        auto *device = static_cast<float *>(
            loom::cuda::deviceAlloc(host.size() * sizeof(float)));
        loom::cuda::copyToDevice(device, host.data(),
                                 host.size() * sizeof(float));
        buffers.push_back(device);
      }
      double flops = 2.0 * m * n * k * batch;
      int repeats = static_cast<int>(
          std::clamp(1e-3 / std::max(flops / 5e13, 4e-6), 5.0, 2000.0));
      auto loomCall = [&] {
        loom::cuda::matmul(buffers[0], result, buffers[1], lhs, buffers[2],
                           rhs, transLhs, transRhs);
      };
      loomCall(); // warm-up
      double loomTime = timeCalls(stream, repeats, loomCall);
      // cuBLAS on the row-major operands (C^T = op(B)^T op(A)^T), where the
      // batch is one strided batch.
      auto batchOf = [&](const Shape &shape) {
        int64_t count = 1;
        for (int64_t d = 0; d + 2 < shape.rank; ++d)
          count *= shape[d];
        return count;
      };
      int64_t lhsBatch = batchOf(lhs), rhsBatch = batchOf(rhs);
      bool simple = (lhsBatch == batch || lhs.rank == 2) &&
                    (rhsBatch == batch || rhs.rank == 2);
      double blasTime = 0;
      if (simple) {
        const float one = 1, zero = 0;
        int64_t lda = lhs[lhs.rank - 1], ldb = rhs[rhs.rank - 1];
        long long strideA = lhs.rank == 2 ? 0 : lhs[lhs.rank - 2] * lda;
        long long strideB = rhs.rank == 2 ? 0 : rhs[rhs.rank - 2] * ldb;
        cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
        auto blasCall = [&] {
          cublasStatus_t got = cublasSgemmStridedBatched(
              blas, transRhs ? CUBLAS_OP_T : CUBLAS_OP_N,
              transLhs ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
              static_cast<int>(m), static_cast<int>(k), &one, buffers[2],
              static_cast<int>(ldb), strideB, buffers[1],
              static_cast<int>(lda), strideA, &zero, buffers[0],
              static_cast<int>(n), static_cast<long long>(m * n),
              static_cast<int>(batch));
          if (got != CUBLAS_STATUS_SUCCESS)
            status = got; // a failure is kept
        };
        blasCall();
        blasTime = timeCalls(stream, repeats, blasCall);
        if (status != CUBLAS_STATUS_SUCCESS) {
          std::fprintf(stderr, "gemm-bench: cublasSgemmStridedBatched: %s\n",
                       cublasGetStatusString(status));
          return 1;
        }
        loomSeconds += loomTime;
        blasSeconds += blasTime;
        flopsTotal += flops;
        ++compared;
      }
      std::string name = format(result) + " = " + format(lhs) + " " +
                         format(rhs);
      char flags[8];
      std::snprintf(flags, sizeof(flags), "%d%d", transLhs, transRhs);
      if (simple)
        std::printf("%-34s %6s %12.1f %12.1f %9.3f\n", name.c_str(), flags,
                    flops / loomTime / 1e9, flops / blasTime / 1e9,
                    blasTime / loomTime);
      else
        std::printf("%-34s %6s %12.1f %12s %9s\n", name.c_str(), flags,
                    flops / loomTime / 1e9, "-", "-");
      for (float *buffer : buffers)
        loom::cuda::deviceFree(buffer);
    }
  }
  if (compared > 0)
    std::printf("gemm-bench: %d shapes, Loom's matmul at %.3f of cuBLAS's "
                "throughput over all (%.1f and %.1f GFLOP/s)\n",
                compared, blasSeconds / loomSeconds,
                flopsTotal / loomSeconds / 1e9, flopsTotal / blasSeconds / 1e9);
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  return 0;
}
