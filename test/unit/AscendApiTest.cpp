//===- AscendApiTest.cpp - The CANN prototypes Loom declares, pinned ------===//
//
// Each entry point runtime/ascend/AscendApi.h declares, written out again
// from CANN's public headers (the sources are listed in AscendApi.h): a
// change to a declared prototype, an enum value or the root-info size
// fails this file's build. The loader test resolves every entry point from
// the CPU test double's libraries (the same dlopen path as on hardware).
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/Loader.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <type_traits>

#define PIN(NAME, TYPE)                                                        \
  static_assert(std::is_same_v<decltype(&NAME), TYPE>,                         \
                #NAME " differs from CANN's prototype")

using Launch = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);
using Unary = aclnnStatus (*)(const aclTensor *, aclTensor *, uint64_t *,
                              aclOpExecutor **);
using Binary = aclnnStatus (*)(const aclTensor *, const aclTensor *,
                               aclTensor *, uint64_t *, aclOpExecutor **);
using WithAlpha = aclnnStatus (*)(const aclTensor *, const aclTensor *,
                                  const aclScalar *, aclTensor *, uint64_t *,
                                  aclOpExecutor **);

// ACL runtime.
PIN(aclInit, aclError (*)(const char *));
PIN(aclFinalize, aclError (*)());
PIN(aclGetRecentErrMsg, const char *(*)());
PIN(aclrtSetDevice, aclError (*)(int32_t));
PIN(aclrtResetDevice, aclError (*)(int32_t));
PIN(aclrtGetDeviceCount, aclError (*)(uint32_t *));
PIN(aclrtCreateStream, aclError (*)(aclrtStream *));
PIN(aclrtDestroyStream, aclError (*)(aclrtStream));
PIN(aclrtSynchronizeStream, aclError (*)(aclrtStream));
PIN(aclrtMalloc, aclError (*)(void **, size_t, aclrtMemMallocPolicy));
PIN(aclrtFree, aclError (*)(void *));
PIN(aclrtMemcpy,
    aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind));
PIN(aclrtMemcpyAsync, aclError (*)(void *, size_t, const void *, size_t,
                                   aclrtMemcpyKind, aclrtStream));
PIN(aclrtMemcpy2dAsync,
    aclError (*)(void *, size_t, const void *, size_t, size_t, size_t,
                 aclrtMemcpyKind, aclrtStream));
PIN(aclrtMemsetAsync,
    aclError (*)(void *, size_t, int32_t, size_t, aclrtStream));

// nnopbase.
PIN(aclCreateTensor,
    aclTensor *(*)(const int64_t *, uint64_t, aclDataType, const int64_t *,
                   int64_t, aclFormat, const int64_t *, uint64_t, void *));
PIN(aclDestroyTensor, aclnnStatus (*)(const aclTensor *));
PIN(aclCreateScalar, aclScalar *(*)(void *, aclDataType));
PIN(aclDestroyScalar, aclnnStatus (*)(const aclScalar *));
PIN(aclCreateIntArray, aclIntArray *(*)(const int64_t *, uint64_t));
PIN(aclDestroyIntArray, aclnnStatus (*)(const aclIntArray *));
PIN(aclCreateTensorList,
    aclTensorList *(*)(const aclTensor *const *, uint64_t));
PIN(aclDestroyTensorList, aclnnStatus (*)(const aclTensorList *));

// aclnn operators.
PIN(aclnnAddGetWorkspaceSize, WithAlpha);
PIN(aclnnSubGetWorkspaceSize, WithAlpha);
PIN(aclnnMulGetWorkspaceSize, Binary);
PIN(aclnnDivGetWorkspaceSize, Binary);
PIN(aclnnMaximumGetWorkspaceSize, Binary);
PIN(aclnnMinimumGetWorkspaceSize, Binary);
PIN(aclnnExpGetWorkspaceSize, Unary);
PIN(aclnnNegGetWorkspaceSize, Unary);
PIN(aclnnLogGetWorkspaceSize, Unary);
PIN(aclnnSqrtGetWorkspaceSize, Unary);
PIN(aclnnRsqrtGetWorkspaceSize, Unary);
PIN(aclnnTanhGetWorkspaceSize, Unary);
PIN(aclnnReluGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnSiluGetWorkspaceSize, Unary);
PIN(aclnnSinGetWorkspaceSize, Unary);
PIN(aclnnCosGetWorkspaceSize, Unary);
PIN(aclnnInplaceMulsGetWorkspaceSize,
    aclnnStatus (*)(aclTensor *, const aclScalar *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnInplaceCopyGetWorkspaceSize,
    aclnnStatus (*)(aclTensor *, const aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnInplaceFillScalarGetWorkspaceSize,
    aclnnStatus (*)(aclTensor *, const aclScalar *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnMatmulGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclTensor *, aclTensor *, int8_t,
                    uint64_t *, aclOpExecutor **));
PIN(aclnnReduceSumGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclIntArray *, bool, aclDataType,
                    aclTensor *, uint64_t *, aclOpExecutor **));
PIN(aclnnMeanGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclIntArray *, bool, aclDataType,
                    aclTensor *, uint64_t *, aclOpExecutor **));
PIN(aclnnAmaxGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclIntArray *, bool, aclTensor *,
                    uint64_t *, aclOpExecutor **));
PIN(aclnnCatGetWorkspaceSize,
    aclnnStatus (*)(const aclTensorList *, int64_t, aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnSoftmaxGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, int64_t, aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnEqTensorGetWorkspaceSize, Binary);
PIN(aclnnNeTensorGetWorkspaceSize, Binary);
PIN(aclnnLtTensorGetWorkspaceSize, Binary);
PIN(aclnnLeTensorGetWorkspaceSize, Binary);
PIN(aclnnGtTensorGetWorkspaceSize, Binary);
PIN(aclnnGeTensorGetWorkspaceSize, Binary);
PIN(aclnnCastGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, aclDataType, aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnClampGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclScalar *, const aclScalar *,
                    aclTensor *, uint64_t *, aclOpExecutor **));
PIN(aclnnSWhereGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *,
                    aclTensor *, uint64_t *, aclOpExecutor **));
PIN(aclnnGeluV2GetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, int64_t, aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnLogSoftmaxGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, int64_t, aclTensor *, uint64_t *,
                    aclOpExecutor **));
PIN(aclnnGatherGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, int64_t, const aclTensor *, aclTensor *,
                    uint64_t *, aclOpExecutor **));
PIN(aclnnLayerNormGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclIntArray *, const aclTensor *,
                    const aclTensor *, double, aclTensor *, aclTensor *,
                    aclTensor *, uint64_t *, aclOpExecutor **));
PIN(aclnnEmbeddingGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, const aclTensor *, const aclTensor *,
                    uint64_t *, aclOpExecutor **));
PIN(aclnnTopkGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, int64_t, int64_t, bool, bool,
                    aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **));
PIN(aclnnIndexAddGetWorkspaceSize,
    aclnnStatus (*)(const aclTensor *, int64_t, const aclTensor *,
                    const aclTensor *, const aclScalar *, aclTensor *,
                    uint64_t *, aclOpExecutor **));
PIN(aclnnGroupedMatmulV4GetWorkspaceSize,
    aclnnStatus (*)(const aclTensorList *, const aclTensorList *,
                    const aclTensorList *, const aclTensorList *,
                    const aclTensorList *, const aclTensorList *,
                    const aclTensorList *, const aclTensorList *,
                    const aclTensor *, const aclTensorList *,
                    const aclTensorList *, const aclTensorList *, int64_t,
                    int64_t, int64_t, int64_t, aclTensorList *,
                    aclTensorList *, aclTensorList *, uint64_t *,
                    aclOpExecutor **));
#define PIN_LAUNCH(OP) PIN(OP, Launch);
LOOM_ASCEND_OPAPI_OPERATORS(PIN_LAUNCH)
LOOM_ASCEND_LOOM_OPERATORS(PIN_LAUNCH)
#undef PIN_LAUNCH

// HCCL.
PIN(HcclGetRootInfo, HcclResult (*)(HcclRootInfo *));
PIN(HcclCommInitRootInfo,
    HcclResult (*)(uint32_t, const HcclRootInfo *, uint32_t, HcclComm *));
PIN(HcclCommDestroy, HcclResult (*)(HcclComm));
PIN(HcclAllReduce, HcclResult (*)(void *, void *, uint64_t, HcclDataType,
                                  HcclReduceOp, HcclComm, aclrtStream));
PIN(HcclAllGather, HcclResult (*)(void *, void *, uint64_t, HcclDataType,
                                  HcclComm, aclrtStream));
PIN(HcclReduceScatter, HcclResult (*)(void *, void *, uint64_t, HcclDataType,
                                      HcclReduceOp, HcclComm, aclrtStream));
PIN(HcclBroadcast, HcclResult (*)(void *, uint64_t, HcclDataType, uint32_t,
                                  HcclComm, aclrtStream));
PIN(HcclAlltoAllV,
    HcclResult (*)(const void *, const void *, const void *, HcclDataType,
                   const void *, const void *, const void *, HcclDataType,
                   HcclComm, aclrtStream));
PIN(HcclSend, HcclResult (*)(void *, uint64_t, HcclDataType, uint32_t, HcclComm,
                             aclrtStream));
PIN(HcclRecv, HcclResult (*)(void *, uint64_t, HcclDataType, uint32_t, HcclComm,
                             aclrtStream));
PIN(HcclGetErrorString, const char *(*)(HcclResult));

// Values and sizes from the headers.
static_assert(sizeof(HcclRootInfo) == 4108);
static_assert(ACL_FLOAT == 0 && ACL_INT32 == 3 && ACL_INT64 == 9 &&
              ACL_DOUBLE == 11 && ACL_BOOL == 12 && ACL_BF16 == 27);
static_assert(ACL_FORMAT_ND == 2);
static_assert(ACL_MEMCPY_HOST_TO_DEVICE == 1 &&
              ACL_MEMCPY_DEVICE_TO_HOST == 2 &&
              ACL_MEMCPY_DEVICE_TO_DEVICE == 3);
static_assert(ACL_MEM_MALLOC_HUGE_FIRST == 0);
static_assert(HCCL_DATA_TYPE_INT32 == 2 && HCCL_DATA_TYPE_FP32 == 4 &&
              HCCL_DATA_TYPE_INT64 == 5 && HCCL_DATA_TYPE_FP64 == 10);
static_assert(HCCL_REDUCE_SUM == 0 && HCCL_REDUCE_MAX == 2 &&
              HCCL_REDUCE_MIN == 3);
static_assert(sizeof(aclDataType) == 4 && sizeof(HcclDataType) == 4);

namespace {

TEST(AscendLoader, ResolvesEveryEntryPointFromTheTestDouble) {
  // dlopen finds the libraries on the library path, set by the test's
  // environment (test/unit/CMakeLists.txt) to the double's folder.
  loom::ascend::Api api;
  std::string error;
  ASSERT_TRUE(loom::ascend::loadApi(api, error)) << error;
  EXPECT_NE(api.aclrtMalloc, nullptr);
  EXPECT_NE(api.aclnnMatmulGetWorkspaceSize, nullptr);
  EXPECT_NE(api.aclnnLoomAttentionBackward, nullptr);
  EXPECT_NE(api.HcclCommInitRootInfo, nullptr);
  EXPECT_NE(api.HcclSend, nullptr);
  EXPECT_NE(api.HcclRecv, nullptr);
  EXPECT_NE(api.HcclGetErrorString, nullptr);
}

} // namespace
