//===- Blas.h - GEMM of the host kernels -----------------------*- C++ -*-===//
//
// Row-major GEMM through OpenBLAS's cblas, pinned to one thread on first use
// and issued in the fixed row blocks of GemmBlocks.h (as the interpreter's
// runtime/interpreter/Blas.h, which cuts the same blocks so that both give
// the same bits without either library depending on the other): results do
// not depend on LOOM_HOST_THREADS, whose threads take whole blocks, nor on
// how many threads OpenBLAS would pick, and ranks do not oversubscribe the
// cores.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELS_BLAS_H
#define LOOM_RUNTIME_KERNELS_BLAS_H

#include <cstdint>

namespace loom::host::detail {

/// C = alpha * op(A) * op(B) + beta * C, row-major, op(X) = X or X^T; as
/// loom::interp::gemm (nothing when M or N is 0, C scaled by beta when K is
/// 0). Sizes must fit in int.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc);

} // namespace loom::host::detail

#endif // LOOM_RUNTIME_KERNELS_BLAS_H
