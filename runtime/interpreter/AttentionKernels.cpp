//===- AttentionKernels.cpp - nn.attention --------------------------------===//
//
// Per batch and query head: scores = scale * Q K^T (one GEMM, reading the
// [batch, seq, heads, head_dim] layout in place through leading dimensions),
// masked softmax over the visible keys in key order, out = P V (one GEMM).
// A query that sees no key gets zeros.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/Blas.h"
#include "runtime/interpreter/AttentionMask.h"
#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

LogicalResult attentionKernel(nn::AttentionOp op, KernelCall &call) {
  const Tensor &query = call.operand(0), &key = call.operand(1),
               &value = call.operand(2);
  for (auto [tensor, name] :
       {std::make_pair(&query, "query"), std::make_pair(&key, "key"),
        std::make_pair(&value, "value")}) {
    if (tensor->getRank() != 4)
      return call.emitError() << name << " must have rank 4 ([batch, seq, "
                              << "heads, head_dim]), got shape "
                              << formatShape(tensor->getShape());
    if (tensor->getKind() != query.getKind())
      return call.emitError() << name << " has element type "
                              << getElementKindName(tensor->getKind())
                              << ", the query "
                              << getElementKindName(query.getKind());
  }
  llvm::ArrayRef<int64_t> qs = query.getShape(), ks = key.getShape(),
                          vs = value.getShape();
  int64_t batch = qs[0], seqQ = qs[1], heads = qs[2], dim = qs[3];
  int64_t seqK = ks[1], kvHeads = ks[2], valueDim = vs[3];
  if (ks[0] != batch || vs[0] != batch)
    return call.emitError() << "batch sizes differ: query " << batch
                            << ", key " << ks[0] << ", value " << vs[0];
  if (vs[1] != seqK || vs[2] != kvHeads)
    return call.emitError() << "key of shape " << formatShape(ks)
                            << " and value of shape " << formatShape(vs)
                            << " differ in sequence length or heads";
  if (ks[3] != dim)
    return call.emitError() << "key head_dim " << ks[3]
                            << " differs from the query head_dim " << dim;
  if (kvHeads == 0 || heads % kvHeads != 0)
    return call.emitError() << "query heads " << heads
                            << " are not a multiple of key/value heads "
                            << kvHeads;
  for (int64_t size : {seqQ, seqK, heads * dim, kvHeads * dim,
                       kvHeads * valueDim, heads * valueDim})
    if (!fitsBlasInt(size))
      return call.emitError() << "dimension " << size
                              << " is too large for BLAS";

  FailureOr<AttentionMask> maskOr =
      getAttentionMask(call, op, batch, seqQ, seqK, dim);
  if (failed(maskOr))
    return failure();
  const AttentionMask &mask = *maskOr;
  int64_t group = heads / kvHeads;

  llvm::SmallVector<int64_t> resultShape = {batch, seqQ, heads, valueDim};
  return dispatchFloat(call, query.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    Tensor *out = call.addResult(query.getKind(), resultShape);
    if (!out)
      return failure();
    // Nothing to compute, or no key to see (zeros).
    if (out->getNumElements() == 0 || seqK == 0)
      return success();
    if (failed(call.checkSize(query.getKind(), {seqQ, seqK})))
      return failure();
    std::vector<T> scores(static_cast<size_t>(seqQ * seqK));
    std::vector<uint8_t> visible(static_cast<size_t>(seqK));
    const T scale = static_cast<T>(mask.scale);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        int64_t g = h / group;
        const T *q = query.data<T>() + (b * seqQ * heads + h) * dim;
        const T *k = key.data<T>() + (b * seqK * kvHeads + g) * dim;
        const T *v = value.data<T>() + (b * seqK * kvHeads + g) * valueDim;
        T *o = out->data<T>() + (b * seqQ * heads + h) * valueDim;
        gemm(false, true, seqQ, seqK, dim, scale, q, heads * dim, k,
             kvHeads * dim, T(0), scores.data(), seqK);
        for (int64_t i = 0; i < seqQ; ++i) {
          int64_t p = mask.positionOf(b, i);
          T *row = scores.data() + i * seqK;
          T max = -std::numeric_limits<T>::infinity();
          bool any = false;
          for (int64_t j = 0; j < seqK; ++j) {
            bool sees = mask.sees(b, j, p);
            visible[j] = sees;
            if (sees) {
              any = true;
              max = (row[j] > max || std::isnan(row[j])) ? row[j] : max;
            }
          }
          if (!any) {
            std::fill(row, row + seqK, T(0));
            continue;
          }
          T sum = 0;
          for (int64_t j = 0; j < seqK; ++j) {
            row[j] = visible[j] ? std::exp(row[j] - max) : T(0);
            sum += row[j];
          }
          for (int64_t j = 0; j < seqK; ++j)
            row[j] /= sum;
        }
        gemm(false, false, seqQ, valueDim, seqK, T(1), scores.data(), seqK, v,
             kvHeads * valueDim, T(0), o, heads * valueDim);
      }
    }
    return success();
  });
}

} // namespace

void loom::interp::registerAttentionKernels(KernelRegistry &registry) {
  registry.add(attentionKernel, /*computesBf16InF32=*/true);
}
