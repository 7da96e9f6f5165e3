//===- Blas.cpp - The BLAS calls of the interpreter's kernels -------------===//

#include "runtime/interpreter/Blas.h"

#include "runtime/kernels/GemmBlocks.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <mutex>

using namespace loom::interp;

namespace {

void pinThreads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

template <typename T>
void scaleOnly(int64_t m, int64_t n, T beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

} // namespace

std::string loom::interp::getBlasDescription() {
  pinThreads();
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ')
    config.pop_back();
  return config + ", core " + openblas_get_corename() + ", 1 thread";
}

bool loom::interp::fitsBlasInt(int64_t value) {
  return value >= 0 && value <= INT_MAX;
}

void loom::interp::gemm(bool transA, bool transB, int64_t m, int64_t n,
                        int64_t k, float alpha, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleOnly(m, n, beta, c, ldc);
  pinThreads();
  // The host kernels' row blocks (GemmBlocks.h), so that both agree bit for
  // bit on every machine.
  for (int64_t block = 0; block < gemm_blocks::countRowBlocks(m); ++block)
    gemm_blocks::forRowBlock(
        block, transA, m, a, lda, c, ldc,
        [&](int64_t, int64_t rows, const float *blockA, float *blockC) {
          cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                      transB ? CblasTrans : CblasNoTrans,
                      static_cast<int>(rows), static_cast<int>(n),
                      static_cast<int>(k), alpha, blockA,
                      static_cast<int>(lda), b, static_cast<int>(ldb), beta,
                      blockC, static_cast<int>(ldc));
        });
}

void loom::interp::gemm(bool transA, bool transB, int64_t m, int64_t n,
                        int64_t k, double alpha, const double *a, int64_t lda,
                        const double *b, int64_t ldb, double beta, double *c,
                        int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleOnly(m, n, beta, c, ldc);
  pinThreads();
  // The host kernels' row blocks (GemmBlocks.h), so that both agree bit for
  // bit on every machine.
  for (int64_t block = 0; block < gemm_blocks::countRowBlocks(m); ++block)
    gemm_blocks::forRowBlock(
        block, transA, m, a, lda, c, ldc,
        [&](int64_t, int64_t rows, const double *blockA, double *blockC) {
          cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                      transB ? CblasTrans : CblasNoTrans,
                      static_cast<int>(rows), static_cast<int>(n),
                      static_cast<int>(k), alpha, blockA,
                      static_cast<int>(lda), b, static_cast<int>(ldb), beta,
                      blockC, static_cast<int>(ldc));
        });
}
