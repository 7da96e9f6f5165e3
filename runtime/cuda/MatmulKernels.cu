//===- MatmulKernels.cu - nn.matmul through cuBLAS ------------------------===//
//
// cuBLAS is column-major; a row-major matrix is the column-major matrix of
// its transpose. The row-major product C = op(A) op(B) (m x n) is therefore
// the column-major product C^T = op(B)^T op(A)^T (n x m): one cuBLAS GEMM
// with the operands swapped, each keeping its own transpose flag and its
// row-major leading dimension (the length of its last dimension), and
// ldc = n. Batches: the broadcast batch space is coalesced as the host
// kernel does; each row of it (with its operands' constant batch strides,
// 0 for a broadcast operand) is one strided-batched GEMM.
//
// cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F / 64F, default
// algorithm: the handle's math mode decides on tensor cores (the default
// mode: none for f32, hence no TF32 rounding). cuBLAS gives the same bits on
// every run on the same GPU model and library version (its atomics mode is
// off by default).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <climits>
#include <type_traits>

using namespace loom::cuda;
using namespace loom::cuda::detail;

namespace {

template <typename T> struct GemmTypes;
template <> struct GemmTypes<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};
template <> struct GemmTypes<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
};

/// `batch` row-major GEMMs C_i = op(A_i) op(B_i) (m x n, contraction k),
/// A_i = a + i * strideA etc.
template <typename T>
void gemmBatched(const char *kernel, bool transA, bool transB, int64_t m,
                 int64_t n, int64_t k, const T *a, int64_t lda,
                 int64_t strideA, const T *b, int64_t ldb, int64_t strideB,
                 T *c, int64_t strideC, int64_t batch) {
  const T one = T(1), zero = T(0);
  cublasStatus_t status = cublasGemmStridedBatchedEx(
      cublas(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
      static_cast<int>(m), static_cast<int>(k), &one, b, GemmTypes<T>::data,
      static_cast<int>(ldb), static_cast<long long>(strideB), a,
      GemmTypes<T>::data, static_cast<int>(lda),
      static_cast<long long>(strideA), &zero, c, GemmTypes<T>::data,
      static_cast<int>(n), static_cast<long long>(strideC),
      static_cast<int>(batch), GemmTypes<T>::compute, CUBLAS_GEMM_DEFAULT);
  LOOM_CUDA_CHECK(status == CUBLAS_STATUS_SUCCESS, kernel,
                  "cublasGemmStridedBatchedEx failed: %s",
                  cublasGetStatusString(status));
  recordKernel(kernel);
}

template <typename T>
void matmulImpl(T *result, const Shape &resultShape, const T *lhs,
                const Shape &lhsShape, const T *rhs, const Shape &rhsShape,
                bool transLhs, bool transRhs) {
  const char *kernel = "matmul";
  checkValid(kernel, "lhs", lhsShape);
  checkValid(kernel, "rhs", rhsShape);
  checkValid(kernel, "the result", resultShape);
  int64_t lr = lhsShape.rank, rr = rhsShape.rank;
  LOOM_CUDA_CHECK(lr >= 2 && rr >= 2, kernel,
                  "operands must have rank at least 2, got %s and %s",
                  formatShape(lhsShape, 0), formatShape(rhsShape, 1));
  int64_t m = transLhs ? lhsShape[lr - 1] : lhsShape[lr - 2];
  int64_t k = transLhs ? lhsShape[lr - 2] : lhsShape[lr - 1];
  int64_t rk = transRhs ? rhsShape[rr - 1] : rhsShape[rr - 2];
  int64_t n = transRhs ? rhsShape[rr - 2] : rhsShape[rr - 1];
  LOOM_CUDA_CHECK(k == rk, kernel,
                  "contracting dimensions differ: lhs %s, rhs %s",
                  formatShape(lhsShape, 0), formatShape(rhsShape, 1));
  int64_t lda = lhsShape[lr - 1], ldb = rhsShape[rr - 1];
  for (int64_t size : {m, n, k, lda, ldb})
    LOOM_CUDA_CHECK(size <= INT_MAX, kernel,
                    "matrix dimension %lld is too large for cuBLAS",
                    static_cast<long long>(size));
  int64_t batchRank = resultShape.rank - 2;
  LOOM_CUDA_CHECK(
      batchRank >= lr - 2 && batchRank >= rr - 2 &&
          resultShape[batchRank] == m && resultShape[batchRank + 1] == n,
      kernel, "the result of shape %s does not fit lhs %s and rhs %s",
      formatShape(resultShape, 0), formatShape(lhsShape, 1),
      formatShape(rhsShape, 2));
  Shape batch, lhsBatch, rhsBatch;
  batch.rank = batchRank;
  for (int64_t d = 0; d < batchRank; ++d)
    batch.dims[d] = resultShape[d];
  lhsBatch.rank = lr - 2;
  for (int64_t d = 0; d < lr - 2; ++d)
    lhsBatch.dims[d] = lhsShape[d];
  rhsBatch.rank = rr - 2;
  for (int64_t d = 0; d < rr - 2; ++d)
    rhsBatch.dims[d] = rhsShape[d];
  Space<2> space(batch);
  getBroadcastStrides(kernel, lhsBatch, batch, space.strides[0]);
  getBroadcastStrides(kernel, rhsBatch, batch, space.strides[1]);

  int64_t total = resultShape.numElements();
  if (total == 0)
    return;
  if (k == 0) {
    // An empty contraction: zeros (cuBLAS is not asked).
    zero(kernel, result, total);
    return;
  }
  for (int64_t d = 0; d < batchRank; ++d) {
    space.strides[0][d] *= m * k;
    space.strides[1][d] *= k * n;
  }
  space.coalesce();
  // Rows of the batch space on the host, each one strided-batched GEMM.
  int64_t inner = space.shape[space.rank - 1],
          rows = space.numElements() / inner;
  int64_t sl = space.strides[0][space.rank - 1],
          sr = space.strides[1][space.rank - 1];
  LOOM_CUDA_CHECK(inner <= INT_MAX, kernel, "batch %lld is too large",
                  static_cast<long long>(inner));
  for (int64_t row = 0; row < rows; ++row) {
    // The outer coordinates of this row.
    int64_t rest = row, lhsOffset = 0, rhsOffset = 0;
    for (int d = space.rank - 2; d >= 0; --d) {
      int64_t i = rest % space.shape[d];
      rest /= space.shape[d];
      lhsOffset += i * space.strides[0][d];
      rhsOffset += i * space.strides[1][d];
    }
    gemmBatched(kernel, transLhs, transRhs, m, n, k, lhs + lhsOffset, lda, sl,
                rhs + rhsOffset, ldb, sr, result + row * inner * m * n, m * n,
                inner);
  }
}

} // namespace

void loom::cuda::detail::gemmStridedBatched(
    const char *kernel, bool transA, bool transB, int64_t m, int64_t n,
    int64_t k, const float *a, int64_t lda, int64_t strideA, const float *b,
    int64_t ldb, int64_t strideB, float *c, int64_t strideC, int64_t batch) {
  gemmBatched(kernel, transA, transB, m, n, k, a, lda, strideA, b, ldb,
              strideB, c, strideC, batch);
}

void loom::cuda::detail::gemmStridedBatched(
    const char *kernel, bool transA, bool transB, int64_t m, int64_t n,
    int64_t k, const double *a, int64_t lda, int64_t strideA, const double *b,
    int64_t ldb, int64_t strideB, double *c, int64_t strideC, int64_t batch) {
  gemmBatched(kernel, transA, transB, m, n, k, a, lda, strideA, b, ldb,
              strideB, c, strideC, batch);
}

void loom::cuda::matmul(float *result, Shape resultShape, const float *lhs,
                        Shape lhsShape, const float *rhs, Shape rhsShape,
                        bool transposeLhs, bool transposeRhs) {
  matmulImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape, transposeLhs,
             transposeRhs);
}
void loom::cuda::matmul(double *result, Shape resultShape, const double *lhs,
                        Shape lhsShape, const double *rhs, Shape rhsShape,
                        bool transposeLhs, bool transposeRhs) {
  matmulImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape, transposeLhs,
             transposeRhs);
}
