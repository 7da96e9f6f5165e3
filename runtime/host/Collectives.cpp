//===- Collectives.cpp - Collectives over MPI for generated code ----------===//

#include "runtime/host/Collectives.h"
#include "runtime/kernels/HostKernels.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

using namespace loom::rt;

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
};

namespace {

Runtime *instance = nullptr;
/// The runtime's world: MPI_COMM_WORLD, or for a program library the
/// duplicate of the communicator it was attached to.
MPI_Comm worldComm = MPI_COMM_WORLD;
/// Programs attached to the runtime (Runtime::attach) and not detached.
int attachments = 0;

/// What a failing kernel does in a program library: throws, so that the
/// error reaches the library's caller.
[[noreturn]] void throwKernelFailure(const char *message) {
  throw loom::rt::RuntimeError(message);
}

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

int64_t chunkSize(int64_t count, int k, int j) {
  return loom::layout::getChunkSize(count, k, j);
}
int64_t chunkStart(int64_t count, int k, int j) {
  return loom::layout::getChunkStart(count, k, j);
}

/// memcpy that allows empty ranges (whose pointers may be null).
void copyBytes(void *to, const void *from, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(to, from, static_cast<size_t>(bytes));
}

/// `into[i] = into[i] (op) from[i]` for `count` elements of `type`: the
/// layout core's combination (max and min keep a NaN; a mean adds here and
/// divides at the end).
void accumulate(void *into, const void *from, int64_t count, ElementType type,
                Reduction kind = Reduction::Sum) {
  loom::layout::DType dtype = type == ElementType::F32   ? loom::layout::DType::F32
                        : type == ElementType::F64 ? loom::layout::DType::F64
                                                   : loom::layout::DType::I64;
  // Every host element type combines under every kind but a mean of
  // integers, which is added here like any mean.
  loom::layout::combineInto(into, from, count, dtype,
                      kind == Reduction::Mean ? Reduction::Sum : kind);
}

/// A mean's final division by the number of contributions.
void divideBy(void *data, int64_t count, ElementType type, int k) {
  switch (type) {
  case ElementType::F32:
    for (int64_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] /= static_cast<float>(k);
    return;
  case ElementType::F64:
    for (int64_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= static_cast<double>(k);
    return;
  case ElementType::I64:
    Runtime::get().fail("a mean of integers");
  }
}

} // namespace

int64_t loom::rt::getElementSize(ElementType type) {
  return type == ElementType::F32 ? 4 : 8;
}

//===----------------------------------------------------------------------===//
// Runtime
//===----------------------------------------------------------------------===//

/// Whether LOOM_OVERLAP turns overlapped collectives off.
static bool overlapTurnedOff() {
  const char *overlap = std::getenv("LOOM_OVERLAP");
  return overlap && std::string(overlap) == "0";
}

int loom::rt::getWantedThreadLevel() {
  return overlapTurnedOff() ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE;
}

Runtime &Runtime::init(int *argc, char ***argv) {
  if (instance)
    return *instance;
  instance = new Runtime();
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // Collectives started ahead of their use run on a second thread.
    MPI_Init_thread(argc, argv, getWantedThreadLevel(), &provided);
    instance->startedMpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  instance->overlap = provided == MPI_THREAD_MULTIPLE;
  worldComm = MPI_COMM_WORLD;
  instance->start();
  return *instance;
}

Runtime &Runtime::attach(const void *mpiComm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw RuntimeError("MPI is not initialized (or already finalized); "
                       "call MPI_Init before creating a program");
  if (mpiComm && *static_cast<const MPI_Comm *>(mpiComm) == MPI_COMM_NULL)
    throw RuntimeError("the program's communicator is MPI_COMM_NULL (this "
                       "rank is in no communicator to run it on)");
  if (instance) {
    if (!instance->library)
      throw RuntimeError("a program library was created in a process whose "
                         "runtime runs a program executable");
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(worldComm,
                     mpiComm ? *static_cast<const MPI_Comm *>(mpiComm)
                             : MPI_COMM_WORLD,
                     &same);
    // (The runtime's world is a duplicate: congruent, the same ranks in
    // the same order, is what "the same communicator" can mean.)
    if (same != MPI_IDENT && same != MPI_CONGRUENT)
      throw RuntimeError("a program of this library already runs on "
                         "another communicator; destroy it first");
    ++attachments;
    return *instance;
  }
  MPI_Comm given =
      mpiComm ? *static_cast<const MPI_Comm *>(mpiComm) : MPI_COMM_WORLD;
  MPI_Comm duplicate = MPI_COMM_NULL;
  // Errors while duplicating come back as codes, not an abort; the caller's
  // own handler is restored after.
  MPI_Errhandler callers = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(given, &callers);
  MPI_Comm_set_errhandler(given, MPI_ERRORS_RETURN);
  int duplicated = MPI_Comm_dup(given, &duplicate);
  if (callers != MPI_ERRHANDLER_NULL) {
    MPI_Comm_set_errhandler(given, callers);
    MPI_Errhandler_free(&callers);
  }
  if (duplicated != MPI_SUCCESS)
    throw RuntimeError("cannot duplicate the program's MPI communicator");
  worldComm = duplicate;
  instance = new Runtime();
  instance->library = true;
  // The caller's MPI decides whether collectives may overlap.
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  instance->overlap = provided == MPI_THREAD_MULTIPLE;
  loom::host::setFailureHandler(throwKernelFailure);
  ++attachments;
  try {
    instance->start();
  } catch (...) {
    detach();
    throw;
  }
  return *instance;
}

void Runtime::detach() {
  if (!instance || !instance->library || --attachments > 0)
    return;
  instance->stopWorker();
  instance->groups.clear();
  delete instance;
  instance = nullptr;
  MPI_Comm_free(&worldComm);
  worldComm = MPI_COMM_WORLD;
  loom::host::setFailureHandler(nullptr);
}

void Runtime::start() {
  Runtime *instance = this;
  // Errors come back as codes; the runtime reports them itself.
  MPI_Comm_set_errhandler(worldComm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(worldComm, &instance->worldRank);
  MPI_Comm_size(worldComm, &instance->worldSize);
  // A kernel that fails names the rank as the runtime does.
  std::string prefix =
      "loom runtime: rank " + std::to_string(instance->worldRank) + ": ";
  loom::host::setFailurePrefix(prefix.c_str());
  // The rank among those on its node (any MPI, not only Open MPI's
  // environment variable).
  MPI_Comm node;
  if (MPI_Comm_split_type(worldComm, MPI_COMM_TYPE_SHARED,
                          instance->worldRank, MPI_INFO_NULL,
                          &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &instance->localRank);
    MPI_Comm_free(&node);
  }
  if (const char *seconds = std::getenv("LOOM_COLLECTIVE_TIMEOUT_S"))
    instance->timeout = std::chrono::milliseconds(
        static_cast<int64_t>(std::atof(seconds) * 1000));
  // The message limit: every rank must cut messages at the same one, or
  // pieces would meet receives of other sizes. A bad value is reported
  // after the ranks have compared theirs, so that no rank waits for one
  // that has already ended.
  long long bad = 0;
  const char *limit = std::getenv("LOOM_MPI_MESSAGE_LIMIT");
  if (limit) {
    char *end = nullptr;
    errno = 0;
    long long bytes = std::strtoll(limit, &end, 10);
    if (end == limit || *end || errno || bytes < 1 || bytes > INT_MAX)
      bad = 1;
    else
      instance->messageLimit = bytes;
  }
  // Overlapped collectives only where every rank can (a rank that runs a
  // start at once would not make the duplicate communicators the others
  // wait for): the smallest of the ranks' flags, as the largest negation.
  if (overlapTurnedOff())
    instance->overlap = false;
  long long limits[4] = {bad, instance->messageLimit, -instance->messageLimit,
                         instance->overlap ? 0 : 1};
  int code = MPI_Allreduce(MPI_IN_PLACE, limits, 4, MPI_LONG_LONG, MPI_MAX,
                           worldComm);
  instance->overlap = limits[3] == 0;
  if (code != MPI_SUCCESS)
    instance->fail("cannot compare the ranks' MPI message limits: " +
                   mpiError(code));
  if (bad)
    instance->fail("LOOM_MPI_MESSAGE_LIMIT must be a number of bytes in "
                   "[1, " +
                   std::to_string(INT_MAX) + "], got '" + limit + "'");
  if (limits[0])
    instance->fail("another rank's LOOM_MPI_MESSAGE_LIMIT is not a number "
                   "of bytes in [1, " +
                   std::to_string(INT_MAX) + "]");
  if (limits[1] != -limits[2])
    instance->fail("the ranks have different MPI message limits (from " +
                   std::to_string(-limits[2]) + " to " +
                   std::to_string(limits[1]) +
                   " bytes; LOOM_MPI_MESSAGE_LIMIT must be the same on every "
                   "rank)");
}

Runtime &Runtime::get() {
  if (!instance) {
    std::fprintf(stderr, "loom runtime: used before Runtime::init\n");
    std::exit(1);
  }
  return *instance;
}

void Runtime::finalize() {
  if (!instance)
    return;
  bool started = instance->startedMpi;
  instance->stopWorker();
  instance->groups.clear();
  delete instance;
  instance = nullptr;
  if (started)
    MPI_Finalize();
}

int Runtime::getNodeRankAmong(int color) const {
  MPI_Comm node, same;
  int rank = localRank;
  if (MPI_Comm_split_type(worldComm, MPI_COMM_TYPE_SHARED, worldRank,
                          MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return rank;
  if (MPI_Comm_split(node, color, worldRank, &same) == MPI_SUCCESS) {
    MPI_Comm_rank(same, &rank);
    MPI_Comm_free(&same);
  }
  MPI_Comm_free(&node);
  return rank;
}

void Runtime::setMessageLimit(int64_t bytes) {
  // (Collective: every rank sets the same limit before its next message.)
  if (bytes < 1 || bytes > INT_MAX)
    fail("the MPI message limit must be in [1, " + std::to_string(INT_MAX) +
         "] bytes, got " + std::to_string(bytes));
  messageLimit = bytes;
}

bool Runtime::allAgree(bool ok) {
  int value = ok ? 1 : 0;
  int code = MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, worldComm);
  if (code != MPI_SUCCESS)
    fail("cannot agree with the other ranks: " + mpiError(code));
  return value != 0;
}

bool Runtime::allEqual(int64_t value) {
  // (Clamped so that negating cannot overflow.)
  value = std::max<int64_t>(value, -INT64_MAX);
  long long bounds[2] = {value, -value};
  int code = MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_LONG_LONG, MPI_MAX,
                           worldComm);
  if (code != MPI_SUCCESS)
    fail("cannot agree with the other ranks: " + mpiError(code));
  return bounds[0] == -bounds[1];
}

void Runtime::gatherAll(const void *data, int64_t bytes, std::vector<char> &out,
                        std::vector<int64_t> &counts) {
  long long own = bytes;
  std::vector<long long> all(static_cast<size_t>(worldSize));
  int code = MPI_Allgather(&own, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG,
                           worldComm);
  if (code != MPI_SUCCESS)
    fail("cannot gather the ranks' sizes: " + mpiError(code));
  std::vector<int> sizes, displacements;
  long long total = 0;
  counts.assign(all.begin(), all.end());
  for (long long count : all) {
    if (count > INT_MAX || total > INT_MAX - count)
      fail("an array of more than 2^31 bytes cannot be gathered yet");
    sizes.push_back(static_cast<int>(count));
    displacements.push_back(static_cast<int>(total));
    total += count;
  }
  out.resize(static_cast<size_t>(std::max<long long>(total, 1)));
  code = MPI_Allgatherv(data, static_cast<int>(own), MPI_BYTE, out.data(),
                        sizes.data(), displacements.data(), MPI_BYTE, worldComm);
  if (code != MPI_SUCCESS)
    fail("cannot gather the ranks' shards: " + mpiError(code));
}

void Runtime::fail(const std::string &message) const {
  // In a program library the error goes back to the caller.
  if (library)
    throw RuntimeError("rank " + std::to_string(worldRank) + ": " + message);
  endProcess(message);
}

void Runtime::endProcess(const std::string &message) const {
  std::fprintf(stderr, "loom runtime: rank %d: %s\n", worldRank,
               message.c_str());
  std::fflush(stderr);
  // Not MPI_Abort: the other ranks report their own view (the collective
  // this rank never reached) when their timeout runs out.
  std::_Exit(1);
}

Communicator &Runtime::getGroup(const std::vector<int> &worldRanks) {
  auto it = groups.find(worldRanks);
  if (it != groups.end())
    return *it->second;
  auto position = std::find(worldRanks.begin(), worldRanks.end(), worldRank);
  if (position == worldRanks.end())
    fail("asked for the communicator of a group it is not in");
  for (int member : worldRanks)
    if (member < 0 || member >= worldSize)
      fail("a device group names rank " + std::to_string(member) +
           " but the world has " + std::to_string(worldSize) + " ranks");
  // A group of the world's ranks, in group order: its ranks are the
  // positions in `worldRanks`.
  MPI_Group world, group;
  MPI_Comm_group(worldComm, &world);
  MPI_Group_incl(world, static_cast<int>(worldRanks.size()), worldRanks.data(),
                 &group);
  auto handle = std::make_unique<Communicator::Handle>();
  // Collective only over the group's own ranks.
  int code = MPI_Comm_create_group(worldComm, group, 0, &handle->comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  if (code != MPI_SUCCESS)
    fail("cannot create the communicator of a device group: " + mpiError(code));
  MPI_Comm_set_errhandler(handle->comm, MPI_ERRORS_RETURN);
  int rank = static_cast<int>(position - worldRanks.begin());
  auto *communicator = new Communicator(std::move(handle), worldRanks, rank);
  groups[worldRanks].reset(communicator);
  // Its duplicate for started collectives, made now, while every member
  // makes the group (made at a start, it would be collective there).
  if (overlap)
    communicator->makeAsyncTwin();
  return *communicator;
}

//===----------------------------------------------------------------------===//
// Communicator
//===----------------------------------------------------------------------===//

Communicator::Communicator(std::unique_ptr<Handle> handle,
                           std::vector<int> worldRanks, int rank)
    : handle(std::move(handle)), worldRanks(std::move(worldRanks)), rank(rank) {
}

Communicator::~Communicator() {
  twin.reset();
  if (handle && handle->comm != MPI_COMM_NULL)
    MPI_Comm_free(&handle->comm);
}

Communicator &Communicator::getAsyncTwin() {
  if (!twin)
    Runtime::get().fail("a collective was started on a communicator made "
                        "without a duplicate (the runtime overlaps no "
                        "collectives)");
  return *twin;
}

void Communicator::makeAsyncTwin() {
  auto duplicate = std::make_unique<Handle>();
  int code = MPI_Comm_dup(handle->comm, &duplicate->comm);
  if (code != MPI_SUCCESS)
    Runtime::get().fail("cannot duplicate a communicator for overlapped "
                        "collectives: " +
                        mpiError(code));
  MPI_Comm_set_errhandler(duplicate->comm, MPI_ERRORS_RETURN);
  twin.reset(new Communicator(std::move(duplicate), worldRanks, rank));
}

//===----------------------------------------------------------------------===//
// The communication thread
//===----------------------------------------------------------------------===//

thread_local AsyncWork *Runtime::running = nullptr;

std::shared_ptr<AsyncWork> Runtime::post(std::function<void()> run) {
  auto work = std::make_shared<AsyncWork>();
  work->run = std::move(run);
  std::lock_guard<std::mutex> lock(workMutex);
  if (!worker.joinable()) {
    stopping = false;
    worker = std::thread([this] { workerLoop(); });
  }
  queue.push_back(work);
  workPosted.notify_one();
  return work;
}

void Runtime::workerLoop() {
  std::unique_lock<std::mutex> lock(workMutex);
  while (true) {
    workPosted.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty())
      return;
    std::shared_ptr<AsyncWork> work = queue.front();
    queue.pop_front();
    lock.unlock();
    // Its counts are its own until it is completed; a program library's
    // failure comes back to the thread that completes it.
    running = work.get();
    try {
      work->run();
    } catch (...) {
      work->error = std::current_exception();
    }
    running = nullptr;
    lock.lock();
    work->done = true;
    workDone.notify_all();
  }
}

void Runtime::complete(AsyncWork &work) {
  {
    std::unique_lock<std::mutex> lock(workMutex);
    workDone.wait(lock, [&] { return work.done; });
  }
  if (!work.run)
    return; // completed before
  work.run = nullptr;
  for (auto &[kind, moved] : work.traffic) {
    Traffic &into = traffic[kind];
    into.calls += moved.calls;
    into.bytesSent += moved.bytesSent;
    into.bytesReceived += moved.bytesReceived;
  }
  work.traffic.clear();
  messagesPosted += work.messagesPosted;
  if (std::exception_ptr error = std::exchange(work.error, nullptr))
    std::rethrow_exception(error);
}

void Runtime::stopWorker() {
  {
    std::lock_guard<std::mutex> lock(workMutex);
    if (!worker.joinable())
      return;
    stopping = true;
    workPosted.notify_one();
  }
  worker.join();
}

void Communicator::exchange(const char *kind,
                            const std::vector<const void *> &sends,
                            const std::vector<int64_t> &sendBytes,
                            const std::vector<void *> &receives,
                            const std::vector<int64_t> &receiveBytes) {
  Runtime &runtime = Runtime::get();
  // The receives come first in `requests`, from `receivedFrom[i]`, each of
  // `expectedBytes[i]` bytes.
  std::vector<MPI_Request> requests;
  std::vector<int> receivedFrom, expectedBytes;
  // A program library's runtime throws out of here (a timeout, a message
  // of the wrong size): no request may stay posted on buffers that unwind,
  // nor be matched by a later step. Receives are cancelled and completed;
  // sends are cancelled and released.
  struct Pending {
    std::vector<MPI_Request> &requests;
    size_t receives = 0;
    int unwinding = std::uncaught_exceptions();
    ~Pending() {
      if (std::uncaught_exceptions() == unwinding)
        return;
      for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i] == MPI_REQUEST_NULL)
          continue;
        MPI_Cancel(&requests[i]);
        if (i < receives)
          MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
        else
          MPI_Request_free(&requests[i]);
      }
    }
  } pending{requests};
  auto post = [&](int code, const char *what) {
    if (code != MPI_SUCCESS)
      runtime.fail(std::string(kind) + " at step " +
                   std::to_string(runtime.getStep()) + ": cannot " + what +
                   ": " + mpiError(code));
  };
  // A message longer than the limit goes as pieces, in order: MPI keeps
  // the order of messages between two ranks on one communicator and tag,
  // so the pieces arrive where they belong (every rank has the same limit:
  // Runtime::init checks it), and each receive must get exactly the bytes
  // it was posted for.
  int64_t limit = runtime.getMessageLimit();
  auto pieces = [&](int64_t bytes, auto &&postOne) {
    for (int64_t offset = 0; offset < bytes; offset += limit) {
      requests.push_back(MPI_REQUEST_NULL);
      runtime.countMessagePosted();
      postOne(offset, static_cast<int>(std::min(limit, bytes - offset)),
              &requests.back());
    }
  };
  for (int member = 0; member < getSize(); ++member) {
    if (member == rank)
      continue;
    char *into = static_cast<char *>(receives[member]);
    if (into && receiveBytes[member] > 0)
      pieces(receiveBytes[member],
             [&](int64_t offset, int bytes, MPI_Request *request) {
               receivedFrom.push_back(member);
               expectedBytes.push_back(bytes);
               post(MPI_Irecv(into + offset, bytes, MPI_BYTE, member, 0,
                              handle->comm, request),
                    "post a receive");
               pending.receives = requests.size();
             });
  }
  pending.receives = requests.size();
  for (int member = 0; member < getSize(); ++member) {
    if (member == rank)
      continue;
    const char *from = static_cast<const char *>(sends[member]);
    if (from && sendBytes[member] > 0)
      pieces(sendBytes[member],
             [&](int64_t offset, int bytes, MPI_Request *request) {
               post(MPI_Isend(from + offset, bytes, MPI_BYTE, member, 0,
                              handle->comm, request),
                    "post a send");
             });
  }
  // Wait, but not for ever: when no message completes for the timeout, a
  // member that never arrives is an error that names the collective and
  // the step (the deadline moves with progress, so a long message that
  // keeps arriving in pieces is not cut off).
  auto deadline = std::chrono::steady_clock::now() + runtime.getTimeout();
  int64_t idlePolls = 0;
  std::vector<int> indices(requests.size());
  std::vector<MPI_Status> statuses(requests.size());
  while (true) {
    int completed = 0;
    int code = MPI_Testsome(static_cast<int>(requests.size()), requests.data(),
                            &completed, indices.data(), statuses.data());
    if (code != MPI_SUCCESS)
      runtime.fail(std::string(kind) + " at step " +
                   std::to_string(runtime.getStep()) +
                   " failed: " + mpiError(code));
    if (completed == MPI_UNDEFINED) // no request left
      break;
    for (int c = 0; c < completed; ++c) {
      size_t i = static_cast<size_t>(indices[c]);
      if (i >= receivedFrom.size())
        continue;
      int got = -1;
      MPI_Get_count(&statuses[c], MPI_BYTE, &got);
      if (got != expectedBytes[i])
        runtime.fail(std::string(kind) + " at step " +
                     std::to_string(runtime.getStep()) + ": received " +
                     std::to_string(got) + " bytes from rank " +
                     std::to_string(worldRanks[receivedFrom[i]]) + " where " +
                     std::to_string(expectedBytes[i]) +
                     " were expected (the ranks disagree on the message)");
    }
    if (completed > 0) {
      deadline = std::chrono::steady_clock::now() + runtime.getTimeout();
      idlePolls = 0;
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::string group, missing;
      for (int member : worldRanks)
        group += (group.empty() ? "" : ", ") + std::to_string(member);
      // Whoever this rank still waits to hear from (any piece).
      std::vector<bool> waiting(worldRanks.size(), false);
      for (size_t i = 0; i < receivedFrom.size(); ++i)
        if (requests[i] != MPI_REQUEST_NULL)
          waiting[receivedFrom[i]] = true;
      for (size_t member = 0; member < waiting.size(); ++member)
        if (waiting[member])
          missing += (missing.empty() ? "" : ", ") +
                     std::to_string(worldRanks[member]);
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f",
                    runtime.getTimeout().count() / 1000.0);
      runtime.fail(
          std::string(kind) + " at step " + std::to_string(runtime.getStep()) +
          " did not complete within " + seconds +
          " s: still waiting for rank(s) " + (missing.empty() ? "?" : missing) +
          " of the group {" + group + "} (hung, gone, or waiting themselves)");
    }
    // The communication thread backs off once its peers are late: it
    // waits for collectives started early, which its peers may reach much
    // later, and must not take a core from the compute meanwhile.
    if (Runtime::onCommunicationThread() && ++idlePolls > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      std::this_thread::yield();
  }
  Traffic &traffic = runtime.count(kind);
  for (int member = 0; member < getSize(); ++member) {
    if (member == rank)
      continue;
    if (sends[member])
      traffic.bytesSent += sendBytes[member];
    if (receives[member])
      traffic.bytesReceived += receiveBytes[member];
  }
}

void Communicator::allReduceSum(void *buffer, int64_t count, ElementType type) {
  allReduce(buffer, count, type, Reduction::Sum);
}

void Communicator::allReduce(void *buffer, int64_t count, ElementType type,
                             Reduction kind) {
  Runtime::get().count("all_reduce").calls += 1;
  std::vector<int> members(getSize());
  for (int j = 0; j < getSize(); ++j)
    members[j] = j;
  ringAllReduce(buffer, count, type, members, "all_reduce", kind);
}

void Communicator::allReduceSumAmong(void *buffer, int64_t count,
                                     ElementType type,
                                     const std::vector<int> &members,
                                     const char *kind) {
  ringAllReduce(buffer, count, type, members, kind, Reduction::Sum);
}

void Communicator::ringAllReduce(void *buffer, int64_t count, ElementType type,
                                 const std::vector<int> &members,
                                 const char *kind, Reduction op) {
  int k = static_cast<int>(members.size());
  auto self = std::find(members.begin(), members.end(), rank);
  if (self == members.end())
    Runtime::get().fail(std::string(kind) +
                        ": an all-reduce among members this rank is not in");
  int me = static_cast<int>(self - members.begin());
  if (k == 1)
    return;
  int64_t size = getElementSize(type);
  char *bytes = static_cast<char *>(buffer);
  int n = getSize();
  // Reduce-scatter: chunk j to member j, summed there in member order.
  int64_t own = chunkSize(count, k, me);
  std::vector<char> received(static_cast<size_t>(own * size * k));
  std::vector<const void *> sends(n, nullptr);
  std::vector<int64_t> sendBytes(n, 0), receiveBytes(n, 0);
  std::vector<void *> receives(n, nullptr);
  for (int j = 0; j < k; ++j) {
    if (j == me)
      continue;
    sends[members[j]] = bytes + chunkStart(count, k, j) * size;
    sendBytes[members[j]] = chunkSize(count, k, j) * size;
    receives[members[j]] = received.data() + j * own * size;
    receiveBytes[members[j]] = own * size;
  }
  exchange(kind, sends, sendBytes, receives, receiveBytes);
  copyBytes(received.data() + me * own * size,
            bytes + chunkStart(count, k, me) * size, own * size);
  std::vector<char> sum(received.begin(), received.begin() + own * size);
  for (int j = 1; j < k; ++j)
    accumulate(sum.data(), received.data() + j * own * size, own, type, op);
  if (op == Reduction::Mean)
    divideBy(sum.data(), own, type, k);
  copyBytes(bytes + chunkStart(count, k, me) * size, sum.data(), own * size);
  // All-gather of the summed chunks: own chunk to every other member.
  for (int j = 0; j < k; ++j) {
    if (j == me)
      continue;
    sends[members[j]] = bytes + chunkStart(count, k, me) * size;
    sendBytes[members[j]] = own * size;
    receives[members[j]] = bytes + chunkStart(count, k, j) * size;
    receiveBytes[members[j]] = chunkSize(count, k, j) * size;
  }
  exchange(kind, sends, sendBytes, receives, receiveBytes);
}

void Communicator::allGather(const void *input, void *output, int64_t count,
                             ElementType type) {
  int k = getSize();
  Runtime::get().count("all_gather").calls += 1;
  int64_t bytes = count * getElementSize(type);
  char *out = static_cast<char *>(output);
  copyBytes(out + rank * bytes, input, bytes);
  if (k == 1)
    return;
  std::vector<const void *> sends(k, input);
  std::vector<int64_t> sendBytes(k, bytes), receiveBytes(k, bytes);
  std::vector<void *> receives(k);
  for (int j = 0; j < k; ++j)
    receives[j] = out + j * bytes;
  exchange("all_gather", sends, sendBytes, receives, receiveBytes);
}

void Communicator::reduceScatterSum(const void *input, void *output,
                                    int64_t count, ElementType type) {
  reduceScatter(input, output, count, type, Reduction::Sum);
}

void Communicator::reduceScatter(const void *input, void *output, int64_t count,
                                 ElementType type, Reduction kind) {
  int k = getSize();
  Runtime::get().count("reduce_scatter").calls += 1;
  int64_t bytes = count * getElementSize(type);
  const char *in = static_cast<const char *>(input);
  if (k == 1) {
    copyBytes(output, input, bytes);
    return;
  }
  std::vector<char> received(static_cast<size_t>(bytes * k));
  std::vector<const void *> sends(k);
  std::vector<int64_t> sendBytes(k, bytes), receiveBytes(k, bytes);
  std::vector<void *> receives(k);
  for (int j = 0; j < k; ++j) {
    sends[j] = in + j * bytes;
    receives[j] = received.data() + j * bytes;
  }
  exchange("reduce_scatter", sends, sendBytes, receives, receiveBytes);
  copyBytes(received.data() + rank * bytes, in + rank * bytes, bytes);
  copyBytes(output, received.data(), bytes);
  for (int j = 1; j < k; ++j)
    accumulate(output, received.data() + j * bytes, count, type, kind);
  if (kind == Reduction::Mean)
    divideBy(output, count, type, k);
}

void Communicator::allGatherV(const void *input, void *output,
                              const std::vector<int64_t> &counts,
                              ElementType type) {
  int k = getSize();
  Runtime &runtime = Runtime::get();
  runtime.count("all_gather").calls += 1;
  if (static_cast<int>(counts.size()) != k)
    runtime.fail("all_gather: " + std::to_string(counts.size()) +
                 " counts for a group of " + std::to_string(k));
  int64_t size = getElementSize(type);
  char *out = static_cast<char *>(output);
  std::vector<int64_t> starts(k, 0);
  for (int j = 1; j < k; ++j)
    starts[j] = starts[j - 1] + counts[j - 1] * size;
  copyBytes(out + starts[rank], input, counts[rank] * size);
  if (k == 1)
    return;
  std::vector<const void *> sends(k, input);
  std::vector<int64_t> sendBytes(k, counts[rank] * size), receiveBytes(k);
  std::vector<void *> receives(k);
  for (int j = 0; j < k; ++j) {
    receives[j] = out + starts[j];
    receiveBytes[j] = counts[j] * size;
  }
  exchange("all_gather", sends, sendBytes, receives, receiveBytes);
}

void Communicator::broadcastUncounted(void *data, int64_t bytes, int root) {
  // In pieces of at most the message limit, as exchanges.
  Runtime &runtime = Runtime::get();
  int64_t limit = runtime.getMessageLimit();
  for (int64_t offset = 0; offset < bytes; offset += limit) {
    runtime.countMessagePosted();
    int code = MPI_Bcast(static_cast<char *>(data) + offset,
                         static_cast<int>(std::min<int64_t>(limit, bytes - offset)),
                         MPI_BYTE, root, handle->comm);
    if (code != MPI_SUCCESS)
      runtime.fail("broadcast (bootstrap) failed: " + mpiError(code));
  }
}

void Communicator::sendRecv(const char *kind,
                            const std::vector<Message> &sendList,
                            const std::vector<Message> &receiveList,
                            bool countCall) {
  int k = getSize();
  Runtime &runtime = Runtime::get();
  if (countCall)
    runtime.count(kind).calls += 1;
  // One message per peer and direction (a plan merges what it sends to a
  // peer into one box); anything else is a bug in the caller.
  std::vector<const void *> sends(k, nullptr);
  std::vector<int64_t> sendBytes(k, 0), receiveBytes(k, 0);
  std::vector<void *> receives(k, nullptr);
  for (const Message &message : sendList) {
    if (message.member < 0 || message.member >= k || message.member == rank ||
        sends[message.member])
      runtime.fail(std::string(kind) + ": a send to member " +
                   std::to_string(message.member) +
                   " that is outside the group, itself, or a second one");
    sends[message.member] = message.data;
    sendBytes[message.member] = message.bytes;
  }
  for (const Message &message : receiveList) {
    if (message.member < 0 || message.member >= k || message.member == rank ||
        receives[message.member])
      runtime.fail(std::string(kind) + ": a receive from member " +
                   std::to_string(message.member) +
                   " that is outside the group, itself, or a second one");
    receives[message.member] = message.data;
    receiveBytes[message.member] = message.bytes;
  }
  exchange(kind, sends, sendBytes, receives, receiveBytes);
}
