//===- AscendDoubleTest.cpp - The CPU test double of CANN -----------------===//
//
// runtime/ascend/double, the test double of the Ascend libraries for
// hardware we do not have: the protocol checks it exists for (the
// workspace of a launch freed before the stream is synchronised, an
// executor used twice, a workspace too small, handles used after they
// were destroyed), the call log, HCCL over MPI on one rank, and every
// operator against the host kernel it calls (f64, bit for bit).
//
// One process, one MPI rank: main() initialises MPI, ACL and the log.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/AscendApi.h"
#include "runtime/ascend/LoomOps.h"
#include "runtime/kernels/HostKernels.h"

#include "gtest/gtest.h"

#include <mpi.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace host = loom::host;

namespace {

using Dims = std::vector<int64_t>;

// CANN's status codes the double returns.
constexpr aclError kInvalidParam = 100000;
constexpr aclError kUninitialized = 100001;
constexpr aclError kRtParamInvalid = 107000;
constexpr aclError kRtInvalidDevice = 107001;
constexpr aclError kRtContextNull = 107002;
constexpr aclError kStreamNotComplete = 507004;
constexpr aclnnStatus kNullptr = 161001;
constexpr aclnnStatus kParamInvalid = 161002;

/// The call log's path prefix (set by main()).
std::string logPrefix;

template <typename T> aclDataType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return ACL_FLOAT;
  else if constexpr (std::is_same_v<T, double>)
    return ACL_DOUBLE;
  else if constexpr (std::is_same_v<T, int32_t>)
    return ACL_INT32;
  else
    return ACL_INT64;
}

int64_t count(const Dims &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

Dims rowMajor(const Dims &dims) {
  Dims strides(dims.size());
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= dims[d];
  }
  return strides;
}

host::Shape shapeOf(const Dims &dims) {
  host::Shape shape;
  for (int64_t d : dims)
    shape.dims[shape.rank++] = d;
  return shape;
}

std::vector<double> randomValues(size_t n, uint64_t seed, double lo = -1.0,
                                 double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(n);
  for (double &v : values)
    v = dist(rng);
  return values;
}

template <typename T>
void expectBitwise(const std::vector<T> &actual, const std::vector<T> &expected,
                   const char *what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_EQ(std::memcmp(&actual[i], &expected[i], sizeof(T)), 0)
        << what << " differs at " << i << ": " << actual[i] << " vs "
        << expected[i];
}

/// The message aclGetRecentErrMsg returns (empty when there is none).
std::string recentError() {
  const char *message = aclGetRecentErrMsg();
  return message ? message : "";
}

#define PLAN(...)                                                              \
  [&](uint64_t *ws, aclOpExecutor **ex) -> aclnnStatus { return __VA_ARGS__; }

class AscendDouble : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  }

  void TearDown() override {
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recentError();
    for (aclTensor *t : tensors)
      EXPECT_EQ(aclDestroyTensor(t), 0) << recentError();
    for (void *p : buffers)
      EXPECT_EQ(aclrtFree(p), ACL_SUCCESS) << recentError();
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS) << recentError();
  }

  void *alloc(size_t bytes) {
    void *p = nullptr;
    EXPECT_EQ(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    buffers.push_back(p);
    return p;
  }

  template <typename T> void *upload(const std::vector<T> &values) {
    size_t bytes = std::max<size_t>(values.size(), 1) * sizeof(T);
    void *p = alloc(bytes);
    if (!values.empty())
      EXPECT_EQ(aclrtMemcpy(p, bytes, values.data(), values.size() * sizeof(T),
                            ACL_MEMCPY_HOST_TO_DEVICE),
                ACL_SUCCESS);
    return p;
  }

  template <typename T> std::vector<T> download(const void *p, size_t n) {
    std::vector<T> values(n);
    if (n)
      EXPECT_EQ(aclrtMemcpy(values.data(), n * sizeof(T), p, n * sizeof(T),
                            ACL_MEMCPY_DEVICE_TO_HOST),
                ACL_SUCCESS)
          << recentError();
    return values;
  }

  /// A tensor over `data`; contiguous by default, its storage what the view
  /// reaches unless given.
  aclTensor *view(void *data, const Dims &dims, aclDataType dtype,
                  Dims strides = {}, int64_t offset = 0, Dims storage = {},
                  bool track = true) {
    if (strides.empty())
      strides = rowMajor(dims);
    if (storage.empty()) {
      int64_t reach = offset;
      for (size_t d = 0; d < dims.size(); ++d)
        reach += (dims[d] - 1) * strides[d];
      storage = {count(dims) ? reach + 1 : 0};
    }
    aclTensor *t =
        aclCreateTensor(dims.data(), dims.size(), dtype, strides.data(), offset,
                        ACL_FORMAT_ND, storage.data(), storage.size(), data);
    EXPECT_NE(t, nullptr) << recentError();
    if (track)
      tensors.push_back(t);
    return t;
  }

  /// Uploads `values` and describes them as a contiguous tensor.
  template <typename T>
  aclTensor *make(const std::vector<T> &values, const Dims &dims,
                  void **data = nullptr) {
    void *p = upload(values);
    if (data)
      *data = p;
    return view(p, dims, dtypeOf<T>());
  }

  /// An uninitialised contiguous tensor.
  template <typename T> aclTensor *empty(const Dims &dims, void **data) {
    *data = alloc(std::max<int64_t>(count(dims), 1) * sizeof(T));
    return view(*data, dims, dtypeOf<T>());
  }

  /// Plans and launches an operator with a workspace of the size asked for.
  template <typename PlanFn, typename LaunchFn>
  aclnnStatus run(PlanFn plan, LaunchFn launch, uint64_t *asked = nullptr) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    if (aclnnStatus status = plan(&size, &executor))
      return status;
    if (asked)
      *asked = size;
    void *workspace = nullptr;
    if (size)
      EXPECT_EQ(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST),
                ACL_SUCCESS);
    aclnnStatus status = launch(workspace, size, executor, stream);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    if (workspace)
      EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS) << recentError();
    return status;
  }

  aclrtStream stream = nullptr;
  std::vector<void *> buffers;
  std::vector<aclTensor *> tensors;
};

//===----------------------------------------------------------------------===//
// The workspace protocol
//===----------------------------------------------------------------------===//

TEST_F(AscendDouble, FreeingAWorkspaceBeforeSynchronisingIsRefused) {
  void *out = nullptr;
  aclTensor *x = make(randomValues(12, 1), {3, 4});
  aclTensor *y = empty<double>({3}, &out);
  int64_t dims[] = {1};
  aclIntArray *dim = aclCreateIntArray(dims, 1);
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  ASSERT_EQ(aclnnReduceSumGetWorkspaceSize(x, dim, false, ACL_DOUBLE, y, &size,
                                           &executor),
            0);
  ASSERT_GT(size, 0u) << "reductions use a workspace";
  void *workspace = nullptr;
  ASSERT_EQ(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST), 0);
  ASSERT_EQ(aclnnReduceSum(workspace, size, executor, stream), 0);
  EXPECT_EQ(aclrtFree(workspace), kStreamNotComplete);
  EXPECT_NE(recentError().find("aclrtFree: workspace freed before "
                               "aclrtSynchronizeStream on the stream that "
                               "uses it"),
            std::string::npos);
  // A stream with unsynchronised work cannot be destroyed either.
  EXPECT_EQ(aclrtDestroyStream(stream), kStreamNotComplete);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(aclrtFree(workspace), 0) << recentError();
  EXPECT_EQ(aclDestroyIntArray(dim), 0);
}

TEST_F(AscendDouble, AnExecutorRunsOnce) {
  void *out = nullptr;
  aclTensor *a = make(randomValues(6, 2), {2, 3});
  aclTensor *b = make(randomValues(6, 3), {2, 3});
  aclTensor *c = empty<double>({2, 3}, &out);
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  ASSERT_EQ(aclnnMulGetWorkspaceSize(a, b, c, &size, &executor), 0);
  EXPECT_EQ(size, 0u);
  ASSERT_EQ(aclnnMul(nullptr, 0, executor, stream), 0);
  EXPECT_EQ(aclnnMul(nullptr, 0, executor, stream), kParamInvalid);
  EXPECT_NE(recentError().find("already used"), std::string::npos);
  EXPECT_EQ(aclnnMul(nullptr, 0, nullptr, stream), kNullptr);

  // An executor is for the operator that made it.
  ASSERT_EQ(aclnnMulGetWorkspaceSize(a, b, c, &size, &executor), 0);
  EXPECT_EQ(aclnnDiv(nullptr, 0, executor, stream), kParamInvalid);
  EXPECT_NE(recentError().find("made by aclnnMulGetWorkspaceSize"),
            std::string::npos);
  EXPECT_EQ(aclnnMul(nullptr, 0, executor, stream), 0);
}

TEST_F(AscendDouble, TooSmallOrForeignWorkspacesAreRefused) {
  void *out = nullptr;
  aclTensor *x = make(randomValues(24, 4), {2, 3, 4});
  aclTensor *y = empty<double>({1, 3, 1}, &out);
  int64_t dims[] = {0, -1};
  aclIntArray *dim = aclCreateIntArray(dims, 2);
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  ASSERT_EQ(
      aclnnMeanGetWorkspaceSize(x, dim, true, ACL_DOUBLE, y, &size, &executor),
      0);
  ASSERT_GT(size, 0u);
  void *workspace = alloc(size);
  EXPECT_EQ(aclnnMean(workspace, size - 1, executor, stream), kParamInvalid);
  EXPECT_NE(recentError().find("smaller than"), std::string::npos);
  EXPECT_EQ(aclnnMean(nullptr, size, executor, stream), kNullptr);
  std::vector<char> hostMemory(size);
  EXPECT_EQ(aclnnMean(hostMemory.data(), size, executor, stream),
            kParamInvalid);
  EXPECT_NE(recentError().find("not inside one live aclrtMalloc"),
            std::string::npos);
  // Claiming more than the allocation holds is refused too.
  EXPECT_EQ(aclnnMean(workspace, size + 4096, executor, stream), kParamInvalid);
  // The executor survives refused launches.
  EXPECT_EQ(aclnnMean(workspace, size, executor, stream), 0) << recentError();
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  std::vector<double> input = download<double>(buffers[0], 24);
  std::vector<double> expected(3);
  host::reduce(expected.data(), {1, 3, 1}, input.data(), {2, 3, 4}, {0, 2},
               true, "mean");
  expectBitwise(download<double>(out, 3), expected, "mean");
  EXPECT_EQ(aclDestroyIntArray(dim), 0);
}

TEST_F(AscendDouble, HandlesMustBeAliveAtLaunch) {
  void *out = nullptr;
  void *input = nullptr;
  aclTensor *x = make(randomValues(4, 5), {4}, &input);
  aclTensor *y = empty<double>({4}, &out);
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  ASSERT_EQ(aclnnExpGetWorkspaceSize(x, y, &size, &executor), 0);
  tensors.erase(std::find(tensors.begin(), tensors.end(), x));
  ASSERT_EQ(aclDestroyTensor(x), 0);
  EXPECT_EQ(aclnnExp(nullptr, 0, executor, stream), kParamInvalid);
  EXPECT_NE(recentError().find("destroyed before the launch"),
            std::string::npos);
  // Destroyed handles are errors, not crashes.
  EXPECT_EQ(aclDestroyTensor(x), kParamInvalid);
  EXPECT_EQ(aclnnExpGetWorkspaceSize(x, y, &size, &executor), kParamInvalid);

  // Tensors over host memory, or over freed device memory, are refused.
  std::vector<double> hostValues(4);
  aclTensor *onHost = view(hostValues.data(), {4}, ACL_DOUBLE);
  EXPECT_EQ(aclnnExpGetWorkspaceSize(onHost, y, &size, &executor),
            kParamInvalid);
  EXPECT_NE(recentError().find("not in device memory"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// The runtime
//===----------------------------------------------------------------------===//

TEST(AscendDoubleRuntime, InitialisationAndDevicesComeFirst) {
  ASSERT_EQ(aclFinalize(), 0);
  void *p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), kUninitialized);
  EXPECT_EQ(aclrtSetDevice(0), kUninitialized);
  uint32_t devices = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&devices), kUninitialized);
  EXPECT_EQ(aclFinalize(), 100037) << "finalising twice";
  ASSERT_EQ(aclInit(nullptr), 0);
  EXPECT_EQ(aclInit(nullptr), 100002) << "initialising twice";
  // aclInit starts afresh: the thread needs a device again.
  EXPECT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), kRtContextNull);
  ASSERT_EQ(aclrtGetDeviceCount(&devices), 0);
  EXPECT_EQ(devices, 8u);
  EXPECT_EQ(aclrtSetDevice(8), kRtInvalidDevice);
  EXPECT_EQ(aclrtSetDevice(-1), kRtInvalidDevice);
  ASSERT_EQ(aclrtSetDevice(3), 0);
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), kInvalidParam);
  ASSERT_EQ(aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  // The device is per thread.
  std::thread other([] {
    void *q = nullptr;
    EXPECT_EQ(aclrtMalloc(&q, 64, ACL_MEM_MALLOC_HUGE_FIRST), kRtContextNull);
    EXPECT_NE(recentError().find("aclrtSetDevice"), std::string::npos);
  });
  other.join();
  // A stream belongs to its device.
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), 0);
  ASSERT_EQ(aclrtSetDevice(0), 0);
  EXPECT_EQ(aclrtSynchronizeStream(stream), 107003);
  ASSERT_EQ(aclrtSetDevice(3), 0);
  EXPECT_EQ(aclrtDestroyStream(stream), 0);
  EXPECT_EQ(aclrtDestroyStream(stream), kRtParamInvalid);
  EXPECT_EQ(aclrtFree(p), 0);
  EXPECT_EQ(aclrtFree(p), kInvalidParam) << "freeing twice";
  EXPECT_EQ(aclrtResetDevice(3), 0);
}

TEST(AscendDoubleRuntime, ErrorsLeaveAMessage) {
  ASSERT_EQ(aclrtSetDevice(0), 0);
  while (aclGetRecentErrMsg()) {
  }
  void *p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), kInvalidParam);
  const char *message = aclGetRecentErrMsg();
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "aclrtMalloc: size is 0");
  // Fetching the message clears it, as in CANN.
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  // Operators name themselves.
  int64_t dims[] = {2};
  aclTensor *bad = aclCreateTensor(dims, 1, ACL_FLOAT, dims, 0, ACL_FORMAT_ND,
                                   dims, 1, nullptr);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(recentError().find("aclCreateTensor"), std::string::npos);
}

TEST_F(AscendDouble, CopiesAreChecked) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  void *d = alloc(32);
  EXPECT_EQ(aclrtMemcpy(d, 16, values.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE),
            kInvalidParam)
      << "count above destMax";
  EXPECT_EQ(aclrtMemcpy(d, 64, values.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE),
            kInvalidParam)
      << "destMax beyond the allocation";
  std::vector<float> hostOut(8);
  EXPECT_EQ(aclrtMemcpy(hostOut.data(), 32, values.data(), 32,
                        ACL_MEMCPY_DEVICE_TO_HOST),
            kInvalidParam)
      << "host memory as the device side";
  EXPECT_EQ(aclrtMemcpy(d, 32, d, 32, ACL_MEMCPY_HOST_TO_DEVICE), kInvalidParam)
      << "device memory as the host side";
  ASSERT_EQ(aclrtMemcpyAsync(d, 32, values.data(), 32,
                             ACL_MEMCPY_HOST_TO_DEVICE, stream),
            0);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(download<float>(d, 8), values);

  // 2-D: two rows of 8 bytes out of rows of 16, to the host.
  std::vector<float> rows(4);
  ASSERT_EQ(aclrtMemcpy2dAsync(rows.data(), 8, d, 16, 8, 2,
                               ACL_MEMCPY_DEVICE_TO_HOST, stream),
            0);
  EXPECT_EQ(aclrtMemcpy2dAsync(rows.data(), 4, d, 16, 8, 2,
                               ACL_MEMCPY_DEVICE_TO_HOST, stream),
            kInvalidParam)
      << "pitch below the width";
  EXPECT_EQ(aclrtMemcpy2dAsync(rows.data(), 8, d, 16, 8, 3,
                               ACL_MEMCPY_DEVICE_TO_HOST, stream),
            kInvalidParam)
      << "rows beyond the allocation";
  void *e = alloc(16);
  EXPECT_EQ(aclrtMemcpy2dAsync(e, 8, d, 16, 8, 2, ACL_MEMCPY_DEVICE_TO_DEVICE,
                               stream),
            kInvalidParam)
      << "device to device (CANN 8.x copies 2-D between host and device only)";
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(rows, (std::vector<float>{1, 2, 5, 6}));

  ASSERT_EQ(aclrtMemsetAsync(e, 16, 0, 16, stream), 0);
  EXPECT_EQ(aclrtMemsetAsync(e, 8, 0, 16, stream), kInvalidParam);
  EXPECT_EQ(aclrtMemsetAsync(e, 32, 0, 16, stream), kInvalidParam);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(download<float>(e, 4), (std::vector<float>(4, 0.0f)));
}

//===----------------------------------------------------------------------===//
// aclnn operators
//===----------------------------------------------------------------------===//

TEST_F(AscendDouble, InplaceCopyHonoursStridesAndBroadcasts) {
  // selfRef: the transpose of a 3x2 buffer (a 2x3 view, strides [1, 2]),
  // starting one element in; src: a [3] row read with stride 2, broadcast
  // along the first dimension.
  void *dst = alloc(8 * sizeof(int64_t));
  ASSERT_EQ(aclrtMemsetAsync(dst, 64, 0, 64, stream), 0);
  aclTensor *self = view(dst, {2, 3}, ACL_INT64, {1, 2}, 1, {8});
  std::vector<int64_t> values = {10, -1, 20, -1, 30};
  aclTensor *src = view(upload(values), {3}, ACL_INT64, {2}, 0, {5});
  ASSERT_EQ(run(PLAN(aclnnInplaceCopyGetWorkspaceSize(self, src, ws, ex)),
                aclnnInplaceCopy),
            0)
      << recentError();
  // Element (i, j) of the view is storage 1 + i + 2 j.
  EXPECT_EQ(download<int64_t>(dst, 8),
            (std::vector<int64_t>{0, 10, 10, 20, 20, 30, 30, 0}));

  // A stride-0 source (an expanded scalar) and overlapping source and
  // destination (the source is staged in the workspace).
  std::vector<double> seq = {0, 1, 2, 3, 4, 5, 6, 7};
  void *buffer = upload(seq);
  aclTensor *scalar = view(buffer, {2, 2}, ACL_DOUBLE, {0, 0}, 7, {8});
  aclTensor *head = view(buffer, {2, 2}, ACL_DOUBLE, {2, 1}, 0, {8});
  uint64_t asked = 0;
  ASSERT_EQ(run(PLAN(aclnnInplaceCopyGetWorkspaceSize(head, scalar, ws, ex)),
                aclnnInplaceCopy, &asked),
            0)
      << recentError();
  EXPECT_EQ(asked, 0u) << "disjoint";
  aclTensor *shifted = view(buffer, {6}, ACL_DOUBLE, {1}, 2, {8});
  aclTensor *front = view(buffer, {6}, ACL_DOUBLE, {1}, 0, {8});
  ASSERT_EQ(run(PLAN(aclnnInplaceCopyGetWorkspaceSize(shifted, front, ws, ex)),
                aclnnInplaceCopy, &asked),
            0)
      << recentError();
  EXPECT_GT(asked, 0u) << "overlapping";
  EXPECT_EQ(download<double>(buffer, 8),
            (std::vector<double>{7, 7, 7, 7, 7, 7, 4, 5}));

  // Types must match; shapes must broadcast; written views must not
  // overlap themselves.
  aclTensor *f32 = view(buffer, {4}, ACL_FLOAT, {1}, 0, {16});
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnInplaceCopyGetWorkspaceSize(head, f32, &size, &executor),
            kParamInvalid);
  aclTensor *three = view(buffer, {3}, ACL_DOUBLE, {1}, 0, {8});
  EXPECT_EQ(aclnnInplaceCopyGetWorkspaceSize(head, three, &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnInplaceCopyGetWorkspaceSize(scalar, head, &size, &executor),
            kParamInvalid);
}

TEST_F(AscendDouble, FillAndMulsHonourStrides) {
  void *data = alloc(6 * sizeof(int32_t));
  ASSERT_EQ(aclrtMemsetAsync(data, 24, 0, 24, stream), 0);
  aclTensor *column = view(data, {3}, ACL_INT32, {2}, 0, {6});
  int64_t seven = 7;
  aclScalar *value = aclCreateScalar(&seven, ACL_INT64);
  ASSERT_EQ(
      run(PLAN(aclnnInplaceFillScalarGetWorkspaceSize(column, value, ws, ex)),
          aclnnInplaceFillScalar),
      0)
      << recentError();
  EXPECT_EQ(download<int32_t>(data, 6),
            (std::vector<int32_t>{7, 0, 7, 0, 7, 0}));
  int64_t huge = int64_t(1) << 40;
  aclScalar *tooBig = aclCreateScalar(&huge, ACL_INT64);
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(
      aclnnInplaceFillScalarGetWorkspaceSize(column, tooBig, &size, &executor),
      kParamInvalid);

  std::vector<float> x = {1.5f, 2.25f, -3.0f, 4.0f};
  void *xs = upload(x);
  aclTensor *every = view(xs, {2}, ACL_FLOAT, {2}, 1, {4});
  double factor = 0.1;
  aclScalar *scale = aclCreateScalar(&factor, ACL_DOUBLE);
  ASSERT_EQ(run(PLAN(aclnnInplaceMulsGetWorkspaceSize(every, scale, ws, ex)),
                aclnnInplaceMuls),
            0)
      << recentError();
  // In float: the factor rounded to float first.
  std::vector<float> expected = {1.5f, 2.25f * static_cast<float>(factor),
                                 -3.0f, 4.0f * static_cast<float>(factor)};
  expectBitwise(download<float>(xs, 4), expected, "muls");
  for (aclScalar *s : {value, tooBig, scale})
    EXPECT_EQ(aclDestroyScalar(s), 0);
}

TEST_F(AscendDouble, ElementwiseOperatorsAreTheHostKernels) {
  std::vector<double> a = randomValues(12, 6), b = randomValues(4, 7, 0.5, 2);
  void *out = nullptr;
  aclTensor *ta = make(a, {3, 4});
  aclTensor *tb = make(b, {1, 4});
  aclTensor *to = empty<double>({3, 4}, &out);
  double one = 1.0, two = 2.0;
  aclScalar *alpha = aclCreateScalar(&one, ACL_DOUBLE);
  aclScalar *alpha2 = aclCreateScalar(&two, ACL_DOUBLE);
  std::vector<double> expected(12);

  ASSERT_EQ(
      run(PLAN(aclnnSubGetWorkspaceSize(ta, tb, alpha, to, ws, ex)), aclnnSub),
      0)
      << recentError();
  host::sub(expected.data(), {3, 4}, a.data(), {3, 4}, b.data(), {1, 4});
  expectBitwise(download<double>(out, 12), expected, "sub");

  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnAddGetWorkspaceSize(ta, tb, alpha2, to, &size, &executor),
            kParamInvalid);
  EXPECT_NE(recentError().find("alpha != 1 is not implemented by the test "
                               "double"),
            std::string::npos);

  ASSERT_EQ(run(PLAN(aclnnDivGetWorkspaceSize(ta, tb, to, ws, ex)), aclnnDiv),
            0);
  host::div(expected.data(), {3, 4}, a.data(), {3, 4}, b.data(), {1, 4});
  expectBitwise(download<double>(out, 12), expected, "div");

  ASSERT_EQ(run(PLAN(aclnnSiluGetWorkspaceSize(ta, to, ws, ex)), aclnnSilu), 0);
  host::silu(expected.data(), {3, 4}, a.data(), {3, 4});
  expectBitwise(download<double>(out, 12), expected, "silu");

  // In place: out is self (staged in the workspace, the kernels never
  // alias).
  void *inPlace = nullptr;
  aclTensor *ti = make(a, {3, 4}, &inPlace);
  uint64_t asked = 0;
  ASSERT_EQ(
      run(PLAN(aclnnReluGetWorkspaceSize(ti, ti, ws, ex)), aclnnRelu, &asked),
      0);
  EXPECT_GT(asked, 0u);
  host::relu(expected.data(), {3, 4}, a.data(), {3, 4});
  expectBitwise(download<double>(inPlace, 12), expected, "relu");

  // Strided operands are refused: element-wise operators take contiguous
  // tensors.
  aclTensor *strided = view(out, {4, 3}, ACL_DOUBLE, {1, 4}, 0, {12});
  EXPECT_EQ(aclnnExpGetWorkspaceSize(strided, to, &size, &executor),
            kParamInvalid);
  // f32 against f64 is refused.
  void *f = nullptr;
  aclTensor *tf = empty<float>({3, 4}, &f);
  EXPECT_EQ(aclnnMaximumGetWorkspaceSize(ta, tf, to, &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclDestroyScalar(alpha), 0);
  EXPECT_EQ(aclDestroyScalar(alpha2), 0);
}

TEST_F(AscendDouble, MatmulPassesTransposedViewsToTheKernel) {
  // self: the transpose of a contiguous [3, 5, 4] buffer, a [3, 4, 5] view;
  // mat2: a [5, 6] matrix broadcast over the batch.
  // f32: aclnnMatmul takes no f64 (refused below).
  std::vector<double> lhs64 = randomValues(60, 8), rhs64 = randomValues(30, 9);
  std::vector<float> lhs(lhs64.begin(), lhs64.end()),
      rhs(rhs64.begin(), rhs64.end());
  void *lhsData = upload(lhs);
  aclTensor *self = view(lhsData, {3, 4, 5}, ACL_FLOAT, {20, 1, 4}, 0, {60});
  aclTensor *mat2 = make(rhs, {5, 6});
  void *out = nullptr;
  aclTensor *result = empty<float>({3, 4, 6}, &out);
  uint64_t asked = 1;
  ASSERT_EQ(
      run(PLAN(aclnnMatmulGetWorkspaceSize(self, mat2, result, 0, ws, ex)),
          aclnnMatmul, &asked),
      0)
      << recentError();
  EXPECT_EQ(asked, 0u) << "a transposed view is not copied";
  std::vector<float> expected(72);
  host::matmul(expected.data(), {3, 4, 6}, lhs.data(), {3, 5, 4}, rhs.data(),
               {5, 6}, /*transposeLhs=*/true, /*transposeRhs=*/false);
  expectBitwise(download<float>(out, 72), expected, "matmul");

  // mat2 transposed as well: a [6, 5] buffer read as [5, 6].
  aclTensor *mat2T = view(upload(rhs), {5, 6}, ACL_FLOAT, {1, 5}, 0, {30});
  ASSERT_EQ(
      run(PLAN(aclnnMatmulGetWorkspaceSize(self, mat2T, result, 1, ws, ex)),
          aclnnMatmul, &asked),
      0)
      << recentError();
  EXPECT_EQ(asked, 0u);
  host::matmul(expected.data(), {3, 4, 6}, lhs.data(), {3, 5, 4}, rhs.data(),
               {6, 5}, true, true);
  expectBitwise(download<float>(out, 72), expected, "matmul (both)");

  // f64 is refused, as aclnnMatmul refuses it.
  std::vector<double> one = {1.0, 2.0, 3.0, 4.0};
  aclTensor *d64 = make(one, {2, 2});
  void *out64 = nullptr;
  aclTensor *r64 = empty<double>({2, 2}, &out64);
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnMatmulGetWorkspaceSize(d64, d64, r64, 0, &size, &executor),
            kParamInvalid);
  EXPECT_NE(recentError().find("takes FLOAT, FLOAT16 and BF16"),
            std::string::npos);

  // Any other strided view is gathered into the workspace: every other row
  // of a [8, 5] buffer.
  std::vector<double> tall64 = randomValues(40, 10);
  std::vector<float> tall(tall64.begin(), tall64.end());
  aclTensor *rows = view(upload(tall), {4, 5}, ACL_FLOAT, {10, 1}, 0, {40});
  void *out2 = nullptr;
  aclTensor *result2 = empty<float>({4, 6}, &out2);
  ASSERT_EQ(
      run(PLAN(aclnnMatmulGetWorkspaceSize(rows, mat2, result2, 0, ws, ex)),
          aclnnMatmul, &asked),
      0)
      << recentError();
  EXPECT_GE(asked, 20 * sizeof(float));
  std::vector<float> gathered, expected2(24);
  for (int i = 0; i < 4; ++i)
    gathered.insert(gathered.end(), tall.begin() + 10 * i,
                    tall.begin() + 10 * i + 5);
  host::matmul(expected2.data(), {4, 6}, gathered.data(), {4, 5}, rhs.data(),
               {5, 6}, false, false);
  expectBitwise(download<float>(out2, 24), expected2, "matmul (gathered)");

  // What the double does not implement, it refuses.
  EXPECT_EQ(
      aclnnMatmulGetWorkspaceSize(self, mat2, result, 2, &size, &executor),
      kParamInvalid);
  aclTensor *vector = make(randomValues(5, 11), {5});
  EXPECT_EQ(
      aclnnMatmulGetWorkspaceSize(vector, mat2, result, 0, &size, &executor),
      kParamInvalid);
  EXPECT_EQ(
      aclnnMatmulGetWorkspaceSize(mat2, mat2, result, 0, &size, &executor),
      kParamInvalid)
      << "contracting dimensions differ";
}

TEST_F(AscendDouble, ReductionsAreTheHostKernel) {
  std::vector<double> x = randomValues(24, 12);
  void *input = nullptr;
  aclTensor *tx = make(x, {2, 3, 4}, &input);
  void *out = nullptr;
  std::vector<double> expected(24);
  // Sum over dimension 1.
  int64_t one[] = {1};
  aclIntArray *dim1 = aclCreateIntArray(one, 1);
  aclTensor *sum = empty<double>({2, 4}, &out);
  uint64_t asked = 0;
  ASSERT_EQ(run(PLAN(aclnnReduceSumGetWorkspaceSize(tx, dim1, false, ACL_DOUBLE,
                                                    sum, ws, ex)),
                aclnnReduceSum, &asked),
            0)
      << recentError();
  EXPECT_GT(asked, 0u);
  host::reduce(expected.data(), {2, 4}, x.data(), {2, 3, 4}, {1}, false, "sum");
  expected.resize(8);
  expectBitwise(download<double>(out, 8), expected, "sum");
  // Max over everything (no dimensions), kept.
  aclIntArray *all = aclCreateIntArray(nullptr, 0);
  void *maxOut = nullptr;
  aclTensor *max = empty<double>({1, 1, 1}, &maxOut);
  ASSERT_EQ(run(PLAN(aclnnAmaxGetWorkspaceSize(tx, all, true, max, ws, ex)),
                aclnnAmax),
            0)
      << recentError();
  std::vector<double> expectedMax(1);
  host::reduce(expectedMax.data(), {1, 1, 1}, x.data(), {2, 3, 4}, {0, 1, 2},
               true, "max");
  expectBitwise(download<double>(maxOut, 1), expectedMax, "amax");
  // Mean of a strided view (the input gathered into the workspace): the
  // transpose [4, 3, 2] of the buffer, over dimension -1.
  aclTensor *transposed =
      view(input, {4, 3, 2}, ACL_DOUBLE, {1, 4, 12}, 0, {24});
  int64_t last[] = {-1};
  aclIntArray *dimLast = aclCreateIntArray(last, 1);
  void *meanOut = nullptr;
  aclTensor *mean = empty<double>({4, 3}, &meanOut);
  ASSERT_EQ(run(PLAN(aclnnMeanGetWorkspaceSize(transposed, dimLast, false,
                                               ACL_DOUBLE, mean, ws, ex)),
                aclnnMean),
            0)
      << recentError();
  std::vector<double> t(24), expectedMean(12);
  host::transpose(t.data(), {4, 3, 2}, x.data(), {2, 3, 4}, {2, 1, 0});
  host::reduce(expectedMean.data(), {4, 3}, t.data(), {4, 3, 2}, {2}, false,
               "mean");
  expectBitwise(download<double>(meanOut, 12), expectedMean, "mean");
  // A converting dtype, a repeated or out-of-range dimension, a wrong
  // result shape: refused.
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnReduceSumGetWorkspaceSize(tx, dim1, false, ACL_FLOAT, sum,
                                           &size, &executor),
            kParamInvalid);
  int64_t twice[] = {1, -2};
  aclIntArray *dimTwice = aclCreateIntArray(twice, 2);
  EXPECT_EQ(aclnnReduceSumGetWorkspaceSize(tx, dimTwice, false, ACL_DOUBLE, sum,
                                           &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnReduceSumGetWorkspaceSize(tx, dim1, true, ACL_DOUBLE, sum,
                                           &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnReduceSumGetWorkspaceSize(tx, nullptr, true, ACL_DOUBLE, sum,
                                           &size, &executor),
            kNullptr);
  for (aclIntArray *array : {dim1, all, dimLast, dimTwice})
    EXPECT_EQ(aclDestroyIntArray(array), 0);
}

TEST_F(AscendDouble, CatAndSoftmaxAreTheHostKernels) {
  std::vector<int64_t> a = {1, 2, 3, 4}, b = {5, 6};
  aclTensor *ta = view(upload(a), {2, 2}, ACL_INT64, {}, 0, {}, false);
  aclTensor *tb = view(upload(b), {2, 1}, ACL_INT64, {}, 0, {}, false);
  const aclTensor *members[] = {ta, tb};
  aclTensorList *list = aclCreateTensorList(members, 2);
  ASSERT_NE(list, nullptr);
  void *out = nullptr;
  aclTensor *to = empty<int64_t>({2, 3}, &out);
  ASSERT_EQ(run(PLAN(aclnnCatGetWorkspaceSize(list, -1, to, ws, ex)), aclnnCat),
            0)
      << recentError();
  EXPECT_EQ(download<int64_t>(out, 6),
            (std::vector<int64_t>{1, 2, 5, 3, 4, 6}));
  // The list owns its tensors.
  EXPECT_EQ(aclDestroyTensor(ta), kParamInvalid);
  EXPECT_NE(recentError().find("belongs to tensorlist"), std::string::npos);
  EXPECT_EQ(aclDestroyTensorList(list), 0);
  EXPECT_EQ(aclDestroyTensor(ta), kParamInvalid) << "destroyed with the list";

  std::vector<double> x = randomValues(12, 13, -4, 4);
  aclTensor *tx = make(x, {3, 4});
  void *sm = nullptr;
  aclTensor *ts = empty<double>({3, 4}, &sm);
  ASSERT_EQ(
      run(PLAN(aclnnSoftmaxGetWorkspaceSize(tx, -2, ts, ws, ex)), aclnnSoftmax),
      0);
  std::vector<double> expected(12);
  host::softmax(expected.data(), {3, 4}, x.data(), {3, 4}, 0);
  expectBitwise(download<double>(sm, 12), expected, "softmax");
}

//===----------------------------------------------------------------------===//
// The mixture-of-experts operators
//===----------------------------------------------------------------------===//

TEST_F(AscendDouble, TopkAndIndexAddAreTheHostKernels) {
  // Topk: ties in index order, NaN first, as host::topk.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x = {0.5, 2.0, 2.0, -1.0, 0.25, 1.0, nan, 3.0, 1.0, 0.0};
  aclTensor *tx = make(x, {2, 5});
  void *values = nullptr, *indices = nullptr;
  aclTensor *tv = empty<double>({2, 3}, &values);
  aclTensor *ti = empty<int64_t>({2, 3}, &indices);
  ASSERT_EQ(run(PLAN(aclnnTopkGetWorkspaceSize(tx, 3, -1, true, true, tv, ti,
                                               ws, ex)),
                aclnnTopk),
            0)
      << recentError();
  EXPECT_EQ(download<int64_t>(indices, 6),
            (std::vector<int64_t>{1, 2, 0, 1, 2, 0}));
  std::vector<double> picked = download<double>(values, 6);
  EXPECT_EQ(picked[0], 2.0);
  EXPECT_TRUE(std::isnan(picked[3]));
  EXPECT_EQ(picked[5], 1.0);
  // What the double does not implement, or CANN refuses, is refused.
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnTopkGetWorkspaceSize(tx, 3, -1, false, true, tv, ti, &size,
                                      &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnTopkGetWorkspaceSize(tx, 3, 0, true, true, tv, ti, &size,
                                      &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnTopkGetWorkspaceSize(tx, 6, -1, true, true, tv, ti, &size,
                                      &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnTopkGetWorkspaceSize(tx, 3, -1, true, true, tv, tv, &size,
                                      &executor),
            kParamInvalid);
  EXPECT_NE(recentError().find("INT64"), std::string::npos);

  // IndexAdd in place: rows added in index order, a row named twice.
  std::vector<float> self = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> source64 = randomValues(6, 31);
  std::vector<float> source(source64.begin(), source64.end());
  std::vector<int64_t> index = {3, 0, 3};
  void *selfData = nullptr;
  aclTensor *ts = make(self, {4, 2}, &selfData);
  aclTensor *tsrc = make(source, {3, 2});
  aclTensor *tidx = make(index, {3});
  float one = 1;
  aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
  ASSERT_EQ(run(PLAN(aclnnIndexAddGetWorkspaceSize(ts, 0, tidx, tsrc, alpha,
                                                   ts, ws, ex)),
                aclnnIndexAdd),
            0)
      << recentError();
  std::vector<float> expected = self;
  for (int i = 0; i < 3; ++i)
    for (int h = 0; h < 2; ++h)
      expected[index[i] * 2 + h] += source[i * 2 + h];
  expectBitwise(download<float>(selfData, 8), expected, "index_add");
  // An index outside the rows fails the launch and writes nothing.
  std::vector<int64_t> bad = {1, 4, 0};
  aclTensor *tbad = make(bad, {3});
  EXPECT_EQ(run(PLAN(aclnnIndexAddGetWorkspaceSize(ts, 0, tbad, tsrc, alpha,
                                                   ts, ws, ex)),
                aclnnIndexAdd),
            361001);
  EXPECT_NE(recentError().find("index[1] = 4 is outside [0, 4)"),
            std::string::npos);
  expectBitwise(download<float>(selfData, 8), expected, "index_add (refused)");
  EXPECT_EQ(aclDestroyScalar(alpha), 0);
}

TEST_F(AscendDouble, GroupedMatmulV4IsTheHostGemmPerGroup) {
  std::vector<double> x64 = randomValues(20, 32), w64 = randomValues(72, 33);
  std::vector<float> x(x64.begin(), x64.end()), w(w64.begin(), w64.end());
  std::vector<int64_t> counts = {2, 0, 3};
  aclTensor *tc = make(counts, {3});
  void *xData = upload(x), *wData = upload(w);
  auto list = [&](aclTensor *t) {
    const aclTensor *members[] = {t};
    return aclCreateTensorList(members, 1);
  };
  // M grouping: x [5, 4], weight [3, 4, 6] (or [3, 6, 4] seen transposed).
  for (bool transposed : {false, true}) {
    aclTensorList *xs = list(view(xData, {5, 4}, ACL_FLOAT, {}, 0, {}, false));
    aclTensorList *ws3 = list(
        transposed ? view(wData, {3, 4, 6}, ACL_FLOAT, {24, 1, 4}, 0, {72}, false)
                   : view(wData, {3, 4, 6}, ACL_FLOAT, {}, 0, {}, false));
    void *out = nullptr;
    aclTensorList *ys = list(view(out = alloc(30 * sizeof(float)), {5, 6},
                                  ACL_FLOAT, {}, 0, {}, false));
    ASSERT_EQ(run(PLAN(aclnnGroupedMatmulV4GetWorkspaceSize(
                      xs, ws3, nullptr, nullptr, nullptr, nullptr, nullptr,
                      nullptr, tc, nullptr, nullptr, nullptr, 3, 0, 1, 0, ys,
                      nullptr, nullptr, ws, ex)),
                  aclnnGroupedMatmulV4),
              0)
        << recentError();
    std::vector<float> expected(30);
    host::grouped_matmul(expected.data(), {5, 6}, x.data(), {5, 4}, w.data(),
                         transposed ? host::Shape{3, 6, 4}
                                    : host::Shape{3, 4, 6},
                         counts.data(), {3}, 1, transposed);
    expectBitwise(download<float>(out, 30), expected, "grouped matmul");
    EXPECT_EQ(aclDestroyTensorList(xs), 0);
    EXPECT_EQ(aclDestroyTensorList(ws3), 0);
    EXPECT_EQ(aclDestroyTensorList(ys), 0);
  }
  // Groups that do not cover x's rows fail the launch (Atlas A2/A3).
  std::vector<int64_t> short4 = {2, 0, 2};
  aclTensor *tshort = make(short4, {3});
  aclTensorList *xs = list(view(xData, {5, 4}, ACL_FLOAT, {}, 0, {}, false));
  aclTensorList *ws3 = list(view(wData, {3, 4, 6}, ACL_FLOAT, {}, 0, {}, false));
  aclTensorList *ys = list(view(alloc(30 * sizeof(float)), {5, 6}, ACL_FLOAT,
                                {}, 0, {}, false));
  EXPECT_EQ(run(PLAN(aclnnGroupedMatmulV4GetWorkspaceSize(
                    xs, ws3, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr, tshort, nullptr, nullptr, nullptr, 3, 0, 1, 0,
                    ys, nullptr, nullptr, ws, ex)),
                aclnnGroupedMatmulV4),
            361001);
  EXPECT_NE(recentError().find("hold 4 rows but the grouped axis has 5"),
            std::string::npos);
  // Sizes that would wrap around to x's rows are refused, not summed.
  const int64_t big = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> wrapping = {big, big, 7};
  aclTensor *twrap = make(wrapping, {3});
  EXPECT_EQ(run(PLAN(aclnnGroupedMatmulV4GetWorkspaceSize(
                    xs, ws3, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr, twrap, nullptr, nullptr, nullptr, 3, 0, 1, 0,
                    ys, nullptr, nullptr, ws, ex)),
                aclnnGroupedMatmulV4),
            361001);
  EXPECT_NE(recentError().find("group 0"), std::string::npos);
  // A bias is not implemented.
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnGroupedMatmulV4GetWorkspaceSize(
                xs, ws3, xs, nullptr, nullptr, nullptr, nullptr, nullptr, tc,
                nullptr, nullptr, nullptr, 3, 0, 1, 0, ys, nullptr, nullptr,
                &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclDestroyTensorList(xs), 0);
  EXPECT_EQ(aclDestroyTensorList(ws3), 0);
  EXPECT_EQ(aclDestroyTensorList(ys), 0);

  // K grouping: lhs [5, 4] seen transposed as x [4, 5], rhs [5, 6], out
  // [3, 4, 6]; the empty group is NaN (CANN leaves it undefined).
  std::vector<double> rhs64 = randomValues(30, 34);
  std::vector<float> rhs(rhs64.begin(), rhs64.end());
  aclTensorList *xt = list(view(xData, {4, 5}, ACL_FLOAT, {1, 4}, 0, {20}, false));
  aclTensorList *rs = list(view(upload(rhs), {5, 6}, ACL_FLOAT, {}, 0, {}, false));
  void *grad = alloc(72 * sizeof(float));
  aclTensorList *gs = list(view(grad, {3, 4, 6}, ACL_FLOAT, {}, 0, {}, false));
  ASSERT_EQ(run(PLAN(aclnnGroupedMatmulV4GetWorkspaceSize(
                    xt, rs, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr, tc, nullptr, nullptr, nullptr, 3, 2, 1, 0, gs,
                    nullptr, nullptr, ws, ex)),
                aclnnGroupedMatmulV4),
            0)
      << recentError();
  std::vector<float> expected(72), actual = download<float>(grad, 72);
  host::grouped_matmul_grad(expected.data(), {3, 4, 6}, x.data(), {5, 4},
                            rhs.data(), {5, 6}, counts.data(), {3}, 1);
  for (int i = 24; i < 48; ++i) {
    EXPECT_TRUE(std::isnan(actual[i])) << i;
    actual[i] = expected[i];
  }
  expectBitwise(actual, expected, "grouped matmul, K grouping");
  EXPECT_EQ(aclDestroyTensorList(xt), 0);
  EXPECT_EQ(aclDestroyTensorList(rs), 0);
  EXPECT_EQ(aclDestroyTensorList(gs), 0);
}

//===----------------------------------------------------------------------===//
// Loom's operators, each against its host kernel
//===----------------------------------------------------------------------===//

TEST_F(AscendDouble, LoomElementwiseAndNormOperators) {
  std::vector<double> x = randomValues(24, 20, -3, 3), g = randomValues(24, 21);
  std::vector<double> scale = randomValues(6, 22), bias = randomValues(6, 23);
  aclTensor *tx = make(x, {4, 6}), *tg = make(g, {4, 6});
  aclTensor *ts = make(scale, {6}), *tb = make(bias, {6});
  void *out = nullptr;
  aclTensor *to = empty<double>({4, 6}, &out);
  std::vector<double> expected(24);

  // aclnnGeluV2: approximate 1 is tanh.
  ASSERT_EQ(
      run(PLAN(aclnnGeluV2GetWorkspaceSize(tx, 1, to, ws, ex)), aclnnGeluV2), 0)
      << recentError();
  host::gelu(expected.data(), {4, 6}, x.data(), {4, 6}, "tanh");
  expectBitwise(download<double>(out, 24), expected, "gelu");

  ASSERT_EQ(run(PLAN(aclnnLoomGeluBackwardGetWorkspaceSize(tg, tx, nullptr, to,
                                                           ws, ex)),
                aclnnLoomGeluBackward),
            0)
      << recentError();
  host::gelu_grad(expected.data(), {4, 6}, g.data(), {4, 6}, x.data(), {4, 6},
                  "none");
  expectBitwise(download<double>(out, 24), expected, "gelu_grad");

  int64_t trailing[] = {6};
  aclIntArray *normalized = aclCreateIntArray(trailing, 1);
  ASSERT_EQ(
      run(PLAN(aclnnLayerNormGetWorkspaceSize(tx, normalized, ts, tb, 1e-5, to,
                                              nullptr, nullptr, ws, ex)),
          aclnnLayerNorm),
      0)
      << recentError();
  host::layer_norm(expected.data(), {4, 6}, x.data(), {4, 6}, scale.data(), {6},
                   bias.data(), {6}, 1e-5, 1);
  expectBitwise(download<double>(out, 24), expected, "layer_norm");

  ASSERT_EQ(run(PLAN(aclnnLoomLayerNormBackwardGetWorkspaceSize(
                    tg, tx, ts, 1e-5, 1, to, ws, ex)),
                aclnnLoomLayerNormBackward),
            0)
      << recentError();
  host::layer_norm_grad(expected.data(), {4, 6}, g.data(), {4, 6}, x.data(),
                        {4, 6}, scale.data(), {6}, 1e-5, 1);
  expectBitwise(download<double>(out, 24), expected, "layer_norm_grad");

  ASSERT_EQ(run(PLAN(aclnnLogSoftmaxGetWorkspaceSize(tx, 1, to, ws, ex)),
                aclnnLogSoftmax),
            0)
      << recentError();
  host::log_softmax(expected.data(), {4, 6}, x.data(), {4, 6}, 1);
  expectBitwise(download<double>(out, 24), expected, "log_softmax");

  // Checks the host kernels would end the process for are refused.
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnGeluV2GetWorkspaceSize(tx, 2, to, &size, &executor),
            kParamInvalid);
  int64_t wrong[] = {4};
  aclIntArray *notTrailing = aclCreateIntArray(wrong, 1);
  EXPECT_EQ(aclnnLayerNormGetWorkspaceSize(tx, notTrailing, ts, tb, 1e-5, to,
                                           nullptr, nullptr, &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnLayerNormGetWorkspaceSize(tx, normalized, tx, tb, 1e-5, to,
                                           nullptr, nullptr, &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclnnLogSoftmaxGetWorkspaceSize(tx, 2, to, &size, &executor),
            kParamInvalid);
  EXPECT_EQ(aclDestroyIntArray(normalized), 0);
  EXPECT_EQ(aclDestroyIntArray(notTrailing), 0);
}

TEST_F(AscendDouble, LoomAttentionOperators) {
  // Batch 2, 4 queries and keys, 4 query heads over 2 key/value heads.
  Dims qDims = {2, 4, 4, 8}, kvDims = {2, 4, 2, 8};
  std::vector<double> q = randomValues(256, 30), k = randomValues(128, 31),
                      v = randomValues(128, 32), g = randomValues(256, 33);
  aclTensor *tq = make(q, qDims), *tk = make(k, kvDims), *tv = make(v, kvDims);
  aclTensor *tg = make(g, qDims);
  std::vector<int32_t> subtreeEnd = {3, 1, 3, 3, 0, 3, 2, 3};
  std::vector<int64_t> positions = {0, 1, 2, 3, 1, 2, 3, 3};
  aclTensor *te = make(subtreeEnd, {2, 4}), *tp = make(positions, {2, 4});
  void *out = nullptr;
  aclTensor *to = empty<double>(qDims, &out);
  double noScale = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> expected(256);

  uint64_t asked = 0;
  ASSERT_EQ(
      run(PLAN(aclnnLoomAttentionGetWorkspaceSize(
              tq, tk, tv, nullptr, nullptr, "causal", noScale, to, ws, ex)),
          aclnnLoomAttention, &asked),
      0)
      << recentError();
  EXPECT_GE(asked, 256 * sizeof(double)) << "staged in the workspace";
  host::attention(expected.data(), shapeOf(qDims), q.data(), shapeOf(qDims),
                  k.data(), shapeOf(kvDims), v.data(), shapeOf(kvDims), nullptr,
                  {}, nullptr, {}, "causal", noScale);
  expectBitwise(download<double>(out, 256), expected, "attention");

  void *dqData = nullptr, *dkData = nullptr, *dvData = nullptr;
  aclTensor *dq = empty<double>(qDims, &dqData);
  aclTensor *dk = empty<double>(kvDims, &dkData);
  aclTensor *dv = empty<double>(kvDims, &dvData);
  ASSERT_EQ(run(PLAN(aclnnLoomAttentionBackwardGetWorkspaceSize(
                    tg, tq, tk, tv, te, tp, "tree", 0.25, dq, dk, dv, ws, ex)),
                aclnnLoomAttentionBackward, &asked),
            0)
      << recentError();
  EXPECT_GE(asked, 512 * sizeof(double));
  std::vector<double> edq(256), edk(128), edv(128);
  host::attention_grad(edq.data(), shapeOf(qDims), edk.data(), shapeOf(kvDims),
                       edv.data(), shapeOf(kvDims), g.data(), shapeOf(qDims),
                       q.data(), shapeOf(qDims), k.data(), shapeOf(kvDims),
                       v.data(), shapeOf(kvDims), subtreeEnd.data(), {2, 4},
                       positions.data(), {2, 4}, "tree", 0.25);
  expectBitwise(download<double>(dqData, 256), edq, "dquery");
  expectBitwise(download<double>(dkData, 128), edk, "dkey");
  expectBitwise(download<double>(dvData, 128), edv, "dvalue");

  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnLoomAttentionGetWorkspaceSize(tq, tk, tv, nullptr, nullptr,
                                               "tree", noScale, to, &size,
                                               &executor),
            kParamInvalid)
      << "a tree mask needs subtreeEnd";
  EXPECT_EQ(aclnnLoomAttentionGetWorkspaceSize(tq, tk, tv, nullptr, nullptr,
                                               nullptr, noScale, to, &size,
                                               &executor),
            kNullptr);
  EXPECT_EQ(aclnnLoomAttentionBackwardGetWorkspaceSize(
                tg, tq, tk, tv, nullptr, nullptr, "none", noScale, dq, dq, dv,
                &size, &executor),
            kParamInvalid)
      << "results overlap";
}

TEST_F(AscendDouble, LoomLossAndIndexOperators) {
  std::vector<double> logits = randomValues(35, 40, -2, 2);
  std::vector<int64_t> labels = {0, 6, 3, 2, 5};
  std::vector<int32_t> labels32 = {1, 1, 4, 0, 6};
  std::vector<double> weights = {1, 0.5, 0, 2, 1}, normalizer = {3.0},
                      grad = {0.75};
  aclTensor *tl = make(logits, {5, 7}), *tlab = make(labels, {5}),
            *tlab32 = make(labels32, {5}), *tw = make(weights, {5}),
            *tn = make(normalizer, {}), *tgr = make(grad, {});
  double noNormalizer = std::numeric_limits<double>::quiet_NaN();
  void *lossData = nullptr, *gradData = nullptr;
  aclTensor *loss = empty<double>({}, &lossData);
  aclTensor *dlogits = empty<double>({5, 7}, &gradData);

  ASSERT_EQ(run(PLAN(aclnnLoomCrossEntropyGetWorkspaceSize(
                    tl, tlab, tw, nullptr, 5.0, loss, ws, ex)),
                aclnnLoomCrossEntropy),
            0)
      << recentError();
  std::vector<double> expected(1), expectedGrad(35);
  host::cross_entropy(expected.data(), {}, logits.data(), {5, 7}, labels.data(),
                      {5}, weights.data(), {5}, nullptr, {}, 5.0);
  expectBitwise(download<double>(lossData, 1), expected, "cross_entropy");

  ASSERT_EQ(
      run(PLAN(aclnnLoomCrossEntropyBackwardGetWorkspaceSize(
              tgr, tl, tlab32, nullptr, tn, noNormalizer, dlogits, ws, ex)),
          aclnnLoomCrossEntropyBackward),
      0)
      << recentError();
  host::cross_entropy_grad(expectedGrad.data(), {5, 7}, grad.data(), {},
                           logits.data(), {5, 7}, labels32.data(), {5}, nullptr,
                           {}, normalizer.data(), {}, noNormalizer);
  expectBitwise(download<double>(gradData, 35), expectedGrad,
                "cross_entropy_grad");
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnLoomCrossEntropyGetWorkspaceSize(tl, tlab, nullptr, tn, 5.0,
                                                  loss, &size, &executor),
            kParamInvalid)
      << "two normalizers";

  // Embedding of a vocabulary shard [3, 13) with i32 ids.
  std::vector<double> table = randomValues(40, 41);
  std::vector<int32_t> ids = {3, 12, 7, 2, 13, 5};
  std::vector<int64_t> offset = {3};
  aclTensor *tt = make(table, {10, 4}), *tids = make(ids, {2, 3}),
            *toff = make(offset, {});
  void *embData = nullptr;
  aclTensor *emb = empty<double>({2, 3, 4}, &embData);
  ASSERT_EQ(
      run(PLAN(aclnnLoomEmbeddingGetWorkspaceSize(tt, tids, toff, emb, ws, ex)),
          aclnnLoomEmbedding),
      0)
      << recentError();
  std::vector<double> expectedEmb(24);
  host::embedding(expectedEmb.data(), {2, 3, 4}, table.data(), {10, 4},
                  ids.data(), {2, 3}, offset.data(), {});
  expectBitwise(download<double>(embData, 24), expectedEmb, "embedding");

  // Gather gradient along dimension 1 into [3, 5].
  std::vector<double> g = randomValues(12, 42);
  std::vector<int64_t> indices = {0, 4, 4, 1, 2, 2, 3, 0, 1, 1, 1, 4};
  aclTensor *tg = make(g, {3, 4}), *ti = make(indices, {3, 4});
  void *ggData = nullptr;
  aclTensor *gg = empty<double>({3, 5}, &ggData);
  ASSERT_EQ(run(PLAN(aclnnLoomGatherBackwardGetWorkspaceSize(tg, ti, nullptr, 1,
                                                             gg, ws, ex)),
                aclnnLoomGatherBackward),
            0)
      << recentError();
  std::vector<double> expectedGg(15);
  host::gather_grad(expectedGg.data(), {3, 5}, g.data(), {3, 4}, indices.data(),
                    {3, 4}, nullptr, {}, 1);
  expectBitwise(download<double>(ggData, 15), expectedGg, "gather_grad");

  // Iota along dimension 1 from the offset 3 (i64), and along dimension 0
  // from 0 (f64).
  void *iotaData = nullptr, *iotaF = nullptr;
  aclTensor *iota = empty<int64_t>({2, 5}, &iotaData);
  aclTensor *iotaD = empty<double>({2, 5}, &iotaF);
  ASSERT_EQ(run(PLAN(aclnnLoomIotaGetWorkspaceSize(toff, 1, iota, ws, ex)),
                aclnnLoomIota),
            0)
      << recentError();
  ASSERT_EQ(run(PLAN(aclnnLoomIotaGetWorkspaceSize(nullptr, 0, iotaD, ws, ex)),
                aclnnLoomIota),
            0)
      << recentError();
  std::vector<int64_t> expectedIota(10);
  std::vector<double> expectedIotaD(10);
  host::iota(expectedIota.data(), {2, 5}, offset.data(), {}, 1);
  host::iota(expectedIotaD.data(), {2, 5}, nullptr, {}, 0);
  EXPECT_EQ(download<int64_t>(iotaData, 10), expectedIota);
  expectBitwise(download<double>(iotaF, 10), expectedIotaD, "iota");
  EXPECT_EQ(aclnnLoomIotaGetWorkspaceSize(tids, 1, iota, &size, &executor),
            kParamInvalid)
      << "an offset must be 0-d i64";
  EXPECT_EQ(aclnnLoomEmbeddingGetWorkspaceSize(tt, tl, nullptr, emb, &size,
                                               &executor),
            kParamInvalid)
      << "ids must be integers";
}

TEST_F(AscendDouble, LoomOptimizerOperatorsUpdateInPlace) {
  std::vector<double> p = randomValues(10, 50), g = randomValues(10, 51),
                      m = randomValues(10, 52), v = randomValues(10, 53, 0, 1);
  std::vector<int64_t> step = {3};
  void *pData = nullptr, *mData = nullptr, *vData = nullptr;
  aclTensor *tp = make(p, {10}, &pData), *tg = make(g, {10}),
            *tm = make(m, {10}, &mData), *tv = make(v, {10}, &vData),
            *ts = make(step, {});
  // (A cosine schedule past its warm-up: step 3 of 2 + 10.)
  ASSERT_EQ(run(PLAN(aclnnLoomAdamWGetWorkspaceSize(
                    tp, tg, tm, tv, ts, 0.9, 0.999, "cosine", 10, 1e-8, 1e-3,
                    1e-4, 2, 0.01, tp, tm, tv, ws, ex)),
                aclnnLoomAdamW),
            0)
      << recentError();
  std::vector<double> ep = p, em = m, ev = v;
  host::adamw_update(ep.data(), {10}, em.data(), {10}, ev.data(), {10},
                     ep.data(), {10}, g.data(), {10}, em.data(), {10},
                     ev.data(), {10}, step.data(), {}, 0.9, 0.999, "cosine",
                     10, 1e-8, 1e-3, 1e-4, 2, 0.01);
  expectBitwise(download<double>(pData, 10), ep, "adamw param");
  expectBitwise(download<double>(mData, 10), em, "adamw m");
  expectBitwise(download<double>(vData, 10), ev, "adamw v");

  std::vector<double> buffer = randomValues(10, 54);
  void *bData = nullptr, *npData = nullptr;
  aclTensor *tb = make(buffer, {10}, &bData);
  aclTensor *np = empty<double>({10}, &npData);
  std::vector<double> current = download<double>(pData, 10);
  // (In a warm-up of 5 steps.)
  ASSERT_EQ(run(PLAN(aclnnLoomSgdGetWorkspaceSize(tp, tg, tb, ts, "constant",
                                                  0, 0.1, 0.0, 0.9, true, 5,
                                                  0.01, np, tb, ws, ex)),
                aclnnLoomSgd),
            0)
      << recentError();
  std::vector<double> enp(10), eb = buffer;
  host::sgd_update(enp.data(), {10}, eb.data(), {10}, current.data(), {10},
                   g.data(), {10}, eb.data(), {10}, step.data(), {},
                   "constant", 0, 0.1, 0.0, 0.9, true, 5, 0.01);
  expectBitwise(download<double>(npData, 10), enp, "sgd param");
  expectBitwise(download<double>(bData, 10), eb, "sgd momentum");

  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  EXPECT_EQ(aclnnLoomAdamWGetWorkspaceSize(tp, tg, tm, tv, nullptr, 0.9, 0.999,
                                           nullptr, 0, 1e-8, 1e-3, 0.0, 0, 0.01,
                                           tp, tm, tv, &size, &executor),
            kNullptr)
      << "AdamW needs the step";
  EXPECT_EQ(aclnnLoomSgdGetWorkspaceSize(tp, tg, tb, nullptr, nullptr, 0, 0.1,
                                         0.0, 0.9, false, 0, 0.0, tp, tp, &size,
                                         &executor),
            kParamInvalid)
      << "results overlap";
}

//===----------------------------------------------------------------------===//
// HCCL over MPI, one rank
//===----------------------------------------------------------------------===//

TEST_F(AscendDouble, HcclOnOneRank) {
  HcclRootInfo info;
  ASSERT_EQ(HcclGetRootInfo(&info), HCCL_SUCCESS);
  HcclComm comm = nullptr;
  EXPECT_EQ(HcclCommInitRootInfo(1, &info, 1, &comm), HCCL_E_PARA);
  HcclRootInfo garbage = {};
  EXPECT_EQ(HcclCommInitRootInfo(1, &garbage, 0, &comm), HCCL_E_PARA);
  ASSERT_EQ(HcclCommInitRootInfo(1, &info, 0, &comm), HCCL_SUCCESS)
      << recentError();

  std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  void *a = upload(values);
  void *b = alloc(32);
  ASSERT_EQ(HcclAllReduce(a, a, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                          stream),
            HCCL_SUCCESS)
      << recentError();
  ASSERT_EQ(HcclAllReduce(a, b, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, comm,
                          stream),
            HCCL_SUCCESS);
  EXPECT_EQ(download<float>(b, 8), values);
  ASSERT_EQ(HcclAllGather(a, b, 8, HCCL_DATA_TYPE_INT32, comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(HcclReduceScatter(a, b, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_PROD,
                              comm, stream),
            HCCL_SUCCESS);
  // As on Atlas A2/A3, fp64 is moved but not reduced.
  EXPECT_EQ(HcclReduceScatter(a, b, 2, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM,
                              comm, stream),
            HCCL_E_NOT_SUPPORT);
  EXPECT_EQ(HcclAllReduce(a, b, 4, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, comm,
                          stream),
            HCCL_E_NOT_SUPPORT);
  ASSERT_EQ(HcclBroadcast(a, 8, HCCL_DATA_TYPE_INT8, 0, comm, stream),
            HCCL_SUCCESS);
  uint64_t counts[] = {6}, displs[] = {1}, rdispls[] = {2};
  ASSERT_EQ(HcclAlltoAllV(a, counts, displs, HCCL_DATA_TYPE_FP32, b, counts,
                          rdispls, HCCL_DATA_TYPE_FP32, comm, stream),
            HCCL_SUCCESS)
      << recentError();
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  std::vector<float> moved = download<float>(b, 8);
  EXPECT_EQ(std::vector<float>(moved.begin() + 2, moved.end()),
            std::vector<float>(values.begin() + 1, values.begin() + 7));

  // Refused: a type the double does not carry, host memory, a null stream,
  // a mismatched receive count.
  EXPECT_EQ(HcclAllReduce(a, a, 8, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM, comm,
                          stream),
            HCCL_E_NOT_SUPPORT);
  EXPECT_EQ(HcclAllReduce(values.data(), a, 8, HCCL_DATA_TYPE_FP32,
                          HCCL_REDUCE_SUM, comm, stream),
            HCCL_E_PARA);
  EXPECT_NE(recentError().find("not in device memory"), std::string::npos);
  EXPECT_EQ(HcclBroadcast(a, 8, HCCL_DATA_TYPE_FP32, 0, comm, nullptr),
            HCCL_E_PARA);
  uint64_t fewer[] = {5};
  EXPECT_EQ(HcclAlltoAllV(a, counts, displs, HCCL_DATA_TYPE_FP32, b, fewer,
                          rdispls, HCCL_DATA_TYPE_FP32, comm, stream),
            HCCL_E_PARA);
  // Point to point needs another member (refused before any message, on
  // one rank there is none); nothing to move is success before any check,
  // as in HCCL.
  EXPECT_EQ(HcclSend(a, 8, HCCL_DATA_TYPE_FP32, 0, comm, stream), HCCL_E_PARA);
  EXPECT_NE(recentError().find("destRank 0 is not another member"),
            std::string::npos);
  EXPECT_EQ(HcclRecv(b, 4, HCCL_DATA_TYPE_FP64, 1, comm, stream), HCCL_E_PARA);
  EXPECT_NE(recentError().find("srcRank 1 is not another member"),
            std::string::npos);
  EXPECT_EQ(HcclSend(a, 0, HCCL_DATA_TYPE_FP32, 0, nullptr, nullptr),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_E_PARA);
  EXPECT_EQ(HcclAllReduce(a, a, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                          stream),
            HCCL_E_PARA);
  EXPECT_STREQ(HcclGetErrorString(HCCL_E_PARA), "HCCL_E_PARA: parameter error");
}

//===----------------------------------------------------------------------===//
// The call log and the exported symbols
//===----------------------------------------------------------------------===//

/// The lines appended to the log since `from` bytes.
std::vector<std::string> logLinesSince(std::streamoff from) {
  std::ifstream file(logPrefix + ".0");
  file.seekg(from);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(file, line))
    lines.push_back(line);
  return lines;
}

std::streamoff logSize() {
  std::ifstream file(logPrefix + ".0", std::ios::ate);
  return file ? static_cast<std::streamoff>(file.tellg()) : 0;
}

TEST_F(AscendDouble, TheCallLogNamesEverything) {
  std::streamoff start = logSize();
  void *mem = nullptr;
  ASSERT_EQ(aclrtMalloc(&mem, 4096, ACL_MEM_MALLOC_HUGE_FIRST), 0);
  buffers.push_back(mem);
  std::vector<std::string> lines = logLinesSince(start);
  ASSERT_EQ(lines.size(), 1u);
  const std::string prefix = "aclrtMalloc bytes=4096 -> mem";
  ASSERT_EQ(lines[0].rfind(prefix, 0), 0u) << lines[0];
  std::string memName = lines[0].substr(prefix.size() - 3);

  start = logSize();
  aclTensor *a = view(mem, {2, 3}, ACL_FLOAT);
  ASSERT_EQ(logLinesSince(start)[0].find("aclCreateTensor dtype=f32 "
                                         "dims=[2,3] strides=[3,1] offset=0 "
                                         "storage=[6] data=" +
                                         memName + " -> tensor"),
            0u);
  aclTensor *b = view(static_cast<char *>(mem) + 64, {3, 2}, ACL_FLOAT);
  aclTensor *c = view(static_cast<char *>(mem) + 128, {2, 2}, ACL_FLOAT);
  aclTensor *d = view(static_cast<char *>(mem) + 256, {2}, ACL_FLOAT);
  ASSERT_EQ(aclrtMemsetAsync(mem, 4096, 0, 4096, stream), 0);
  int64_t dims[] = {1};
  aclIntArray *dim = aclCreateIntArray(dims, 1);
  float half = 0.5f;
  aclScalar *scalar = aclCreateScalar(&half, ACL_FLOAT);
  HcclRootInfo info;
  ASSERT_EQ(HcclGetRootInfo(&info), HCCL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &info, 0, &comm), HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);

  start = logSize();
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  ASSERT_EQ(aclnnMatmulGetWorkspaceSize(a, b, c, 0, &size, &executor), 0);
  ASSERT_EQ(aclnnMatmul(nullptr, 0, executor, stream), 0);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  ASSERT_EQ(aclnnReduceSumGetWorkspaceSize(c, dim, false, ACL_FLOAT, d, &size,
                                           &executor),
            0);
  ASSERT_EQ(size, 64u);
  void *workspace = nullptr;
  ASSERT_EQ(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST), 0);
  ASSERT_EQ(aclnnReduceSum(workspace, size, executor, stream), 0);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  ASSERT_EQ(aclrtFree(workspace), 0);
  ASSERT_EQ(aclnnInplaceMulsGetWorkspaceSize(a, scalar, &size, &executor), 0);
  ASSERT_EQ(aclnnInplaceMuls(nullptr, 0, executor, stream), 0);
  ASSERT_EQ(HcclAllReduce(mem, mem, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                          comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), 0);
  int onHost = 0;
  EXPECT_EQ(aclrtFree(&onHost), kInvalidParam);
  ASSERT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  lines = logLinesSince(start);

  // The stream's and the workspace's names, as the log gave them.
  ASSERT_GE(lines.size(), 4u);
  std::string streamName = lines[1].substr(lines[1].rfind('=') + 1);
  ASSERT_EQ(streamName.rfind("stream", 0), 0u) << lines[1];
  std::string wsName = lines[4].substr(lines[4].rfind(' ') + 1);
  ASSERT_EQ(wsName.rfind("mem", 0), 0u) << lines[4];
  std::string commName = "comm";
  for (const std::string &line : lines)
    if (line.rfind("HcclCommDestroy ", 0) == 0)
      commName = line.substr(16);
  std::vector<std::string> expected = {
      "aclnnMatmulGetWorkspaceSize workspace=0",
      "aclnnMatmul workspace=none stream=" + streamName,
      "aclrtSynchronizeStream " + streamName,
      "aclnnReduceSumGetWorkspaceSize workspace=64",
      "aclrtMalloc bytes=64 -> " + wsName,
      "aclnnReduceSum workspace=" + wsName + " bytes=64 stream=" + streamName,
      "aclrtSynchronizeStream " + streamName,
      "aclrtFree " + wsName,
      "aclnnInplaceMulsGetWorkspaceSize workspace=0",
      "aclnnInplaceMuls workspace=none stream=" + streamName,
      "HcclAllReduce count=8 type=fp32 op=sum comm=" + commName +
          " stream=" + streamName,
      "aclrtSynchronizeStream " + streamName,
      "aclrtFree host -> error 100000",
      "HcclCommDestroy " + commName,
  };
  EXPECT_EQ(lines, expected);
  EXPECT_EQ(aclDestroyIntArray(dim), 0);
  EXPECT_EQ(aclDestroyScalar(scalar), 0);
}

TEST(AscendDoubleLibrary, ExportsTheApiAndNothingElse) {
  Dl_info where;
  ASSERT_NE(dladdr(reinterpret_cast<void *>(&aclInit), &where), 0);
  std::string path = where.dli_fname;
  std::string folder = path.substr(0, path.rfind('/') + 1);
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr);
#define LOOM_CHECK_EXPORTED(NAME)                                              \
  EXPECT_NE(dlsym(library, #NAME), nullptr) << #NAME;
#define LOOM_CHECK_OPERATOR(OP)                                                \
  LOOM_CHECK_EXPORTED(OP##GetWorkspaceSize) LOOM_CHECK_EXPORTED(OP)
  LOOM_ASCEND_ACL_FUNCTIONS(LOOM_CHECK_EXPORTED)
  LOOM_ASCEND_NNOPBASE_FUNCTIONS(LOOM_CHECK_EXPORTED)
  LOOM_ASCEND_OPAPI_OPERATORS(LOOM_CHECK_OPERATOR)
  LOOM_ASCEND_HCCL_FUNCTIONS(LOOM_CHECK_EXPORTED)
  LOOM_ASCEND_LOOM_OPERATORS(LOOM_CHECK_OPERATOR)
  LOOM_CHECK_EXPORTED(HcclGetErrorString)
#undef LOOM_CHECK_OPERATOR
#undef LOOM_CHECK_EXPORTED
  // The host kernels and the double's internals stay inside.
  EXPECT_EQ(dlsym(library, "_ZN4loom4host4fillEPdNS0_5ShapeEd"), nullptr);
  EXPECT_EQ(dlsym(library, "_ZN4loom6ascend10testdouble4failEiPKcz"), nullptr);
  // The names the Ascend runtime loads are the same library.
  for (const char *name : {"libascendcl.so", "libnnopbase.so", "libopapi.so",
                           "libhccl.so", "libloom_opapi.so"}) {
    void *alias = dlopen((folder + name).c_str(), RTLD_NOW);
    EXPECT_EQ(alias, library) << name;
    if (alias)
      dlclose(alias);
  }
  dlclose(library);
}

} // namespace

// MPI's start-up and shutdown leak (memory of plugins it unloads), as in the
// other MPI tests; the double's own state stays reachable. Only read by
// sanitized builds.
extern "C" const char *__lsan_default_options();
extern "C" const char *__lsan_default_options() { return "detect_leaks=0"; }

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (::testing::GTEST_FLAG(list_tests))
    return RUN_ALL_TESTS();
  // A log of this process's calls, in a fresh folder.
  char folder[] = "/tmp/loom-ascend-double-test-XXXXXX";
  if (!mkdtemp(folder)) {
    std::perror("mkdtemp");
    return 1;
  }
  logPrefix = std::string(folder) + "/calls";
  setenv("LOOM_ASCEND_DOUBLE_LOG", logPrefix.c_str(), 1);
  unsetenv("LOOM_ASCEND_DOUBLE_DEVICES");
  // One rank, without mpirun.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  MPI_Init(&argc, &argv);
  if (aclInit(nullptr) != ACL_SUCCESS) {
    std::fprintf(stderr, "aclInit failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  int result = RUN_ALL_TESTS();
  aclFinalize();
  MPI_Finalize();
  std::remove((logPrefix + ".0").c_str());
  rmdir(folder);
  return result;
}
