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

/// An HCCL communicator over a device group.
using Communicator = host::device::Communicator;

/// The HCCL communicator of this rank's sub-group, made on first use (a
/// program's fields ask in one order on every member).
Communicator *subgroup(Ints devices, Shape mesh, Shape axes);

/// Waits for the stream, then frees what its work used.
void synchronize();
void copyToDevice(void *to, const void *from, size_t bytes);
void copyToHost(void *to, const void *from, size_t bytes);

/// Loads CANN, starts ACL, picks device `index` mod the device count
/// (`index`: the rank's place among its node's ranks of this target) and makes
/// its stream; ends the rank with a clear error where the libraries or a device
/// are missing.
void startDevice(int index);
/// Drains the stream and destroys the HCCL communicators (in creation
/// order) and the stream, before MPI ends.
void finishDevice();

/// The Ascend target (for the driver, the arena, the collectives, and
/// mixed clusters).
const host::device::Target &target();

// Arena, at<T>, ExchangePlan, the typed collectives, the profiler's spans
// and createProgram (runtime/host/DeviceSupport.h).
LOOM_DEVICE_RUNTIME

} // namespace loom::ascend

#endif // LOOM_RUNTIME_ASCEND_PROGRAM_H
