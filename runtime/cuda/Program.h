//===- Program.h - What generated CUDA programs include ---------*- C++ -*-===//
//
// The CUDA target's counterpart of runtime/host/Program.h, with the same
// names in `loom::cuda` (codegen/Common/Emission.h): the arena is device
// memory, kernels are Loom's CUDA kernels (CudaKernels.h; cuBLAS for GEMM)
// on the rank's stream, collectives run on NCCL communicators made once
// per collective group when the program first needs it (the unique id
// broadcast over the group's MPI communicator, as NCCL's own tests do;
// groups only exchanges use get none), and an exchange across groups is
// staged through host memory and runs the host runtime's plan over MPI
// (the documented baseline; direct device-to-device paths are future
// work). The driver is the host runtime's (`loom::host::drive`), reading
// and writing the arena through copies.
//
// Each rank uses device (local rank mod device count); NCCL refuses two
// ranks on one GPU, so several ranks need as many GPUs on their node. On a
// machine without a CUDA device the program ends with a clear message.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_PROGRAM_H
#define LOOM_RUNTIME_CUDA_PROGRAM_H

#include "runtime/cuda/CudaKernels.h"
#include "runtime/host/DeviceSupport.h"
#include "runtime/host/Program.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace loom::cuda {

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

/// An NCCL communicator over a device group (and the group's MPI
/// communicator, for bootstrapping and counting).
class Communicator {
public:
  explicit Communicator(rt::Communicator &mpi);
  ~Communicator();
  int getRank() const { return mpi.getRank(); }
  int getSize() const { return mpi.getSize(); }
  void *getNccl() const { return nccl; }

private:
  rt::Communicator &mpi;
  void *nccl = nullptr; // ncclComm_t
};

/// The NCCL communicator of this rank's sub-group, made on first use (a
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

// Collectives on device buffers (byte level; the typed wrappers below).
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

// The profiler's phase spans (the host runtime's, after the stream
// drains so that a span covers its kernels).
void tracePhaseBegin(const char *name);
void tracePhaseEnd();

/// Picks this rank's device (local rank mod device count), makes its
/// stream and cuBLAS handle and hands them to the kernels; ends the rank
/// with a clear error where there is no CUDA device.
void startDevice();
/// Drains the stream and destroys the NCCL communicators (in creation
/// order), the cuBLAS handle and the stream, before MPI ends.
void finishDevice();

/// The CUDA target, for the driver (and for mixed clusters).
const host::device::Target &target();

/// Starts MPI and the device, opens `groups`, and runs `Programs[i]` on the
/// ranks in `devices[i]` under the host runtime's driver. NCCL
/// communicators are made when a program first asks for one (`subgroup`,
/// in its fields' order, the same on every member).
template <typename... Programs>
int runPrograms(int argc, char **argv, std::initializer_list<Ints> devices,
                std::initializer_list<Ints> groups) {
  return host::device::runPrograms<Programs...>(argc, argv, devices, groups,
                                                {&target()});
}

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_PROGRAM_H
