//===- Shards.cpp - Global arrays to shards and back ----------------------===//

#include "runtime/layout/Shards.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

using namespace loom::layout;

void loom::layout::cutShard(const void *global,
                            const std::vector<int64_t> &shape, DType type,
                            const Shard &shard, void *out) {
  int64_t elementBytes = getElementBytes(type);
  if (shard.reduction == Reduction::Sum && shard.partialIndex != 0) {
    std::memset(out, 0,
                static_cast<size_t>(shard.getNumElements() * elementBytes));
    return;
  }
  copyBox(global, shape, shard.offsets, out, shard.sizes,
          std::vector<int64_t>(shape.size(), 0), shard.sizes, elementBytes);
}

namespace {

absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

absl::Status cannotReduce(DType type, Reduction kind) {
  return invalid(std::string("cannot reduce ") + getName(type) + " with '" +
                 getName(kind) + "'");
}

std::string describe(const std::vector<int64_t> &shape, DType type) {
  std::string text;
  for (int64_t size : shape)
    text += std::to_string(size) + "x";
  return text + getName(type);
}

double elementAsDouble(const char *data, DType type) {
  switch (type) {
  case DType::F32: {
    float value;
    std::memcpy(&value, data, sizeof(value));
    return value;
  }
  case DType::F64: {
    double value;
    std::memcpy(&value, data, sizeof(value));
    return value;
  }
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, data, sizeof(bits));
    return bf16ToFloat(bits);
  }
  case DType::I1:
    return *data != 0;
  case DType::I32: {
    int32_t value;
    std::memcpy(&value, data, sizeof(value));
    return value;
  }
  case DType::I64: {
    int64_t value;
    std::memcpy(&value, data, sizeof(value));
    return static_cast<double>(value);
  }
  }
  return 0;
}

/// The devices' shards under `layout`, each checked against its data.
absl::StatusOr<std::vector<Shard>>
shardsOf(const Layout &layout, const std::vector<int64_t> &shape, DType type,
         const std::vector<ShardData> &shards) {
  std::vector<Shard> result;
  std::set<int64_t> listed;
  for (const ShardData &data : shards) {
    absl::StatusOr<Shard> shard = getShard(layout, shape, data.device);
    if (!shard.ok())
      return shard.status();
    if (data.shape != shard->sizes)
      return invalid("device " + std::to_string(data.device) + " holds a " +
                     describe(data.shape, type) + " array but its shard of " +
                     layout.str() + " has shape " + toString(shard->sizes));
    if (!listed.insert(data.device).second)
      return invalid("device " + std::to_string(data.device) +
                     " gives two shards");
    result.push_back(*std::move(shard));
  }
  for (int64_t device : layout.getDevices())
    if (!listed.count(device))
      return invalid("device " + std::to_string(device) + " of " +
                     layout.str() + " gives no shard");
  return result;
}

/// Several groups that hold complete values: paints every shard into the
/// result, checking overlaps against what is there. Replicas inside a
/// group must be bitwise equal; replicas in different groups may have been
/// computed with different partitionings (a sum in another order), so
/// finite floating-point ones agree to a tolerance relative to the larger
/// magnitude: 1e-12 in f64, 1e-4 in f32, 1e-2 (about one ulp) in bf16, or
/// 1e-7 absolute near zero (a few roundings of their precision accumulated
/// over a step).
absl::Status paint(const Layout &layout, const std::vector<int64_t> &shape,
                   DType type, const std::vector<ShardData> &shards,
                   const std::vector<Shard> &held, void *out) {
  int64_t elementBytes = getElementBytes(type);
  bool isFloat =
      type == DType::F32 || type == DType::F64 || type == DType::BF16;
  // bf16 keeps 8 bits: one ulp is 2^-8 to 2^-7 relative.
  double relative = type == DType::F64   ? 1e-12
                    : type == DType::BF16 ? 1e-2
                                          : 1e-4;
  double absolute = type == DType::F64 ? 0.0 : 1e-7;
  char *result = static_cast<char *>(out);
  int64_t total = getNumElements(shape);
  // Per element: 1 + the member that wrote it first, or 0.
  std::vector<int64_t> written(static_cast<size_t>(total), 0);
  size_t rank = shape.size();
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard &shard = held[i];
    const char *piece = static_cast<const char *>(shards[i].data);
    int64_t member = layout.getMemberOf(shards[i].device) + 1;
    std::vector<int64_t> index(rank, 0);
    for (int64_t local = 0; local < shard.getNumElements(); ++local) {
      int64_t flat = 0;
      for (size_t d = 0; d < rank; ++d)
        flat = flat * shape[d] + shard.offsets[d] + index[d];
      const char *from = piece + local * elementBytes;
      char *to = result + flat * elementBytes;
      if (!written[flat]) {
        std::memcpy(to, from, static_cast<size_t>(elementBytes));
        written[flat] = member;
      } else if (std::memcmp(to, from, static_cast<size_t>(elementBytes))) {
        double a = elementAsDouble(from, type), b = elementAsDouble(to, type);
        bool close = isFloat && written[flat] != member &&
                     std::isfinite(a) && std::isfinite(b) &&
                     (std::abs(a - b) <=
                          relative * std::max(std::abs(a), std::abs(b)) ||
                      std::abs(a - b) <= absolute);
        if (!close)
          return invalid("device " + std::to_string(shards[i].device) +
                         " holds element " + toString(index) +
                         " of its block as " + std::to_string(a) +
                         " but a device of " +
                         (written[flat] == member ? "its own" : "another") +
                         " group holds it as " + std::to_string(b));
      }
      for (size_t d = rank; d-- > 0 && ++index[d] == shard.sizes[d];)
        index[d] = 0;
    }
  }
  if (std::find(written.begin(), written.end(), 0) != written.end())
    return invalid("the devices do not cover the whole array under " +
                   layout.str());
  return absl::OkStatus();
}

} // namespace

absl::Status loom::layout::assemble(const Layout &layout,
                                    const std::vector<int64_t> &shape,
                                    DType type,
                                    const std::vector<ShardData> &shards,
                                    void *out) {
  if (shards.empty())
    return invalid("no shards to put together");
  absl::StatusOr<std::vector<Shard>> held =
      shardsOf(layout, shape, type, shards);
  if (!held.ok())
    return held.status();
  int64_t elementBytes = getElementBytes(type);
  int64_t total = getNumElements(shape);
  bool complete = std::all_of(held->begin(), held->end(), [](const Shard &s) {
    return s.numPartials == 1;
  });
  if (complete && layout.members.size() > 1)
    return paint(layout, shape, type, shards, *held, out);

  // Partial across groups: each group's contribution, put together from its
  // devices under its states, then combined in group order.
  if (layout.members.size() > 1 && layout.relation == Relation::Partial) {
    std::vector<std::vector<char>> terms;
    for (size_t m = 0; m < layout.members.size(); ++m) {
      Layout part = Layout::group(layout.members[m].devices,
                                  layout.members[m].states.axes);
      std::vector<ShardData> own;
      for (const ShardData &data : shards)
        if (layout.getMemberOf(data.device) == static_cast<int64_t>(m))
          own.push_back(data);
      terms.emplace_back(static_cast<size_t>(total * elementBytes));
      if (absl::Status status =
              assemble(part, shape, type, own, terms.back().data());
          !status.ok())
        return invalid("group " + std::to_string(m) + ": " +
                       std::string(status.message()));
    }
    std::vector<const void *> pointers;
    for (const std::vector<char> &term : terms)
      pointers.push_back(term.data());
    if (!reduce(out, pointers, total, type, layout.reduction))
      return cannotReduce(type, layout.reduction);
    return absl::OkStatus();
  }

  // One group (or several splitting one with pending contributions): per
  // block, the first shard of each contribution; replicas must equal it
  // bitwise.
  struct Block {
    std::vector<int64_t> offsets;
    int64_t partialIndex;
    size_t source;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard &shard = (*held)[i];
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const Block &b) {
      return b.offsets == shard.offsets && b.partialIndex == shard.partialIndex;
    });
    if (it == blocks.end()) {
      blocks.push_back({shard.offsets, shard.partialIndex, i});
      continue;
    }
    size_t bytes = static_cast<size_t>(shard.getNumElements() * elementBytes);
    if (bytes && std::memcmp(shards[i].data, shards[it->source].data, bytes))
      return invalid("devices " + std::to_string(shards[it->source].device) +
                     " and " + std::to_string(shards[i].device) +
                     " should hold the same replica of the block at " +
                     toString(shard.offsets) + " but differ");
  }
  // Combine the contributions of every block in contribution order.
  std::vector<bool> placed(blocks.size(), false);
  std::vector<char> value;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (placed[b])
      continue;
    const Shard &shard = (*held)[blocks[b].source];
    std::vector<const void *> contributions(
        static_cast<size_t>(shard.numPartials), nullptr);
    for (size_t c = 0; c < blocks.size(); ++c)
      if (blocks[c].offsets == blocks[b].offsets) {
        contributions[blocks[c].partialIndex] =
            shards[blocks[c].source].data;
        placed[c] = true;
      }
    if (std::find(contributions.begin(), contributions.end(), nullptr) !=
        contributions.end())
      return invalid("the block at " + toString(blocks[b].offsets) +
                     " misses some of its " +
                     std::to_string(shard.numPartials) + " contributions");
    const void *data = contributions.front();
    if (shard.numPartials > 1) {
      value.resize(static_cast<size_t>(shard.getNumElements() * elementBytes));
      if (!reduce(value.data(), contributions, shard.getNumElements(), type,
                  *shard.reduction))
        return cannotReduce(type, *shard.reduction);
      data = value.data();
    }
    copyBox(data, shard.sizes, std::vector<int64_t>(shape.size(), 0), out,
            shape, shard.offsets, shard.sizes, elementBytes);
  }
  return absl::OkStatus();
}
