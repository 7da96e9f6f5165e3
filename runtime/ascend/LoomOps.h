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

// Generated from the ops' kernel contracts (`ascendLoomOperator`, see
// docs/op-contract.md): operands, attributes by name, then results, in the
// types of the op's kernels.
#include "runtime/ascend/LoomOps.h.inc"

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
  X2(aclnnEmbedding)                                                           \
  X2(aclnnTopk)                                                                \
  X2(aclnnIndexAdd)                                                            \
  X2(aclnnGroupedMatmulV4)

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

// LOOM_ASCEND_LOOM_OPERATORS(X2), Loom's own operators: generated with
// their declarations (LoomOps.h.inc, above).

#endif // LOOM_RUNTIME_ASCEND_LOOMOPS_H
