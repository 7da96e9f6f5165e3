//===- DeviceSupport.h - What device targets' runtimes share ----*- C++ -*-===//
//
// The CUDA and Ascend runtimes (runtime/cuda, runtime/ascend) run the same
// collectives with different libraries: both record every library
// collective call at its call site (what was passed: the call, the element
// count, the data type, the communicator, the peer) and count traffic from
// those records as the simulator counts it, pack blocks along a dimension with 2-D copies, stage
// cross-group exchanges through host memory and give generated code the
// same typed collective functions. Those shared parts live here, on the
// host runtime.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_HOST_DEVICESUPPORT_H
#define LOOM_RUNTIME_HOST_DEVICESUPPORT_H

#include "runtime/host/Program.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace loom::host::device {

/// How a collective combines. HCCL has no mean: a backend without one
/// composes it (a sum, then a scale).
using Reduction = layout::Reduction;

/// A device target: what the driver, the arena, the collectives and the
/// staged exchanges need of it. Every operation is on the rank's stream
/// unless it says otherwise; `comm` is the target's communicator handle
/// (an ncclComm_t, an HcclComm).
struct Target {
  const char *name;
  /// Starts device `index` mod the node's device count (`index`: the
  /// rank's position among its node's ranks of this target).
  void (*start)(int index);
  /// Drains the device and tears its communicators down (before MPI ends).
  void (*finish)();
  /// Waits for the device's queued work (and frees what it used).
  void (*synchronize)();
  /// Host <-> device copies, complete when they return.
  void (*toDevice)(void *to, const void *from, size_t bytes);
  void (*toHost)(void *to, const void *from, size_t bytes);
  /// Device memory (zeroed), and its release.
  void *(*allocate)(size_t bytes);
  void (*release)(void *memory);
  /// Device-to-device copies: `height` rows of `width` bytes, and a
  /// contiguous one; zeroing.
  void (*copy2d)(void *to, size_t toPitch, const void *from, size_t fromPitch,
                 size_t width, size_t height);
  void (*copy)(void *to, const void *from, size_t bytes);
  void (*zero)(void *to, size_t bytes);
  /// Device scratch of `bytes`, valid until the next call.
  char *(*scratch)(int64_t bytes);
  /// The library's collectives on contiguous buffers of `count` elements
  /// (all-gather and reduce-scatter: `count` per member; all-to-all:
  /// `count` to and from each member, blocks in member order). Each
  /// records every library call it makes, with what it passes
  /// (recordLibraryCall); the counters come from those records.
  void (*allReduce)(void *comm, void *out, const void *in, int64_t count,
                    rt::ElementType type, Reduction reduction, int members);
  void (*allGather)(void *comm, void *out, const void *in, int64_t count,
                    rt::ElementType type);
  void (*reduceScatter)(void *comm, void *out, const void *in, int64_t count,
                        rt::ElementType type, Reduction reduction, int members);
  void (*allToAll)(void *comm, void *out, const void *in, int64_t count,
                   rt::ElementType type, int members);
  /// One send of `count` elements of `in` to member `to` and one receive
  /// of as many into `out` from member `from` (both other members; `out`
  /// and `in` do not overlap), as one step of a permutation in which every
  /// member of a cycle calls it: a library with grouped point-to-point
  /// calls issues both at once, one without sends first where `sendFirst`
  /// (the cycle's smallest member) and receives first elsewhere, which
  /// cannot deadlock.
  void (*sendRecv)(void *comm, void *out, const void *in, int64_t count,
                   rt::ElementType type, int to, int from, bool sendFirst);
};

/// A member's view of a device communicator.
struct Group {
  void *comm;
  int rank, size;
};

/// A device library's communicator (an ncclComm_t, an HcclComm) over an
/// MPI group, made from it.
class Communicator {
public:
  Communicator(rt::Communicator &mpi, void *handle)
      : mpi(mpi), handle(handle) {}
  int getRank() const { return mpi.getRank(); }
  int getSize() const { return mpi.getSize(); }
  void *getHandle() const { return handle; }
  /// The members' world ranks, in the communicator's rank order.
  const std::vector<int> &getWorldRanks() const { return mpi.getWorldRanks(); }
  Group group() const { return {handle, mpi.getRank(), mpi.getSize()}; }
  /// The MPI communicator of the same members (staged collectives).
  rt::Communicator &getMpi() const { return mpi; }

private:
  rt::Communicator &mpi;
  void *handle;
};

/// The device communicator of this rank's sub-group, made by `make` over
/// its MPI communicator on first use (a program's fields ask in one order
/// on every member; MPI-only groups, such as an exchange's, get none).
Communicator *subgroup(Ints devices, Shape mesh, Shape axes,
                       void *(*make)(rt::Communicator &mpi));
/// Destroys every device communicator with `destroy`, in creation order
/// (the same on every rank), before MPI ends.
void destroyCommunicators(void (*destroy)(void *handle));

/// `kind` ("sum", "mean", "max", "min") of collective `op`; a mean of
/// integers or an unknown kind ends the rank.
Reduction reductionOf(const char *op, const char *kind, rt::ElementType type);

/// Records one call of the device library's collectives, made by the
/// target at its call site with exactly what it passes to the library:
/// `primitive` (`all_reduce`, `all_gather`, `reduce_scatter`, `send`,
/// `recv`), the communicator handle, the element count, the library's data
/// type by name (`f32`, `f64`, `i64`) and, for send and recv, the peer (its
/// rank in the communicator). It belongs to the collective of generated
/// code under way (each opens one: `all_reduce`, `all_to_all`, ...), whose
/// counters are derived from the records, not from the operands: one call
/// per collective, and per record the bytes the simulator counts for it
/// (all-reduce of n elements: a reduce-scatter of k near-equal chunks, then
/// an all-gather of them; all-gather and reduce-scatter: n elements to and
/// from each other member; send and recv: n elements to or from another
/// member). With the driver's --calls the records are kept
/// (rt::LibraryCall, DIR/rank<r>/calls.txt). A record outside a
/// collective, on a communicator Loom did not make, of another data type
/// or primitive ends the rank.
void recordLibraryCall(const char *primitive, void *comm, uint64_t count,
                       const char *dtype, int peer = -1);

/// A device collective named `name` for as long as it lives: the library
/// calls recorded meanwhile are its own. The shared layer opens one around
/// every collective; a test that drives a Target's calls directly opens its
/// own.
class CollectiveScope {
public:
  explicit CollectiveScope(const char *name);
  ~CollectiveScope();
  CollectiveScope(const CollectiveScope &) = delete;
  CollectiveScope &operator=(const CollectiveScope &) = delete;
};

/// The element count the collective under way passes to the library:
/// `count`, or one fewer in the device collective the test hook
/// LOOM_TEST_SHORT_COUNT=STEP:CALL names (on every rank, the CALL-th of
/// step STEP), to check that a wrong count is caught.
int64_t libraryCount(int64_t count);

/// Elements of part `j` of `count` split `k` ways (the first count % k
/// parts one larger), as the simulator's ring chunks.
int64_t chunk(int64_t count, int64_t k, int64_t j);

// The collectives of generated code on a device target: blocks along inner
// dimensions packed with 2-D copies, traffic counted from the library
// calls the target records.
void allReduce(const Target &target, Group group, void *out, const void *in,
               const Shape &shape, rt::ElementType type, const char *kind);
void allGather(const Target &target, Group group, void *out,
               const Shape &outShape, const void *in, const Shape &inShape,
               rt::ElementType type, int64_t dim);
void reduceScatter(const Target &target, Group group, void *out,
                   const Shape &outShape, const void *in, const Shape &inShape,
                   rt::ElementType type, int64_t dim, const char *kind);
void allToAll(const Target &target, Group group, void *out,
              const Shape &outShape, const void *in, const Shape &inShape,
              rt::ElementType type, int64_t splitDim, int64_t concatDim);
/// hspmd.permute (host::permutePeers): a rank the permutation keeps moves
/// nothing over the network (a device copy).
void permute(const Target &target, Group group, void *out, const void *in,
             const Shape &shape, rt::ElementType type, const Shape &perm,
             const Shape &sizes);
void localSlice(const Target &target, Group group, void *out,
                const Shape &outShape, const void *in, const Shape &inShape,
                int64_t elementBytes, int64_t dim);
void makePartial(const Target &target, Group group, void *out,
                 const Shape &outShape, const void *in, const Shape &inShape,
                 int64_t elementBytes, int64_t dim);
void axisIndex(const Target &target, void *out, int64_t elementBytes,
               bool isFloat, double value);
/// Runs `plan` through host copies of the device buffers.
void stagedExchange(const Target &target, host::ExchangePlan &plan, void *out,
                    int64_t outElements, const void *in, int64_t inElements,
                    int64_t elementBytes, rt::ElementType type);
/// The host runtime's collective of rows named by an index tensor
/// (host::sparseReduceScatterBytes, host::sparseAllGatherBytes,
/// host::sparseExchangeBytes with the op's blocks).
using SparseRowsCollective = std::function<void(
    void *out, Shape outShape, const void *in, Shape inShape,
    const int64_t *rows, Shape rowsShape, rt::ElementType type,
    rt::Communicator *comm)>;
/// hspmd.sparse_reduce_scatter, hspmd.sparse_all_gather and
/// hspmd.sparse_exchange: `collective` on host copies of the device
/// buffers, over the members' MPI communicator (a sparse exchange's is
/// the host runtime's alone: its members run several programs, perhaps
/// of other targets, so no library communicator spans them). Their messages have data-dependent sizes, which the
/// libraries' fixed-count collectives take only after the counts have
/// reached the host anyway (a device-resident path is future work).
void stagedSparseRows(const Target &target, rt::Communicator &mpi,
                      SparseRowsCollective collective, void *out,
                      const Shape &outShape, const void *in,
                      const Shape &inShape, const int64_t *rows,
                      const Shape &rowsShape, rt::ElementType type);
/// hspmd.sparse_all_gather_start: `collective` as stagedSparseRows does
/// it, started: the operands are copied to the host now (after the
/// device's queued work), the collective runs on the runtime's
/// communication thread over the communicator's duplicate, and the
/// result reaches the device at the wait, by the waiting thread (where
/// the runtime overlaps no collectives, all of it now).
void startStagedSparseRows(const Target &target, rt::Communicator &mpi,
                           SparseRowsCollective collective, void *out,
                           const Shape &outShape, const void *in,
                           const Shape &inShape, const int64_t *rows,
                           const Shape &rowsShape, rt::ElementType type,
                           host::Request &request);
/// A phase's span ends after its device work (only when tracing).
void tracePhaseEnd(const Target &target);

/// A step on a device target must finish, its device work included,
/// within LOOM_DEVICE_STEP_TIMEOUT_S seconds (default 600; 0: no limit):
/// device collectives run asynchronously, so a rank waiting on a peer that
/// hung would otherwise wait for ever inside the library. So must the
/// making of a device communicator. Past the deadline the rank ends with a
/// message naming `what` ("step 3"), in a program library too: the step's
/// thread is stuck inside the device library and cannot return a status.
class StepWatchdog {
public:
  explicit StepWatchdog(const std::string &what);
  ~StepWatchdog();
  StepWatchdog(const StepWatchdog &) = delete;
  StepWatchdog &operator=(const StepWatchdog &) = delete;
};

/// Device memory holding every buffer of a program, zeroed.
template <const Target &(*Of)()> class Arena {
public:
  explicit Arena(int64_t bytes) : bytes(bytes) {
    storage = static_cast<char *>(Of().allocate(
        static_cast<size_t>((bytes > 0 ? bytes : 1) + 255) / 256 * 256));
  }
  Arena(Arena &&other) noexcept : storage(other.storage), bytes(other.bytes) {
    other.storage = nullptr;
  }
  ~Arena() {
    if (storage)
      Of().release(storage);
  }
  char *data() { return storage; }
  int64_t size() const { return bytes; }

private:
  char *storage = nullptr;
  int64_t bytes = 0;
};

/// A cross-group exchange: the host runtime's plan, staged through host
/// memory (the baseline; direct device-to-device paths are future work).
template <const Target &(*Of)()> class ExchangePlan {
public:
  ExchangePlan(Ints members, Ints table) : plan(members, table) {}
  void run(void *out, int64_t outElements, const void *in, int64_t inElements,
           int64_t elementBytes, rt::ElementType type) {
    stagedExchange(Of(), plan, out, outElements, in, inElements, elementBytes,
                   type);
  }

private:
  host::ExchangePlan plan;
};

} // namespace loom::host::device

/// What a device target's namespace gives generated code besides its
/// communicators: the arena, exchange plans, the typed collectives, the
/// profiler's spans and the program's creation (the C ABI's), over `target()` and a `Communicator`
/// with `group()`.
#define LOOM_DEVICE_RUNTIME                                                    \
  using Arena = ::loom::host::device::Arena<target>;                           \
  using ExchangePlan = ::loom::host::device::ExchangePlan<target>;             \
  template <typename T> T *at(Arena &arena, int64_t offset) {                  \
    return reinterpret_cast<T *>(arena.data() + offset);                       \
  }                                                                            \
  template <typename T>                                                        \
  void all_reduce(T *out, Shape, const T *in, Shape inShape,                   \
                  Communicator *comm, const char *kind) {                      \
    ::loom::host::device::allReduce(target(), comm->group(), out, in, inShape, \
                                    host::elementTypeOf<T>(), kind);           \
  }                                                                            \
  template <typename T>                                                        \
  void all_gather(T *out, Shape outShape, const T *in, Shape inShape,          \
                  Communicator *comm, int64_t dim) {                           \
    ::loom::host::device::allGather(target(), comm->group(), out, outShape,    \
                                    in, inShape, host::elementTypeOf<T>(),     \
                                    dim);                                      \
  }                                                                            \
  template <typename T>                                                        \
  void reduce_scatter(T *out, Shape outShape, const T *in, Shape inShape,      \
                      Communicator *comm, int64_t dim, const char *kind) {     \
    ::loom::host::device::reduceScatter(target(), comm->group(), out,          \
                                        outShape, in, inShape,                 \
                                        host::elementTypeOf<T>(), dim, kind);  \
  }                                                                            \
  template <typename T>                                                        \
  void all_to_all(T *out, Shape outShape, const T *in, Shape inShape,          \
                  Communicator *comm, int64_t splitDim, int64_t concatDim) {   \
    ::loom::host::device::allToAll(target(), comm->group(), out, outShape, in, \
                                   inShape, host::elementTypeOf<T>(),          \
                                   splitDim, concatDim);                       \
  }                                                                            \
  template <typename T>                                                        \
  void permute(T *out, Shape, const T *in, Shape inShape, Communicator *comm,  \
               Shape perm, Shape sizes) {                                      \
    ::loom::host::device::permute(target(), comm->group(), out, in, inShape,   \
                                  host::elementTypeOf<T>(), perm, sizes);      \
  }                                                                            \
  template <typename T>                                                        \
  void sparse_reduce_scatter(T *out, Shape outShape, const T *in,              \
                             Shape inShape, const int64_t *rows,               \
                             Shape rowsShape, Communicator *comm) {            \
    ::loom::host::device::stagedSparseRows(                                    \
        target(), comm->getMpi(), &host::sparseReduceScatterBytes, out,        \
        outShape, in, inShape, rows, rowsShape, host::elementTypeOf<T>());     \
  }                                                                            \
  template <typename T>                                                        \
  void sparse_exchange(T *out, Shape outShape, const T *in, Shape inShape,     \
                       const int64_t *rows, Shape rowsShape,                   \
                       rt::Communicator *mpi, Ints blocks, bool gather) {      \
    std::vector<int64_t> bounds(blocks);                                       \
    ::loom::host::device::stagedSparseRows(                                    \
        target(), *mpi,                                                        \
        [&bounds, gather](void *o, Shape os, const void *i, Shape is,          \
                          const int64_t *r, Shape rs, rt::ElementType t,       \
                          rt::Communicator *c) {                               \
          host::sparseExchangeBytes(o, os, i, is, r, rs, t, c, bounds,         \
                                    gather);                                   \
        },                                                                     \
        out, outShape, in, inShape, rows, rowsShape,                           \
        host::elementTypeOf<T>());                                             \
  }                                                                            \
  template <typename T>                                                        \
  void sparse_all_gather(T *out, Shape outShape, const T *in, Shape inShape,   \
                         const int64_t *rows, Shape rowsShape,                 \
                         Communicator *comm) {                                 \
    ::loom::host::device::stagedSparseRows(                                    \
        target(), comm->getMpi(), &host::sparseAllGatherBytes, out, outShape,  \
        in, inShape, rows, rowsShape, host::elementTypeOf<T>());               \
  }                                                                            \
  using Request = ::loom::host::Request;                                       \
  template <typename T>                                                        \
  void sparse_all_gather_start(T *out, Shape outShape, const T *in,            \
                               Shape inShape, const int64_t *rows,             \
                               Shape rowsShape, Communicator *comm,            \
                               Request &request) {                             \
    ::loom::host::device::startStagedSparseRows(                               \
        target(), comm->getMpi(), &host::sparseAllGatherBytes, out, outShape,  \
        in, inShape, rows, rowsShape, host::elementTypeOf<T>(), request);      \
  }                                                                            \
  inline void wait(Request &request) { request.wait(); }                       \
  template <typename T>                                                        \
  void local_slice(T *out, Shape outShape, const T *in, Shape inShape,         \
                   Communicator *comm, int64_t dim) {                          \
    ::loom::host::device::localSlice(target(), comm->group(), out, outShape,   \
                                     in, inShape, sizeof(T), dim);             \
  }                                                                            \
  template <typename T>                                                        \
  void make_partial(T *out, Shape outShape, const T *in, Shape inShape,        \
                    Communicator *comm, int64_t dim) {                         \
    ::loom::host::device::makePartial(target(), comm->group(), out, outShape,  \
                                      in, inShape, sizeof(T), dim);            \
  }                                                                            \
  template <typename T>                                                        \
  void axis_index(T *out, Shape, Communicator *comm, int64_t stride,           \
                  int64_t base) {                                              \
    ::loom::host::device::axisIndex(                                           \
        target(), out, sizeof(T), !std::is_integral_v<T>,                      \
        static_cast<double>(comm->getRank() * stride + base));                 \
  }                                                                            \
  template <typename T>                                                        \
  void exchange(T *out, Shape outShape, const T *in, Shape inShape,            \
                ExchangePlan &plan) {                                          \
    plan.run(out, outShape.numElements(), in, inShape.numElements(),           \
             sizeof(T), host::elementTypeOf<T>());                             \
  }                                                                            \
  inline void tracePhaseBegin(const char *name) {                              \
    host::tracePhaseBegin(name);                                               \
  }                                                                            \
  inline void tracePhaseEnd() {                                                \
    ::loom::host::device::tracePhaseEnd(target());                             \
  }                                                                            \
  template <typename... Programs>                                              \
  loom_status *createProgram(const void *mpiComm, loom_program **out,          \
                             std::initializer_list<Ints> devices,              \
                             std::initializer_list<Ints> groups) {             \
    return ::loom::host::createProgram<Programs...>(mpiComm, out, devices,     \
                                                    groups, {&target()});      \
  }

#endif // LOOM_RUNTIME_HOST_DEVICESUPPORT_H
