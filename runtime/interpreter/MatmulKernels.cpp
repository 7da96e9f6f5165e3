//===- MatmulKernels.cpp - nn.matmul through BLAS -------------------------===//
//
// One GEMM per result batch element; batch dimensions broadcast with numpy
// rules, a broadcast operand is read in place (no copies).
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/Blas.h"
#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

LogicalResult matmulKernel(nn::MatmulOp op, KernelCall &call) {
  const Tensor &lhs = call.operand(0), &rhs = call.operand(1);
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return call.emitError() << "operands must have rank at least 2, got "
                            << formatShape(lhs.getShape()) << " and "
                            << formatShape(rhs.getShape());
  if (lhs.getKind() != rhs.getKind())
    return call.emitError() << "operands have element types "
                            << getElementKindName(lhs.getKind()) << " and "
                            << getElementKindName(rhs.getKind());
  bool transLhs = op.getTransposeLhs(), transRhs = op.getTransposeRhs();
  llvm::ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t m = transLhs ? ls[lr - 1] : ls[lr - 2];
  int64_t k = transLhs ? ls[lr - 2] : ls[lr - 1];
  int64_t rk = transRhs ? rs[rr - 1] : rs[rr - 2];
  int64_t n = transRhs ? rs[rr - 2] : rs[rr - 1];
  if (k != rk)
    return call.emitError() << "contracting dimensions differ: " << k
                            << " in operand #0 of shape " << formatShape(ls)
                            << ", " << rk << " in operand #1 of shape "
                            << formatShape(rs);
  for (int64_t size : {m, n, k, ls[lr - 1], rs[rr - 1]})
    if (!fitsBlasInt(size))
      return call.emitError() << "matrix dimension " << size
                              << " is too large for BLAS";

  llvm::ArrayRef<int64_t> lhsBatch = ls.drop_back(2), rhsBatch = rs.drop_back(2);
  FailureOr<llvm::SmallVector<int64_t>> batch =
      broadcastShapes(call, {lhsBatch, rhsBatch});
  if (failed(batch))
    return failure();
  llvm::SmallVector<int64_t> resultShape(*batch);
  resultShape.push_back(m);
  resultShape.push_back(n);

  // Element offsets of each operand's matrix for every result batch index.
  llvm::SmallVector<int64_t> lhsStrides = getBroadcastStrides(lhsBatch, *batch);
  llvm::SmallVector<int64_t> rhsStrides = getBroadcastStrides(rhsBatch, *batch);
  for (int64_t &s : lhsStrides)
    s *= m * k;
  for (int64_t &s : rhsStrides)
    s *= k * n;
  llvm::SmallVector<std::pair<int64_t, int64_t>> offsets;
  forEachStrided<2>(*batch, {lhsStrides, rhsStrides}, {0, 0},
                    [&](int64_t, const std::array<int64_t, 2> &off) {
                      offsets.push_back({off[0], off[1]});
                    });

  return dispatchFloat(call, lhs.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(lhs.getKind(), resultShape);
    if (!out)
      return failure();
    const T *a = lhs.data<T>(), *b = rhs.data<T>();
    T *c = out->data<T>();
    for (auto [index, off] : llvm::enumerate(offsets))
      gemm(transLhs, transRhs, m, n, k, T(1), a + off.first, ls[lr - 1],
           b + off.second, rs[rr - 1], T(0), c + index * m * n, n);
    return success();
  });
}

} // namespace

void loom::interp::registerMatmulKernels(KernelRegistry &registry) {
  registry.add(matmulKernel, /*computesBf16InF32=*/true);
}
