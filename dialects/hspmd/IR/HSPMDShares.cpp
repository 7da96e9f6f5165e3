//===- HSPMDShares.cpp - Choosing asymmetric shares for device groups -----===//

#include "dialects/hspmd/IR/HSPMDShares.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace loom::hspmd;

FailureOr<SmallVector<int64_t>>
loom::hspmd::selectShares(ArrayRef<GroupCapacity> groups, int64_t total,
                          int64_t alignment, std::string &why) {
  auto fail = [&](std::string message) {
    why = std::move(message);
    return failure();
  };
  if (groups.empty())
    return fail("no groups to share among");
  if (total <= 0 || alignment <= 0)
    return fail("the total (" + std::to_string(total) +
                ") and the alignment (" + std::to_string(alignment) +
                ") must be positive");
  if (total % alignment != 0)
    return fail("the total " + std::to_string(total) +
                " is not a multiple of the alignment " +
                std::to_string(alignment));
  int64_t n = static_cast<int64_t>(groups.size());
  // Work in aligned units.
  int64_t units = total / alignment;
  SmallVector<int64_t> caps;
  for (auto [i, group] : llvm::enumerate(groups)) {
    if (!(group.speed > 0) || !std::isfinite(group.speed))
      return fail("group " + std::to_string(i) + " has speed " +
                  std::to_string(group.speed) + "; speeds must be positive");
    if (group.capacity < 0)
      return fail("group " + std::to_string(i) + " has negative capacity");
    caps.push_back(group.capacity / alignment);
    if (caps.back() < 1)
      return fail("group " + std::to_string(i) + " holds " +
                  std::to_string(group.capacity) +
                  " units, less than one aligned unit of " +
                  std::to_string(alignment));
  }
  if (units < n)
    return fail("the total " + std::to_string(total) + " gives " +
                std::to_string(units) + " aligned units for " +
                std::to_string(n) + " groups; every group needs at least one");
  // Sum of capacities, saturating (capacities may be huge).
  int64_t room = 0;
  for (int64_t cap : caps)
    room = cap > units - room ? units : room + cap;
  if (room < units)
    return fail(
        "the groups hold at most " +
        std::to_string(std::accumulate(caps.begin(), caps.end(), int64_t{0}) *
                       alignment) +
        " of the " + std::to_string(total) + " units");

  // Water-filling on the continuous shares: every group first gets its one
  // unit, the rest goes by speed among the groups with room.
  SmallVector<double> ideal(n, 1.0);
  SmallVector<bool> capped(n, false);
  double left = static_cast<double>(units - n);
  for (int64_t round = 0; round <= n; ++round) {
    double speed = 0;
    for (int64_t i = 0; i < n; ++i)
      if (!capped[i])
        speed += groups[i].speed;
    bool changed = false;
    SmallVector<double> next = ideal;
    for (int64_t i = 0; i < n; ++i) {
      if (capped[i])
        continue;
      next[i] = 1.0 + left * groups[i].speed / speed;
      if (next[i] > static_cast<double>(caps[i])) {
        // Held at capacity; what it cannot take is spread over the others
        // in the next round.
        capped[i] = true;
        changed = true;
      }
    }
    if (!changed) {
      ideal = next;
      break;
    }
    left = static_cast<double>(units - n);
    for (int64_t i = 0; i < n; ++i)
      if (capped[i]) {
        ideal[i] = static_cast<double>(caps[i]);
        left -= ideal[i] - 1.0;
      }
  }

  // Round down, then hand out the units left, one each, by largest
  // remainder among the groups with room (ties: faster, then earlier).
  SmallVector<int64_t> shares(n);
  int64_t given = 0;
  for (int64_t i = 0; i < n; ++i) {
    shares[i] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ideal[i])),
                                    1, caps[i]);
    given += shares[i];
  }
  SmallVector<int64_t> order = llvm::to_vector(llvm::seq<int64_t>(0, n));
  llvm::sort(order, [&](int64_t a, int64_t b) {
    double ra = ideal[a] - std::floor(ideal[a]);
    double rb = ideal[b] - std::floor(ideal[b]);
    if (ra != rb)
      return ra > rb;
    if (groups[a].speed != groups[b].speed)
      return groups[a].speed > groups[b].speed;
    return a < b;
  });
  // Floating-point sums may leave the rounded total off by more than n in
  // either direction only in degenerate cases; loop until it matches.
  while (given != units) {
    bool moved = false;
    for (int64_t i : order) {
      if (given < units && shares[i] < caps[i]) {
        ++shares[i];
        ++given;
        moved = true;
      } else if (given > units && shares[i] > 1) {
        --shares[i];
        --given;
        moved = true;
      }
      if (given == units)
        break;
    }
    if (!moved)
      return fail("could not round the shares to the alignment");
  }
  for (int64_t &share : shares)
    share *= alignment;
  return shares;
}

FailureOr<GroupCapacity> loom::hspmd::getGroupCapacity(ClusterAttr cluster,
                                                       DeviceGroupAttr group,
                                                       int64_t bytesPerUnit,
                                                       int64_t reservedBytes,
                                                       std::string &why) {
  if (bytesPerUnit <= 0) {
    why = "bytes per unit must be positive";
    return failure();
  }
  GroupCapacity capacity;
  capacity.speed = 0;
  int64_t smallest = -1;
  for (int64_t id : group.getDevices()) {
    auto device = llvm::find_if(cluster.getDevices(),
                                [&](DeviceAttr d) { return d.getId() == id; });
    if (device == cluster.getDevices().end()) {
      why = "device " + std::to_string(id) + " is not in the cluster";
      return failure();
    }
    capacity.speed += device->getSpeed().convertToDouble();
    if (device->getMemory() > (std::numeric_limits<int64_t>::max() >> 31)) {
      why = "device " + std::to_string(id) + " has more memory than fits";
      return failure();
    }
    int64_t bytes = device->getMemory() << 30;
    if (reservedBytes > bytes) {
      why = "device " + std::to_string(id) + " has " +
            std::to_string(device->getMemory()) + " GiB, less than the " +
            std::to_string(reservedBytes) + " bytes reserved";
      return failure();
    }
    bytes -= reservedBytes;
    smallest = smallest < 0 ? bytes : std::min(smallest, bytes);
  }
  // The group's devices hold equal parts of its share: the smallest device
  // bounds them all.
  int64_t devices = static_cast<int64_t>(group.getDevices().size());
  int64_t total = 0;
  capacity.capacity = llvm::MulOverflow(smallest, devices, total)
                          ? std::numeric_limits<int64_t>::max() / bytesPerUnit
                          : total / bytesPerUnit;
  return capacity;
}
