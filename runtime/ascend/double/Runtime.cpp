//===- Runtime.cpp - The ACL runtime of the test double -------------------===//
//
// Part of the CPU test double of CANN (see Double.h): aclInit, devices,
// streams and memory. "Device" memory is 64-byte-aligned heap memory,
// filled with 0xFF bytes when allocated (NaN in f32 and f64) so that reading
// memory nobody wrote shows. A stream runs its work when it is launched; it
// remembers what was launched since the last aclrtSynchronizeStream, so
// that freeing an operator's workspace before the stream has been
// synchronised, or destroying a stream with unsynchronised work, fails as
// the protocol demands.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

constexpr int32_t kDefaultDevices = 8;
constexpr uint64_t kAlignment = 64;
/// The largest allocation the double makes (1 TiB): larger requests fail
/// as an out-of-memory device would.
constexpr uint64_t kMaxAllocation = uint64_t(1) << 40;

struct State {
  bool initialized = false;
  bool everInitialized = false;
  /// Incremented by aclInit: a thread's current device belongs to one
  /// initialisation.
  uint64_t generation = 0;
  int32_t deviceCount = kDefaultDevices;
  uint64_t nextAllocation = 1;
  uint64_t nextStream = 1;
  std::map<uintptr_t, Allocation> allocations;
  std::map<const void *, std::unique_ptr<Stream>> streams;
  std::map<int32_t, Stream> defaultStreams;
};

/// Never destroyed: entry points may run during static destruction.
State &state() {
  static State *instance = new State;
  return *instance;
}

thread_local int32_t currentDevice = -1;
thread_local uint64_t currentGeneration = 0;

const char *kindName(int kind) {
  static const char *names[] = {"h2h", "h2d", "d2h", "d2d"};
  return kind >= 0 && kind <= 3 ? names[kind] : "invalid";
}

aclError requireInit(const char *function) {
  if (!state().initialized)
    return fail(ACL_ERROR_UNINITIALIZE,
                "%s: aclInit has not been called (or aclFinalize has)",
                function);
  return ACL_SUCCESS;
}

/// Whether the whole of [address, address + bytes) (one byte when `bytes`
/// is 0) lies in one live allocation.
bool inDeviceMemory(const void *address, uint64_t bytes) {
  return findAllocation(address, bytes) != nullptr;
}

/// Checks one side of a copy of kind `kind` (-1: not a copy): device
/// memory where `device`, and host memory (no live allocation) otherwise.
aclError checkSide(const char *function, const char *side, const void *address,
                   uint64_t bytes, bool device, int kind) {
  if (bytes == 0)
    return ACL_SUCCESS;
  if (!address)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %s is null", function, side);
  if (device && !inDeviceMemory(address, bytes))
    return fail(ACL_ERROR_INVALID_PARAM,
                "%s: %s (%s) with %llu bytes is not in device memory%s: not "
                "inside one live aclrtMalloc allocation",
                function, side, describeAddress(address).c_str(),
                static_cast<unsigned long long>(bytes),
                kind < 0 ? "" : format(" (kind %s)", kindName(kind)).c_str());
  if (!device && findAllocation(address, 0))
    return fail(ACL_ERROR_INVALID_PARAM,
                "%s: %s (%s) is device memory but kind %s says host memory",
                function, side, describeAddress(address).c_str(),
                kindName(kind));
  return ACL_SUCCESS;
}

bool rangesOverlap(const void *a, uint64_t aBytes, const void *b,
                   uint64_t bBytes) {
  if (aBytes == 0 || bBytes == 0)
    return false;
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bBytes && y < x + aBytes;
}

/// Checks a copy of `count` bytes (`dstSpan` and `srcSpan` bytes spanned,
/// `capacity` the bytes the caller says dst holds).
aclError checkCopy(const char *function, void *dst, uint64_t capacity,
                   uint64_t dstSpan, const void *src, uint64_t srcSpan,
                   int kind) {
  if (kind < 0 || kind > 3)
    return fail(ACL_ERROR_INVALID_PARAM,
                "%s: kind %d is not an aclrtMemcpyKind (0..3)", function, kind);
  bool dstDevice =
      kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  bool srcDevice =
      kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (aclError error = checkSide(function, "dst", dst,
                                 std::max(capacity, dstSpan), dstDevice, kind))
    return error;
  if (aclError error =
          checkSide(function, "src", src, srcSpan, srcDevice, kind))
    return error;
  if (rangesOverlap(dst, dstSpan, src, srcSpan))
    return fail(ACL_ERROR_INVALID_PARAM,
                "%s: the source and destination ranges overlap", function);
  return ACL_SUCCESS;
}

} // namespace

//===----------------------------------------------------------------------===//
// Shared with the other files of the double
//===----------------------------------------------------------------------===//

std::recursive_mutex &testdouble::stateMutex() {
  static std::recursive_mutex *mutex = new std::recursive_mutex;
  return *mutex;
}

bool testdouble::initialized() {
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  return state().initialized;
}

const Allocation *testdouble::findAllocation(const void *address,
                                             uint64_t bytes) {
  if (!address)
    return nullptr;
  auto &allocations = state().allocations;
  auto p = reinterpret_cast<uintptr_t>(address);
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin())
    return nullptr;
  --it;
  const Allocation &allocation = it->second;
  uint64_t offset = p - allocation.base;
  if (offset >= allocation.size || bytes > allocation.size - offset)
    return nullptr;
  return &allocation;
}

std::string testdouble::describeAddress(const void *address) {
  if (!address)
    return "null";
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  const Allocation *allocation = findAllocation(address, 0);
  if (!allocation)
    return "host";
  uint64_t offset = reinterpret_cast<uintptr_t>(address) - allocation->base;
  if (offset == 0)
    return format("mem%llu", static_cast<unsigned long long>(allocation->id));
  return format("mem%llu+%llu", static_cast<unsigned long long>(allocation->id),
                static_cast<unsigned long long>(offset));
}

std::string testdouble::describeStreamHandle(aclrtStream handle) {
  if (!handle)
    return "default";
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  auto &streams = state().streams;
  auto it = streams.find(handle);
  if (it == streams.end())
    return "unknown";
  return describeStream(*it->second);
}

std::string testdouble::describeStream(const Stream &stream) {
  if (stream.id == 0)
    return "default";
  return format("stream%llu", static_cast<unsigned long long>(stream.id));
}

aclError testdouble::requireDevice(const char *function, int32_t &device) {
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (aclError error = requireInit(function))
    return error;
  if (currentDevice < 0 || currentGeneration != state().generation)
    return fail(ACL_ERROR_RT_CONTEXT_NULL,
                "%s: the calling thread has no current device (call "
                "aclrtSetDevice on this thread first)",
                function);
  device = currentDevice;
  return ACL_SUCCESS;
}

aclError testdouble::resolveStream(const char *function, aclrtStream handle,
                                   Stream *&stream) {
  int32_t device = 0;
  if (aclError error = requireDevice(function, device))
    return error;
  State &s = state();
  if (!handle) {
    Stream &fallback = s.defaultStreams[device];
    fallback.device = device;
    stream = &fallback;
    return ACL_SUCCESS;
  }
  auto it = s.streams.find(handle);
  if (it == s.streams.end())
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                "%s: the stream is not one aclrtCreateStream made, or it was "
                "destroyed",
                function);
  if (it->second->device != device)
    return fail(ACL_ERROR_RT_STREAM_CONTEXT,
                "%s: %s belongs to device %d, but the calling thread's "
                "current device is %d",
                function, describeStream(*it->second).c_str(),
                it->second->device, device);
  stream = it->second.get();
  return ACL_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Initialisation and devices
//===----------------------------------------------------------------------===//

aclError aclInit(const char *configPath) {
  CallLog call("aclInit");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  State &s = state();
  if (s.initialized)
    return call.status(fail(ACL_ERROR_REPEAT_INITIALIZE,
                            "aclInit: already initialised (call aclFinalize "
                            "first)"));
  if (configPath && *configPath) {
    FILE *file = std::fopen(configPath, "r");
    if (!file)
      return call.status(fail(ACL_ERROR_INVALID_FILE,
                              "aclInit: cannot open the configuration file "
                              "'%s'",
                              configPath));
    std::fclose(file);
  }
  int32_t count = kDefaultDevices;
  if (const char *text = std::getenv("LOOM_ASCEND_DOUBLE_DEVICES")) {
    char *end = nullptr;
    errno = 0;
    long value = std::strtol(text, &end, 10);
    if (errno || end == text || *end || value < 1 || value > 1024)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclInit: LOOM_ASCEND_DOUBLE_DEVICES='%s' is not "
                              "a device count in [1, 1024]",
                              text));
    count = static_cast<int32_t>(value);
  }
  s.deviceCount = count;
  s.initialized = true;
  s.everInitialized = true;
  ++s.generation;
  return ACL_SUCCESS;
}

aclError aclFinalize() {
  CallLog call("aclFinalize");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  State &s = state();
  if (!s.initialized)
    return call.status(
        s.everInitialized
            ? fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: already finalised")
            : fail(ACL_ERROR_UNINITIALIZE,
                   "aclFinalize: aclInit has not been called"));
  // As on a device, finalising releases the memory and the streams.
  for (auto &entry : s.allocations)
    std::free(reinterpret_cast<void *>(entry.second.base));
  s.allocations.clear();
  s.streams.clear();
  s.defaultStreams.clear();
  s.initialized = false;
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  CallLog call("aclrtSetDevice");
  call.add("device=%d", deviceId);
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (aclError error = requireInit("aclrtSetDevice"))
    return call.status(error);
  if (deviceId < 0 || deviceId >= state().deviceCount)
    return call.status(fail(ACL_ERROR_RT_INVALID_DEVICEID,
                            "aclrtSetDevice: device %d is not in [0, %d)",
                            deviceId, state().deviceCount));
  currentDevice = deviceId;
  currentGeneration = state().generation;
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  CallLog call("aclrtResetDevice");
  call.add("device=%d", deviceId);
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (aclError error = requireInit("aclrtResetDevice"))
    return call.status(error);
  if (deviceId < 0 || deviceId >= state().deviceCount)
    return call.status(fail(ACL_ERROR_RT_INVALID_DEVICEID,
                            "aclrtResetDevice: device %d is not in [0, %d)",
                            deviceId, state().deviceCount));
  if (currentDevice == deviceId)
    currentDevice = -1;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
  CallLog call("aclrtGetDeviceCount");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  if (aclError error = requireInit("aclrtGetDeviceCount"))
    return call.status(error);
  if (!count)
    return call.status(
        fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is null"));
  *count = static_cast<uint32_t>(state().deviceCount);
  call.add("-> %u", *count);
  return ACL_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

aclError aclrtCreateStream(aclrtStream *stream) {
  CallLog call("aclrtCreateStream");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  int32_t device = 0;
  if (aclError error = requireDevice("aclrtCreateStream", device))
    return call.status(error);
  if (!stream)
    return call.status(
        fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null"));
  auto created = std::make_unique<Stream>();
  created->id = state().nextStream++;
  created->device = device;
  Stream *handle = created.get();
  state().streams.emplace(handle, std::move(created));
  *stream = handle;
  call.add("-> %s", describeStream(*handle).c_str());
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  CallLog call("aclrtDestroyStream");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  call.add("%s", describeStreamHandle(stream).c_str());
  if (!stream)
    return call.status(fail(ACL_ERROR_INVALID_PARAM,
                            "aclrtDestroyStream: the stream is null (the "
                            "default stream cannot be destroyed)"));
  Stream *resolved = nullptr;
  if (aclError error = resolveStream("aclrtDestroyStream", stream, resolved))
    return call.status(error);
  if (resolved->pending)
    return call.status(fail(
        ACL_ERROR_RT_STREAM_NOT_COMPLETE,
        "aclrtDestroyStream: %s has %llu launches not yet synchronised (call "
        "aclrtSynchronizeStream before destroying it)",
        describeStream(*resolved).c_str(),
        static_cast<unsigned long long>(resolved->pending)));
  state().streams.erase(stream);
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  CallLog call("aclrtSynchronizeStream");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  call.add("%s", describeStreamHandle(stream).c_str());
  Stream *resolved = nullptr;
  if (aclError error =
          resolveStream("aclrtSynchronizeStream", stream, resolved))
    return call.status(error);
  // The work already ran when it was launched.
  resolved->pending = 0;
  resolved->workspaces.clear();
  return ACL_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  CallLog call("aclrtMalloc");
  call.add("bytes=%zu", size);
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  int32_t device = 0;
  if (aclError error = requireDevice("aclrtMalloc", device))
    return call.status(error);
  if (!devPtr)
    return call.status(
        fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is null"));
  if (size == 0)
    return call.status(fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size is 0"));
  int policyValue = enumValue(policy);
  if (policyValue < 0 || policyValue > 2)
    return call.status(fail(ACL_ERROR_INVALID_PARAM,
                            "aclrtMalloc: policy %d is not an "
                            "aclrtMemMallocPolicy (0..2)",
                            policyValue));
  if (size > kMaxAllocation)
    return call.status(fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                            "aclrtMalloc: %zu bytes is more than the test "
                            "double allocates",
                            size));
  uint64_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void *memory = std::aligned_alloc(kAlignment, rounded);
  if (!memory)
    return call.status(fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                            "aclrtMalloc: out of memory for %zu bytes", size));
  std::memset(memory, 0xFF, rounded);
  Allocation allocation;
  allocation.id = state().nextAllocation++;
  allocation.base = reinterpret_cast<uintptr_t>(memory);
  allocation.size = size;
  allocation.device = device;
  state().allocations.emplace(allocation.base, allocation);
  *devPtr = memory;
  call.add("-> mem%llu", static_cast<unsigned long long>(allocation.id));
  return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr) {
  CallLog call("aclrtFree");
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  call.add("%s", describeAddress(devPtr).c_str());
  int32_t device = 0;
  if (aclError error = requireDevice("aclrtFree", device))
    return call.status(error);
  if (!devPtr)
    return call.status(
        fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is null"));
  State &s = state();
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(devPtr));
  if (it == s.allocations.end()) {
    if (findAllocation(devPtr, 0))
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtFree: %s is inside an allocation, not an "
                              "address aclrtMalloc returned",
                              describeAddress(devPtr).c_str()));
    return call.status(fail(ACL_ERROR_INVALID_PARAM,
                            "aclrtFree: not an address aclrtMalloc returned, "
                            "or already freed"));
  }
  uint64_t id = it->second.id;
  auto inFlight = [&](const Stream &stream) {
    return std::find(stream.workspaces.begin(), stream.workspaces.end(), id) !=
           stream.workspaces.end();
  };
  const Stream *user = nullptr;
  for (auto &entry : s.streams)
    if (inFlight(*entry.second))
      user = entry.second.get();
  for (auto &entry : s.defaultStreams)
    if (inFlight(entry.second))
      user = &entry.second;
  if (user)
    return call.status(fail(
        ACL_ERROR_RT_STREAM_NOT_COMPLETE,
        "aclrtFree: workspace freed before aclrtSynchronizeStream on the "
        "stream that uses it (mem%llu on %s)",
        static_cast<unsigned long long>(id), describeStream(*user).c_str()));
  std::free(devPtr);
  s.allocations.erase(it);
  return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind) {
  CallLog call("aclrtMemcpy");
  int kindValue = enumValue(kind);
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    call.add("dst=%s src=%s bytes=%zu kind=%s", describeAddress(dst).c_str(),
             describeAddress(src).c_str(), count, kindName(kindValue));
    int32_t device = 0;
    if (aclError error = requireDevice("aclrtMemcpy", device))
      return call.status(error);
    if (count > destMax)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtMemcpy: count %zu is larger than destMax "
                              "%zu",
                              count, destMax));
    if (aclError error = checkCopy("aclrtMemcpy", dst, destMax, count, src,
                                   count, kindValue))
      return call.status(error);
  }
  if (count)
    std::memcpy(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                          size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  CallLog call("aclrtMemcpyAsync");
  int kindValue = enumValue(kind);
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    call.add("dst=%s src=%s bytes=%zu kind=%s stream=%s",
             describeAddress(dst).c_str(), describeAddress(src).c_str(), count,
             kindName(kindValue), describeStreamHandle(stream).c_str());
    Stream *resolved = nullptr;
    if (aclError error = resolveStream("aclrtMemcpyAsync", stream, resolved))
      return call.status(error);
    if (count > destMax)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtMemcpyAsync: count %zu is larger than "
                              "destMax %zu",
                              count, destMax));
    if (aclError error = checkCopy("aclrtMemcpyAsync", dst, destMax, count, src,
                                   count, kindValue))
      return call.status(error);
    ++resolved->pending;
  }
  if (count)
    std::memcpy(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src,
                            size_t spitch, size_t width, size_t height,
                            aclrtMemcpyKind kind, aclrtStream stream) {
  CallLog call("aclrtMemcpy2dAsync");
  int kindValue = enumValue(kind);
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    call.add("dst=%s dpitch=%zu src=%s spitch=%zu width=%zu height=%zu "
             "kind=%s stream=%s",
             describeAddress(dst).c_str(), dpitch, describeAddress(src).c_str(),
             spitch, width, height, kindName(kindValue),
             describeStreamHandle(stream).c_str());
    Stream *resolved = nullptr;
    if (aclError error = resolveStream("aclrtMemcpy2dAsync", stream, resolved))
      return call.status(error);
    // CANN 8.x documents host-to-device and device-to-host 2-D copies only
    // (device-to-device arrives in CANN 9 on some chips), and at most
    // 5242880 rows.
    if (kindValue == ACL_MEMCPY_DEVICE_TO_DEVICE ||
        kindValue == ACL_MEMCPY_HOST_TO_HOST)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtMemcpy2dAsync: kind %s is not supported "
                              "(CANN 8.x copies host-to-device and "
                              "device-to-host only)",
                              kindName(kindValue)));
    if (height > 5242880)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtMemcpy2dAsync: %zu rows (at most "
                              "5242880)",
                              height));
    if (dpitch < width || spitch < width)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtMemcpy2dAsync: the pitches (dpitch %zu, "
                              "spitch %zu) must be at least the width %zu",
                              dpitch, spitch, width));
    uint64_t dstSpan = 0, srcSpan = 0;
    if (width && height) {
      // Overflow: the spans are checked against allocations below, and no
      // allocation exceeds kMaxAllocation.
      if (height - 1 > kMaxAllocation / std::max<size_t>(dpitch, 1) ||
          height - 1 > kMaxAllocation / std::max<size_t>(spitch, 1))
        return call.status(fail(ACL_ERROR_INVALID_PARAM,
                                "aclrtMemcpy2dAsync: %zu rows of these "
                                "pitches span more memory than exists",
                                height));
      dstSpan = (height - 1) * dpitch + width;
      srcSpan = (height - 1) * spitch + width;
    }
    if (aclError error = checkCopy("aclrtMemcpy2dAsync", dst, dstSpan, dstSpan,
                                   src, srcSpan, kindValue))
      return call.status(error);
    ++resolved->pending;
  }
  auto *to = static_cast<char *>(dst);
  auto *from = static_cast<const char *>(src);
  if (width)
    for (size_t row = 0; row < height; ++row)
      std::memcpy(to + row * dpitch, from + row * spitch, width);
  return ACL_SUCCESS;
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value,
                          size_t count, aclrtStream stream) {
  CallLog call("aclrtMemsetAsync");
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    call.add("dst=%s value=%d bytes=%zu stream=%s",
             describeAddress(devPtr).c_str(), value, count,
             describeStreamHandle(stream).c_str());
    Stream *resolved = nullptr;
    if (aclError error = resolveStream("aclrtMemsetAsync", stream, resolved))
      return call.status(error);
    if (count > maxCount)
      return call.status(fail(ACL_ERROR_INVALID_PARAM,
                              "aclrtMemsetAsync: count %zu is larger than "
                              "maxCount %zu",
                              count, maxCount));
    if (aclError error =
            checkSide("aclrtMemsetAsync", "devPtr", devPtr, maxCount,
                      /*device=*/true, /*kind=*/-1))
      return call.status(error);
    ++resolved->pending;
  }
  if (count)
    std::memset(devPtr, value, count);
  return ACL_SUCCESS;
}
