//===- Collectives.h - What each collective means, once --------*- C++ -*-===//
//
// The semantics every executor of Loom's collectives shares (the simulator,
// the host runtime over MPI, the device runtimes over NCCL/HCCL) and the
// communication report counts:
//
//  - Sub-groups. A collective over mesh axes `axes` of a group's mesh
//    `mesh` (row-major: the first axis slowest) runs among the devices that
//    differ from each other only in the digits of those axes, ordered by
//    those digits (the first listed axis slowest).
//  - Combination order. Contributions combine left to right in sub-group
//    order (member 0 first), in the element type (bf16 through f32, rounded
//    after every step); a mean divides the sum by the count at the end; max
//    and min let a NaN win.
//  - Bytes. What each rank sends and receives, for a buffer of B bytes on a
//    sub-group of k (the buffer being the rank's operand):
//      all_gather      B to each of the k - 1 others
//      reduce_scatter  block j (B / k) to member j, for every j != own
//      all_reduce      a reduce-scatter of the flattened buffer cut into k
//                      near-equal chunks (chunk j reduced at member j; the
//                      first N mod k chunks one element larger), then an
//                      all-gather of the reduced chunks: every other chunk
//                      once, plus its own chunk k - 1 times
//      all_to_all      block j (B / k) to member j, for every j != own
//      permute         B to its destination unless that is itself
//      local_slice, make_partial  nothing
//      sparse_reduce_scatter  (a reduce-scatter of rows, dimension 0, where
//                      each rank's buffer is zero outside the rows it
//                      names) to each other member j an 8-byte count, then
//                      per distinct named row of block j its 8-byte index
//                      and the row: data-dependent (getSparseTraffic)
//      sparse_all_gather  (an all-gather of rows where each rank needs only
//                      the rows it names) to each other member j an 8-byte
//                      count and an 8-byte index per distinct named row of
//                      block j, and back from j those rows
//                      (getSparseTraffic)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LAYOUT_COLLECTIVES_H
#define LOOM_RUNTIME_LAYOUT_COLLECTIVES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::layout {

/// How contributions of a pending reduction combine (in the order stated
/// above).
enum class Reduction { Sum, Mean, Max, Min };

/// "sum", "mean", "max", "min".
const char *getName(Reduction reduction);

/// The product of `sizes` (1 for none).
int64_t getNumElements(const std::vector<int64_t> &sizes);

//===----------------------------------------------------------------------===//
// Meshes and sub-groups
//===----------------------------------------------------------------------===//

/// The digits of `index` in the mixed radix `radices` (the first slowest).
std::vector<int64_t> toDigits(int64_t index,
                              const std::vector<int64_t> &radices);
/// The inverse of toDigits.
int64_t fromDigits(const std::vector<int64_t> &digits,
                   const std::vector<int64_t> &radices);

/// The sub-group of the device at `index` of a group with mesh `mesh` for
/// a collective over `axes`: the group indices of its members in sub-group
/// order, and where `index` is among them.
struct Subgroup {
  std::vector<int64_t> members;
  int64_t position = 0;
};
Subgroup getSubgroup(const std::vector<int64_t> &mesh,
                     const std::vector<int64_t> &axes, int64_t index);

/// Only the position of `index` in its sub-group (getSubgroup's), in time
/// linear in the number of axes.
int64_t getSubgroupPosition(const std::vector<int64_t> &mesh,
                            const std::vector<int64_t> &axes, int64_t index);

/// The sizes of `axes` of `mesh`.
std::vector<int64_t> getAxisSizes(const std::vector<int64_t> &mesh,
                                  const std::vector<int64_t> &axes);

/// Whether `perm` permutes axes of equal size among `sizes` (the sizes of
/// a permute's mesh axes).
bool isAxisPermutation(const std::vector<int64_t> &perm,
                       const std::vector<int64_t> &sizes);
/// For a permute of the sub-group positions whose digits over `sizes` are
/// permuted by `perm`: member q receives from the member whose digit i is
/// q's digit perm[i], and sends to the one whose digit perm[i] is q's
/// digit i.
int64_t getPermuteSource(int64_t q, const std::vector<int64_t> &perm,
                         const std::vector<int64_t> &sizes);
int64_t getPermuteDestination(int64_t q, const std::vector<int64_t> &perm,
                              const std::vector<int64_t> &sizes);

//===----------------------------------------------------------------------===//
// Bytes
//===----------------------------------------------------------------------===//

/// The elements of chunk `j` when `count` are cut into `k` near-equal
/// chunks (the first `count mod k` one element larger), and where it
/// starts.
int64_t getChunkSize(int64_t count, int64_t k, int64_t j);
int64_t getChunkStart(int64_t count, int64_t k, int64_t j);

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Permute,
  LocalSlice,
  MakePartial,
};

/// "all_reduce", ... as the hspmd ops are named; nullopt for another name.
std::optional<Collective> parseCollective(const std::string &name);
const char *getName(Collective collective);

struct Traffic {
  int64_t sent = 0, received = 0;
  bool operator==(const Traffic &other) const {
    return sent == other.sent && received == other.received;
  }
};

/// What member `position` of a sub-group of `k` sends and receives in one
/// collective of kind `collective` (not Permute) on its operand of `bytes`
/// bytes of `elementBytes`-byte elements.
Traffic getTraffic(Collective collective, int64_t bytes, int64_t elementBytes,
                   int64_t k, int64_t position);
/// The same for a permute (see getPermuteSource).
Traffic getPermuteTraffic(int64_t bytes, int64_t position,
                          const std::vector<int64_t> &perm,
                          const std::vector<int64_t> &sizes);

/// A sparse collective's rows (hspmd.sparse_reduce_scatter,
/// hspmd.sparse_all_gather): the distinct rows named by `named` (`count`
/// indices; one outside [0, rows), such as -1, names none, as the MoE ops
/// read slots) of a buffer of `rows` rows, grouped by the member of a
/// sub-group of `k` whose block (rows / k rows) holds them, ascending
/// within each. False, with a message in `error`, for rows that do not
/// divide among `k`.
bool getSparseRowsByMember(const int64_t *named, int64_t count, int64_t rows,
                           int64_t k,
                           std::vector<std::vector<int64_t>> &byMember,
                           std::string &error);
/// The rows each member of a sparse collective holds: member j the rows
/// [first[j], first[j] + size[j]) of the buffer (hspmd.sparse_exchange:
/// blocks of any sizes, which may overlap).
struct RowBlocks {
  std::vector<int64_t> first, size;
  /// `k` blocks of rows / k rows each (the sub-group collectives).
  static RowBlocks equal(int64_t rows, int64_t k);
  /// From [first0, size0, first1, size1, ...].
  static RowBlocks fromPairs(const int64_t *pairs, int64_t members);
  int64_t members() const { return static_cast<int64_t>(first.size()); }
  bool holds(int64_t member, int64_t row) const {
    return row >= first[member] && row < first[member] + size[member];
  }
};
/// getSparseRowsByMember for any blocks: the distinct rows named by
/// `named` (outside [0, rows): none) under each member whose block holds
/// them, ascending (a row in several blocks under each; with `firstOnly`,
/// under the first member holding it alone).
void getSparseRowsByBlock(const int64_t *named, int64_t count, int64_t rows,
                          const RowBlocks &blocks, bool firstOnly,
                          std::vector<std::vector<int64_t>> &byMember);
/// The two sparse collectives of rows: hspmd.sparse_reduce_scatter sends
/// the rows a member names to the members whose blocks hold them;
/// hspmd.sparse_all_gather asks those members for them (indices one way,
/// rows the other).
enum class SparseRows { Scatter, Gather };
/// What member `position` moves in one: `mine[j]` rows it names in member
/// j's block, `theirs[j]` rows member j names in its block; each row
/// `rowBytes`, each index 8 bytes, and a count of 8 bytes each way with
/// every other member.
Traffic getSparseTraffic(SparseRows kind, const std::vector<int64_t> &mine,
                         const std::vector<int64_t> &theirs, int64_t rowBytes,
                         int64_t position);
/// The most any member can move in one when every member names `count`
/// indices of `rows` rows over a sub-group of `k`: all its named rows in
/// other blocks (no more than rows / k in each), min(count, rows / k)
/// named in its block by each other member.
Traffic getSparseTrafficBound(SparseRows kind, int64_t count, int64_t rows,
                              int64_t rowBytes, int64_t k);
/// The most member `position` of a sparse collective over `blocks` can
/// move when it names `count` indices: its named rows, to (or from) every
/// other member that can hold them (no more than min(count, size[j]) with
/// member j), and with each other member at most its own block's rows the
/// other way.
Traffic getSparseTrafficBound(SparseRows kind, int64_t count,
                              const RowBlocks &blocks, int64_t rowBytes,
                              int64_t position);

//===----------------------------------------------------------------------===//
// Combining contributions
//===----------------------------------------------------------------------===//

/// "sum", "mean", "max", "min" -> the reduction; nullopt otherwise.
std::optional<Reduction> parseReduction(const std::string &name);

/// One step of a reduction: `acc` combined with the next contribution.
template <typename T> T combine(T acc, T value, Reduction kind) {
  switch (kind) {
  case Reduction::Sum:
  case Reduction::Mean:
    return acc + value;
  case Reduction::Max:
    return acc >= value || acc != acc ? acc : value;
  case Reduction::Min:
    return acc <= value || acc != acc ? acc : value;
  }
  return acc;
}

/// The element types the layout core moves and combines.
enum class DType { F32, F64, BF16, I1, I32, I64 };
int64_t getElementBytes(DType type);
const char *getName(DType type);

/// bf16 (the upper half of an IEEE float) to float and back, rounding to
/// nearest even (a NaN stays a quiet NaN).
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);

/// Whether elements of `type` combine under `kind` (not i1; no mean of
/// integers).
bool canReduce(DType type, Reduction kind);

/// Combines `count` elements of `value` into `acc` (acc = combine(acc,
/// value)); a mean only adds here (finishMean divides). False where
/// !canReduce(type, kind): i1 changes nothing, while integers under a mean
/// are still added (callers that divide themselves use that).
bool combineInto(void *acc, const void *value, int64_t count, DType type,
                 Reduction kind);
/// Divides each of `count` summed elements by `contributions` (floating
/// point only; false otherwise).
bool finishMean(void *acc, int64_t count, DType type, int64_t contributions);
/// The reduction of `contributions` (each `count` elements) into `out`, in
/// the order given; `out` may be the first contribution. False where
/// !canReduce(type, kind) or there is no contribution.
bool reduce(void *out, const std::vector<const void *> &contributions,
            int64_t count, DType type, Reduction kind);

} // namespace loom::layout

#endif // LOOM_RUNTIME_LAYOUT_COLLECTIVES_H
