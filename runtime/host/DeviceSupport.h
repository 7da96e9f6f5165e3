//===- DeviceSupport.h - What device targets' runtimes share ----*- C++ -*-===//
//
// The CUDA and Ascend runtimes (runtime/cuda, runtime/ascend) run the same
// collectives with different libraries: both count traffic as the
// simulator does, pack blocks along a dimension with 2-D copies, stage
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

namespace loom::host::device {

/// Elements of part `j` of `count` split `k` ways (the first count % k
/// parts one larger), as the simulator's ring chunks.
int64_t chunk(int64_t count, int64_t k, int64_t j);

/// Counts one call of collective `kind` with these bytes.
void count(const char *kind, int64_t sent, int64_t received);
/// Counts a ring all-reduce of `bytes` (element size `elementBytes`) by
/// member `rank` of `k`, as the simulator does.
void countAllReduce(int64_t elements, int64_t elementBytes, int64_t k,
                    int64_t rank);

/// Block `j` of `k` along `dim` of a tensor of `shape`: `outer` rows of
/// `row` bytes, starting `start` bytes into rows `wide` bytes apart.
struct Block {
  size_t row = 0, wide = 0, start = 0, outer = 0;
  bool empty() const { return row == 0 || outer == 0; }
};
Block blockOf(const Shape &shape, int64_t dim, int64_t k, int64_t j,
              int64_t elementBytes);
/// Whether blocks along `dim` are contiguous (nothing outside `dim`).
bool leadingDim(const Shape &shape, int64_t dim);

/// Runs `plan` on device buffers through host copies: `drain` waits for
/// queued device work, `toHost` / `toDevice` copy bytes.
void stagedExchange(
    ExchangePlan &plan, void *out, int64_t outElements, const void *in,
    int64_t inElements, int64_t elementBytes, rt::ElementType type,
    const std::function<void()> &drain,
    const std::function<void(void *, const void *, size_t)> &toHost,
    const std::function<void(void *, const void *, size_t)> &toDevice);

/// The value of `axis_index` as `elementBytes` bytes of a float or integer.
void encodeScalar(char (&bytes)[8], int64_t elementBytes, bool isFloat,
                  double value);

/// What the driver needs of a device target (null: the host target).
struct Target {
  const char *name;
  /// Picks and starts the rank's device (after MPI starts).
  void (*start)();
  /// Drains the device and tears its communicators down (before MPI ends).
  void (*finish)();
  void (*toDevice)(void *to, const void *from, size_t bytes);
  void (*toHost)(void *to, const void *from, size_t bytes);
  /// Waits for the device's queued work.
  void (*synchronize)();
};

/// Starts MPI, starts the device of the target that runs this rank's
/// program (`targets` holds one target for every program, or one for all),
/// opens the MPI communicators of `groups` (every rank walks the same list;
/// device communicators are made from them where a program's collectives
/// first need them), and runs `Programs[i]` on the ranks in `devices[i]`
/// under the host runtime's driver, its arena on the device.
template <typename... Programs>
int runPrograms(int argc, char **argv, std::initializer_list<Ints> devices,
                std::initializer_list<Ints> groups,
                std::initializer_list<const Target *> targets) {
  rt::Runtime::init(&argc, &argv);
  int rank = rt::Runtime::get().getWorldRank(), index = 0;
  const Target *target = nullptr;
  for (Ints group : devices) {
    for (int64_t device : group)
      if (device == rank)
        target = targets.begin()[targets.size() == 1 ? 0 : index];
    ++index;
  }
  if (target)
    target->start();
  openGroups(groups);
  int status = runChosenProgram<Programs...>(
      argc, argv, devices, [target](ProgramView &view) {
        if (!target)
          return;
        view.toArena = [target](char *arena, const char *from, int64_t bytes) {
          target->toDevice(arena, from, static_cast<size_t>(bytes));
        };
        view.fromArena = [target](char *to, const char *arena, int64_t bytes) {
          target->toHost(to, arena, static_cast<size_t>(bytes));
        };
        // A step's time covers its device work.
        view.step = [target, step = view.step] {
          step();
          target->synchronize();
        };
      });
  if (target)
    target->finish();
  rt::Runtime::finalize();
  return status;
}

} // namespace loom::host::device

/// The typed collectives generated code calls, over a target's byte-level
/// functions (allReduceBytes, ...), declared in the target's namespace.
#define LOOM_DEVICE_TYPED_COLLECTIVES                                          \
  template <typename T>                                                        \
  void all_reduce(T *out, Shape, const T *in, Shape inShape,                   \
                  Communicator *comm, const char *kind) {                      \
    allReduceBytes(out, in, inShape, host::elementTypeOf<T>(), comm, kind);    \
  }                                                                            \
  template <typename T>                                                        \
  void all_gather(T *out, Shape outShape, const T *in, Shape inShape,          \
                  Communicator *comm, int64_t dim) {                           \
    allGatherBytes(out, outShape, in, inShape, host::elementTypeOf<T>(), comm, \
                   dim);                                                       \
  }                                                                            \
  template <typename T>                                                        \
  void reduce_scatter(T *out, Shape outShape, const T *in, Shape inShape,      \
                      Communicator *comm, int64_t dim, const char *kind) {     \
    reduceScatterBytes(out, outShape, in, inShape, host::elementTypeOf<T>(),   \
                       comm, dim, kind);                                       \
  }                                                                            \
  template <typename T>                                                        \
  void all_to_all(T *out, Shape outShape, const T *in, Shape inShape,          \
                  Communicator *comm, int64_t splitDim, int64_t concatDim) {   \
    allToAllBytes(out, outShape, in, inShape, host::elementTypeOf<T>(), comm,  \
                  splitDim, concatDim);                                        \
  }                                                                            \
  template <typename T>                                                        \
  void local_slice(T *out, Shape outShape, const T *in, Shape inShape,         \
                   Communicator *comm, int64_t dim) {                          \
    localSliceBytes(out, outShape, in, inShape, sizeof(T), comm, dim);         \
  }                                                                            \
  template <typename T>                                                        \
  void make_partial(T *out, Shape outShape, const T *in, Shape inShape,        \
                    Communicator *comm, int64_t dim) {                         \
    makePartialBytes(out, outShape, in, inShape, sizeof(T), comm, dim);        \
  }                                                                            \
  template <typename T>                                                        \
  void axis_index(T *out, Shape, Communicator *comm, int64_t stride,           \
                  int64_t base) {                                              \
    axisIndex(out, sizeof(T), !std::is_integral_v<T>,                          \
              static_cast<double>(comm->getRank() * stride + base));           \
  }                                                                            \
  template <typename T>                                                        \
  void exchange(T *out, Shape outShape, const T *in, Shape inShape,            \
                ExchangePlan &plan) {                                          \
    plan.run(out, outShape.numElements(), in, inShape.numElements(),           \
             sizeof(T), host::elementTypeOf<T>());                             \
  }

#endif // LOOM_RUNTIME_HOST_DEVICESUPPORT_H
