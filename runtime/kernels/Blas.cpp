//===- Blas.cpp - GEMM of the host kernels --------------------------------===//

#include "runtime/kernels/Blas.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

using namespace loom::host;

namespace {

/// GEMM threads: LOOM_HOST_THREADS (default 1, one thread per rank, as
/// ranks usually take a core each; loom-run gives a rank the cores the
/// ranks leave free). Each element of a product is one thread's dot
/// product either way.
void pinThreads() {
  static std::once_flag once;
  std::call_once(once, [] {
    int threads = 1;
    if (const char *text = std::getenv("LOOM_HOST_THREADS"))
      threads = std::max(1, std::atoi(text));
    openblas_set_num_threads(threads);
  });
}

template <typename T>
void scaleOnly(int64_t m, int64_t n, T beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

CBLAS_TRANSPOSE op(bool transpose) {
  return transpose ? CblasTrans : CblasNoTrans;
}

} // namespace

void detail::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleOnly(m, n, beta, c, ldc);
  pinThreads();
  cblas_sgemm(CblasRowMajor, op(transA), op(transB), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

void detail::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  double alpha, const double *a, int64_t lda, const double *b,
                  int64_t ldb, double beta, double *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleOnly(m, n, beta, c, ldc);
  pinThreads();
  cblas_dgemm(CblasRowMajor, op(transA), op(transB), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}
