//===- Switch.cpp - Moving a parameter set between layouts ----------------===//

#include "runtime/layout/Switch.h"

#include "runtime/layout/Boxes.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

using namespace loom::layout;

namespace {

using Ints = std::vector<int64_t>;
using DeviceShards = std::map<int64_t, Shard>;

absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

std::string named(const SwitchTensor &tensor) {
  return "tensor '" + tensor.name + "'";
}

/// Every device's shard of `tensor` under `layout`; InvalidArgument, naming
/// the tensor, where the layout does not fit or holds partial sums.
absl::StatusOr<DeviceShards> shardsOf(const SwitchTensor &tensor,
                                      const Layout &layout,
                                      const std::string &role) {
  if (absl::Status status = checkLayout(layout, tensor.shape); !status.ok())
    return invalid(named(tensor) + ": the " + role + " layout " +
                   layout.str() + " does not fit shape " +
                   toString(tensor.shape) + ": " +
                   std::string(status.message()));
  DeviceShards shards;
  for (int64_t device : layout.getDevices()) {
    absl::StatusOr<Shard> shard = getShard(layout, tensor.shape, device);
    if (!shard.ok())
      return invalid(named(tensor) + ": " + std::string(shard.status().message()));
    if (shard->numPartials > 1)
      return invalid(named(tensor) + ": the " + role + " layout " +
                     layout.str() + " holds partial sums on device " +
                     std::to_string(device) +
                     "; a switch moves complete values");
    shards.emplace(device, *std::move(shard));
  }
  return shards;
}

int64_t bytesOf(const Shard &shard, int64_t elementBytes) {
  return shard.getNumElements() * elementBytes;
}

/// The elements `a` and `b` have in common.
int64_t overlapElements(const Shard &a, const Shard &b) {
  Box common;
  if (!intersect({a.offsets, a.sizes}, {b.offsets, b.sizes}, common))
    return 0;
  int64_t elements = 1;
  for (int64_t size : common.sizes)
    elements *= size;
  return elements;
}

int64_t ceilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

/// `layout` with every device renamed by `relabelling`.
Layout relabel(Layout layout, const std::map<int64_t, int64_t> &relabelling) {
  for (Member &member : layout.members)
    for (int64_t &device : member.devices) {
      auto it = relabelling.find(device);
      if (it != relabelling.end())
        device = it->second;
    }
  return layout;
}

} // namespace

absl::StatusOr<std::vector<int64_t>>
loom::layout::solveAssignment(const std::vector<std::vector<int64_t>> &cost) {
  size_t n = cost.size();
  for (size_t i = 0; i < n; ++i) {
    if (cost[i].size() != n)
      return invalid("an assignment needs a square cost matrix; row " +
                     std::to_string(i) + " has " +
                     std::to_string(cost[i].size()) + " entries for " +
                     std::to_string(n) + " rows");
    for (int64_t c : cost[i])
      if (c < 0)
        return invalid("an assignment needs non-negative costs; row " +
                       std::to_string(i) + " has " + std::to_string(c));
  }
  if (n == 0)
    return std::vector<int64_t>{};
  // Rows and columns from 1; column 0 is the virtual start of each
  // augmenting path. u, v: the potentials (u[i] + v[j] <= cost, tight on
  // the matching); match[j]: the row matched to column j.
  const int64_t infinity = std::numeric_limits<int64_t>::max() / 4;
  std::vector<int64_t> u(n + 1, 0), v(n + 1, 0);
  std::vector<size_t> match(n + 1, 0), previous(n + 1, 0);
  for (size_t row = 1; row <= n; ++row) {
    match[0] = row;
    size_t column = 0;
    std::vector<int64_t> slack(n + 1, infinity);
    std::vector<char> visited(n + 1, 0);
    // Grow the tree of tight edges from `row` until it reaches a free
    // column, raising the potentials by the least slack each time.
    do {
      visited[column] = 1;
      size_t current = match[column], next = 0;
      int64_t delta = infinity;
      for (size_t j = 1; j <= n; ++j) {
        if (visited[j])
          continue;
        int64_t reduced = cost[current - 1][j - 1] - u[current] - v[j];
        if (reduced < slack[j]) {
          slack[j] = reduced;
          previous[j] = column;
        }
        if (slack[j] < delta) {
          delta = slack[j];
          next = j;
        }
      }
      for (size_t j = 0; j <= n; ++j) {
        if (visited[j]) {
          u[match[j]] += delta;
          v[j] -= delta;
        } else {
          slack[j] -= delta;
        }
      }
      column = next;
    } while (match[column] != 0);
    // Flip the augmenting path.
    do {
      size_t before = previous[column];
      match[column] = match[before];
      column = before;
    } while (column != 0);
  }
  std::vector<int64_t> result(n, 0);
  for (size_t j = 1; j <= n; ++j)
    result[match[j] - 1] = static_cast<int64_t>(j - 1);
  return result;
}

absl::StatusOr<SwitchPlan>
loom::layout::planSwitch(const std::vector<SwitchTensor> &tensors,
                         const Topology &topology,
                         const SwitchOptions &options) {
  size_t count = tensors.size();
  std::vector<DeviceShards> sources(count), targets(count);
  for (size_t t = 0; t < count; ++t) {
    const SwitchTensor &tensor = tensors[t];
    if (tensor.elementBytes <= 0)
      return invalid(named(tensor) + ": elements of " +
                     std::to_string(tensor.elementBytes) + " bytes");
    absl::StatusOr<DeviceShards> from = shardsOf(tensor, tensor.from, "source");
    if (!from.ok())
      return from.status();
    absl::StatusOr<DeviceShards> to = shardsOf(tensor, tensor.to, "target");
    if (!to.ok())
      return to.status();
    sources[t] = *std::move(from);
    targets[t] = *std::move(to);
  }
  auto nodeOf = [&](int64_t device) -> int64_t {
    auto it = topology.nodeOf.find(device);
    return it == topology.nodeOf.end() ? 0 : it->second;
  };
  auto kindOf = [&](int64_t device) -> std::string {
    auto it = topology.kindOf.find(device);
    return it == topology.kindOf.end() ? std::string() : it->second;
  };

  // What device `p` lacks of the blocks the targets give device `r`.
  auto lack = [&](int64_t role, int64_t device) {
    int64_t bytes = 0;
    for (size_t t = 0; t < count; ++t) {
      auto target = targets[t].find(role);
      if (target == targets[t].end())
        continue;
      int64_t missing = target->second.getNumElements();
      auto own = sources[t].find(device);
      if (own != sources[t].end())
        missing -= overlapElements(target->second, own->second);
      bytes += missing * tensors[t].elementBytes;
    }
    return bytes;
  };

  // The roles, by class of interchangeable devices (node, kind); the best
  // relabelling inside each class. Among relabellings of equal volume the
  // assignment prefers the one that renames the fewest devices (identity
  // first), by a tie-breaking term below one byte.
  std::map<std::pair<int64_t, std::string>, Ints> classes;
  for (const DeviceShards &shards : targets)
    for (auto &entry : shards) {
      Ints &members = classes[{nodeOf(entry.first), kindOf(entry.first)}];
      if (std::find(members.begin(), members.end(), entry.first) ==
          members.end())
        members.push_back(entry.first);
    }
  SwitchPlan plan;
  std::map<int64_t, int64_t> best;
  for (auto &[key, members] : classes) {
    std::sort(members.begin(), members.end());
    int64_t n = static_cast<int64_t>(members.size());
    std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t p = 0; p < n; ++p) {
        int64_t bytes = lack(members[r], members[p]);
        if (bytes > std::numeric_limits<int64_t>::max() / (4 * (n + 1)))
          return invalid("a switch of more than " +
                         std::to_string(std::numeric_limits<int64_t>::max() /
                                        (4 * (n + 1))) +
                         " bytes per device");
        cost[r][p] = bytes * (n + 1) + (r != p ? 1 : 0);
      }
    absl::StatusOr<Ints> assignment = solveAssignment(cost);
    if (!assignment.ok())
      return assignment.status();
    for (int64_t r = 0; r < n; ++r) {
      plan.identityMinimum += lack(members[r], members[r]);
      plan.relabelledMinimum += lack(members[r], members[(*assignment)[r]]);
      best[members[r]] = members[(*assignment)[r]];
    }
  }
  for (auto &[key, members] : classes)
    for (int64_t device : members)
      plan.relabelling[device] = options.relabel ? best[device] : device;

  // Every tensor's transfers, senders balanced over the whole set.
  std::map<int64_t, int64_t> deviceLoad;
  std::map<std::pair<int64_t, int64_t>, int64_t> linkLoad;
  SenderChoice choice{&topology.nodeOf, &deviceLoad, &linkLoad};
  std::map<std::pair<int64_t, int64_t>, SwitchMessage> messages;
  std::map<int64_t, int64_t> forcedSent, crossNodeIn, lacking;
  std::map<std::pair<int64_t, int64_t>, int64_t> forcedLink;
  std::set<int64_t> holders, holderNodes;
  for (size_t t = 0; t < count; ++t) {
    const SwitchTensor &tensor = tensors[t];
    Layout target = relabel(tensor.to, plan.relabelling);
    absl::StatusOr<TransferPlan> transfers =
        planTransfers(tensor.from, target, tensor.shape, tensor.elementBytes,
                      options.maxCells, choice);
    if (!transfers.ok())
      return invalid(named(tensor) + ": " +
                     std::string(transfers.status().message()));
    for (const Transfer &transfer : transfers->transfers) {
      SwitchMessage &message =
          messages[{transfer.source, transfer.destination}];
      message.source = transfer.source;
      message.destination = transfer.destination;
      message.pieces.push_back({static_cast<int64_t>(t), transfer.offsets,
                                transfer.sizes, transfer.bytes});
      message.bytes += transfer.bytes;
      plan.sent[transfer.source] += transfer.bytes;
      plan.received[transfer.destination] += transfer.bytes;
      plan.totalBytes += transfer.bytes;
      int64_t from = nodeOf(transfer.source), to = nodeOf(transfer.destination);
      if (from != to)
        plan.linkBytes[{from, to}] += transfer.bytes;
    }
    for (auto &[device, bytes] : transfers->forcedSent)
      forcedSent[device] += bytes;
    for (auto &[node, bytes] : transfers->crossNodeIn)
      crossNodeIn[node] += bytes;
    for (auto &[link, bytes] : transfers->forcedLink)
      forcedLink[link] += bytes;
    for (auto &[device, shard] : sources[t])
      if (shard.getNumElements() > 0) {
        holders.insert(device);
        holderNodes.insert(nodeOf(device));
      }
    // What each device of the relabelled target lacks, independently of
    // the transfers (the receive bound), and what stays.
    for (auto &[role, block] : targets[t]) {
      int64_t device = plan.relabelling.at(role);
      int64_t bytes = bytesOf(block, tensor.elementBytes);
      auto own = sources[t].find(device);
      int64_t kept = own == sources[t].end()
                         ? 0
                         : overlapElements(block, own->second) *
                               tensor.elementBytes;
      lacking[device] += bytes - kept;
      plan.keptBytes += kept;
    }
    plan.targets.push_back(std::move(target));
  }
  for (auto &entry : messages)
    plan.messages.push_back(std::move(entry.second));

  // The figures and their bounds (Switch.h).
  for (auto &[device, bytes] : plan.sent)
    plan.maxSent = std::max(plan.maxSent, bytes);
  for (auto &[device, bytes] : plan.received)
    plan.maxReceived = std::max(plan.maxReceived, bytes);
  for (auto &[device, bytes] : lacking)
    plan.maxReceivedBound = std::max(plan.maxReceivedBound, bytes);
  plan.maxSentBound =
      ceilDiv(plan.totalBytes, static_cast<int64_t>(holders.size()));
  for (auto &[device, bytes] : forcedSent)
    plan.maxSentBound = std::max(plan.maxSentBound, bytes);
  for (auto &[link, bytes] : plan.linkBytes) {
    plan.maxLink = std::max(plan.maxLink, bytes);
    plan.crossNodeBytes += bytes;
  }
  for (auto &[link, bytes] : forcedLink)
    plan.maxLinkBound = std::max(plan.maxLinkBound, bytes);
  for (auto &[node, bytes] : crossNodeIn) {
    plan.crossNodeBound += bytes;
    int64_t others = static_cast<int64_t>(holderNodes.size()) -
                     (holderNodes.count(node) ? 1 : 0);
    plan.maxLinkBound = std::max(plan.maxLinkBound, ceilDiv(bytes, others));
  }
  return plan;
}

namespace {

/// Every tensor's shards under its `from` layout and under the plan's
/// target (relabelled) layout.
absl::Status shardsOfSwitch(const SwitchPlan &plan,
                            const std::vector<SwitchTensor> &tensors,
                            std::vector<DeviceShards> &from,
                            std::vector<DeviceShards> &to) {
  size_t count = tensors.size();
  if (plan.targets.size() != count)
    return invalid("a switch of " + std::to_string(count) +
                   " tensors given a plan of " +
                   std::to_string(plan.targets.size()));
  from.assign(count, {});
  to.assign(count, {});
  for (size_t t = 0; t < count; ++t) {
    absl::StatusOr<DeviceShards> before =
        shardsOf(tensors[t], tensors[t].from, "source");
    if (!before.ok())
      return before.status();
    from[t] = *std::move(before);
    absl::StatusOr<DeviceShards> after =
        shardsOf(tensors[t], plan.targets[t], "target");
    if (!after.ok())
      return after.status();
    to[t] = *std::move(after);
  }
  return absl::OkStatus();
}

/// Checks that `own[t]` is `device`'s source shard of tensor t (or null
/// where it holds none).
absl::Status checkOwn(const std::vector<SwitchTensor> &tensors,
                      const std::vector<DeviceShards> &from, int64_t device,
                      const std::vector<ShardBytes> &own) {
  if (own.size() != tensors.size())
    return invalid("a switch of " + std::to_string(tensors.size()) +
                   " tensors given " + std::to_string(own.size()) +
                   " source shards of device " + std::to_string(device));
  for (size_t t = 0; t < tensors.size(); ++t) {
    auto shard = from[t].find(device);
    int64_t expected =
        shard == from[t].end() ? 0 : bytesOf(shard->second, tensors[t].elementBytes);
    bool holds = shard != from[t].end();
    // (A held shard of no elements may come without data.)
    bool given = own[t].data != nullptr || (holds && expected == 0);
    if (holds != given || (holds && own[t].bytes != expected))
      return invalid(named(tensors[t]) + ": device " + std::to_string(device) +
                     (holds ? " needs a source shard of " +
                                  std::to_string(expected) + " bytes"
                            : " holds nothing of it before the switch"));
  }
  return absl::OkStatus();
}

/// Where `piece` starts within `shard` (both in global coordinates).
Ints startWithin(const SwitchPiece &piece, const Shard &shard) {
  Ints start;
  for (size_t d = 0; d < piece.offsets.size(); ++d)
    start.push_back(piece.offsets[d] - shard.offsets[d]);
  return start;
}

bool holdsAny(const Layout &layout, int64_t device) {
  std::vector<int64_t> devices = layout.getDevices();
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

} // namespace

absl::StatusOr<std::vector<std::vector<char>>>
loom::layout::packSwitch(const SwitchPlan &plan,
                         const std::vector<SwitchTensor> &tensors,
                         int64_t device, const std::vector<ShardBytes> &own) {
  std::vector<DeviceShards> from, to;
  if (absl::Status status = shardsOfSwitch(plan, tensors, from, to);
      !status.ok())
    return status;
  if (absl::Status status = checkOwn(tensors, from, device, own); !status.ok())
    return status;
  std::vector<std::vector<char>> buffers;
  for (const SwitchMessage &message : plan.messages) {
    if (message.source != device)
      continue;
    std::vector<char> &buffer = buffers.emplace_back(
        static_cast<size_t>(std::max<int64_t>(message.bytes, 0)));
    int64_t at = 0;
    for (const SwitchPiece &piece : message.pieces) {
      size_t t = static_cast<size_t>(piece.tensor);
      const Shard &source = from[t].at(device);
      Ints start = startWithin(piece, source);
      if (at + piece.bytes > message.bytes)
        return invalid("a message from device " + std::to_string(device) +
                       " whose pieces exceed its bytes");
      copyBox(own[t].data, source.sizes, start, buffer.data() + at,
              piece.sizes, Ints(piece.sizes.size(), 0), piece.sizes,
              tensors[t].elementBytes);
      at += piece.bytes;
    }
  }
  return buffers;
}

absl::StatusOr<std::vector<std::vector<char>>>
loom::layout::unpackSwitch(const SwitchPlan &plan,
                           const std::vector<SwitchTensor> &tensors,
                           int64_t device, const std::vector<ShardBytes> &own,
                           const std::vector<std::vector<char>> &received) {
  std::vector<DeviceShards> from, to;
  if (absl::Status status = shardsOfSwitch(plan, tensors, from, to);
      !status.ok())
    return status;
  if (absl::Status status = checkOwn(tensors, from, device, own); !status.ok())
    return status;
  std::vector<std::vector<char>> result(tensors.size());
  // What it keeps.
  for (size_t t = 0; t < tensors.size(); ++t) {
    auto block = to[t].find(device);
    if (block == to[t].end())
      continue;
    result[t].assign(
        static_cast<size_t>(bytesOf(block->second, tensors[t].elementBytes)),
        0);
    auto mine = from[t].find(device);
    if (mine != from[t].end())
      copyOverlap(own[t].data, {mine->second.offsets, mine->second.sizes},
                  result[t].data(),
                  {block->second.offsets, block->second.sizes},
                  tensors[t].elementBytes);
  }
  // What it receives, message by message in plan order.
  size_t next = 0;
  for (const SwitchMessage &message : plan.messages) {
    if (message.destination != device)
      continue;
    if (next >= received.size() ||
        static_cast<int64_t>(received[next].size()) != message.bytes)
      return invalid("device " + std::to_string(device) + " expects " +
                     std::to_string(message.bytes) + " bytes from device " +
                     std::to_string(message.source));
    const std::vector<char> &buffer = received[next++];
    int64_t at = 0;
    for (const SwitchPiece &piece : message.pieces) {
      size_t t = static_cast<size_t>(piece.tensor);
      const Shard &block = to[t].at(device);
      Ints start = startWithin(piece, block);
      copyBox(buffer.data() + at, piece.sizes, Ints(piece.sizes.size(), 0),
              result[t].data(), block.sizes, start, piece.sizes,
              tensors[t].elementBytes);
      at += piece.bytes;
    }
  }
  if (next != received.size())
    return invalid("device " + std::to_string(device) + " was given " +
                   std::to_string(received.size()) + " messages, the plan sends it " +
                   std::to_string(next));
  return result;
}

absl::StatusOr<std::vector<std::map<int64_t, std::vector<char>>>>
loom::layout::executeSwitch(
    const SwitchPlan &plan, const std::vector<SwitchTensor> &tensors,
    const std::vector<std::map<int64_t, std::vector<char>>> &sources) {
  size_t count = tensors.size();
  if (sources.size() != count)
    return invalid("a switch of " + std::to_string(count) + " tensors given " +
                   std::to_string(sources.size()) + " tensors' shards");
  // Every device of any source or target, each doing its part as a rank
  // would: pack what it sends, then unpack what it keeps and receives.
  std::set<int64_t> devices;
  for (size_t t = 0; t < count; ++t) {
    for (int64_t d : tensors[t].from.getDevices())
      devices.insert(d);
    if (t < plan.targets.size())
      for (int64_t d : plan.targets[t].getDevices())
        devices.insert(d);
  }
  auto ownOf = [&](int64_t device) {
    std::vector<ShardBytes> own(count);
    for (size_t t = 0; t < count; ++t) {
      auto it = sources[t].find(device);
      if (it != sources[t].end() && holdsAny(tensors[t].from, device))
        own[t] = {it->second.empty() ? "" : it->second.data(),
                  static_cast<int64_t>(it->second.size())};
    }
    return own;
  };
  std::map<int64_t, std::vector<std::vector<char>>> sent;
  for (int64_t device : devices) {
    absl::StatusOr<std::vector<std::vector<char>>> packed =
        packSwitch(plan, tensors, device, ownOf(device));
    if (!packed.ok())
      return packed.status();
    sent[device] = *std::move(packed);
  }
  // (Each source's buffers are in plan order; deal them out.)
  std::map<int64_t, size_t> taken;
  std::map<int64_t, std::vector<std::vector<char>>> inbox;
  for (const SwitchMessage &message : plan.messages)
    inbox[message.destination].push_back(
        std::move(sent[message.source][taken[message.source]++]));
  std::vector<std::map<int64_t, std::vector<char>>> result(count);
  for (int64_t device : devices) {
    absl::StatusOr<std::vector<std::vector<char>>> shards =
        unpackSwitch(plan, tensors, device, ownOf(device), inbox[device]);
    if (!shards.ok())
      return shards.status();
    for (size_t t = 0; t < count; ++t)
      if (holdsAny(plan.targets[t], device))
        result[t][device] = std::move((*shards)[t]);
  }
  return result;
}

std::string loom::layout::describeSwitch(const SwitchPlan &plan) {
  auto text = [](int64_t value) { return std::to_string(value); };
  std::string out =
      "volume " + text(plan.totalBytes) + " bytes (identity minimum " +
      text(plan.identityMinimum) + ", relabelled minimum " +
      text(plan.relabelledMinimum) + "), kept " + text(plan.keptBytes) + "\n";
  out += "messages " + text(static_cast<int64_t>(plan.messages.size())) +
         ", largest sent " + text(plan.maxSent) + " (bound " +
         text(plan.maxSentBound) + "), received " + text(plan.maxReceived) +
         " (bound " + text(plan.maxReceivedBound) + ")\n";
  out += "cross-node " + text(plan.crossNodeBytes) + " (bound " +
         text(plan.crossNodeBound) + "), largest link " + text(plan.maxLink) +
         " (bound " + text(plan.maxLinkBound) + ")\n";
  std::string moved;
  for (auto &[role, device] : plan.relabelling)
    if (role != device)
      moved += (moved.empty() ? "" : ", ") + text(role) + "->" + text(device);
  if (!moved.empty())
    out += "relabelling " + moved + "\n";
  return out;
}
