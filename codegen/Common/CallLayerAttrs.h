//===- CallLayerAttrs.h - Tags of the call layer ----------------*- C++ -*-===//
//
// The attributes that --loom-lower-to-calls (LowerToCalls.cpp) writes for
// the targets' emission (Emission.cpp, EmitCluster.cpp): on the module, the
// programs and their groups; on each program's emitc.class, its devices and
// the function it specialises; on the class's fields, what each field holds
// (a communicator over a sub-group, an exchange plan, the arena or a buffer
// in it). Emission reads them and drops them. The tags of fields are also
// the names of the fields' opaque types until emission types them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_CALLLAYERATTRS_H
#define LOOM_CODEGEN_COMMON_CALLLAYERATTRS_H

#include "llvm/ADT/StringRef.h"

namespace loom::codegen {

/// On the module: the program classes, and per program its device group.
inline constexpr llvm::StringLiteral kProgramsAttr = "loom.programs";
inline constexpr llvm::StringLiteral kGroupsAttr = "loom.groups";

/// On a program class: its devices and the global function it specialises;
/// on a communicator or exchange field: the devices it runs over.
inline constexpr llvm::StringLiteral kDevicesAttr = "loom.devices";
inline constexpr llvm::StringLiteral kSpecializesAttr = "loom.specializes";

/// A communicator field (unit), with the mesh and the axes of its
/// sub-groups.
inline constexpr llvm::StringLiteral kCommAttr = "loom.comm";
inline constexpr llvm::StringLiteral kMeshAttr = "loom.mesh";
inline constexpr llvm::StringLiteral kAxesAttr = "loom.axes";
/// On a communicator field: the host runtime's MPI communicator on every
/// target (no library communicator).
inline constexpr llvm::StringLiteral kMpiOnlyAttr = "loom.mpi_only";

/// A request field (unit): a started collective's state, which its start
/// fills and its wait completes (the target's `Request`).
inline constexpr llvm::StringLiteral kRequestAttr = "loom.request";

/// An exchange field: its plan.
inline constexpr llvm::StringLiteral kExchangeAttr = "loom.exchange";

/// The arena field (unit), with its size, the bytes that persist across
/// steps and the peak of the transient ones; a buffer field's offset in
/// the arena and size.
inline constexpr llvm::StringLiteral kArenaAttr = "loom.arena";
inline constexpr llvm::StringLiteral kBytesAttr = "loom.bytes";
inline constexpr llvm::StringLiteral kPersistentBytesAttr =
    "loom.persistent_bytes";
inline constexpr llvm::StringLiteral kTransientPeakAttr =
    "loom.transient_peak";
inline constexpr llvm::StringLiteral kOffsetAttr = "loom.offset";

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_CALLLAYERATTRS_H
