//===- DeviceSupport.cpp - What device targets' runtimes share ------------===//

#include "runtime/host/DeviceSupport.h"

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace loom;
using namespace loom::host;
using namespace loom::host::device;
using loom::rt::ElementType;
using loom::rt::Runtime;

namespace {

/// The device collective under way and its place among the step's.
struct CallState {
  const char *collective = nullptr;
  int64_t step = -1, index = 0;
  /// Whether the collective's call has been counted (at its first record).
  bool counted = false;
  /// The test hook names this collective: its count passes one short.
  bool shorten = false;
};
CallState &callState() {
  static CallState state;
  return state;
}

/// LOOM_TEST_SHORT_COUNT=STEP:CALL, parsed once ({-1, -1}: unset).
std::pair<int64_t, int64_t> shortCountHook() {
  static const std::pair<int64_t, int64_t> hook = [] {
    const char *text = std::getenv("LOOM_TEST_SHORT_COUNT");
    if (!text)
      return std::pair<int64_t, int64_t>{-1, -1};
    long long step = 0, call = 0;
    char rest = 0;
    if (std::sscanf(text, "%lld:%lld%c", &step, &call, &rest) != 2 ||
        step < 0 || call < 1)
      Runtime::get().fail("LOOM_TEST_SHORT_COUNT must be STEP:CALL (CALL "
                          "from 1), got '" +
                          std::string(text) + "'");
    return std::pair<int64_t, int64_t>{step, call};
  }();
  return hook;
}

/// Opens the device collective `name`: its records count under `name`.
void beginCollective(const char *name) {
  CallState &state = callState();
  int64_t step = Runtime::get().getStep();
  if (step != state.step) {
    state.step = step;
    state.index = 0;
  }
  state.collective = name;
  state.counted = false;
  ++state.index;
  state.shorten = shortCountHook() == std::pair<int64_t, int64_t>{
                                          step, state.index};
}

} // namespace

device::CollectiveScope::CollectiveScope(const char *name) {
  if (callState().collective)
    Runtime::get().fail(std::string("the device collective ") + name +
                        " opened inside " + callState().collective +
                        " (device collectives do not nest)");
  beginCollective(name);
}

device::CollectiveScope::~CollectiveScope() {
  callState().collective = nullptr;
  callState().shorten = false;
}

namespace {

/// The tensor `shape` seen as [outer, extent of `dim`, inner].
void splitAt(const Shape &shape, int64_t dim, int64_t &outer, int64_t &extent,
             int64_t &inner) {
  outer = extent = inner = 1;
  for (int64_t d = 0; d < shape.rank; ++d)
    (d < dim ? outer : d == dim ? extent : inner) *= shape[d];
}

/// Whether the blocks along `dim` are contiguous (nothing outside `dim`).
bool leadingDim(const Shape &shape, int64_t dim) {
  int64_t outer, extent, inner;
  splitAt(shape, dim, outer, extent, inner);
  return dim == 0 || outer == 1;
}

/// Block `j` of `k` along `dim` of a tensor of `shape` (in) to `out`,
/// contiguous (`pack`), or back (`!pack`).
void moveBlock(const Target &target, char *out, const char *in,
               const Shape &shape, int64_t dim, int64_t k, int64_t j,
               int64_t elementBytes, bool pack) {
  int64_t outer, extent, inner;
  splitAt(shape, dim, outer, extent, inner);
  size_t row = static_cast<size_t>(extent / k * inner * elementBytes);
  size_t wide = static_cast<size_t>(extent * inner * elementBytes);
  size_t start = static_cast<size_t>(j * (extent / k) * inner * elementBytes);
  if (row == 0 || outer == 0)
    return;
  if (pack)
    target.copy2d(out, row, in + start, wide, row, static_cast<size_t>(outer));
  else
    target.copy2d(out + start, wide, in, row, row, static_cast<size_t>(outer));
}

/// A device collective: the library calls recorded while it lasts are
/// its own (recordLibraryCall), and its span in the trace: when tracing,
/// the stream drains before and after it, so that the span covers the
/// collective's own device work (device work is asynchronous otherwise).
class DeviceSpan {
public:
  DeviceSpan(const Target &target, const char *name)
      : target(target), drained(drain(target)), span(name), scope(name) {}
  ~DeviceSpan() {
    // (A device error here surfaces again at the step's own
    // synchronisation, which reports it: a destructor must not throw.)
    if (drained)
      try {
        target.synchronize();
      } catch (const std::exception &) {
      }
  }

private:
  static bool drain(const Target &target) {
    if (!tracing())
      return false;
    target.synchronize();
    return true;
  }

  const Target &target;
  bool drained;
  CommSpan span;
  CollectiveScope scope;
};

} // namespace

namespace {
/// The device communicators, by MPI group, in creation order.
using Maker = void *(*)(rt::Communicator &);
std::map<std::pair<rt::Communicator *, Maker>, Communicator *> &byGroup() {
  static std::map<std::pair<rt::Communicator *, Maker>, Communicator *> groups;
  return groups;
}
std::vector<std::unique_ptr<Communicator>> &inOrder() {
  static std::vector<std::unique_ptr<Communicator>> order;
  return order;
}
/// The device communicators by library handle.
std::map<void *, Communicator *> &byHandle() {
  static std::map<void *, Communicator *> handles;
  return handles;
}
} // namespace

Communicator *device::subgroup(Ints devices, Shape mesh, Shape axes,
                               void *(*make)(rt::Communicator &mpi)) {
  rt::Communicator *mpi = host::subgroup(devices, mesh, axes);
  auto it = byGroup().find({mpi, make});
  if (it != byGroup().end())
    return it->second;
  void *handle = nullptr;
  {
    // The members meet inside the library: one that never comes would
    // leave the others waiting there.
    StepWatchdog watchdog("making a device communicator");
    handle = make(*mpi);
  }
  inOrder().push_back(std::make_unique<Communicator>(*mpi, handle));
  byHandle()[handle] = inOrder().back().get();
  return byGroup()[{mpi, make}] = inOrder().back().get();
}

void device::destroyCommunicators(void (*destroy)(void *handle)) {
  for (std::unique_ptr<Communicator> &comm : inOrder())
    if (comm->getHandle())
      destroy(comm->getHandle());
  inOrder().clear();
  byGroup().clear();
  byHandle().clear();
}

void device::recordLibraryCall(const char *primitive, void *comm,
                               uint64_t count, const char *dtype, int peer) {
  Runtime &runtime = Runtime::get();
  CallState &state = callState();
  std::string what = std::string("a device library call (") + primitive +
                     ", " + std::to_string(count) + " " + dtype + ")";
  if (!state.collective)
    runtime.fail(what + " outside a device collective");
  auto it = byHandle().find(comm);
  if (it == byHandle().end())
    runtime.fail(what + " of " + state.collective +
                 " on a communicator Loom did not make");
  const Communicator &device = *it->second;
  int64_t size = !std::strcmp(dtype, "f32")   ? 4
                 : !std::strcmp(dtype, "f64") ? 8
                 : !std::strcmp(dtype, "i64") ? 8
                                              : 0;
  if (!size)
    runtime.fail(what + " of " + state.collective +
                 " passes a data type the runtime does not know");
  if (count > static_cast<uint64_t>(INT64_MAX / 8))
    runtime.fail(what + " of " + state.collective +
                 " passes an impossible count");
  int64_t n = static_cast<int64_t>(count);
  int64_t k = device.getSize(), me = device.getRank();
  bool pointToPoint =
      !std::strcmp(primitive, "send") || !std::strcmp(primitive, "recv");
  if (pointToPoint != (peer >= 0) || peer >= k)
    runtime.fail(what + " of " + state.collective + " names peer " +
                 std::to_string(peer) + " in a communicator of " +
                 std::to_string(k));
  int64_t sent = 0, received = 0;
  if (!std::strcmp(primitive, "all_reduce")) {
    int64_t own = chunk(n, k, me);
    sent = received = (n - own + (k - 1) * own) * size;
  } else if (!std::strcmp(primitive, "all_gather") ||
             !std::strcmp(primitive, "reduce_scatter")) {
    sent = received = (k - 1) * n * size;
  } else if (!std::strcmp(primitive, "send")) {
    sent = peer == me ? 0 : n * size;
  } else if (!std::strcmp(primitive, "recv")) {
    received = peer == me ? 0 : n * size;
  } else {
    runtime.fail(what + " of " + state.collective +
                 ": a primitive the runtime does not know");
  }
  rt::Traffic &traffic = runtime.count(state.collective);
  if (!state.counted) {
    traffic.calls += 1;
    state.counted = true;
  }
  traffic.bytesSent += sent;
  traffic.bytesReceived += received;
  const std::vector<int> &members = device.getWorldRanks();
  runtime.addLibraryCall({state.step, state.index, state.collective, primitive,
                          dtype, n, members, peer >= 0 ? members[peer] : -1});
}

int64_t device::libraryCount(int64_t count) {
  return callState().shorten && count > 0 ? count - 1 : count;
}

int64_t device::chunk(int64_t count, int64_t k, int64_t j) {
  return count / k + (j < count % k ? 1 : 0);
}

Reduction device::reductionOf(const char *op, const char *kind,
                              ElementType type) {
  if (!std::strcmp(kind, "mean") && type == ElementType::I64)
    Runtime::get().fail(std::string(op) + ": a mean of integers");
  if (!std::strcmp(kind, "sum"))
    return Reduction::Sum;
  if (!std::strcmp(kind, "mean"))
    return Reduction::Mean;
  if (!std::strcmp(kind, "max"))
    return Reduction::Max;
  if (!std::strcmp(kind, "min"))
    return Reduction::Min;
  Runtime::get().fail(std::string(op) + ": unknown reduction '" + kind + "'");
}

void device::allReduce(const Target &target, Group group, void *out,
                       const void *in, const Shape &shape, ElementType type,
                       const char *kind) {
  DeviceSpan span(target, "all_reduce");
  int64_t n = shape.numElements();
  target.allReduce(group.comm, out, in, libraryCount(n), type,
                   reductionOf("all_reduce", kind, type), group.size);
}

void device::allGather(const Target &target, Group group, void *out,
                       const Shape &outShape, const void *in,
                       const Shape &inShape, ElementType type, int64_t dim) {
  DeviceSpan span(target, "all_gather");
  int64_t n = inShape.numElements(), size = rt::getElementSize(type);
  int64_t k = group.size;
  bool direct = leadingDim(inShape, dim);
  char *gathered =
      direct ? static_cast<char *>(out) : target.scratch(n * size * k);
  target.allGather(group.comm, gathered, in, libraryCount(n), type);
  if (!direct)
    for (int64_t j = 0; j < k; ++j)
      moveBlock(target, static_cast<char *>(out), gathered + j * n * size,
                outShape, dim, k, j, size, /*pack=*/false);
}

void device::reduceScatter(const Target &target, Group group, void *out,
                           const Shape &outShape, const void *in,
                           const Shape &inShape, ElementType type, int64_t dim,
                           const char *kind) {
  DeviceSpan span(target, "reduce_scatter");
  int64_t n = outShape.numElements(), size = rt::getElementSize(type);
  int64_t k = group.size;
  const char *source = static_cast<const char *>(in);
  if (!leadingDim(inShape, dim)) {
    char *packed = target.scratch(n * size * k);
    for (int64_t j = 0; j < k; ++j)
      moveBlock(target, packed + j * n * size, source, inShape, dim, k, j, size,
                /*pack=*/true);
    source = packed;
  }
  target.reduceScatter(group.comm, out, source, libraryCount(n), type,
                       reductionOf("reduce_scatter", kind, type), group.size);
}

void device::allToAll(const Target &target, Group group, void *out,
                      const Shape &outShape, const void *in,
                      const Shape &inShape, ElementType type, int64_t splitDim,
                      int64_t concatDim) {
  DeviceSpan span(target, "all_to_all");
  int64_t k = group.size, size = rt::getElementSize(type);
  int64_t block = inShape.numElements() / k;
  char *sendBuffer = target.scratch(2 * block * k * size);
  char *receiveBuffer = sendBuffer + block * k * size;
  for (int64_t j = 0; j < k; ++j)
    moveBlock(target, sendBuffer + j * block * size,
              static_cast<const char *>(in), inShape, splitDim, k, j, size,
              /*pack=*/true);
  target.allToAll(group.comm, receiveBuffer, sendBuffer, libraryCount(block),
                  type, group.size);
  for (int64_t j = 0; j < k; ++j)
    moveBlock(target, static_cast<char *>(out),
              receiveBuffer + j * block * size, outShape, concatDim, k, j, size,
              /*pack=*/false);
}

void device::permute(const Target &target, Group group, void *out,
                     const void *in, const Shape &shape, ElementType type,
                     const Shape &perm, const Shape &sizes) {
  DeviceSpan span(target, "permute");
  int64_t n = shape.numElements(), bytes = n * rt::getElementSize(type);
  host::PermutePeers peers =
      host::permutePeers(group.rank, group.size, perm, sizes);
  bool moves = peers.source != group.rank;
  if (!moves) {
    // Kept: a device copy, nothing on the network and no library call (one
    // call counted, as on every rank; a moving rank's records count its).
    Runtime::get().count("permute").calls += 1;
    if (out != in && bytes > 0)
      target.copy(out, in, static_cast<size_t>(bytes));
    return;
  }
  // (Zero elements still make the library calls, of count 0, as every
  // rank's permute is one call.)
  // The result may be the operand's buffer: receive aside, then copy.
  char *receive = out == in ? target.scratch(bytes) : static_cast<char *>(out);
  target.sendRecv(group.comm, receive, in, libraryCount(n), type,
                  peers.destination, peers.source, peers.leads);
  if (receive != out)
    target.copy(out, receive, static_cast<size_t>(bytes));
}

void device::localSlice(const Target &target, Group group, void *out,
                        const Shape &outShape, const void *in,
                        const Shape &inShape, int64_t elementBytes,
                        int64_t dim) {
  Runtime::get().count("local_slice").calls += 1;
  if (outShape.numElements() == 0)
    return;
  moveBlock(target, static_cast<char *>(out), static_cast<const char *>(in),
            inShape, dim, group.size, group.rank, elementBytes, /*pack=*/true);
}

void device::makePartial(const Target &target, Group group, void *out,
                         const Shape &outShape, const void *in,
                         const Shape &inShape, int64_t elementBytes,
                         int64_t dim) {
  Runtime::get().count("make_partial").calls += 1;
  size_t bytes = static_cast<size_t>(outShape.numElements() * elementBytes);
  if (bytes == 0)
    return;
  target.zero(out, bytes);
  if (dim >= 0)
    moveBlock(target, static_cast<char *>(out), static_cast<const char *>(in),
              outShape, dim, group.size, group.rank, elementBytes,
              /*pack=*/false);
  else if (group.rank == 0)
    target.copy(out, in,
                static_cast<size_t>(inShape.numElements() * elementBytes));
}

void device::axisIndex(const Target &target, void *out, int64_t elementBytes,
                       bool isFloat, double value) {
  char bytes[8] = {};
  if (isFloat && elementBytes == 4) {
    float v = static_cast<float>(value);
    std::memcpy(bytes, &v, 4);
  } else if (isFloat) {
    std::memcpy(bytes, &value, 8);
  } else if (elementBytes == 4) {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(bytes, &v, 4);
  } else {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(bytes, &v, 8);
  }
  // After the queued work (which may read the buffer); complete on return.
  target.synchronize();
  target.toDevice(out, bytes, static_cast<size_t>(elementBytes));
}

void device::stagedSparseRows(const Target &target, rt::Communicator &mpi,
                              SparseRowsCollective collective, void *out,
                              const Shape &outShape, const void *in,
                              const Shape &inShape, const int64_t *rows,
                              const Shape &rowsShape, ElementType type) {
  int64_t size = rt::getElementSize(type);
  std::vector<char> source(static_cast<size_t>(inShape.numElements() * size));
  std::vector<int64_t> named(static_cast<size_t>(rowsShape.numElements()));
  std::vector<char> result(static_cast<size_t>(outShape.numElements() * size));
  target.synchronize();
  if (!source.empty())
    target.toHost(source.data(), in, source.size());
  if (!named.empty())
    target.toHost(named.data(), rows, named.size() * sizeof(int64_t));
  collective(result.data(), outShape, source.data(), inShape, named.data(),
             rowsShape, type, &mpi);
  if (!result.empty())
    target.toDevice(out, result.data(), result.size());
}

void device::startStagedSparseRows(const Target &target, rt::Communicator &mpi,
                                   SparseRowsCollective collective, void *out,
                                   const Shape &outShape, const void *in,
                                   const Shape &inShape, const int64_t *rows,
                                   const Shape &rowsShape, ElementType type,
                                   host::Request &request) {
  // The host copies live until the wait (the work and the finish share
  // them); the device is touched by this thread alone, now and at the
  // wait.
  struct Staged {
    std::vector<char> source, result;
    std::vector<int64_t> named;
  };
  int64_t size = rt::getElementSize(type);
  auto staged = std::make_shared<Staged>();
  staged->source.resize(static_cast<size_t>(inShape.numElements() * size));
  staged->named.resize(static_cast<size_t>(rowsShape.numElements()));
  staged->result.resize(static_cast<size_t>(outShape.numElements() * size));
  target.synchronize();
  if (!staged->source.empty())
    target.toHost(staged->source.data(), in, staged->source.size());
  if (!staged->named.empty())
    target.toHost(staged->named.data(), rows,
                  staged->named.size() * sizeof(int64_t));
  rt::Communicator *comm = rt::Runtime::get().overlapsCollectives()
                               ? &mpi.getAsyncTwin()
                               : &mpi;
  const Target *device = &target;
  request.start(
      [staged, collective, comm, outShape, inShape, rowsShape, type] {
        collective(staged->result.data(), outShape, staged->source.data(),
                   inShape, staged->named.data(), rowsShape, type, comm);
      },
      [staged, device, out] {
        if (!staged->result.empty())
          device->toDevice(out, staged->result.data(), staged->result.size());
      });
}

void device::stagedExchange(const Target &target, host::ExchangePlan &plan,
                            void *out, int64_t outElements, const void *in,
                            int64_t inElements, int64_t elementBytes,
                            ElementType type) {
  // The host runtime's plan over MPI, on host copies of the buffers.
  std::vector<char> source(static_cast<size_t>(inElements * elementBytes));
  std::vector<char> result(static_cast<size_t>(outElements * elementBytes));
  target.synchronize();
  if (!source.empty())
    target.toHost(source.data(), in, source.size());
  plan.run(result.empty() ? nullptr : result.data(), outElements,
           source.empty() ? nullptr : source.data(), elementBytes, type);
  if (!result.empty())
    target.toDevice(out, result.data(), result.size());
}

namespace {

/// The watchdog's thread and what it watches: one deadline at a time.
struct Watch {
  std::mutex mutex;
  std::condition_variable changed;
  bool armed = false;
  std::chrono::steady_clock::time_point deadline;
  std::string what;
  /// The limit; 0 turns the watchdog off.
  double seconds = 600;
  std::thread thread;

  Watch() {
    if (const char *text = std::getenv("LOOM_DEVICE_STEP_TIMEOUT_S")) {
      char *end = nullptr;
      seconds = std::strtod(text, &end);
      if (end == text || *end || !(seconds >= 0) || seconds > 1e9)
        Runtime::get().fail("LOOM_DEVICE_STEP_TIMEOUT_S must be a number of "
                            "seconds in [0, 1e9] (0: no limit), got '" +
                            std::string(text) + "'");
    }
    if (seconds == 0)
      return;
    thread = std::thread([this] { run(); });
    thread.detach();
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      if (!armed) {
        changed.wait(lock);
        continue;
      }
      if (changed.wait_until(lock, deadline) == std::cv_status::timeout &&
          armed && std::chrono::steady_clock::now() >= deadline) {
        Runtime &runtime = Runtime::get();
        char limit[32];
        std::snprintf(limit, sizeof(limit), "%.1f", seconds);
        runtime.endProcess(what + " did not complete on the device within " +
                           limit +
                           " s (LOOM_DEVICE_STEP_TIMEOUT_S): a device "
                           "collective waiting for a rank that hung, is "
                           "gone, or waits itself?");
      }
    }
  }
};

Watch &watch() {
  static Watch *instance = new Watch(); // never destroyed: its thread runs
  return *instance;
}

} // namespace

device::StepWatchdog::StepWatchdog(const std::string &what) {
  Watch &w = watch();
  if (w.seconds == 0)
    return;
  std::lock_guard<std::mutex> lock(w.mutex);
  w.armed = true;
  w.what = what;
  w.deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(w.seconds));
  w.changed.notify_all();
}

device::StepWatchdog::~StepWatchdog() {
  Watch &w = watch();
  if (w.seconds == 0)
    return;
  std::lock_guard<std::mutex> lock(w.mutex);
  w.armed = false;
  w.changed.notify_all();
}

void device::tracePhaseEnd(const Target &target) {
  if (tracing())
    target.synchronize();
  host::tracePhaseEnd();
}
