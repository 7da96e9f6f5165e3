//===- Collectives.cpp - What each collective means, once -----------------===//

#include "runtime/layout/Collectives.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace loom::layout;

const char *loom::layout::getName(Reduction reduction) {
  switch (reduction) {
  case Reduction::Sum:
    return "sum";
  case Reduction::Mean:
    return "mean";
  case Reduction::Max:
    return "max";
  case Reduction::Min:
    return "min";
  }
  return "?";
}

int64_t loom::layout::getNumElements(const std::vector<int64_t> &sizes) {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}


std::vector<int64_t>
loom::layout::toDigits(int64_t index, const std::vector<int64_t> &radices) {
  std::vector<int64_t> digits(radices.size());
  for (size_t i = radices.size(); i-- > 0;) {
    digits[i] = index % radices[i];
    index /= radices[i];
  }
  return digits;
}

int64_t loom::layout::fromDigits(const std::vector<int64_t> &digits,
                                 const std::vector<int64_t> &radices) {
  int64_t index = 0;
  for (size_t i = 0; i < radices.size(); ++i)
    index = index * radices[i] + digits[i];
  return index;
}

std::vector<int64_t>
loom::layout::getAxisSizes(const std::vector<int64_t> &mesh,
                           const std::vector<int64_t> &axes) {
  std::vector<int64_t> sizes;
  for (int64_t axis : axes)
    sizes.push_back(mesh[axis]);
  return sizes;
}

Subgroup loom::layout::getSubgroup(const std::vector<int64_t> &mesh,
                                   const std::vector<int64_t> &axes,
                                   int64_t index) {
  std::vector<int64_t> digits = toDigits(index, mesh);
  std::vector<int64_t> sizes = getAxisSizes(mesh, axes);
  Subgroup subgroup;
  std::vector<int64_t> own;
  for (int64_t axis : axes)
    own.push_back(digits[axis]);
  subgroup.position = fromDigits(own, sizes);
  int64_t k = getNumElements(sizes);
  for (int64_t position = 0; position < k; ++position) {
    std::vector<int64_t> memberDigits = digits;
    std::vector<int64_t> axisDigits = toDigits(position, sizes);
    for (size_t i = 0; i < axes.size(); ++i)
      memberDigits[axes[i]] = axisDigits[i];
    subgroup.members.push_back(fromDigits(memberDigits, mesh));
  }
  return subgroup;
}

int64_t loom::layout::getSubgroupPosition(const std::vector<int64_t> &mesh,
                                          const std::vector<int64_t> &axes,
                                          int64_t index) {
  std::vector<int64_t> digits = toDigits(index, mesh);
  int64_t position = 0;
  for (int64_t axis : axes)
    position = position * mesh[axis] + digits[axis];
  return position;
}

bool loom::layout::isAxisPermutation(const std::vector<int64_t> &perm,
                                     const std::vector<int64_t> &sizes) {
  if (perm.size() != sizes.size())
    return false;
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p] ||
        sizes[p] != sizes[i])
      return false;
    seen[p] = true;
  }
  return true;
}

int64_t loom::layout::getPermuteSource(int64_t q,
                                       const std::vector<int64_t> &perm,
                                       const std::vector<int64_t> &sizes) {
  std::vector<int64_t> digits = toDigits(q, sizes), from(digits.size());
  for (size_t i = 0; i < perm.size(); ++i)
    from[i] = digits[perm[i]];
  return fromDigits(from, sizes);
}

int64_t
loom::layout::getPermuteDestination(int64_t q, const std::vector<int64_t> &perm,
                                    const std::vector<int64_t> &sizes) {
  std::vector<int64_t> digits = toDigits(q, sizes), to(digits.size());
  for (size_t i = 0; i < perm.size(); ++i)
    to[perm[i]] = digits[i];
  return fromDigits(to, sizes);
}

int64_t loom::layout::getChunkSize(int64_t count, int64_t k, int64_t j) {
  return count / k + (j < count % k ? 1 : 0);
}

int64_t loom::layout::getChunkStart(int64_t count, int64_t k, int64_t j) {
  return j * (count / k) + std::min<int64_t>(j, count % k);
}

namespace {
constexpr std::pair<Collective, const char *> kCollectiveNames[] = {
    {Collective::AllReduce, "all_reduce"},
    {Collective::AllGather, "all_gather"},
    {Collective::ReduceScatter, "reduce_scatter"},
    {Collective::AllToAll, "all_to_all"},
    {Collective::Permute, "permute"},
    {Collective::LocalSlice, "local_slice"},
    {Collective::MakePartial, "make_partial"},
};
} // namespace

std::optional<Collective>
loom::layout::parseCollective(const std::string &name) {
  for (auto [collective, spelling] : kCollectiveNames)
    if (name == spelling)
      return collective;
  return std::nullopt;
}

const char *loom::layout::getName(Collective collective) {
  for (auto [kind, spelling] : kCollectiveNames)
    if (kind == collective)
      return spelling;
  return "?";
}

Traffic loom::layout::getTraffic(Collective collective, int64_t bytes,
                                 int64_t elementBytes, int64_t k,
                                 int64_t position) {
  switch (collective) {
  case Collective::AllReduce: {
    if (elementBytes <= 0 || k <= 0)
      return {};
    int64_t elements = bytes / elementBytes;
    int64_t own = getChunkSize(elements, k, position) * elementBytes;
    int64_t others = bytes - own;
    return {others + (k - 1) * own, (k - 1) * own + others};
  }
  case Collective::AllGather:
    return {(k - 1) * bytes, (k - 1) * bytes};
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return {bytes / k * (k - 1), bytes / k * (k - 1)};
  case Collective::Permute:
  case Collective::LocalSlice:
  case Collective::MakePartial:
    return {};
  }
  return {};
}

Traffic loom::layout::getPermuteTraffic(int64_t bytes, int64_t position,
                                        const std::vector<int64_t> &perm,
                                        const std::vector<int64_t> &sizes) {
  Traffic traffic;
  if (getPermuteSource(position, perm, sizes) != position)
    traffic.received = bytes;
  if (getPermuteDestination(position, perm, sizes) != position)
    traffic.sent = bytes;
  return traffic;
}

std::optional<Reduction> loom::layout::parseReduction(const std::string &name) {
  for (Reduction reduction :
       {Reduction::Sum, Reduction::Mean, Reduction::Max, Reduction::Min})
    if (name == getName(reduction))
      return reduction;
  return std::nullopt;
}

int64_t loom::layout::getElementBytes(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::BF16:
    return 2;
  case DType::I1:
    return 1;
  }
  return 1;
}

const char *loom::layout::getName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::BF16:
    return "bf16";
  case DType::I1:
    return "i1";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

float loom::layout::bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t loom::layout::floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

namespace {

template <typename T>
void combineTyped(void *acc, const void *value, int64_t count,
                  Reduction kind) {
  T *a = static_cast<T *>(acc);
  const T *v = static_cast<const T *>(value);
  for (int64_t i = 0; i < count; ++i)
    a[i] = combine<T>(a[i], v[i], kind);
}

} // namespace

bool loom::layout::canReduce(DType type, Reduction kind) {
  switch (type) {
  case DType::F32:
  case DType::F64:
  case DType::BF16:
    return true;
  case DType::I32:
  case DType::I64:
    return kind != Reduction::Mean;
  case DType::I1:
    return false;
  }
  return false;
}

bool loom::layout::combineInto(void *acc, const void *value, int64_t count,
                               DType type, Reduction kind) {
  switch (type) {
  case DType::F32:
    combineTyped<float>(acc, value, count, kind);
    return true;
  case DType::F64:
    combineTyped<double>(acc, value, count, kind);
    return true;
  case DType::BF16: {
    uint16_t *a = static_cast<uint16_t *>(acc);
    const uint16_t *v = static_cast<const uint16_t *>(value);
    for (int64_t i = 0; i < count; ++i)
      a[i] = floatToBf16(
          combine<float>(bf16ToFloat(a[i]), bf16ToFloat(v[i]), kind));
    return true;
  }
  case DType::I32:
    combineTyped<int32_t>(acc, value, count, kind);
    return kind != Reduction::Mean;
  case DType::I64:
    combineTyped<int64_t>(acc, value, count, kind);
    return kind != Reduction::Mean;
  case DType::I1:
    return false;
  }
  return false;
}

bool loom::layout::finishMean(void *acc, int64_t count, DType type,
                              int64_t contributions) {
  switch (type) {
  case DType::F32: {
    float *a = static_cast<float *>(acc);
    for (int64_t i = 0; i < count; ++i)
      a[i] = a[i] / static_cast<float>(contributions);
    return true;
  }
  case DType::F64: {
    double *a = static_cast<double *>(acc);
    for (int64_t i = 0; i < count; ++i)
      a[i] = a[i] / static_cast<double>(contributions);
    return true;
  }
  case DType::BF16: {
    uint16_t *a = static_cast<uint16_t *>(acc);
    for (int64_t i = 0; i < count; ++i)
      a[i] = floatToBf16(bf16ToFloat(a[i]) / static_cast<float>(contributions));
    return true;
  }
  default:
    return false;
  }
}

bool loom::layout::reduce(void *out,
                          const std::vector<const void *> &contributions,
                          int64_t count, DType type, Reduction kind) {
  if (contributions.empty() || !canReduce(type, kind))
    return false;
  int64_t bytes = count * getElementBytes(type);
  if (out != contributions.front() && bytes > 0)
    std::memmove(out, contributions.front(), static_cast<size_t>(bytes));
  for (size_t i = 1; i < contributions.size(); ++i)
    combineInto(out, contributions[i], count, type, kind);
  if (kind == Reduction::Mean)
    finishMean(out, count, type, static_cast<int64_t>(contributions.size()));
  return true;
}

//===----------------------------------------------------------------------===//
// Sparse reduce-scatter of rows
//===----------------------------------------------------------------------===//

bool loom::layout::getSparseRowsByMember(
    const int64_t *named, int64_t count, int64_t rows, int64_t k,
    std::vector<std::vector<int64_t>> &byMember, std::string &error) {
  if (k < 1 || rows < 0 || rows % k != 0) {
    error = "sparse collective: " + std::to_string(rows) +
            " rows do not divide among " + std::to_string(k) + " members";
    return false;
  }
  // Equal blocks: the member is the row's block, found at once.
  int64_t block = rows / k;
  byMember.assign(static_cast<size_t>(k), {});
  for (int64_t i = 0; i < count; ++i) {
    // As the MoE ops read slots: an index outside the rows names none.
    int64_t row = named[i];
    if (row >= 0 && row < rows)
      byMember[static_cast<size_t>(row / block)].push_back(row);
  }
  for (std::vector<int64_t> &list : byMember) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return true;
}

loom::layout::RowBlocks loom::layout::RowBlocks::equal(int64_t rows,
                                                       int64_t k) {
  RowBlocks blocks;
  int64_t block = k > 0 ? rows / k : 0;
  for (int64_t j = 0; j < k; ++j) {
    blocks.first.push_back(j * block);
    blocks.size.push_back(block);
  }
  return blocks;
}

loom::layout::RowBlocks loom::layout::RowBlocks::fromPairs(const int64_t *pairs,
                                                           int64_t members) {
  RowBlocks blocks;
  for (int64_t j = 0; j < members; ++j) {
    blocks.first.push_back(pairs[2 * j]);
    blocks.size.push_back(pairs[2 * j + 1]);
  }
  return blocks;
}

void loom::layout::getSparseRowsByBlock(
    const int64_t *named, int64_t count, int64_t rows, const RowBlocks &blocks,
    bool firstOnly, std::vector<std::vector<int64_t>> &byMember) {
  int64_t k = blocks.members();
  byMember.assign(static_cast<size_t>(k), {});
  for (int64_t i = 0; i < count; ++i) {
    // As the MoE ops read slots: an index outside the rows names none.
    int64_t row = named[i];
    if (row < 0 || row >= rows)
      continue;
    for (int64_t j = 0; j < k; ++j)
      if (blocks.holds(j, row)) {
        byMember[static_cast<size_t>(j)].push_back(row);
        if (firstOnly)
          break;
      }
  }
  for (std::vector<int64_t> &list : byMember) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
}

namespace {

/// The bytes of a sparse collective of rows with `others` other members,
/// `mine` rows named by this member in their blocks and `theirs` named by
/// them in its block: a count each way with every other member, then the
/// scatter's indices and rows one way (mine out, theirs in) or the
/// gather's indices one way and rows the other.
Traffic sparseTraffic(SparseRows kind, int64_t others, int64_t mine,
                      int64_t theirs, int64_t rowBytes) {
  int64_t rowsOut = kind == SparseRows::Scatter ? mine : theirs;
  int64_t rowsIn = kind == SparseRows::Scatter ? theirs : mine;
  return {8 * others + mine * 8 + rowsOut * rowBytes,
          8 * others + theirs * 8 + rowsIn * rowBytes};
}

} // namespace

Traffic loom::layout::getSparseTraffic(SparseRows kind,
                                       const std::vector<int64_t> &mine,
                                       const std::vector<int64_t> &theirs,
                                       int64_t rowBytes, int64_t position) {
  int64_t others = 0, mineTotal = 0, theirsTotal = 0;
  for (size_t j = 0; j < mine.size(); ++j) {
    if (static_cast<int64_t>(j) == position)
      continue;
    ++others;
    mineTotal += mine[j];
    theirsTotal += theirs[j];
  }
  return sparseTraffic(kind, others, mineTotal, theirsTotal, rowBytes);
}

Traffic loom::layout::getSparseTrafficBound(SparseRows kind, int64_t count,
                                            int64_t rows, int64_t rowBytes,
                                            int64_t k) {
  if (k < 2)
    return {};
  int64_t block = rows / k;
  // Every row a member names may be in another block, but no block holds
  // more than `block` rows: at most min(count, (k - 1) block) of its own,
  // and min(count, block) from each other member.
  return sparseTraffic(kind, k - 1, std::min(count, (k - 1) * block),
                       (k - 1) * std::min(count, block), rowBytes);
}

Traffic loom::layout::getSparseTrafficBound(SparseRows kind, int64_t count,
                                            const RowBlocks &blocks,
                                            int64_t rowBytes,
                                            int64_t position) {
  int64_t mine = 0, theirs = 0, others = 0;
  for (int64_t j = 0; j < blocks.members(); ++j) {
    if (j == position)
      continue;
    ++others;
    mine += std::min(count, blocks.size[j]);
    theirs += blocks.size[position];
  }
  return sparseTraffic(kind, others, mine, theirs, rowBytes);
}
