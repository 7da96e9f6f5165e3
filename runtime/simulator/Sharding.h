//===- Sharding.h - Global tensors to shards and back ----------*- C++ -*-===//
//
// Runs a specialised (local-view) function on the simulator from global
// inputs, the way the end-to-end checks need it: every global argument is
// cut into the shard each device holds under the argument's layout, the
// ranks run, and every result is put back together from the shards under
// its layout. Putting back checks what a layout promises: replicas of a
// block are bitwise equal, and pending contributions are combined (in
// contribution order) into the value.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SIMULATOR_SHARDING_H
#define LOOM_RUNTIME_SIMULATOR_SHARDING_H

#include "runtime/layout/Collectives.h"
#include "runtime/simulator/Simulator.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace loom::sim {

/// The layout core's element type of an interpreter tensor kind.
layout::DType toLayoutType(interp::ElementKind kind);

/// What `device` holds of `global` laid out as `layout`: its block; of a
/// pending reduction, contribution 0 holds the block and the others the
/// reduction's identity (0 for a sum; the block itself for mean, max and
/// min). Fails, with `error` set, when the device is not in the layout or
/// the layout does not fit the shape. Both this and assembleGlobal are the
/// layout core's (runtime/layout/Shards.h) on interpreter tensors.
mlir::FailureOr<interp::Tensor> extractShard(const interp::Tensor &global,
                                             hspmd::UnionAttr layout,
                                             int64_t device,
                                             std::string &error);

/// The global tensor of `shape` put back from `shards[i]`, the shard of
/// device `devices[i]`, under `layout` (every device of the layout must be
/// listed). Fails, with `error` set, when a shard has the wrong shape or two
/// replicas of a block differ.
mlir::FailureOr<interp::Tensor>
assembleGlobal(llvm::ArrayRef<int64_t> devices,
               llvm::ArrayRef<interp::Tensor> shards, hspmd::UnionAttr layout,
               llvm::ArrayRef<int64_t> shape, std::string &error);

/// Runs `local`, the specialisation of `global` for one device group, on
/// `simulator` (one rank per device of the group, rank r = the group's r-th
/// device): arguments and results of `local` carry their global layouts as
/// `hspmd.global_layout` (as specialisation writes them; where `local` has
/// none, `global`'s `hspmd.layout` is used), and have `global`'s types
/// globally. Returns the global
/// results; problems are emitted at the functions.
mlir::FailureOr<std::vector<interp::Tensor>>
runSharded(Simulator &simulator, mlir::func::FuncOp local,
           mlir::func::FuncOp global,
           llvm::ArrayRef<interp::Tensor> globalArgs);

/// Runs the specialisations `locals` of `global` for several device groups
/// together (MPMD): rank r is device r and runs the function whose
/// `hspmd.group` holds it; every device 0 .. N-1 must run one. Arguments are
/// cut and results put back under the whole layouts the functions record
/// (`hspmd.global_layout`, every group's states). With one function, the
/// same as the overload above.
mlir::FailureOr<std::vector<interp::Tensor>>
runSharded(Simulator &simulator, llvm::ArrayRef<mlir::func::FuncOp> locals,
           mlir::func::FuncOp global,
           llvm::ArrayRef<interp::Tensor> globalArgs);

} // namespace loom::sim

#endif // LOOM_RUNTIME_SIMULATOR_SHARDING_H
