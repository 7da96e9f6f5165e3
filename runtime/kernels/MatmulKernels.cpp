//===- MatmulKernels.cpp - nn.matmul on the host --------------------------===//
//
// As the interpreter: one GEMM per result batch element, in row-major order
// of the broadcast batch shape, each operand read in place (a broadcast
// operand is not copied).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Blas.h"
#include "runtime/kernels/KernelSupport.h"

#include <climits>

using namespace loom::host;
using namespace loom::host::detail;

namespace {

template <typename T>
void matmulImpl(T *result, const Shape &resultShape, const T *lhs,
                const Shape &lhsShape, const T *rhs, const Shape &rhsShape,
                bool transLhs, bool transRhs) {
  const char *kernel = "matmul";
  checkValid(kernel, "lhs", lhsShape);
  checkValid(kernel, "rhs", rhsShape);
  checkValid(kernel, "the result", resultShape);
  int64_t lr = lhsShape.rank, rr = rhsShape.rank;
  LOOM_HOST_CHECK(lr >= 2 && rr >= 2, kernel,
                  "operands must have rank at least 2, got %s and %s",
                  formatShape(lhsShape, 0), formatShape(rhsShape, 1));
  int64_t m = transLhs ? lhsShape[lr - 1] : lhsShape[lr - 2];
  int64_t k = transLhs ? lhsShape[lr - 2] : lhsShape[lr - 1];
  int64_t rk = transRhs ? rhsShape[rr - 1] : rhsShape[rr - 2];
  int64_t n = transRhs ? rhsShape[rr - 2] : rhsShape[rr - 1];
  LOOM_HOST_CHECK(k == rk, kernel,
                  "contracting dimensions differ: lhs %s, rhs %s",
                  formatShape(lhsShape, 0), formatShape(rhsShape, 1));
  for (int64_t size : {m, n, k})
    LOOM_HOST_CHECK(size <= INT_MAX, kernel,
                    "matrix dimension %lld is too large for BLAS",
                    static_cast<long long>(size));
  int64_t batchRank = resultShape.rank - 2;
  LOOM_HOST_CHECK(
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

  int64_t lda = lhsShape[lr - 1], ldb = rhsShape[rr - 1];
  if (batchRank == 0) {
    gemm(transLhs, transRhs, m, n, k, T(1), lhs, lda, rhs, ldb, T(0), result,
         n);
    return;
  }
  StridedSpace<2> space(batch);
  getBroadcastStrides(kernel, lhsBatch, batch, space.strides[0]);
  getBroadcastStrides(kernel, rhsBatch, batch, space.strides[1]);
  for (int64_t d = 0; d < batchRank; ++d) {
    space.strides[0][d] *= m * k;
    space.strides[1][d] *= k * n;
  }
  space.coalesce();
  int64_t inner = space.inner(), sl = space.innerStride(0),
          sr = space.innerStride(1);
  space.forEachRow([&](int64_t linear, const int64_t *offsets) {
    for (int64_t j = 0; j < inner; ++j)
      gemm(transLhs, transRhs, m, n, k, T(1), lhs + offsets[0] + j * sl, lda,
           rhs + offsets[1] + j * sr, ldb, T(0), result + (linear + j) * m * n,
           n);
  });
}

} // namespace

void loom::host::matmul(float *result, Shape resultShape, const float *lhs,
                        Shape lhsShape, const float *rhs, Shape rhsShape,
                        bool transposeLhs, bool transposeRhs) {
  matmulImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape, transposeLhs,
             transposeRhs);
}
void loom::host::matmul(double *result, Shape resultShape, const double *lhs,
                        Shape lhsShape, const double *rhs, Shape rhsShape,
                        bool transposeLhs, bool transposeRhs) {
  matmulImpl(result, resultShape, lhs, lhsShape, rhs, rhsShape, transposeLhs,
             transposeRhs);
}
