//===- LoomOps.h - Loom's own aclnn-style operators --------------*- C++
//-*-===//
//
// The nn ops that have no aclnn operator with the same semantics (Loom's
// GELU and layer-norm gradients that recompute instead of saving
// statistics, attention with causal and tree masks, cross-entropy with
// weights and a normaliser, embeddings offset into a vocabulary shard and
// their gradient, AdamW and SGD with Loom's state, Loom's counter-based
// dropout, RMS norm and rotary embeddings as Loom defines them, iota from
// an offset tensor) are operators of Loom's own
// operator package, `libloom_opapi.so`, with the interface CANN generates
// for custom operators: `aclnnLoom<Op>GetWorkspaceSize(operands...,
// attributes..., results..., workspaceSize, executor)` and
// `aclnnLoom<Op>(workspace, workspaceSize, executor, stream)`.
//
// Semantics are those of the host kernels of the same nn op
// (runtime/kernels/HostKernels.h); an absent optional operand is a null
// tensor; index operands are int32 or int64 tensors; 0-d integer operands
// (offset, step) are int64 tensors in device memory.
//
// On Ascend hardware these operators would be AscendC kernels built into
// that package; Loom does not have them yet. The CPU test double
// (runtime/ascend/double) implements them on the host kernels.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_LOOMOPS_H
#define LOOM_RUNTIME_ASCEND_LOOMOPS_H

#include "runtime/ascend/AscendApi.h"

extern "C" {

#define LOOM_OP(OP, ...)                                                       \
  aclnnStatus OP##GetWorkspaceSize(__VA_ARGS__, uint64_t *workspaceSize,       \
                                   aclOpExecutor **executor);                  \
  aclnnStatus OP(void *workspace, uint64_t workspaceSize,                      \
                 aclOpExecutor *executor, aclrtStream stream);

LOOM_OP(aclnnLoomGeluBackward, const aclTensor *grad, const aclTensor *input,
        const char *approximate, aclTensor *out)
LOOM_OP(aclnnLoomLayerNormBackward, const aclTensor *grad,
        const aclTensor *input, const aclTensor *scale, double epsilon,
        int64_t normalizedDims, aclTensor *out)
LOOM_OP(aclnnLoomAttention, const aclTensor *query, const aclTensor *key,
        const aclTensor *value, const aclTensor *subtreeEnd,
        const aclTensor *positions, const char *mask, double scale,
        aclTensor *out)
LOOM_OP(aclnnLoomAttentionBackward, const aclTensor *grad,
        const aclTensor *query, const aclTensor *key, const aclTensor *value,
        const aclTensor *subtreeEnd, const aclTensor *positions,
        const char *mask, double scale, aclTensor *dquery, aclTensor *dkey,
        aclTensor *dvalue)
LOOM_OP(aclnnLoomCrossEntropy, const aclTensor *logits, const aclTensor *labels,
        const aclTensor *weights, const aclTensor *normalizerValue,
        double normalizer, aclTensor *out)
LOOM_OP(aclnnLoomCrossEntropyBackward, const aclTensor *grad,
        const aclTensor *logits, const aclTensor *labels,
        const aclTensor *weights, const aclTensor *normalizerValue,
        double normalizer, aclTensor *out)
LOOM_OP(aclnnLoomEmbedding, const aclTensor *table, const aclTensor *ids,
        const aclTensor *offset, aclTensor *out)
LOOM_OP(aclnnLoomGatherBackward, const aclTensor *grad,
        const aclTensor *indices, const aclTensor *offset, int64_t dim,
        aclTensor *out)
LOOM_OP(aclnnLoomIota, const aclTensor *offset, int64_t dim, aclTensor *out)
LOOM_OP(aclnnLoomAdamW, const aclTensor *param, const aclTensor *grad,
        const aclTensor *m, const aclTensor *v, const aclTensor *step,
        double beta1, double beta2, double epsilon, double lr,
        double weightDecay, aclTensor *newParam, aclTensor *newM,
        aclTensor *newV)
LOOM_OP(aclnnLoomSgd, const aclTensor *param, const aclTensor *grad,
        const aclTensor *momentumBuffer, double lr, double momentum,
        bool nesterov, double weightDecay, aclTensor *newParam,
        aclTensor *newMomentumBuffer)

LOOM_OP(aclnnLoomDropout, const aclTensor *input, const aclTensor *offset,
        const aclTensorList *startsOptional,
        const aclIntArray *globalShapeOptional, double rate, int64_t seed,
        aclTensor *out)
LOOM_OP(aclnnLoomRmsNorm, const aclTensor *input, const aclTensor *scale,
        double epsilon, int64_t normalizedDims, aclTensor *out)
LOOM_OP(aclnnLoomRmsNormBackward, const aclTensor *grad, const aclTensor *input,
        const aclTensor *scale, double epsilon, int64_t normalizedDims,
        aclTensor *out)
LOOM_OP(aclnnLoomRope, const aclTensor *input, const aclTensor *positions,
        bool inverse, double theta, aclTensor *out)

#undef LOOM_OP

} // extern "C"

//===----------------------------------------------------------------------===//
// The entry points by library, for the loader and the pinning test
//===----------------------------------------------------------------------===//

// X(name) for every function; X2(op) for an operator's pair
// (op##GetWorkspaceSize, op).
#define LOOM_ASCEND_ACL_FUNCTIONS(X)                                           \
  X(aclInit)                                                                   \
  X(aclFinalize)                                                               \
  X(aclGetRecentErrMsg)                                                        \
  X(aclrtSetDevice)                                                            \
  X(aclrtResetDevice)                                                          \
  X(aclrtGetDeviceCount)                                                       \
  X(aclrtCreateStream)                                                         \
  X(aclrtDestroyStream)                                                        \
  X(aclrtSynchronizeStream)                                                    \
  X(aclrtMalloc)                                                               \
  X(aclrtFree)                                                                 \
  X(aclrtMemcpy)                                                               \
  X(aclrtMemcpyAsync)                                                          \
  X(aclrtMemcpy2dAsync)                                                        \
  X(aclrtMemsetAsync)

#define LOOM_ASCEND_NNOPBASE_FUNCTIONS(X)                                      \
  X(aclCreateTensor)                                                           \
  X(aclDestroyTensor)                                                          \
  X(aclCreateScalar)                                                           \
  X(aclDestroyScalar)                                                          \
  X(aclCreateIntArray)                                                         \
  X(aclDestroyIntArray)                                                        \
  X(aclCreateTensorList)                                                       \
  X(aclDestroyTensorList)

#define LOOM_ASCEND_OPAPI_OPERATORS(X2)                                        \
  X2(aclnnAdd)                                                                 \
  X2(aclnnSub)                                                                 \
  X2(aclnnMul)                                                                 \
  X2(aclnnDiv)                                                                 \
  X2(aclnnMaximum)                                                             \
  X2(aclnnMinimum)                                                             \
  X2(aclnnExp)                                                                 \
  X2(aclnnNeg)                                                                 \
  X2(aclnnLog)                                                                 \
  X2(aclnnSqrt)                                                                \
  X2(aclnnRsqrt)                                                               \
  X2(aclnnTanh)                                                                \
  X2(aclnnRelu)                                                                \
  X2(aclnnSilu)                                                                \
  X2(aclnnSin)                                                                 \
  X2(aclnnCos)                                                                 \
  X2(aclnnInplaceMuls)                                                         \
  X2(aclnnInplaceCopy)                                                         \
  X2(aclnnInplaceFillScalar)                                                   \
  X2(aclnnMatmul)                                                              \
  X2(aclnnReduceSum)                                                           \
  X2(aclnnMean)                                                                \
  X2(aclnnAmax)                                                                \
  X2(aclnnCat)                                                                 \
  X2(aclnnSoftmax)                                                             \
  X2(aclnnEqTensor)                                                            \
  X2(aclnnNeTensor)                                                            \
  X2(aclnnLtTensor)                                                            \
  X2(aclnnLeTensor)                                                            \
  X2(aclnnGtTensor)                                                            \
  X2(aclnnGeTensor)                                                            \
  X2(aclnnCast)                                                                \
  X2(aclnnClamp)                                                               \
  X2(aclnnSWhere)                                                              \
  X2(aclnnGeluV2)                                                              \
  X2(aclnnLogSoftmax)                                                          \
  X2(aclnnGather)                                                              \
  X2(aclnnLayerNorm)                                                           \
  X2(aclnnEmbedding)

#define LOOM_ASCEND_HCCL_FUNCTIONS(X)                                          \
  X(HcclGetRootInfo)                                                           \
  X(HcclCommInitRootInfo)                                                      \
  X(HcclCommDestroy)                                                           \
  X(HcclAllReduce)                                                             \
  X(HcclAllGather)                                                             \
  X(HcclReduceScatter)                                                         \
  X(HcclBroadcast)                                                             \
  X(HcclAlltoAllV)                                                             \
  X(HcclSend)                                                                  \
  X(HcclRecv)

#define LOOM_ASCEND_LOOM_OPERATORS(X2)                                         \
  X2(aclnnLoomGeluBackward)                                                    \
  X2(aclnnLoomLayerNormBackward)                                               \
  X2(aclnnLoomAttention)                                                       \
  X2(aclnnLoomAttentionBackward)                                               \
  X2(aclnnLoomCrossEntropy)                                                    \
  X2(aclnnLoomCrossEntropyBackward)                                            \
  X2(aclnnLoomEmbedding)                                                       \
  X2(aclnnLoomGatherBackward)                                                  \
  X2(aclnnLoomIota)                                                            \
  X2(aclnnLoomAdamW)                                                           \
  X2(aclnnLoomSgd)                                                             \
  X2(aclnnLoomDropout)                                                         \
  X2(aclnnLoomRmsNorm)                                                         \
  X2(aclnnLoomRmsNormBackward)                                                 \
  X2(aclnnLoomRope)

#endif // LOOM_RUNTIME_ASCEND_LOOMOPS_H
