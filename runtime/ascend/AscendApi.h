//===- AscendApi.h - The CANN entry points Loom calls -----------*- C++ -*-===//
//
// Loom builds without the CANN SDK: this header declares, with CANN's own
// names, exactly the part of the ACL runtime (libascendcl.so), the aclnn
// operator base (libnnopbase.so), the aclnn operators (libopapi.so) and
// HCCL (libhccl.so) that the Ascend target uses, and the runtime resolves
// them with dlopen/dlsym at start-up (Loader.h). The types and prototypes
// are written from CANN's public headers; where each was read is noted
// beside it:
//   ACL     Ascend/pytorch third_party/acl/inc/acl/{acl_base.h, acl.h,
//           acl_rt.h} (runtime API 1.15.0), the same as hicann/runtime
//           include/external/acl/acl_base_rt.h;
//   META    hicann/opbase include/nnopbase/aclnn/acl_meta.h;
//   MATH    hicann/ops-math <group>/<op>/op_host/op_api/aclnn_<op>.h;
//   NN      hicann/ops-nn <group>/<op>/op_api/aclnn_<op>.h;
//   8.1     an installed CANN 8.1.RC1 toolkit's
//           opp/built-in/op_impl/ai_core/tbe/op_api/include/aclnnop/
//           [level2/]aclnn_<op>.h (same parameters as MATH and NN);
//   HCCL    Ascend/pytorch third_party/hccl/inc/hccl/{hccl.h,
//           hccl_types.h}, the same as hicann/hccl include/hccl.h and
//           hccl/hccl_comm.h.
// Some launch functions spell their last parameter `const aclrtStream`;
// that is the same type. CANN 8.x ships the operators in libopapi.so;
// later releases split them into libopapi_math.so and libopapi_nn.so (the
// loader looks in all three). test/unit/AscendApiTest.cpp pins every prototype,
// and the CPU test double (runtime/ascend/double) defines each of them against
// these declarations, so a change here that breaks the ABI fails to build.
//
// Nothing here is defined by Loom's runtime: the declarations only give the
// types `decltype(&name)` of the pointers the loader fills.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_ASCENDAPI_H
#define LOOM_RUNTIME_ASCEND_ASCENDAPI_H

#include <cstddef>
#include <cstdint>

extern "C" {

//===----------------------------------------------------------------------===//
// ACL runtime: acl/acl_base.h, acl/acl_rt.h, acl/acl.h
//===----------------------------------------------------------------------===//

// ACL acl_base.h: `typedef int aclError;`, `static const int ACL_SUCCESS =
// 0;`, `typedef void *aclrtStream;`.
typedef int aclError;
typedef void *aclrtStream;
constexpr aclError ACL_SUCCESS = 0;

// ACL acl_base.h, `typedef enum { ... } aclDataType;` (the values Loom
// uses).
typedef enum {
  ACL_DT_UNDEFINED = -1,
  ACL_FLOAT = 0,
  ACL_FLOAT16 = 1,
  ACL_INT8 = 2,
  ACL_INT32 = 3,
  ACL_UINT8 = 4,
  ACL_INT16 = 6,
  ACL_UINT16 = 7,
  ACL_UINT32 = 8,
  ACL_INT64 = 9,
  ACL_UINT64 = 10,
  ACL_DOUBLE = 11,
  ACL_BOOL = 12,
  ACL_BF16 = 27,
} aclDataType;

// ACL acl_base.h, `typedef enum { ... } aclFormat;` (ND only).
typedef enum {
  ACL_FORMAT_UNDEFINED = -1,
  ACL_FORMAT_ND = 2,
} aclFormat;

// ACL acl_rt.h (later values omitted).
typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2,
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
} aclrtMemcpyKind;

// ACL acl.h
aclError aclInit(const char *configPath);
aclError aclFinalize();
// ACL acl.h
const char *aclGetRecentErrMsg();
// ACL acl_rt.h
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtGetDeviceCount(uint32_t *count);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind);
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                          size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream);
aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src,
                            size_t spitch, size_t width, size_t height,
                            aclrtMemcpyKind kind, aclrtStream stream);
aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value,
                          size_t count, aclrtStream stream);

//===----------------------------------------------------------------------===//
// aclnn operator base: META (libnnopbase.so)
//===----------------------------------------------------------------------===//

typedef int32_t aclnnStatus;
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclTensorList aclTensorList;

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                           aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclScalar *aclCreateScalar(void *value, aclDataType dataType);
aclnnStatus aclDestroyScalar(const aclScalar *scalar);
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
aclnnStatus aclDestroyIntArray(const aclIntArray *array);
aclTensorList *aclCreateTensorList(const aclTensor *const *value,
                                   uint64_t size);
aclnnStatus aclDestroyTensorList(const aclTensorList *array);

//===----------------------------------------------------------------------===//
// aclnn operators: MATH, NN, 8.1 (libopapi.so)
//===----------------------------------------------------------------------===//
//
// Every operator is two calls: `aclnn<Op>GetWorkspaceSize(operands...,
// attributes..., results..., uint64_t *workspaceSize, aclOpExecutor
// **executor)` and then `aclnn<Op>(void *workspace, uint64_t workspaceSize,
// aclOpExecutor *executor, aclrtStream stream)`, which launches on the
// stream; the workspace must stay allocated until the stream has run it.

#define LOOM_ACLNN_LAUNCH(OP)                                                  \
  aclnnStatus OP(void *workspace, uint64_t workspaceSize,                      \
                 aclOpExecutor *executor, aclrtStream stream);

// MATH math/add, math/sub: out = self + alpha * other (broadcasting).
aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self,
                                     const aclTensor *other,
                                     const aclScalar *alpha, aclTensor *out,
                                     uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnAdd)
aclnnStatus aclnnSubGetWorkspaceSize(const aclTensor *self,
                                     const aclTensor *other,
                                     const aclScalar *alpha, aclTensor *out,
                                     uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnSub)

// MATH math/mul, math/div, math/maximum, math/minimum: binary ops
// (broadcasting) `(self, other, out)`.
#define LOOM_ACLNN_BINARY(OP)                                                  \
  aclnnStatus OP##GetWorkspaceSize(                                            \
      const aclTensor *self, const aclTensor *other, aclTensor *out,           \
      uint64_t *workspaceSize, aclOpExecutor **executor);                      \
  LOOM_ACLNN_LAUNCH(OP)
LOOM_ACLNN_BINARY(aclnnMul)
LOOM_ACLNN_BINARY(aclnnDiv)
LOOM_ACLNN_BINARY(aclnnMaximum)
LOOM_ACLNN_BINARY(aclnnMinimum)

// MATH math/{exp,neg,log,sqrt,rsqrt,tanh,sin,cos}, 8.1 aclnn_silu.h: unary
// ops `(self, out)`; NN activation/relu declares its `out` const.
#define LOOM_ACLNN_UNARY(OP)                                                   \
  aclnnStatus OP##GetWorkspaceSize(const aclTensor *self, aclTensor *out,      \
                                   uint64_t *workspaceSize,                    \
                                   aclOpExecutor **executor);                  \
  LOOM_ACLNN_LAUNCH(OP)
LOOM_ACLNN_UNARY(aclnnExp)
LOOM_ACLNN_UNARY(aclnnNeg)
LOOM_ACLNN_UNARY(aclnnLog)
LOOM_ACLNN_UNARY(aclnnSqrt)
LOOM_ACLNN_UNARY(aclnnRsqrt)
LOOM_ACLNN_UNARY(aclnnTanh)
aclnnStatus aclnnReluGetWorkspaceSize(const aclTensor *self,
                                      const aclTensor *out,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnRelu)
LOOM_ACLNN_UNARY(aclnnSilu)
LOOM_ACLNN_UNARY(aclnnSin)
LOOM_ACLNN_UNARY(aclnnCos)

// MATH math/mul (aclnn_mul.h): selfRef *= other (a scalar), in place.
aclnnStatus aclnnInplaceMulsGetWorkspaceSize(aclTensor *selfRef,
                                             const aclScalar *other,
                                             uint64_t *workspaceSize,
                                             aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnInplaceMuls)

// MATH conversion/view_copy (aclnn_copy.h): selfRef = src (any strides on
// either side).
aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef,
                                             const aclTensor *src,
                                             uint64_t *workspaceSize,
                                             aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnInplaceCopy)

// MATH conversion/fill (aclnn_fill_scalar.h): selfRef = value.
aclnnStatus aclnnInplaceFillScalarGetWorkspaceSize(aclTensor *selfRef,
                                                   const aclScalar *value,
                                                   uint64_t *workspaceSize,
                                                   aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnInplaceFillScalar)

// NN matmul/mat_mul_v3 (8.1 level2/aclnn_matmul.h): out = self @ mat2
// (batch dimensions broadcast, as torch.matmul). cubeMathType 0
// (KEEP_DTYPE) computes in the inputs' type: f32 stays f32 on Atlas A2/A3;
// first-generation Atlas training chips refuse it for f32.
aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self,
                                        const aclTensor *mat2, aclTensor *out,
                                        int8_t cubeMathType,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnMatmul)

// MATH math/reduce_sum, math/reduce_mean, math/reduce_max: reductions over
// `dim` (`dtype` is the result's type).
aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self,
                                           const aclIntArray *dim,
                                           bool keepDims, aclDataType dtype,
                                           aclTensor *out,
                                           uint64_t *workspaceSize,
                                           aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnReduceSum)
aclnnStatus aclnnMeanGetWorkspaceSize(const aclTensor *self,
                                      const aclIntArray *dim, bool keepDim,
                                      aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnMean)
aclnnStatus aclnnAmaxGetWorkspaceSize(const aclTensor *self,
                                      const aclIntArray *dim, bool keepDim,
                                      aclTensor *out, uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnAmax)

// MATH conversion/concat (aclnn_cat.h): out = the tensors concatenated along
// dim.
aclnnStatus aclnnCatGetWorkspaceSize(const aclTensorList *tensors, int64_t dim,
                                     aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnCat)

// NN activation/softmax_v2, 8.1 aclnn_softmax.h: out = softmax(self) along
// dim.
aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim,
                                         aclTensor *out,
                                         uint64_t *workspaceSize,
                                         aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnSoftmax)

// 8.1 level2/aclnn_{eq,ne,lt}_tensor.h, aclnn_{le,gt,ge}_tensor.h:
// element-wise comparisons (broadcasting) into a BOOL `out`.
LOOM_ACLNN_BINARY(aclnnEqTensor)
LOOM_ACLNN_BINARY(aclnnNeTensor)
LOOM_ACLNN_BINARY(aclnnLtTensor)
LOOM_ACLNN_BINARY(aclnnLeTensor)
LOOM_ACLNN_BINARY(aclnnGtTensor)
LOOM_ACLNN_BINARY(aclnnGeTensor)

// 8.1 level2/aclnn_cast.h: out = self converted to `dtype` (out's type).
aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self,
                                      const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnCast)

// 8.1 aclnn_clamp.h (hicann/ops-math clip_by_value_v2 docs): out =
// min(max(self, clipValueMin), clipValueMax); a null bound is no bound
// (not both).
aclnnStatus aclnnClampGetWorkspaceSize(const aclTensor *self,
                                       const aclScalar *clipValueMin,
                                       const aclScalar *clipValueMax,
                                       aclTensor *out, uint64_t *workspaceSize,
                                       aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnClamp)

// 8.1 level2/aclnn_s_where.h (hicann/ops-math select docs): out =
// condition ? self : other (broadcasting).
aclnnStatus aclnnSWhereGetWorkspaceSize(const aclTensor *condition,
                                        const aclTensor *self,
                                        const aclTensor *other, aclTensor *out,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnSWhere)

// 8.1 level2/aclnn_gelu_v2.h (NN activation/gelu_v2): y = GELU(x), the
// tanh approximation when approximate is 1, erf when 0.
aclnnStatus aclnnGeluV2GetWorkspaceSize(const aclTensor *x, int64_t approximate,
                                        aclTensor *y, uint64_t *workspaceSize,
                                        aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnGeluV2)

// 8.1 aclnn_logsoftmax.h (NN activation/log_softmax_v2): out =
// log(softmax(self)) along dim.
aclnnStatus aclnnLogSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim,
                                            aclTensor *out,
                                            uint64_t *workspaceSize,
                                            aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnLogSoftmax)

// 8.1 level2/aclnn_gather.h: torch.gather (out[i][j] = self[i][index[i][j]]
// along dim).
aclnnStatus aclnnGatherGetWorkspaceSize(const aclTensor *self,
                                        const int64_t dim,
                                        const aclTensor *index, aclTensor *out,
                                        uint64_t *workspaceSize,
                                        aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnGather)

// 8.1 level2/aclnn_layer_norm.h: out = layer norm of input over its
// trailing normalizedShape, times weight plus bias (each optional); mean
// and rstd outputs optional.
aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape,
    const aclTensor *weightOptional, const aclTensor *biasOptional, double eps,
    aclTensor *out, aclTensor *meanOutOptional, aclTensor *rstdOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnLayerNorm)

// 8.1 level2/aclnn_embedding.h: out = weight's rows at indices (its `out`
// declared const).
aclnnStatus aclnnEmbeddingGetWorkspaceSize(const aclTensor *weight,
                                           const aclTensor *indices,
                                           const aclTensor *out,
                                           uint64_t *workspaceSize,
                                           aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnEmbedding)

// The mixture-of-experts operators (docs/moe.md, "Targets").
// level2/aclnn_topk.h (ops-nn index/topk): the k largest (largest) or
// smallest elements along dim and their int64 indices, sorted when
// `sorted`.
aclnnStatus aclnnTopkGetWorkspaceSize(const aclTensor *self, int64_t k,
                                      int64_t dim, bool largest, bool sorted,
                                      aclTensor *valuesOut,
                                      aclTensor *indicesOut,
                                      uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnTopk)

// level2/aclnn_index_add.h (ops-nn index/inplace_scatter_add): out = self,
// then out[index[i]] += alpha * source[i] along dim.
aclnnStatus aclnnIndexAddGetWorkspaceSize(const aclTensor *self,
                                          const int64_t dim,
                                          const aclTensor *index,
                                          const aclTensor *source,
                                          const aclScalar *alpha,
                                          aclTensor *out,
                                          uint64_t *workspaceSize,
                                          aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnIndexAdd)

// aclnn_grouped_matmul_v4.h (ops-transformer gmm/grouped_matmul): y_i =
// x_i * weight_i for groups along the axis groupType names (0: M, the rows
// of x; 2: K, the rows of a transposed x and of weight), the group sizes
// in groupListOptional (groupListType 1: one count per group; 0: their
// running sums); splitItem 2 or 3: x, weight and out single tensors. Loom
// passes no bias, quantisation or activation (all null, actType 0).
aclnnStatus aclnnGroupedMatmulV4GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight,
    const aclTensorList *biasOptional, const aclTensorList *scaleOptional,
    const aclTensorList *offsetOptional,
    const aclTensorList *antiquantScaleOptional,
    const aclTensorList *antiquantOffsetOptional,
    const aclTensorList *perTokenScaleOptional,
    const aclTensor *groupListOptional,
    const aclTensorList *activationInputOptional,
    const aclTensorList *activationQuantScaleOptional,
    const aclTensorList *activationQuantOffsetOptional, int64_t splitItem,
    int64_t groupType, int64_t groupListType, int64_t actType,
    aclTensorList *out, aclTensorList *activationFeatureOutOptional,
    aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize,
    aclOpExecutor **executor);
LOOM_ACLNN_LAUNCH(aclnnGroupedMatmulV4)

#undef LOOM_ACLNN_BINARY
#undef LOOM_ACLNN_UNARY

//===----------------------------------------------------------------------===//
// HCCL (libhccl.so)
//===----------------------------------------------------------------------===//

// HCCL hccl_types.h (every code up to the newest, so that any value the
// library returns is one of the enumeration's).
typedef enum {
  HCCL_SUCCESS = 0,
  HCCL_E_PARA = 1,
  HCCL_E_PTR = 2,
  HCCL_E_MEMORY = 3,
  HCCL_E_INTERNAL = 4,
  HCCL_E_NOT_SUPPORT = 5,
  HCCL_E_NOT_FOUND = 6,
  HCCL_E_UNAVAIL = 7,
  HCCL_E_SYSCALL = 8,
  HCCL_E_TIMEOUT = 9,
  HCCL_E_OPEN_FILE_FAILURE = 10,
  HCCL_E_TCP_CONNECT = 11,
  HCCL_E_ROCE_CONNECT = 12,
  HCCL_E_TCP_TRANSFER = 13,
  HCCL_E_ROCE_TRANSFER = 14,
  HCCL_E_RUNTIME = 15,
  HCCL_E_DRV = 16,
  HCCL_E_PROFILING = 17,
  HCCL_E_CCE = 18,
  HCCL_E_NETWORK = 19,
  HCCL_E_AGAIN = 20,
  HCCL_E_REMOTE = 21,
  HCCL_E_SUSPENDING = 22,
  HCCL_E_OPRETRY_FAIL = 23,
  HCCL_E_OOM = 24,
  HCCL_E_RESERVED
} HcclResult;

typedef void *HcclComm;

// HCCL hccl_types.h: `#define HCCL_ROOT_INFO_BYTES 4108` and
// `typedef struct HcclRootInfoDef { char internal[HCCL_ROOT_INFO_BYTES]; }
// HcclRootInfo;`.
#define HCCL_ROOT_INFO_BYTES 4108
typedef struct HcclRootInfoDef {
  char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

typedef enum {
  HCCL_REDUCE_SUM = 0,
  HCCL_REDUCE_PROD = 1,
  HCCL_REDUCE_MAX = 2,
  HCCL_REDUCE_MIN = 3,
} HcclReduceOp;

typedef enum {
  HCCL_DATA_TYPE_INT8 = 0,
  HCCL_DATA_TYPE_INT16 = 1,
  HCCL_DATA_TYPE_INT32 = 2,
  HCCL_DATA_TYPE_FP16 = 3,
  HCCL_DATA_TYPE_FP32 = 4,
  HCCL_DATA_TYPE_INT64 = 5,
  HCCL_DATA_TYPE_UINT64 = 6,
  HCCL_DATA_TYPE_UINT8 = 7,
  HCCL_DATA_TYPE_UINT16 = 8,
  HCCL_DATA_TYPE_UINT32 = 9,
  HCCL_DATA_TYPE_FP64 = 10,
  HCCL_DATA_TYPE_BFP16 = 11,
} HcclDataType;

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo,
                                uint32_t rank, HcclComm *comm);
HcclResult HcclCommDestroy(HcclComm comm);
HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count,
                         HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                         aclrtStream stream);
HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount,
                         HcclDataType dataType, HcclComm comm,
                         aclrtStream stream);
HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount,
                             HcclDataType dataType, HcclReduceOp op,
                             HcclComm comm, aclrtStream stream);
HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType,
                         uint32_t root, HcclComm comm, aclrtStream stream);
HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts,
                         const void *sdispls, HcclDataType sendType,
                         const void *recvBuf, const void *recvCounts,
                         const void *rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream);
// HCCL hccl.h (Ascend/pytorch third_party/hccl/inc/hccl/hccl.h and
// hicann/hccl include/hccl.h agree): point to point on the stream, paired
// with the peer's call; every type, fp64 included.
HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType,
                    uint32_t destRank, HcclComm comm, aclrtStream stream);
HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType,
                    uint32_t srcRank, HcclComm comm, aclrtStream stream);
// Not in older CANN: resolved when present.
const char *HcclGetErrorString(HcclResult code);

} // extern "C"

#endif // LOOM_RUNTIME_ASCEND_ASCENDAPI_H
