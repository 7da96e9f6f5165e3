//===- Program.h - What generated Ascend programs include -------*- C++ -*-===//
//
// The Ascend target's counterpart of runtime/host/Program.h, with the same
// names in `loom::ascend` (codegen/Common/Emission.h): the arena is device
// memory (aclrtMalloc), kernels are aclnn operators called in two phases
// on the rank's stream (AscendKernels.h), collectives run on HCCL
// communicators made once per collective group when the program first
// needs it (member 0's root info,
// from HcclGetRootInfo, broadcast over the group's MPI communicator before
// HcclCommInitRootInfo), and an exchange across groups is staged through
// host memory and runs the host runtime's plan over MPI (the documented
// baseline). HCCL has no average: a mean is a sum, then aclnnInplaceMuls
// by 1/n. The driver is the host runtime's.
//
// Every CANN function is resolved at run time (Loader.h), so this builds
// without the SDK. Without Ascend hardware, loom-run --ascend-double runs
// the same program on Loom's CPU test double of those libraries
// (runtime/ascend/double).
//
// Operator workspaces and the descriptors of a launch (tensors, scalars,
// arrays) are released only after the stream has been synchronised: at
// the end of each step, before an exchange, when pending workspaces pass
// 256 MiB, and at the end.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_PROGRAM_H
#define LOOM_RUNTIME_ASCEND_PROGRAM_H

#include "runtime/ascend/AscendKernels.h"
#include "runtime/host/DeviceSupport.h"
#include "runtime/host/Program.h"

#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace loom::ascend {

using Ints = std::initializer_list<int64_t>;

/// Device memory holding every buffer of a program, zeroed.
class Arena {
public:
  explicit Arena(int64_t bytes);
  Arena(Arena &&other) noexcept;
  ~Arena();
  char *data() { return storage; }
  int64_t size() const { return bytes; }

private:
  char *storage = nullptr;
  int64_t bytes = 0;
};

template <typename T> T *at(Arena &arena, int64_t offset) {
  return reinterpret_cast<T *>(arena.data() + offset);
}

/// An HCCL communicator over a device group (and the group's MPI
/// communicator, for bootstrapping and counting).
class Communicator {
public:
  explicit Communicator(rt::Communicator &mpi);
  ~Communicator();
  int getRank() const { return mpi.getRank(); }
  int getSize() const { return mpi.getSize(); }
  void *getHccl() const { return hccl; }

private:
  rt::Communicator &mpi;
  void *hccl = nullptr; // HcclComm
};

/// The HCCL communicator of this rank's sub-group, made on first use (a
/// program's fields ask in one order on every member).
Communicator *subgroup(Ints devices, Shape mesh, Shape axes);

/// A cross-group exchange: the host runtime's plan, staged through host
/// memory.
class ExchangePlan {
public:
  ExchangePlan(Ints members, Ints table) : plan(members, table) {}
  void run(void *out, int64_t outElements, const void *in, int64_t inElements,
           int64_t elementBytes, rt::ElementType type);

private:
  host::ExchangePlan plan;
};

// Collectives on device buffers (byte level; typed wrappers below).
void allReduceBytes(void *out, const void *in, Shape shape,
                    rt::ElementType type, Communicator *comm, const char *kind);
void allGatherBytes(void *out, Shape outShape, const void *in, Shape inShape,
                    rt::ElementType type, Communicator *comm, int64_t dim);
void reduceScatterBytes(void *out, Shape outShape, const void *in,
                        Shape inShape, rt::ElementType type, Communicator *comm,
                        int64_t dim, const char *kind);
void allToAllBytes(void *out, Shape outShape, const void *in, Shape inShape,
                   rt::ElementType type, Communicator *comm, int64_t splitDim,
                   int64_t concatDim);
void localSliceBytes(void *out, Shape outShape, const void *in, Shape inShape,
                     int64_t elementBytes, Communicator *comm, int64_t dim);
void makePartialBytes(void *out, Shape outShape, const void *in, Shape inShape,
                      int64_t elementBytes, Communicator *comm, int64_t dim);
void axisIndex(void *out, int64_t elementBytes, bool isFloat, double value);

LOOM_DEVICE_TYPED_COLLECTIVES

// The profiler's phase spans (after the stream drains when tracing).
void tracePhaseBegin(const char *name);
void tracePhaseEnd();

/// Waits for the stream, then frees what its work used.
void synchronize();
void copyToDevice(void *to, const void *from, size_t bytes);
void copyToHost(void *to, const void *from, size_t bytes);

/// Loads CANN, starts ACL, picks this rank's device (local rank mod device
/// count) and makes its stream; ends the rank with a clear error where the
/// libraries or a device are missing.
void startDevice();
/// Drains the stream and destroys the HCCL communicators (in creation
/// order) and the stream, before MPI ends.
void finishDevice();

/// The Ascend target, for the driver (and for mixed clusters).
const host::device::Target &target();

/// Starts MPI and the device, opens `groups`, and runs `Programs[i]` on the
/// ranks in `devices[i]` under the host runtime's driver. HCCL
/// communicators are made when a program first asks for one (`subgroup`,
/// in its fields' order, the same on every member).
template <typename... Programs>
int runPrograms(int argc, char **argv, std::initializer_list<Ints> devices,
                std::initializer_list<Ints> groups) {
  return host::device::runPrograms<Programs...>(argc, argv, devices, groups,
                                                {&target()});
}

} // namespace loom::ascend

#endif // LOOM_RUNTIME_ASCEND_PROGRAM_H
