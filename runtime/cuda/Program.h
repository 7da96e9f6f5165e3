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
// Each rank uses device (its place among the node's CUDA ranks mod device
// count); NCCL refuses two ranks on one GPU, so several ranks need as many
// GPUs on their node. On a machine without a CUDA device the program ends
// with a clear message.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_PROGRAM_H
#define LOOM_RUNTIME_CUDA_PROGRAM_H

#include "runtime/cuda/CudaKernels.h"
#include "runtime/host/DeviceSupport.h"
#include "runtime/host/Program.h"

#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace loom::cuda {

using Ints = std::initializer_list<int64_t>;

/// An NCCL communicator over a device group.
using Communicator = host::device::Communicator;

/// The NCCL communicator of this rank's sub-group, made on first use (a
/// program's fields ask in one order on every member).
Communicator *subgroup(Ints devices, Shape mesh, Shape axes);

/// Picks device `index` mod the device count (`index`: the rank's place
/// among its node's ranks of this target), makes its
/// stream and cuBLAS handle and hands them to the kernels; ends the rank
/// with a clear error where there is no CUDA device.
void startDevice(int index);
/// Drains the stream and destroys the NCCL communicators (in creation
/// order), the cuBLAS handle and the stream, before MPI ends.
void finishDevice();

/// The CUDA target (for the driver, the arena, the collectives, and mixed
/// clusters).
const host::device::Target &target();

// Arena, at<T>, ExchangePlan, the typed collectives, the profiler's spans
// and createProgram (runtime/host/DeviceSupport.h).
LOOM_DEVICE_RUNTIME

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_PROGRAM_H
