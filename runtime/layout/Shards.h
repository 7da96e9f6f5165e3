//===- Shards.h - Global arrays to shards and back --------------*- C++ -*-===//
//
// The two directions between a global array and the shards of a layout: cutting the shard a device holds, and putting
// the global array back together from every device's shard, checking what
// the layout promises (replicas of a block are bitwise equal inside a
// group; pending contributions are combined in contribution order, as
// Collectives.h states). `loom-run`, the simulator and the compiled-program
// library move data in and out of programs with these.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LAYOUT_SHARDS_H
#define LOOM_RUNTIME_LAYOUT_SHARDS_H

#include "runtime/layout/Boxes.h"
#include "runtime/layout/Layout.h"

#include <cstdint>
#include <vector>

namespace loom::layout {

/// Writes into `out` (shard.getNumElements() elements) what a device with
/// `shard` holds of the global array `global` of `shape`: its block; of a
/// pending sum, contribution 0 holds the block and the others zeros (mean,
/// max and min: every contribution holds the block itself, so max and min
/// give the value back, and a mean does up to the rounding of n x / n).
void cutShard(const void *global, const std::vector<int64_t> &shape,
              DType type, const Shard &shard, void *out);

/// One device's shard of an array being put back together.
struct ShardData {
  int64_t device = 0;
  const void *data = nullptr;
  std::vector<int64_t> shape;
};

/// Puts the global array of `shape` back together into `out` from the
/// shards of every device of `layout` (each listed once, any order).
/// Pending contributions combine in contribution order inside a group; a
/// union partial across groups first combines each group's own (in its
/// order), then the groups' values in member order (the hierarchy the
/// exchanges reduce in). NotFound when a device is not in the layout;
/// InvalidArgument, naming what, when a shard has the wrong shape, a device
/// is missing, two replicas differ (across groups, finite floating-point
/// replicas computed with different partitionings may differ by 1e-12
/// relative in f64, 1e-4 in f32, 1e-2 (about one ulp) in bf16, or 1e-7
/// absolute), or a reduction fails.
absl::Status assemble(const Layout &layout, const std::vector<int64_t> &shape,
                      DType type, const std::vector<ShardData> &shards,
                      void *out);

} // namespace loom::layout

#endif // LOOM_RUNTIME_LAYOUT_SHARDS_H
