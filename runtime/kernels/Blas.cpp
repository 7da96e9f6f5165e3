//===- Blas.cpp - GEMM of the host kernels --------------------------------===//

#include "runtime/kernels/Blas.h"

#include "runtime/kernels/GemmBlocks.h"

#ifndef LOOM_PORTABLE_GEMM
#include <cblas.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using namespace loom::host;
using loom::gemm_blocks::countRowBlocks;
using loom::gemm_blocks::forRowBlock;

namespace {

/// GEMM threads: LOOM_HOST_THREADS (default 1, one thread per rank, as
/// ranks usually take a core each; loom-run gives a rank the cores the
/// ranks leave free). OpenBLAS itself runs on one thread; these threads take
/// whole row blocks of C (GemmBlocks.h), so the bits do not depend on their
/// number.
int gemmThreads() {
  static const int threads = [] {
#ifndef LOOM_PORTABLE_GEMM
    openblas_set_num_threads(1);
#endif
    long value = 1;
    if (const char *text = std::getenv("LOOM_HOST_THREADS")) {
      char *end = nullptr;
      value = std::strtol(text, &end, 10);
      if (end == text || *end != '\0' || value < 1)
        value = 1;
    }
    // A sequential OpenBLAS (openblas_get_parallel() == 0) is not built to
    // be entered from several threads at once: its GEMMs stay on one.
#ifndef LOOM_PORTABLE_GEMM
    if (value > 1 && openblas_get_parallel() == 0) {
      std::fprintf(stderr,
                   "loom: LOOM_HOST_THREADS=%ld ignored: this OpenBLAS is "
                   "sequential and cannot run GEMMs on several threads\n",
                   value);
      value = 1;
    }
#endif
    return static_cast<int>(std::min(value, 256L));
  }();
  return threads;
}

/// Helper threads that run the blocks of one GEMM at a time beside the
/// calling thread. A GEMM issued while another one runs (from another
/// thread) runs its blocks on its own thread, in the same calls.
class BlockPool {
public:
  static BlockPool &get() {
    static BlockPool *pool = new BlockPool(gemmThreads() - 1); // never freed
    return *pool;
  }

  void run(int64_t blocks, const std::function<void(int64_t)> &fn) {
    std::unique_lock<std::mutex> busy(runLock, std::try_to_lock);
    if (workers.empty() || blocks < 2 || !busy.owns_lock()) {
      for (int64_t b = 0; b < blocks; ++b)
        fn(b);
      return;
    }
    {
      std::lock_guard<std::mutex> guard(lock);
      job = &fn;
      total = blocks;
      next.store(0);
      pending = static_cast<int>(workers.size());
      ++generation;
    }
    wake.notify_all();
    take(fn, blocks);
    std::unique_lock<std::mutex> guard(lock);
    done.wait(guard, [&] { return pending == 0; });
    job = nullptr;
  }

private:
  explicit BlockPool(int helpers) {
    for (int i = 0; i < helpers; ++i)
      workers.emplace_back([this] { serve(); });
    for (std::thread &worker : workers)
      worker.detach();
  }

  void take(const std::function<void(int64_t)> &fn, int64_t blocks) {
    for (int64_t b = next.fetch_add(1); b < blocks; b = next.fetch_add(1))
      fn(b);
  }

  void serve() {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t)> *fn;
      int64_t blocks;
      {
        std::unique_lock<std::mutex> guard(lock);
        wake.wait(guard, [&] { return generation != seen; });
        seen = generation;
        fn = job;
        blocks = total;
      }
      take(*fn, blocks);
      std::lock_guard<std::mutex> guard(lock);
      if (--pending == 0)
        done.notify_one();
    }
  }

  std::vector<std::thread> workers;
  std::mutex runLock; // one GEMM on the pool at a time
  std::mutex lock;
  std::condition_variable wake, done;
  const std::function<void(int64_t)> *job = nullptr;
  int64_t total = 0;
  std::atomic<int64_t> next{0};
  int pending = 0;
  uint64_t generation = 0;
};

template <typename T>
void scaleOnly(int64_t m, int64_t n, T beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

#ifdef LOOM_PORTABLE_GEMM
/// Built without a BLAS (the device bundle on a node that has none): a
/// plain GEMM, i-k-j so that the inner loop runs along rows of B and C.
/// Slower than OpenBLAS and rounding in another order: it serves the
/// bundle's CPU reference runs and the CUDA kernel tests' host side, which
/// compare within tolerances.
template <typename T>
void call(bool transA, bool transB, int m, int n, int k, T alpha, const T *a,
          int lda, const T *b, int ldb, T beta, T *c, int ldc) {
  std::vector<T> row(static_cast<size_t>(n));
  for (int i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), T(0));
    for (int p = 0; p < k; ++p) {
      T scale = transA ? a[p * lda + i] : a[i * lda + p];
      if (transB)
        for (int j = 0; j < n; ++j)
          row[j] += scale * b[j * ldb + p];
      else
        for (int j = 0; j < n; ++j)
          row[j] += scale * b[p * ldb + j];
    }
    for (int j = 0; j < n; ++j)
      c[i * ldc + j] = alpha * row[j] +
                       (beta == T(0) ? T(0) : beta * c[i * ldc + j]);
  }
}
#else
CBLAS_TRANSPOSE op(bool transpose) {
  return transpose ? CblasTrans : CblasNoTrans;
}

void call(bool transA, bool transB, int m, int n, int k, float alpha,
          const float *a, int lda, const float *b, int ldb, float beta,
          float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, op(transA), op(transB), m, n, k, alpha, a, lda,
              b, ldb, beta, c, ldc);
}

void call(bool transA, bool transB, int m, int n, int k, double alpha,
          const double *a, int lda, const double *b, int ldb, double beta,
          double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, op(transA), op(transB), m, n, k, alpha, a, lda,
              b, ldb, beta, c, ldc);
}
#endif

template <typename T>
void blockedGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
                 T beta, T *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleOnly(m, n, beta, c, ldc);
  gemmThreads(); // pins OpenBLAS to one thread before the first call
  BlockPool::get().run(countRowBlocks(m), [&](int64_t block) {
    forRowBlock(block, transA, m, a, lda, c, ldc,
                [&](int64_t, int64_t rows, const T *blockA, T *blockC) {
                  call(transA, transB, static_cast<int>(rows),
                       static_cast<int>(n), static_cast<int>(k), alpha, blockA,
                       static_cast<int>(lda), b, static_cast<int>(ldb), beta,
                       blockC, static_cast<int>(ldc));
                });
  });
}

} // namespace

void detail::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc) {
  blockedGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void detail::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  double alpha, const double *a, int64_t lda, const double *b,
                  int64_t ldb, double beta, double *c, int64_t ldc) {
  blockedGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
