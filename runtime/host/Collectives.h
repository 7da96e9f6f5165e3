//===- Collectives.h - Collectives over MPI for generated code --*- C++ -*-===//
//
// The part of the host runtime that moves data between ranks, for the code
// Loom generates (see docs/architecture.md, "Targets"). Every device group
// gets one communicator, created once and cached. Collectives move exactly
// what the simulator and the communication report count
// (runtime/simulator/Simulator.h), by point-to-point messages, and sum in
// the simulator's order, so a program run here gives the simulator's bits
// and bytes:
//
//   all_reduce      reduce-scatter of the flat buffer cut into k near-equal
//                   chunks (chunk j summed at member j, contributions in
//                   member order 0, 1, ...), then every member sends its
//                   summed chunk to every other
//   all_gather      every member sends its buffer to every other
//   reduce_scatter  block j of the buffer (cut along dimension 0) goes to
//                   member j, summed there in member order
//
// Each rank counts the calls and the bytes it sends and receives per
// collective kind: the bytes its MPI messages carried. A message longer
// than the message limit (2^30 bytes; MPI counts are `int`) goes as
// several pieces in order, so any size is carried whole and counted once.
// A collective that cannot complete within the timeout
// (a rank that hangs or died) ends the process with an error naming the
// rank, the collective and the step: nothing waits for ever. MPI errors are
// reported with the rank, the collective and MPI's message.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_HOST_COLLECTIVES_H
#define LOOM_RUNTIME_HOST_COLLECTIVES_H

#include "runtime/layout/Collectives.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace loom::rt {

enum class ElementType { F32, F64, I64 };

/// How contributions combine: added (mean: then divided by their number),
/// or the largest or smallest (a NaN wins), in member order (the layout
/// core's, runtime/layout/Collectives.h).
using Reduction = layout::Reduction;

/// The MPI thread level a process that runs Loom programs should ask for
/// when it starts MPI: MPI_THREAD_MULTIPLE, which collectives started ahead
/// of their use need (their communication thread), unless LOOM_OVERLAP=0
/// (then MPI_THREAD_SINGLE).
int getWantedThreadLevel();

/// The size in bytes of one element.
int64_t getElementSize(ElementType type);

/// Calls and bytes of one rank, per collective kind (`all_reduce`, ...).
struct Traffic {
  int64_t calls = 0;
  int64_t bytesSent = 0;
  int64_t bytesReceived = 0;
};

/// One call of a device library's collective (NCCL, HCCL) as a device
/// target made it, recorded at the call site (runtime/host/DeviceSupport.h,
/// `recordLibraryCall`): what the library was given.
struct LibraryCall {
  /// The training step (Runtime::getStep()) and which device collective
  /// of the step it belongs to (1, 2, ... on this rank).
  int64_t step = 0, call = 0;
  /// The collective of generated code (`all_reduce`, `all_to_all`, ...)
  /// and the library call it made (`all_reduce`, `all_gather`,
  /// `reduce_scatter`, `send`, `recv`).
  std::string collective, primitive;
  /// The library's data type passed (`f32`, `f64`, `i64`) and the element
  /// count passed (all-gather: per member; reduce-scatter: the result's).
  std::string dtype;
  int64_t count = 0;
  /// The communicator passed: its members (world ranks, in its rank
  /// order); for send and recv the peer (a world rank), else -1.
  std::vector<int> group;
  int peer = -1;
};

class Communicator;

/// Work posted to the runtime's communication thread (Runtime::post): a
/// collective started ahead of its use. What it counts stays here until
/// the work is completed (Runtime::complete), which adds it to the rank's.
struct AsyncWork {
  std::function<void()> run;
  std::map<std::string, Traffic> traffic;
  int64_t messagesPosted = 0;
  std::exception_ptr error;
  bool done = false;
};

/// What the runtime of a program library throws where a program executable
/// would end the process (Runtime::fail, failing kernels): the library's
/// C functions turn it into a status for their caller.
class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The process's MPI runtime: started once (`init`), ended once
/// (`finalize`). One thread per rank drives it; collectives started ahead
/// of their use (`post`) run on the runtime's communication thread, over
/// duplicates of their communicators (Communicator::getAsyncTwin), which
/// needs MPI_THREAD_MULTIPLE.
class Runtime {
public:
  /// Starts MPI (if the process has not) and returns the runtime.
  static Runtime &init(int *argc, char ***argv);
  /// For a program library: the runtime over a duplicate of `mpiComm` (an
  /// `MPI_Comm *`; null: MPI_COMM_WORLD), whose ranks are then the
  /// "world" (collective over it the first time). MPI must be initialized.
  /// Failures throw RuntimeError instead of ending the process. Attaching
  /// again (another program of the same library) shares the runtime and
  /// must name the same communicator; every attach is matched by a detach,
  /// and the last one ends the runtime (MPI stays initialized).
  static Runtime &attach(const void *mpiComm);
  static void detach();
  /// Whether failures throw (a program library's runtime).
  bool isLibrary() const { return library; }
  /// The runtime; `init` must have run.
  static Runtime &get();
  /// Ends MPI if this runtime started it.
  static void finalize();

  int getWorldRank() const { return worldRank; }
  int getWorldSize() const { return worldSize; }
  /// The rank among the ranks on this node (picks a node's device).
  int getLocalRank() const { return localRank; }
  /// This rank's position among the ranks of its node that pass the same
  /// `color` (a device kind: ranks of a mixed cluster share a node's
  /// devices by kind). Collective: every rank calls it.
  int getNodeRankAmong(int color) const;

  /// The communicator of the device group `worldRanks` (in group order),
  /// made on first use by every rank of the world (collective over the
  /// world the first time, cached after). The calling rank must be in it.
  Communicator &getGroup(const std::vector<int> &worldRanks);

  /// How long a collective may wait for the others before the process ends
  /// with an error (default 30 s; LOOM_COLLECTIVE_TIMEOUT_S overrides).
  void setTimeout(std::chrono::milliseconds timeout) {
    this->timeout = timeout;
  }
  std::chrono::milliseconds getTimeout() const { return timeout; }
  /// The training step, for error messages.
  void setStep(int64_t step) { this->step = step; }
  int64_t getStep() const { return step; }

  /// What this rank moved so far, per collective kind (work still on the
  /// communication thread not included).
  const std::map<std::string, Traffic> &getTraffic() const { return traffic; }
  Traffic &count(const std::string &kind) {
    return (running ? running->traffic : traffic)[kind];
  }

  /// Whether collectives may be started ahead of their use: MPI provides
  /// MPI_THREAD_MULTIPLE and LOOM_OVERLAP is not 0, on every rank (init
  /// and attach agree on it, so all start the same way).
  bool overlapsCollectives() const { return overlap; }
  /// Queues `work` for the communication thread (started on first use),
  /// which runs posted work one at a time in posting order: every rank
  /// posts its collectives in program order, so theirs match. Its traffic
  /// and errors are the work's until `complete`.
  std::shared_ptr<AsyncWork> post(std::function<void()> work);
  /// Waits for posted `work`, adds its traffic to the rank's and rethrows
  /// what it threw (a program library's RuntimeError). Completing it
  /// again does nothing.
  void complete(AsyncWork &work);
  /// Whether the calling thread is the communication thread, running work.
  static bool onCommunicationThread() { return running != nullptr; }

  /// Whether the device library calls are kept (the driver's --calls;
  /// they are always counted, kept only when asked for).
  void setKeepLibraryCalls(bool keep) { keepCalls = keep; }
  bool keepsLibraryCalls() const { return keepCalls; }
  void addLibraryCall(LibraryCall call) {
    if (keepCalls)
      libraryCalls.push_back(std::move(call));
  }
  const std::vector<LibraryCall> &getLibraryCalls() const {
    return libraryCalls;
  }

  /// The most bytes one MPI message carries: longer ones go as pieces of
  /// at most this many, in order (default 2^30, below MPI's `int` counts;
  /// LOOM_MPI_MESSAGE_LIMIT overrides, the same on every rank, which init
  /// checks; tests make it tiny). At least 1 and at most INT_MAX. Every
  /// rank must set the same limit (a receive that gets another number of
  /// bytes than it was posted for ends the rank).
  void setMessageLimit(int64_t bytes);
  int64_t getMessageLimit() const { return messageLimit; }
  /// The MPI messages this rank has posted (sends, receives and
  /// broadcasts, a piece counting as one).
  int64_t getMessagesPosted() const { return messagesPosted; }
  void countMessagePosted() {
    ++(running ? running->messagesPosted : messagesPosted);
  }

  /// Whether `ok` holds on every rank of the world (collective, not
  /// counted): ranks that agree to fail return together, none waits.
  bool allAgree(bool ok);
  /// Whether every rank of the world passes the same `value` (collective,
  /// not counted).
  bool allEqual(int64_t value);
  /// Every rank's `bytes` bytes of `data`, in world rank order, into `out`,
  /// with each rank's count in `counts` (collective, not counted: moving
  /// arrays in and out of a program library is not the program's traffic).
  void gatherAll(const void *data, int64_t bytes, std::vector<char> &out,
                 std::vector<int64_t> &counts);

  /// Reports `message` as this rank's error and ends the process with
  /// status 1 (every other rank then fails its next collective within the
  /// timeout); in a runtime attached for the C ABI (attach: program
  /// libraries and executables alike), throws RuntimeError with it instead.
  [[noreturn]] void fail(const std::string &message) const;
  /// Reports `message` and ends the process as `fail` does in a program
  /// executable, in a program library too: for what no status can reach
  /// (a watchdog's thread, while the step's thread is stuck in a device
  /// library).
  [[noreturn]] void endProcess(const std::string &message) const;

private:
  Runtime() = default;
  /// Reads the rank, size and settings of the world (collective).
  void start();
  /// Ends the communication thread, after the work it holds.
  void stopWorker();
  void workerLoop();

  bool library = false;
  int worldRank = 0;
  int worldSize = 1;
  int localRank = 0;
  bool startedMpi = false;
  std::chrono::milliseconds timeout{30000};
  int64_t step = 0;
  std::map<std::string, Traffic> traffic;
  bool keepCalls = false;
  std::vector<LibraryCall> libraryCalls;
  int64_t messageLimit = int64_t(1) << 30;
  int64_t messagesPosted = 0;
  std::map<std::vector<int>, std::unique_ptr<Communicator>> groups;

  bool overlap = false;
  /// The work the calling thread runs, on the communication thread.
  static thread_local AsyncWork *running;
  std::thread worker;
  std::mutex workMutex;
  std::condition_variable workPosted, workDone;
  std::deque<std::shared_ptr<AsyncWork>> queue;
  bool stopping = false;
};

/// One device group's communicator.
class Communicator {
public:
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  /// The same group over a duplicate MPI communicator, for collectives on
  /// the runtime's communication thread, whose messages then never meet
  /// those of the thread that drives the program. Made with the group
  /// where the runtime overlaps collectives (Runtime::getGroup); asking
  /// for it elsewhere ends the rank.
  Communicator &getAsyncTwin();

  /// This rank's position in the group and the group's size.
  int getRank() const { return rank; }
  int getSize() const { return static_cast<int>(worldRanks.size()); }
  const std::vector<int> &getWorldRanks() const { return worldRanks; }

  /// Sums `count` elements of `buffer` over the group, in place.
  void allReduceSum(void *buffer, int64_t count, ElementType type);
  /// Reduces `count` elements of `buffer` over the group by `kind`, in place
  /// (moving what allReduceSum moves).
  void allReduce(void *buffer, int64_t count, ElementType type, Reduction kind);
  /// Concatenates every member's `count` elements of `input` into `output`
  /// (member order; `output` holds count * size elements).
  void allGather(const void *input, void *output, int64_t count,
                 ElementType type);
  /// Sums the members' `input` (count * size elements) and gives member j
  /// block j (`count` elements) in `output`.
  void reduceScatterSum(const void *input, void *output, int64_t count,
                        ElementType type);
  /// The same, reducing by `kind`.
  void reduceScatter(const void *input, void *output, int64_t count,
                     ElementType type, Reduction kind);
  /// The "v" form for uneven shares: member j contributes `counts[j]`
  /// elements; `output` gets them all, in member order.
  void allGatherV(const void *input, void *output,
                  const std::vector<int64_t> &counts, ElementType type);
  /// A batched send/recv (the plan of a layout change between groups or
  /// shares, lowered): every message at once, each between this rank and a
  /// member, counted under `kind`.
  struct Message {
    int member;
    void *data; // const for a send
    int64_t bytes;
  };
  /// Sends `bytes` of `data` from member `root` to every member, neither
  /// counted nor timed (bootstrapping, e.g. an NCCL unique id, not the
  /// program's traffic).
  void broadcastUncounted(void *data, int64_t bytes, int root);
  /// `countCall` false: the messages are part of a call counted already.
  void sendRecv(const char *kind, const std::vector<Message> &sends,
                const std::vector<Message> &receives, bool countCall = true);
  /// A ring all-reduce (as allReduceSum) among `members` (positions in this
  /// group, in summation order; this rank must be one), moving and counting
  /// bytes under `kind` but not a call: a step of a larger operation (an
  /// exchange plan's reductions).
  void allReduceSumAmong(void *buffer, int64_t count, ElementType type,
                         const std::vector<int> &members, const char *kind);

private:
  friend class Runtime;
  struct Handle; // the MPI communicator, so users need no mpi.h
  Communicator(std::unique_ptr<Handle> handle, std::vector<int> worldRanks,
               int rank);

  /// Makes the duplicate (collective over the group).
  void makeAsyncTwin();
  void ringAllReduce(void *buffer, int64_t count, ElementType type,
                     const std::vector<int> &members, const char *kind,
                     Reduction op);
  /// Sends `sends[i]` bytes to member i and receives `receives[i]` bytes
  /// from member i (null: nothing), waiting at most the timeout.
  void exchange(const char *kind, const std::vector<const void *> &sends,
                const std::vector<int64_t> &sendBytes,
                const std::vector<void *> &receives,
                const std::vector<int64_t> &receiveBytes);

  std::unique_ptr<Handle> handle;
  std::vector<int> worldRanks;
  int rank;
  std::unique_ptr<Communicator> twin;
};

} // namespace loom::rt

#endif // LOOM_RUNTIME_HOST_COLLECTIVES_H
