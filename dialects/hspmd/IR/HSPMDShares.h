//===- HSPMDShares.h - Asymmetric shares for device groups -----*- C++ -*-===//
//-*-===//
//
// How much of a split dimension each device group takes when groups differ
// in speed and memory (asymmetric sharding; docs/architecture.md, "Unions
// and shares" and "Share selection"): as close as possible to proportional
// to speed, so that all groups finish a step together, within what each
// group's memory holds, in multiples of the dimension's alignment (a block
// size, a micro-batch, a tile).
//
// The continuous answer is water-filling: shares proportional to speed;
// a group whose share exceeds its capacity is held at its capacity and the
// excess is spread over the others, again by speed, until none exceeds.
// Rounding to the alignment then keeps the total: every share is rounded
// down and the units left over go, one each, to the groups with the largest
// remainders that have room (ties to the faster group, then the earlier).
// Every group takes at least one aligned unit (a union's shares are
// positive); where that or the total cannot be met, the reason is reported.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDSHARES_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDSHARES_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace loom::hspmd {

/// What share selection knows of one device group.
struct GroupCapacity {
  /// Relative throughput of the group (e.g. the sum of its devices'
  /// speeds); positive.
  double speed = 1.0;
  /// The most units of the split dimension the group can hold; at least 0.
  int64_t capacity = 0;
};

/// The units of a dimension of `total` units each group takes, in group
/// order: multiples of `alignment`, summing to `total`, each at least
/// `alignment` and at most the group's capacity, proportional to speed as
/// far as capacities and rounding allow. Failure with `why` set when the
/// input is malformed (non-positive total, alignment or speed, a total not
/// a multiple of the alignment), the groups cannot hold `total`, or a group
/// cannot hold one aligned unit.
mlir::FailureOr<llvm::SmallVector<int64_t>>
selectShares(llvm::ArrayRef<GroupCapacity> groups, int64_t total,
             int64_t alignment, std::string &why);

/// A group's capacity read from the cluster description: its speed is the
/// sum of its devices' speeds; it holds at most as many units as its
/// smallest device's memory (GiB, less `reservedBytes` for everything else
/// the device keeps) times the number of devices, divided by
/// `bytesPerUnit` (what one unit of the dimension costs the group in all).
/// Failure with `why` set when a device is not in the cluster or the
/// reservation exceeds a device's memory.
mlir::FailureOr<GroupCapacity>
getGroupCapacity(ClusterAttr cluster, DeviceGroupAttr group,
                 int64_t bytesPerUnit, int64_t reservedBytes, std::string &why);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDSHARES_H
