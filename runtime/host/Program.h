//===- Program.h - What generated host programs include ---------*- C++ -*-===//
//
// Generated code (loom-translate --loom-to-host-cpp) is one class per device
// group's program: an arena, typed pointers into it named after the
// program's values, the communicators and exchange plans it uses, one
// method per step phase calling Loom's kernels (runtime/kernels) and the
// collectives below, then the C ABI over every program. This header is all
// generated code includes.
//
// Collectives take the result first (destination-passing style), then the
// operand, each with its shape, then the communicator of the rank's
// sub-group (`subgroup`) and the op's attributes; they move and count
// exactly what the simulator does (runtime/simulator/Simulator.h).
//
// Exchange plans (`hspmd.exchange`, a layout change across device groups)
// are int64 tables the compiler writes and the runtime walks:
//   rank R, shape[R], partial (0/1), number of devices D, then per device:
//     id, holds-source (0/1), source offsets[R], sizes[R],
//         holds-target (0/1), target offsets[R], sizes[R];
//   number of reductions, then per reduction:
//     offsets[R], sizes[R], n, devices[n]   (a ring all-reduce among them);
//   number of transfers, then per transfer:
//     source, destination, offsets[R], sizes[R]   (boxes of the global
//     tensor).
// Executing it gives what the simulator's exchange gives, bit for bit.
//
// The program classes and their devices become the C ABI of
// include/loom-c/Program.h (ProgramLibrary.h): a program library, or a
// program executable whose `main` runs the driver every compiled program
// shares (runtime/driver/Driver.h documents its options and files).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_HOST_PROGRAM_H
#define LOOM_RUNTIME_HOST_PROGRAM_H

#include "runtime/host/Collectives.h"
#include "runtime/kernels/HostKernels.h"
#include "runtime/layout/Boxes.h"
#include "runtime/layout/Collectives.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace loom {

/// An attribute the op does not carry: converts to what the kernel's
/// parameter expects as "absent" (false, NaN, INT64_MIN, an absent shape).
struct Absent {
  constexpr operator bool() const { return false; }
  constexpr operator double() const { return host::kAbsent; }
  constexpr operator int64_t() const { return INT64_MIN; }
  constexpr operator host::Shape() const { return host::kAbsentShape; }
  /// An enumeration the op does not carry: its default.
  constexpr operator const char *() const { return nullptr; }
};
inline constexpr Absent kAbsent{};

} // namespace loom

namespace loom::host {

/// One zero-filled, 64-byte aligned block holding every buffer of a
/// program.
class Arena {
public:
  explicit Arena(int64_t bytes);
  Arena(Arena &&) = default;
  char *data() { return storage.get(); }
  int64_t size() const { return bytes; }

private:
  struct Free {
    void operator()(char *p) const;
  };
  std::unique_ptr<char, Free> storage;
  int64_t bytes;
};

template <typename T> T *at(Arena &arena, int64_t offset) {
  return reinterpret_cast<T *>(arena.data() + offset);
}

using Ints = std::initializer_list<int64_t>;

/// The communicator of this rank's sub-group for a collective over `axes`
/// of `mesh`, the group's devices read as mixed-radix numbers (first digit
/// slowest): the devices that differ from this rank only in those digits.
rt::Communicator *subgroup(Ints devices, Shape mesh, Shape axes);

/// Opens the communicators of `groups` that hold this rank, in the given
/// order (every rank walks the same list, so ranks that share two groups
/// create them in the same order).
void openGroups(std::initializer_list<Ints> groups);

/// A compiled exchange plan (see the file comment).
class ExchangePlan {
public:
  ExchangePlan(Ints members, Ints table);

  /// Carries out the plan for this rank: `in` is its block of the source
  /// (or nothing), `out` its block of the target.
  void run(void *out, int64_t outElements, const void *in, int64_t elementBytes,
           rt::ElementType type);

private:
  using Box = layout::Box;
  struct Device {
    int64_t id = 0;
    bool holdsSource = false, holdsTarget = false;
    Box source, target;
  };
  struct Reduction {
    Box box;
    std::vector<int64_t> devices;
  };
  struct Transfer {
    int64_t source = 0, destination = 0;
    Box box;
  };
  std::vector<int64_t> members;
  int64_t rank = 0;
  std::vector<int64_t> shape;
  bool partial = false;
  std::vector<Device> devices;
  std::vector<Reduction> reductions;
  std::vector<Transfer> transfers;
  rt::Communicator *comm = nullptr;
};

// Byte-level collectives (Program.cpp); the typed wrappers below call them.
void allReduceBytes(void *out, const void *in, Shape shape,
                    rt::ElementType type, rt::Communicator *comm,
                    const char *kind);
void allGatherBytes(void *out, Shape outShape, const void *in, Shape inShape,
                    rt::ElementType type, rt::Communicator *comm, int64_t dim);
void reduceScatterBytes(void *out, Shape outShape, const void *in,
                        Shape inShape, rt::ElementType type,
                        rt::Communicator *comm, int64_t dim, const char *kind);
void allToAllBytes(void *out, Shape outShape, const void *in, Shape inShape,
                   rt::ElementType type, rt::Communicator *comm,
                   int64_t splitDim, int64_t concatDim);
void localSliceBytes(void *out, Shape outShape, const void *in, Shape inShape,
                     int64_t elementBytes, rt::Communicator *comm, int64_t dim);
/// hspmd.sparse_reduce_scatter: the rows of `in` named by `rows` (an index
/// outside [0, rows), such as -1, names none) go, with their indices, to the members whose blocks hold them (counts
/// first, then one message of indices and rows per member), and `out`, the
/// rank's block, is the sum in member order of what every member sent it.
/// Counted as `sparse_reduce_scatter`: one call, the bytes moved
/// (layout::getSparseTraffic). A member that sends more rows than a block
/// holds, or a row outside this rank's block, ends the rank.
void sparseReduceScatterBytes(void *out, Shape outShape, const void *in,
                              Shape inShape, const int64_t *rows,
                              Shape rowsShape, rt::ElementType type,
                              rt::Communicator *comm);
/// hspmd.sparse_exchange: sparseReduceScatterBytes (with `gather`,
/// sparseAllGatherBytes) over `comm`, the op's `among` devices in order,
/// member j holding the rows [blocks[2j], blocks[2j] + blocks[2j+1]) (a
/// scattered row in several blocks goes to each; a gathered one comes from
/// the first). Counted as `sparse_exchange`.
void sparseExchangeBytes(void *out, Shape outShape, const void *in,
                         Shape inShape, const int64_t *rows, Shape rowsShape,
                         rt::ElementType type, rt::Communicator *comm,
                         const std::vector<int64_t> &blocks, bool gather);
/// hspmd.sparse_all_gather: `out` (the whole rows) is zero but for the rows
/// `rows` names (outside [0, rows): none), each fetched from the member whose block (`in`)
/// holds it: the counts to every member first, then one message of row
/// indices to each, and one of rows back. Counted as `sparse_all_gather`
/// (layout::getSparseTraffic). A member asking for more rows than a block
/// holds, or for a row outside this rank's block, ends the rank.
void sparseAllGatherBytes(void *out, Shape outShape, const void *in,
                          Shape inShape, const int64_t *rows, Shape rowsShape,
                          rt::ElementType type, rt::Communicator *comm);
void makePartialBytes(void *out, Shape outShape, const void *in, Shape inShape,
                      int64_t elementBytes, rt::Communicator *comm,
                      int64_t dim);

/// A collective started ahead of its use (hspmd.sparse_all_gather_start),
/// completed by `wait` (hspmd.wait): a field of the generated program, one
/// per start. Where the runtime overlaps collectives
/// (rt::Runtime::overlapsCollectives) the work runs on the communication
/// thread between the two; elsewhere the start does it all and the wait
/// nothing. Destroying or restarting a request completes its work first
/// (it reads and writes the program's buffers), dropping its errors and
/// its `finish`.
class Request {
public:
  Request() = default;
  Request(Request &&) = default;
  Request &operator=(Request &&) = delete;
  ~Request();
  /// Runs `work` on the communication thread, or now; `finish` (if any)
  /// runs after it on the thread that waits (a device target's copy of
  /// the result to the device, which only that thread may touch).
  void start(std::function<void()> work, std::function<void()> finish = {});
  /// Completes the work: its traffic becomes the rank's, its failure the
  /// caller's; then runs `finish`.
  void wait();

private:
  std::shared_ptr<rt::AsyncWork> work;
  std::function<void()> finish;
};
/// hspmd.sparse_all_gather_start: sparseAllGatherBytes over the
/// communicator's duplicate (Communicator::getAsyncTwin), on the
/// communication thread; `in` and `rows` must not change and `out` must
/// not be read before `wait(request)`. Counted as `sparse_all_gather`, at
/// the wait (at the start where the runtime overlaps no collectives).
void sparseAllGatherStartBytes(void *out, Shape outShape, const void *in,
                               Shape inShape, const int64_t *rows,
                               Shape rowsShape, rt::ElementType type,
                               rt::Communicator *comm, Request &request);
/// hspmd.wait.
inline void wait(Request &request) { request.wait(); }

/// Where a rank's buffer goes in a permute (hspmd.permute) and where its new
/// one comes from, as positions in its sub-group of `members` devices,
/// whose digits over the permuted mesh axes (sizes `sizes`, first slowest)
/// are (c_0, ..., c_k): it receives from the member whose digit i is
/// c_perm[i] and sends to the one whose digit perm[i] is c_i. `leads`: it is
/// the smallest member of its cycle of the permutation (so a library
/// without grouped point-to-point calls sends there first and receives
/// first everywhere else, which cannot deadlock). A rank the permutation
/// maps to itself has source == destination == rank. A `perm` that is not a
/// permutation, or `sizes` that do not multiply to `members`, end the rank.
struct PermutePeers {
  int source = 0, destination = 0;
  bool leads = true;
};
PermutePeers permutePeers(int rank, int members, Shape perm, Shape sizes);
/// hspmd.permute on host buffers of `bytes`: the rank's buffer to its
/// destination, its new one from its source, in one batched send/recv;
/// a rank that keeps its buffer moves nothing over the network (a local
/// copy). Counted as `permute`: every rank one call, bytes as the
/// simulator counts them.
void permuteBytes(void *out, const void *in, int64_t bytes,
                  rt::Communicator *comm, Shape perm, Shape sizes);

template <typename T> constexpr rt::ElementType elementTypeOf();
template <> constexpr rt::ElementType elementTypeOf<float>() {
  return rt::ElementType::F32;
}
template <> constexpr rt::ElementType elementTypeOf<double>() {
  return rt::ElementType::F64;
}
template <> constexpr rt::ElementType elementTypeOf<int64_t>() {
  return rt::ElementType::I64;
}

// hspmd collectives, in destination-passing style.
template <typename T>
void all_reduce(T *out, Shape /*outShape*/, const T *in, Shape inShape,
                rt::Communicator *comm, const char *kind) {
  allReduceBytes(out, in, inShape, elementTypeOf<T>(), comm, kind);
}
template <typename T>
void all_gather(T *out, Shape outShape, const T *in, Shape inShape,
                rt::Communicator *comm, int64_t dim) {
  allGatherBytes(out, outShape, in, inShape, elementTypeOf<T>(), comm, dim);
}
template <typename T>
void reduce_scatter(T *out, Shape outShape, const T *in, Shape inShape,
                    rt::Communicator *comm, int64_t dim, const char *kind) {
  reduceScatterBytes(out, outShape, in, inShape, elementTypeOf<T>(), comm, dim,
                     kind);
}
template <typename T>
void all_to_all(T *out, Shape outShape, const T *in, Shape inShape,
                rt::Communicator *comm, int64_t splitDim, int64_t concatDim) {
  allToAllBytes(out, outShape, in, inShape, elementTypeOf<T>(), comm, splitDim,
                concatDim);
}
template <typename T>
void sparse_reduce_scatter(T *out, Shape outShape, const T *in, Shape inShape,
                           const int64_t *rows, Shape rowsShape,
                           rt::Communicator *comm) {
  sparseReduceScatterBytes(out, outShape, in, inShape, rows, rowsShape,
                           elementTypeOf<T>(), comm);
}
template <typename T>
void sparse_exchange(T *out, Shape outShape, const T *in, Shape inShape,
                     const int64_t *rows, Shape rowsShape,
                     rt::Communicator *comm, Ints blocks, bool gather) {
  sparseExchangeBytes(out, outShape, in, inShape, rows, rowsShape,
                      elementTypeOf<T>(), comm, blocks, gather);
}
template <typename T>
void sparse_all_gather(T *out, Shape outShape, const T *in, Shape inShape,
                       const int64_t *rows, Shape rowsShape,
                       rt::Communicator *comm) {
  sparseAllGatherBytes(out, outShape, in, inShape, rows, rowsShape,
                       elementTypeOf<T>(), comm);
}
template <typename T>
void sparse_all_gather_start(T *out, Shape outShape, const T *in,
                             Shape inShape, const int64_t *rows,
                             Shape rowsShape, rt::Communicator *comm,
                             Request &request) {
  sparseAllGatherStartBytes(out, outShape, in, inShape, rows, rowsShape,
                            elementTypeOf<T>(), comm, request);
}
template <typename T>
void local_slice(T *out, Shape outShape, const T *in, Shape inShape,
                 rt::Communicator *comm, int64_t dim) {
  localSliceBytes(out, outShape, in, inShape, sizeof(T), comm, dim);
}
template <typename T>
void make_partial(T *out, Shape outShape, const T *in, Shape inShape,
                  rt::Communicator *comm, int64_t dim) {
  makePartialBytes(out, outShape, in, inShape, sizeof(T), comm, dim);
}
/// `perm` and `sizes`: the op's permutation and the sizes of the mesh axes
/// it permutes (PermutePeers).
template <typename T>
void permute(T *out, Shape /*outShape*/, const T *in, Shape inShape,
             rt::Communicator *comm, Shape perm, Shape sizes) {
  permuteBytes(out, in, inShape.numElements() * int64_t(sizeof(T)), comm, perm,
               sizes);
}
/// This rank's position in `comm` (its digits over the axes) times
/// `stride`, plus `base`.
template <typename T>
void axis_index(T *out, Shape /*outShape*/, rt::Communicator *comm,
                int64_t stride, int64_t base) {
  *out = static_cast<T>(comm->getRank() * stride + base);
}
template <typename T>
void exchange(T *out, Shape outShape, const T *in, Shape /*inShape*/,
              ExchangePlan &plan) {
  plan.run(out, outShape.numElements(), in, sizeof(T), elementTypeOf<T>());
}

/// The profiler: when the driver runs with --trace, every step phase
/// (compute) and every collective (communication) of this rank is recorded
/// as a span and written as a Chrome trace (JSON) for Perfetto.
void tracePhaseBegin(const char *name);
void tracePhaseEnd();
/// A collective's span on the communication thread of the trace, from
/// construction to destruction (nothing when not tracing).
class CommSpan {
public:
  explicit CommSpan(const char *name);
  ~CommSpan();
  CommSpan(const CommSpan &) = delete;
  CommSpan &operator=(const CommSpan &) = delete;

private:
  const char *name;
  double start;
};
/// Whether this run records a trace.
bool tracing();
/// Starts or stops recording (the driver's --trace).
void setTracing(bool on);
/// The spans recorded so far as a JSON array of Chrome trace events
/// ("X" events, microseconds; pid `rank`, tid 0 compute, 1 communication).
std::string getTraceJson(int rank);

/// What the driver needs of a program, whatever its class.
struct ProgramView {
  char *arena = nullptr;
  const int64_t *argOffsets = nullptr, *argBytes = nullptr;
  int64_t numArgs = 0;
  const int64_t *resultOffsets = nullptr, *resultBytes = nullptr;
  int64_t numResults = 0;
  int64_t lossResult = -1;
  /// The result holding the gradients' global norm (nn.grad_norm), or -1.
  int64_t gradNormResult = -1;
  std::function<void()> step;
  /// How bytes reach and leave the arena (device memory on other targets);
  /// unset: the arena is host memory.
  std::function<void(char *arena, const char *from, int64_t bytes)> toArena;
  std::function<void(char *to, const char *arena, int64_t bytes)> fromArena;
};

/// The driver's view of a generated program object.
template <typename Program> ProgramView makeProgramView(Program &program) {
  ProgramView view;
  view.arena = program.arena.data();
  view.argOffsets = program.arg_offsets;
  view.argBytes = program.arg_bytes;
  view.numArgs = sizeof(program.arg_offsets) / sizeof(int64_t);
  view.resultOffsets = program.result_offsets;
  view.resultBytes = program.result_bytes;
  view.numResults = sizeof(program.result_offsets) / sizeof(int64_t);
  view.lossResult = program.loss_result;
  view.gradNormResult = program.grad_norm_result;
  Program *raw = &program;
  view.step = [raw] { raw->step(); };
  return view;
}

} // namespace loom::host

#include "runtime/host/ProgramLibrary.h"

#endif // LOOM_RUNTIME_HOST_PROGRAM_H
