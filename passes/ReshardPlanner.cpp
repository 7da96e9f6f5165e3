//===- ReshardPlanner.cpp - A reshard as a chain of collectives -----------===//

#include "passes/ReshardPlanner.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

int64_t loom::getLocalBytes(const MeshLayout &layout, const Mesh &mesh,
                            ArrayRef<int64_t> shape, int64_t elementBytes) {
  int64_t bytes = elementBytes;
  for (auto [dim, size] : llvm::enumerate(shape)) {
    int64_t degree = 1;
    for (auto [axis, role] : llvm::enumerate(layout.roles))
      if (role.isSplit() && role.dim == static_cast<int64_t>(dim))
        degree *= mesh.sizes[axis];
    bytes *= size / degree;
  }
  return bytes;
}

namespace {

using Key = std::vector<int64_t>;

/// Meshes of up to this many axes try every set of axes and every
/// permutation; larger ones contiguous runs and exchanges of two axes.
constexpr int64_t kMaxFullMeshRank = 5;
/// The search gives up after settling this many layouts.
constexpr int64_t kMaxSettled = 20000;

Key keyOf(const MeshLayout &layout) {
  Key key;
  for (const MeshRole &role : layout.roles) {
    key.push_back(static_cast<int64_t>(role.kind));
    key.push_back(role.dim);
    key.push_back(role.isPartial() ? static_cast<int64_t>(role.reduction) : -1);
    // (Explicit blocks never reach the planner, which moves equal blocks;
    // their proportions would still tell layouts apart.)
    key.push_back(static_cast<int64_t>(role.ratio.size()));
    key.insert(key.end(), role.ratio.begin(), role.ratio.end());
  }
  return key;
}

/// Whether `layout` has a states spelling and every split dimension
/// divides by its degree.
bool isUsable(const MeshLayout &layout, const Mesh &mesh,
              ArrayRef<int64_t> shape) {
  if (!isRepresentable(layout.roles))
    return false;
  for (auto [dim, size] : llvm::enumerate(shape)) {
    int64_t degree = 1;
    for (auto [axis, role] : llvm::enumerate(layout.roles))
      if (role.isSplit() && role.dim == static_cast<int64_t>(dim))
        degree *= mesh.sizes[axis];
    if (size % degree != 0)
      return false;
  }
  return llvm::all_of(layout.roles, [&](const MeshRole &role) {
    return !role.isSplit() || role.dim < static_cast<int64_t>(shape.size());
  });
}

/// Every collective worth trying from `layout`, in a fixed order.
std::vector<CollectiveStep> candidates(const MeshLayout &layout,
                                       const MeshLayout &target,
                                       const Mesh &mesh, int64_t rank) {
  std::vector<CollectiveStep> steps;
  int64_t meshRank = mesh.getRank();
  // Sets of mesh axes: every subset on small meshes, contiguous runs on
  // large ones (the search stays polynomial).
  std::vector<SmallVector<int64_t>> axisSets;
  if (meshRank <= kMaxFullMeshRank) {
    for (uint64_t mask = 1; mask < (uint64_t{1} << meshRank); ++mask) {
      SmallVector<int64_t> axes;
      for (int64_t axis = 0; axis < meshRank; ++axis)
        if (mask & (uint64_t{1} << axis))
          axes.push_back(axis);
      axisSets.push_back(std::move(axes));
    }
  } else {
    for (int64_t first = 0; first < meshRank; ++first)
      for (int64_t last = first; last < meshRank; ++last)
        axisSets.push_back(llvm::to_vector(llvm::seq(first, last + 1)));
  }
  for (const SmallVector<int64_t> &axes : axisSets) {
    // Every axis of the set must have the same role for any step but a
    // permute to apply.
    const MeshRole &role = layout.roles[axes.front()];
    if (!llvm::all_of(axes, [&](int64_t a) { return layout.roles[a] == role; }))
      continue;
    auto add = [&](CollectiveKind kind, int64_t dim, int64_t concat) {
      CollectiveStep step;
      step.kind = kind;
      step.axes = axes;
      step.dim = dim;
      step.concatDim = concat;
      step.reduction = role.reduction;
      steps.push_back(std::move(step));
    };
    // Partial sums are made only where the target wants them.
    bool wantsPartial = llvm::all_of(axes, [&](int64_t a) {
      return target.roles[a] == MeshRole::partial(ReductionKind::Sum);
    });
    if (wantsPartial && !role.isPartial())
      add(CollectiveKind::MakePartial, role.isSplit() ? role.dim : -1, -1);
    if (role.isPartial()) {
      add(CollectiveKind::AllReduce, -1, -1);
      for (int64_t d = 0; d < rank; ++d)
        add(CollectiveKind::ReduceScatter, d, -1);
    } else if (role.isDuplicate()) {
      for (int64_t d = 0; d < rank; ++d)
        add(CollectiveKind::LocalSlice, d, -1);
    } else {
      add(CollectiveKind::AllGather, role.dim, -1);
      for (int64_t d = 0; d < rank; ++d)
        if (d != role.dim)
          add(CollectiveKind::AllToAll, d, role.dim);
    }
  }
  // Permutations of the mesh axes that leave partial axes in place (a
  // pending reduction is never moved): all of them on small meshes, the
  // exchanges of two axes on large ones.
  std::vector<SmallVector<int64_t>> orders;
  SmallVector<int64_t> identity =
      llvm::to_vector(llvm::seq<int64_t>(0, meshRank));
  if (meshRank <= kMaxFullMeshRank) {
    SmallVector<int64_t> order = identity;
    while (std::next_permutation(order.begin(), order.end()))
      orders.push_back(order);
  } else {
    for (int64_t a = 0; a < meshRank; ++a)
      for (int64_t b = a + 1; b < meshRank; ++b) {
        SmallVector<int64_t> order = identity;
        std::swap(order[a], order[b]);
        orders.push_back(std::move(order));
      }
  }
  for (const SmallVector<int64_t> &order : orders) {
    // order[a]: where axis a's role goes.
    CollectiveStep step;
    step.kind = CollectiveKind::Permute;
    bool ok = true;
    for (int64_t a = 0; a < meshRank; ++a)
      if (order[a] != a) {
        ok &= !layout.roles[a].isPartial() &&
              mesh.sizes[a] == mesh.sizes[order[a]];
        step.axes.push_back(a);
      }
    if (!ok)
      continue;
    for (int64_t a : step.axes)
      step.perm.push_back(llvm::find(step.axes, order[a]) - step.axes.begin());
    steps.push_back(std::move(step));
  }
  return steps;
}

} // namespace

FailureOr<ReshardPlan> loom::planReshard(DistStatesAttr from, DistStatesAttr to,
                                         ArrayRef<int64_t> shape,
                                         int64_t elementBytes,
                                         std::string &why) {
  ReshardPlan plan;
  FailureOr<Mesh> mesh = refineMesh({from, to});
  if (failed(mesh)) {
    why = "the layouts share no mesh (their axis strides do not divide one "
          "another); that needs a send/recv plan";
    return failure();
  }
  plan.mesh = *mesh;
  FailureOr<MeshLayout> source = toMeshLayout(from, plan.mesh);
  FailureOr<MeshLayout> target = toMeshLayout(to, plan.mesh);
  if (failed(source) || failed(target)) {
    why = "the layouts cannot be read on their common mesh";
    return failure();
  }
  // A partial sum can be made locally (make_partial) from a split or a
  // duplicate; any other pending reduction only kept.
  for (auto [axis, want] : llvm::enumerate(target->roles)) {
    const MeshRole &have = source->roles[axis];
    if (!want.isPartial() || have == want)
      continue;
    if (want.reduction == ReductionKind::Sum && !have.isPartial())
      continue;
    why = "the target holds a pending reduction " + want.str() +
          " on mesh axis " + std::to_string(axis) + " of " + plan.mesh.str() +
          " where the source has " + have.str() +
          "; a reshard can make a partial sum from a split or a duplicate, "
          "but no other pending reduction";
    return failure();
  }

  // Dijkstra over mesh layouts: (bytes, steps) lexicographically.
  struct Node {
    int64_t bytes = 0, steps = 0;
    Key parent;
    CollectiveStep step;
    MeshLayout layout;
    bool done = false;
  };
  std::map<Key, Node> nodes;
  using Entry = std::tuple<int64_t, int64_t, int64_t, Key>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  int64_t counter = 0, settled = 0;
  Key start = keyOf(*source), goal = keyOf(*target);
  nodes[start].layout = *source;
  queue.push({0, 0, counter++, start});
  int64_t rank = shape.size();
  while (!queue.empty()) {
    auto [bytes, steps, ignored, key] = queue.top();
    queue.pop();
    Node &node = nodes[key];
    if (node.done)
      continue;
    node.done = true;
    if (key == goal)
      break;
    if (++settled > kMaxSettled) {
      why = "the search for a chain of collectives from " + source->str() +
            " to " + target->str() + " on mesh " + plan.mesh.str() +
            " gave up after " + std::to_string(kMaxSettled) + " layouts";
      return failure();
    }
    MeshLayout current = node.layout;
    int64_t local = getLocalBytes(current, plan.mesh, shape, elementBytes);
    for (const CollectiveStep &step :
         candidates(current, *target, plan.mesh, rank)) {
      std::string ignoredWhy;
      FailureOr<MeshLayout> next =
          applyCollective(step, current, plan.mesh, ignoredWhy);
      if (failed(next) || !isUsable(*next, plan.mesh, shape))
        continue;
      int64_t cost =
          step.kind == CollectiveKind::Permute
              ? local
              : getStepBytesSent(step, plan.mesh, local, elementBytes, 0);
      int64_t total = bytes + cost;
      Key nextKey = keyOf(*next);
      auto [it, inserted] = nodes.try_emplace(nextKey);
      Node &other = it->second;
      if (other.done)
        continue;
      if (!inserted && std::make_pair(other.bytes, other.steps) <=
                           std::make_pair(total, steps + 1))
        continue;
      other.bytes = total;
      other.steps = steps + 1;
      other.parent = key;
      other.step = step;
      other.layout = *next;
      queue.push({total, steps + 1, counter++, nextKey});
    }
  }
  auto found = nodes.find(goal);
  if (found == nodes.end() || !found->second.done) {
    why = "no chain of collectives turns " + source->str() + " into " +
          target->str() + " on mesh " + plan.mesh.str() +
          " through layouts that fit the tensor";
    return failure();
  }
  plan.bytes = found->second.bytes;
  for (Key key = goal; key != start; key = nodes[key].parent) {
    plan.steps.push_back(nodes[key].step);
    plan.layouts.push_back(nodes[key].layout);
  }
  plan.layouts.push_back(*source);
  std::reverse(plan.steps.begin(), plan.steps.end());
  std::reverse(plan.layouts.begin(), plan.layouts.end());
  return plan;
}
