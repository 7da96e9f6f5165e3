//===- Blas.h - The BLAS calls of the interpreter's kernels ----*- C++ -*-===//
//
// Row-major GEMM through OpenBLAS's cblas, for f32 and f64. OpenBLAS is
// pinned to one thread on first use: the result then does not depend on how
// many threads OpenBLAS would pick, so the interpreter is bitwise
// reproducible on a machine, and simulated ranks (one thread each) do not
// oversubscribe the cores. Products are issued in the fixed row blocks of
// runtime/kernels/GemmBlocks.h, as the host kernels issue theirs, so that
// both give the same bits on every machine.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_BLAS_H
#define LOOM_RUNTIME_INTERPRETER_BLAS_H

#include <cstdint>
#include <string>

namespace loom::interp {

/// C = alpha * op(A) * op(B) + beta * C, row-major, op(X) = X or X^T.
/// A is M x K (K x M when transposed), B is K x N (N x K when transposed).
/// Leading dimensions are in elements. Does nothing when M or N is 0, and
/// scales C by beta when K is 0. Sizes must fit in int (callers check with
/// `fitsBlasInt`).
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b,
          int64_t ldb, float beta, float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc);

/// Whether a size or leading dimension can be passed to cblas.
bool fitsBlasInt(int64_t value);

/// The BLAS in use, for benchmark reports: OpenBLAS's build configuration
/// and the kernel family (core) it picked for this CPU.
std::string getBlasDescription();

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_BLAS_H
