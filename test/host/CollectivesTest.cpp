//===- CollectivesTest.cpp - The MPI collectives on real ranks ------------===//
//
// Run under mpirun (see CMakeLists.txt). Every collective runs on data
// whose sums are exact (small integers), over the whole world and over a
// sub-group, and each rank checks its result and the bytes it counted
// against the simulator's formulas (runtime/simulator/Simulator.h).
// On 4 ranks, hspmd.permute as generated code calls it (Program.h): the
// world read as a 2 x 2 mesh, its two axes swapped; and
// hspmd.sparse_exchange both ways over blocks that overlap.
// `--hang-rank R`: rank R sleeps before a collective instead of joining
// it; the others must end with Loom's error (the fault test).
// `--crash-after-success R`: rank R aborts after printing its success line
// (the planted fault that proves the ctest entry judges exit status).
//
// Messages above the MPI message limit go as pieces: every collective and
// exchange runs once whole and once with a 7-byte limit (element counts
// and messages that 7 does not divide), and must give the same bits and
// count the same bytes. `--large`: one real message of 2^31 + 13 bytes (2
// ranks, about 4.3 GB in all), past MPI's int counts. `--short-message`:
// a receive that gets fewer bytes than it was posted for must fail.
//
//===----------------------------------------------------------------------===//

#include "runtime/host/Collectives.h"
#include "runtime/host/Program.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace loom::rt;

namespace {

int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: check failed: %s: ",                      \
                   Runtime::get().getWorldRank(), #cond);                      \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
      ++failures;                                                              \
    }                                                                          \
  } while (false)

int64_t chunk(int64_t n, int k, int j) { return n / k + (j < n % k ? 1 : 0); }

/// Runs the three collectives on `group` and checks values and bytes.
void checkGroup(Communicator &group, const char *name) {
  Runtime &runtime = Runtime::get();
  int k = group.getSize(), me = group.getRank();
  std::map<std::string, Traffic> before = runtime.getTraffic();

  // all_reduce of 10 doubles (chunks of 10 / k, the first 10 mod k one
  // larger): element i of member m is 100 * m + i.
  const int64_t n = 10;
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = 100.0 * me + static_cast<double>(i);
  group.allReduceSum(values.data(), n, ElementType::F64);
  for (int64_t i = 0; i < n; ++i) {
    double want = 100.0 * k * (k - 1) / 2 + static_cast<double>(k * i);
    CHECK(values[i] == want, "%s all_reduce element %ld: %g, want %g", name,
          static_cast<long>(i), values[i], want);
  }
  // all_gather of 3 floats per member.
  std::vector<float> mine = {float(me), float(me) + 0.5f, float(10 * me)};
  std::vector<float> all(3 * k);
  group.allGather(mine.data(), all.data(), 3, ElementType::F32);
  for (int m = 0; m < k; ++m)
    CHECK(all[3 * m] == float(m) && all[3 * m + 2] == float(10 * m),
          "%s all_gather block %d", name, m);
  // reduce_scatter of 2 int64 per member block.
  std::vector<int64_t> blocks(2 * k), out(2);
  for (int j = 0; j < k; ++j) {
    blocks[2 * j] = me + j;
    blocks[2 * j + 1] = 1;
  }
  group.reduceScatterSum(blocks.data(), out.data(), 2, ElementType::I64);
  CHECK(out[0] == static_cast<int64_t>(k) * (k - 1) / 2 + k * me && out[1] == k,
        "%s reduce_scatter: %ld %ld", name, static_cast<long>(out[0]),
        static_cast<long>(out[1]));

  // all_gather_v: member m contributes m + 1 doubles, all equal to m.
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (int m = 0; m < k; ++m) {
    counts.push_back(m + 1);
    total += m + 1;
  }
  std::vector<double> piece(me + 1, double(me)), gathered(total, -1.0);
  group.allGatherV(piece.data(), gathered.data(), counts, ElementType::F64);
  int64_t at = 0;
  for (int m = 0; m < k; ++m)
    for (int64_t i = 0; i <= m; ++i, ++at)
      CHECK(gathered[at] == double(m), "%s all_gather_v element %ld", name,
            static_cast<long>(at));
  // A batched send/recv: member m sends m + 1 int64 (all m) to m + 1 and
  // receives from m - 1 (a shift around the group).
  std::vector<int64_t> outgoing(me + 1, me);
  int from = (me + k - 1) % k, to = (me + 1) % k;
  std::vector<int64_t> incoming(from + 1, -1);
  if (k > 1) {
    group.sendRecv("exchange", {{to, outgoing.data(), (me + 1) * int64_t(8)}},
                   {{from, incoming.data(), (from + 1) * int64_t(8)}});
    for (int64_t value : incoming)
      CHECK(value == from, "%s send/recv value %ld", name,
            static_cast<long>(value));
  }

  // Bytes, as the simulator and the report count them.
  auto delta = [&](const std::string &kind) {
    Traffic now = runtime.getTraffic().at(kind);
    Traffic was = before.count(kind) ? before.at(kind) : Traffic();
    return Traffic{now.calls - was.calls, now.bytesSent - was.bytesSent,
                   now.bytesReceived - was.bytesReceived};
  };
  int64_t own = chunk(n, k, me) * 8;
  Traffic reduce = delta("all_reduce");
  CHECK(reduce.calls == 1 && reduce.bytesSent == (n * 8 - own) + (k - 1) * own,
        "%s all_reduce sent %ld", name, static_cast<long>(reduce.bytesSent));
  Traffic gather = delta("all_gather");
  // The plain all-gather (12 bytes to each other member), then the v form
  // (its m + 1 doubles to each other member, the others' to it).
  int64_t vSent = (k - 1) * (me + 1) * 8;
  int64_t vReceived = (total - (me + 1)) * 8;
  CHECK(gather.calls == 2 && gather.bytesSent == (k - 1) * 12 + vSent &&
            gather.bytesReceived == (k - 1) * 12 + vReceived,
        "%s all_gather sent %ld", name, static_cast<long>(gather.bytesSent));
  if (k > 1) {
    Traffic shift = delta("exchange");
    CHECK(shift.calls == 1 && shift.bytesSent == (me + 1) * 8 &&
              shift.bytesReceived == (from + 1) * 8,
          "%s send/recv sent %ld", name, static_cast<long>(shift.bytesSent));
  }
  Traffic scatter = delta("reduce_scatter");
  CHECK(scatter.bytesSent == (k - 1) * 16, "%s reduce_scatter sent %ld", name,
        static_cast<long>(scatter.bytesSent));
}

/// Deterministic, rank-dependent values with many significant bits (so
/// that a sum taken in another order or a misplaced piece shows).
struct Values {
  uint64_t state;
  explicit Values(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  double real() { return static_cast<double>(next() >> 11) / 9007199254740992.0 - 0.5; }
  template <typename T> std::vector<T> of(int64_t n) {
    std::vector<T> values(static_cast<size_t>(n));
    for (T &value : values)
      value = std::is_integral_v<T> ? static_cast<T>(next() % 2001) - 1000
                                    : static_cast<T>(real() * 1000);
    return values;
  }
};

template <typename T> std::vector<char> bytesOf(const std::vector<T> &values) {
  const char *data = reinterpret_cast<const char *>(values.data());
  return std::vector<char>(data, data + values.size() * sizeof(T));
}

/// Every collective and exchange whole (the largest message limit) and
/// with a 7-byte limit: the same bits, the same bytes counted, more messages.
void checkChunked(Communicator &group, const char *name) {
  Runtime &runtime = Runtime::get();
  int k = group.getSize(), me = group.getRank();
  int64_t defaultLimit = runtime.getMessageLimit();
  // Runs `body` (which returns its results' bytes) under both limits.
  auto both = [&](const char *what, auto &&body) {
    std::vector<char> results[2];
    std::map<std::string, Traffic> counted[2];
    int64_t messages[2];
    for (int pass = 0; pass < 2; ++pass) {
      runtime.setMessageLimit(pass == 0 ? INT_MAX : 7);
      std::map<std::string, Traffic> before = runtime.getTraffic();
      int64_t posted = runtime.getMessagesPosted();
      results[pass] = body();
      messages[pass] = runtime.getMessagesPosted() - posted;
      for (const auto &[kind, traffic] : runtime.getTraffic()) {
        Traffic was = before.count(kind) ? before.at(kind) : Traffic();
        counted[pass][kind] = {traffic.calls - was.calls,
                               traffic.bytesSent - was.bytesSent,
                               traffic.bytesReceived - was.bytesReceived};
      }
    }
    runtime.setMessageLimit(defaultLimit);
    CHECK(!results[0].empty() && results[0] == results[1],
          "%s %s: the chunked result differs from the whole one (%zu and %zu "
          "bytes)",
          name, what, results[0].size(), results[1].size());
    for (const auto &[kind, traffic] : counted[0]) {
      const Traffic &chunked = counted[1][kind];
      CHECK(traffic.calls == chunked.calls &&
                traffic.bytesSent == chunked.bytesSent &&
                traffic.bytesReceived == chunked.bytesReceived,
            "%s %s: %s counted %ld/%ld/%ld whole, %ld/%ld/%ld chunked", name,
            what, kind.c_str(), static_cast<long>(traffic.calls),
            static_cast<long>(traffic.bytesSent),
            static_cast<long>(traffic.bytesReceived),
            static_cast<long>(chunked.calls),
            static_cast<long>(chunked.bytesSent),
            static_cast<long>(chunked.bytesReceived));
    }
    CHECK(k == 1 || messages[1] > messages[0],
          "%s %s: %ld messages whole, %ld chunked (no pieces?)", name, what,
          static_cast<long>(messages[0]), static_cast<long>(messages[1]));
  };
  // Fresh inputs for each call, the same in both passes.
  auto values = [&](uint64_t salt) { return Values(salt * 131 + me); };

  using Kind = Reduction;
  struct {
    const char *what;
    ElementType type;
    Kind kind;
    int64_t count;
  } reductions[] = {{"all_reduce f32 sum", ElementType::F32, Kind::Sum, 37},
                    {"all_reduce f64 mean", ElementType::F64, Kind::Mean, 53},
                    {"all_reduce f64 max", ElementType::F64, Kind::Max, 41},
                    {"all_reduce i64 min", ElementType::I64, Kind::Min, 29}};
  for (auto &r : reductions)
    both(r.what, [&] {
      Values v = values(1);
      if (r.type == ElementType::F32) {
        std::vector<float> x = v.of<float>(r.count);
        group.allReduce(x.data(), r.count, r.type, r.kind);
        return bytesOf(x);
      }
      if (r.type == ElementType::F64) {
        std::vector<double> x = v.of<double>(r.count);
        group.allReduce(x.data(), r.count, r.type, r.kind);
        return bytesOf(x);
      }
      std::vector<int64_t> x = v.of<int64_t>(r.count);
      group.allReduce(x.data(), r.count, r.type, r.kind);
      return bytesOf(x);
    });
  both("all_gather f32", [&] {
    std::vector<float> x = values(2).of<float>(37), all(37 * k);
    group.allGather(x.data(), all.data(), 37, ElementType::F32);
    return bytesOf(all);
  });
  both("reduce_scatter f64 sum", [&] {
    std::vector<double> x = values(3).of<double>(11 * k), out(11);
    group.reduceScatterSum(x.data(), out.data(), 11, ElementType::F64);
    return bytesOf(out);
  });
  both("reduce_scatter f32 mean", [&] {
    std::vector<float> x = values(4).of<float>(19 * k), out(19);
    group.reduceScatter(x.data(), out.data(), 19, ElementType::F32, Kind::Mean);
    return bytesOf(out);
  });
  both("all_gather_v f64", [&] {
    std::vector<int64_t> counts;
    int64_t total = 0;
    for (int m = 0; m < k; ++m) {
      counts.push_back(5 * m + 3);
      total += 5 * m + 3;
    }
    std::vector<double> x = values(5).of<double>(counts[me]), all(total);
    group.allGatherV(x.data(), all.data(), counts, ElementType::F64);
    return bytesOf(all);
  });
  both("all_reduce among (reversed order)", [&] {
    std::vector<int> members;
    for (int m = k - 1; m >= 0; --m)
      members.push_back(m);
    std::vector<double> x = values(6).of<double>(23);
    group.allReduceSumAmong(x.data(), 23, ElementType::F64, members,
                            "exchange");
    return bytesOf(x);
  });
  if (k > 1)
    both("send/recv", [&] {
      // Member m sends 13 m + 5 doubles to m + 1 and receives from m - 1.
      int from = (me + k - 1) % k, to = (me + 1) % k;
      std::vector<double> out = values(7).of<double>(13 * me + 5);
      std::vector<double> in(13 * from + 5);
      group.sendRecv("exchange", {{to, out.data(), 8 * (13 * me + 5)}},
                     {{from, in.data(), 8 * (13 * from + 5)}});
      return bytesOf(in);
    });
  both("all_to_all", [&] {
    // The host program's all-to-all: blocks of 3 x 5 along dimension 0.
    std::vector<float> in = values(8).of<float>(3 * k * 5), out(3 * k * 5);
    loom::host::Shape shape{3 * k, 5};
    loom::host::all_to_all(out.data(), shape, in.data(), shape, &group, 0, 0);
    return bytesOf(out);
  });
  if (k > 1)
    both("broadcast (uncounted)", [&] {
      std::vector<char> data(101, 0);
      if (me == 0)
        for (size_t i = 0; i < data.size(); ++i)
          data[i] = static_cast<char>(i * 37 + 11);
      group.broadcastUncounted(data.data(), 101, 0);
      return data;
    });
}

/// The large message's bytes: word w (8 bytes) is a mix of w, unique and
/// not periodic, so a misplaced or lost piece shows; the tail byte by byte.
uint64_t patternWord(int64_t w) {
  uint64_t x = static_cast<uint64_t>(w) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}
void fillPattern(char *data, int64_t bytes) {
  for (int64_t w = 0; w < bytes / 8; ++w) {
    uint64_t word = patternWord(w);
    std::memcpy(data + 8 * w, &word, 8);
  }
  for (int64_t i = bytes / 8 * 8; i < bytes; ++i)
    data[i] = static_cast<char>(i);
}
/// The first byte of `data` that is not the pattern's, or -1.
int64_t firstWrong(const char *data, int64_t bytes) {
  for (int64_t w = 0; w < bytes / 8; ++w) {
    uint64_t word;
    std::memcpy(&word, data + 8 * w, 8);
    if (word != patternWord(w))
      return 8 * w;
  }
  for (int64_t i = bytes / 8 * 8; i < bytes; ++i)
    if (data[i] != static_cast<char>(i))
      return i;
  return -1;
}

/// One message of 2^31 + 13 bytes from world rank 0 to world rank 1,
/// under the default limit: it arrives whole, counted exactly.
int checkLarge() {
  Runtime &runtime = Runtime::get();
  int me = runtime.getWorldRank();
  if (runtime.getWorldSize() != 2) {
    std::fprintf(stderr, "--large runs on 2 ranks\n");
    return 1;
  }
  const int64_t bytes = (int64_t(1) << 31) + 13;
  Communicator &group = runtime.getGroup({0, 1});
  std::unique_ptr<char[]> data(new char[static_cast<size_t>(bytes)]);
  if (me == 0)
    fillPattern(data.get(), bytes);
  int64_t posted = runtime.getMessagesPosted();
  if (me == 0)
    group.sendRecv("exchange", {{1, data.get(), bytes}}, {});
  else
    group.sendRecv("exchange", {}, {{0, data.get(), bytes}});
  Traffic counted = runtime.getTraffic().at("exchange");
  int64_t pieces = (bytes + runtime.getMessageLimit() - 1) /
                   runtime.getMessageLimit();
  CHECK(runtime.getMessagesPosted() - posted == pieces,
        "%ld messages for %ld bytes, expected %ld",
        static_cast<long>(runtime.getMessagesPosted() - posted),
        static_cast<long>(bytes), static_cast<long>(pieces));
  CHECK(counted.calls == 1 && counted.bytesSent == (me == 0 ? bytes : 0) &&
            counted.bytesReceived == (me == 1 ? bytes : 0),
        "counted %ld sent, %ld received", static_cast<long>(counted.bytesSent),
        static_cast<long>(counted.bytesReceived));
  if (me == 1) {
    int64_t wrong = firstWrong(data.get(), bytes);
    CHECK(wrong < 0, "the message differs from what was sent at byte %ld",
          static_cast<long>(wrong));
  }
  std::printf("rank %d: %s\n", me,
              failures ? "FAILED" : "a message of 2^31 + 13 bytes ok");
  Runtime::finalize();
  return failures ? 1 : 0;
}

/// The source of member q of a permute, from the op's definition
/// (dialects/hspmd/IR/HSPMDOps.td): q's digits over `sizes` are c; its
/// source's digit i is c[perm[i]].
int permuteSource(int q, const std::vector<int64_t> &perm,
                  const std::vector<int64_t> &sizes) {
  std::vector<int64_t> c(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    c[i] = q % sizes[i];
    q /= static_cast<int>(sizes[i]);
  }
  int64_t source = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    source = source * sizes[i] + c[perm[i]];
  return static_cast<int>(source);
}

/// permutePeers against the definition: sources, destinations (their
/// inverse), and one leader per cycle, its smallest member.
void checkPermutePeers(const std::vector<int64_t> &perm,
                       const std::vector<int64_t> &sizes) {
  int members = 1;
  for (int64_t size : sizes)
    members *= static_cast<int>(size);
  loom::host::Shape p, z;
  for (size_t i = 0; i < perm.size(); ++i) {
    p.dims[p.rank++] = perm[i];
    z.dims[z.rank++] = sizes[i];
  }
  for (int q = 0; q < members; ++q) {
    loom::host::PermutePeers peers = loom::host::permutePeers(q, members, p, z);
    int source = permuteSource(q, perm, sizes);
    CHECK(peers.source == source, "permute source of %d: %d, want %d", q,
          peers.source, source);
    CHECK(permuteSource(peers.destination, perm, sizes) == q,
          "permute destination of %d: %d does not receive from it", q,
          peers.destination);
    int smallest = q;
    for (int r = peers.destination; r != q;
         r = loom::host::permutePeers(r, members, p, z).destination)
      smallest = std::min(smallest, r);
    CHECK(peers.leads == (smallest == q), "permute leader of %d's cycle", q);
  }
}

/// hspmd.permute over the world as the mesh [2, 2], perm [1, 0]: ranks 1
/// and 2 swap their buffers, 0 and 3 keep theirs (a local copy, no bytes),
/// out of place and in place; every rank counts one call per permute.
void checkPermute() {
  Runtime &runtime = Runtime::get();
  int me = runtime.getWorldRank();
  std::map<std::string, Traffic> before = runtime.getTraffic();
  Communicator *comm = loom::host::subgroup({0, 1, 2, 3}, {2, 2}, {0, 1});
  const int64_t n = 5;
  std::vector<double> in(n), out(n, -1.0);
  for (int64_t i = 0; i < n; ++i)
    in[i] = 10.0 * me + static_cast<double>(i);
  int source = me == 1 ? 2 : me == 2 ? 1 : me;
  loom::host::permute(out.data(), {n}, in.data(), {n}, comm, {1, 0}, {2, 2});
  for (int64_t i = 0; i < n; ++i)
    CHECK(out[i] == 10.0 * source + static_cast<double>(i),
          "permute element %ld: %g, want it from rank %d", static_cast<long>(i),
          out[i], source);
  loom::host::permute(in.data(), {n}, in.data(), {n}, comm, {1, 0}, {2, 2});
  CHECK(in == out, "permute in place differs from out of place");
  Traffic now = runtime.getTraffic().at("permute");
  Traffic was = before.count("permute") ? before.at("permute") : Traffic();
  int64_t bytes = source == me ? 0 : 2 * n * 8;
  CHECK(now.calls - was.calls == 2 && now.bytesSent - was.bytesSent == bytes &&
            now.bytesReceived - was.bytesReceived == bytes,
        "permute: calls %ld, sent %ld, received %ld; want 2, %ld, %ld",
        static_cast<long>(now.calls - was.calls),
        static_cast<long>(now.bytesSent - was.bytesSent),
        static_cast<long>(now.bytesReceived - was.bytesReceived),
        static_cast<long>(bytes), static_cast<long>(bytes));
}

/// hspmd.sparse_exchange on 4 ranks as generated code calls it: blocks
/// of their own sizes that overlap (rank 0 holds rows [0, 4), rank 1
/// [2, 6), rank 2 [6, 9), rank 3 [9, 11); row 11 is nobody's). Each rank
/// names rows me, me + 3 and 2 me + 1 twice, -1 and 11. Scattered, a
/// named row goes to every rank holding it and the holders add what they
/// get in rank order; gathered, it comes from the first rank holding it.
void checkSparseExchange(Communicator &world) {
  Runtime &runtime = Runtime::get();
  int me = world.getRank();
  const int64_t rows = 12, width = 2, rowBytes = width * 8;
  const std::vector<int64_t> blocks = {0, 4, 2, 4, 6, 3, 9, 2};
  auto first = [&](int r) { return blocks[2 * r]; };
  auto size = [&](int r) { return blocks[2 * r + 1]; };
  auto holds = [&](int r, int64_t row) {
    return row >= first(r) && row < first(r) + size(r);
  };
  auto namedBy = [&](int r) {
    std::vector<int64_t> named = {r, r + 3, 2 * r + 1, 2 * r + 1, -1, 11};
    return named;
  };
  // The distinct rows rank r names that rank p holds (first holder only,
  // for the gather).
  auto count = [&](int r, int p, bool firstOnly) {
    std::vector<int64_t> named = namedBy(r);
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    int64_t n = 0;
    for (int64_t row : named) {
      if (row < 0 || row >= rows || !holds(p, row))
        continue;
      bool earlier = false;
      for (int q = 0; q < p; ++q)
        earlier |= holds(q, row);
      n += !(firstOnly && earlier);
    }
    return n;
  };
  std::map<std::string, Traffic> before = runtime.getTraffic();
  // Scattered: rank q's row r is 100 q + r (+ 0.5 in column 1), zero
  // outside the rows it names.
  std::vector<int64_t> named = namedBy(me);
  std::vector<double> buffer(rows * width, 0.0);
  for (int64_t row : named)
    if (row >= 0 && row < rows)
      for (int64_t c = 0; c < width; ++c)
        buffer[row * width + c] = 100.0 * me + row + 0.5 * c;
  std::vector<double> block(size(me) * width, -1.0);
  loom::host::sparse_exchange<double>(
      block.data(), {size(me), width}, buffer.data(), {rows, width},
      named.data(), {6}, &world, {0, 4, 2, 4, 6, 3, 9, 2}, false);
  for (int64_t i = 0; i < size(me); ++i) {
    int64_t row = first(me) + i;
    for (int64_t c = 0; c < width; ++c) {
      double want = 0.0;
      for (int q = 0; q < 4; ++q) {
        std::vector<int64_t> theirs = namedBy(q);
        if (std::find(theirs.begin(), theirs.end(), row) != theirs.end())
          want += 100.0 * q + row + 0.5 * c;
      }
      CHECK(block[i * width + c] == want,
            "sparse_exchange row %ld column %ld: %g, want %g",
            static_cast<long>(row), static_cast<long>(c), block[i * width + c],
            want);
    }
  }
  // Gathered: rank p's block holds 1000 p + row; a row comes from its
  // first holder, a row nobody holds (11) stays zero.
  std::vector<double> mine(size(me) * width);
  for (int64_t i = 0; i < size(me); ++i)
    for (int64_t c = 0; c < width; ++c)
      mine[i * width + c] = 1000.0 * me + first(me) + i + 0.5 * c;
  std::vector<double> whole(rows * width, -1.0);
  loom::host::sparse_exchange<double>(
      whole.data(), {rows, width}, mine.data(), {size(me), width},
      named.data(), {6}, &world, {0, 4, 2, 4, 6, 3, 9, 2}, true);
  for (int64_t row = 0; row < rows; ++row) {
    bool asked = std::find(named.begin(), named.end(), row) != named.end();
    int owner = -1;
    for (int p = 3; p >= 0; --p)
      if (holds(p, row))
        owner = p;
    for (int64_t c = 0; c < width; ++c) {
      double want =
          asked && owner >= 0 ? 1000.0 * owner + row + 0.5 * c : 0.0;
      CHECK(whole[row * width + c] == want,
            "sparse_exchange gather row %ld column %ld: %g, want %g",
            static_cast<long>(row), static_cast<long>(c),
            whole[row * width + c], want);
    }
  }
  // Bytes: a count each way with every other rank; scattered, an index
  // and a row per row sent or received; gathered, an index one way and a
  // row the other.
  int64_t sent = 0, received = 0;
  for (int p = 0; p < 4; ++p) {
    if (p == me)
      continue;
    sent += 8 + count(me, p, false) * (8 + rowBytes);
    received += 8 + count(p, me, false) * (8 + rowBytes);
    sent += 8 + count(me, p, true) * 8 + count(p, me, true) * rowBytes;
    received += 8 + count(p, me, true) * 8 + count(me, p, true) * rowBytes;
  }
  Traffic now = runtime.getTraffic().at("sparse_exchange");
  Traffic was = before.count("sparse_exchange") ? before.at("sparse_exchange")
                                                : Traffic();
  CHECK(now.calls - was.calls == 2 && now.bytesSent - was.bytesSent == sent &&
            now.bytesReceived - was.bytesReceived == received,
        "sparse_exchange: calls %ld, sent %ld, received %ld; want 2, %ld, %ld",
        static_cast<long>(now.calls - was.calls),
        static_cast<long>(now.bytesSent - was.bytesSent),
        static_cast<long>(now.bytesReceived - was.bytesReceived),
        static_cast<long>(sent), static_cast<long>(received));
}

} // namespace

/// hspmd.sparse_all_gather_start and hspmd.wait on 4 ranks, as generated
/// code calls them. The even ranks start the gather, then exchange a
/// message with their odd partner on the driving thread, then wait; the
/// odd ranks exchange that message first and only then start. A start
/// that did the whole gather at once would block the even ranks on the
/// odd ones, which block on the even ones' message: the check completes
/// only because the started gather runs on the communication thread while
/// the driving thread goes on, and only correctly because it runs over a
/// communicator of its own. Values and bytes must equal the plain
/// gather's, and the traffic must be counted at the wait.
void checkStartedGather(Communicator &world) {
  Runtime &runtime = Runtime::get();
  if (const char *overlap = std::getenv("LOOM_OVERLAP");
      overlap && std::string(overlap) == "0") {
    std::printf("rank %d: LOOM_OVERLAP=0: started gathers not checked\n",
                runtime.getWorldRank());
    return;
  }
  CHECK(runtime.overlapsCollectives(),
        "Open MPI provides MPI_THREAD_MULTIPLE: starts must overlap");
  int me = world.getRank();
  const int64_t width = 3;
  std::vector<double> block(2 * width);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t c = 0; c < width; ++c)
      block[i * width + c] = 10.0 * (2 * me + i) + c;
  // A row of the next rank, row 7 (rank 3's), a repeat, and none.
  std::vector<int64_t> named = {2 * ((me + 1) % 4), 7, 7, -1};
  std::vector<double> started(8 * width, -1.0), plain(8 * width, -1.0);
  auto traffic = [&] {
    auto all = runtime.getTraffic();
    auto it = all.find("sparse_all_gather");
    return it == all.end() ? Traffic{} : it->second;
  };
  Traffic before = traffic();
  loom::host::Request request;
  int partner = me ^ 1;
  char ping = 'p', pong = 0;
  auto message = [&] {
    world.sendRecv("exchange", {{partner, &ping, 1}}, {{partner, &pong, 1}});
  };
  if (me % 2 == 1)
    message();
  loom::host::sparse_all_gather_start<double>(
      started.data(), {8, width}, block.data(), {2, width}, named.data(), {4},
      &world, request);
  // The even ranks' gathers have sent their first messages (the counts)
  // long before this one: sent on the same communicator, the odd partner's
  // receive of this message would take those instead (a started
  // collective must run over its own duplicate).
  if (me % 2 == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    message();
  }
  Traffic pending = traffic();
  CHECK(pending.calls == before.calls,
        "a started gather is counted at its wait, not before (calls %ld, "
        "were %ld)",
        pending.calls, before.calls);
  loom::host::wait(request);
  Traffic afterStarted = traffic();
  loom::host::sparse_all_gather<double>(plain.data(), {8, width},
                                        block.data(), {2, width},
                                        named.data(), {4}, &world);
  Traffic afterPlain = traffic();
  CHECK(pong == 'p', "the driving thread's message arrived");
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t c = 0; c < width; ++c) {
      bool isNamed = row == named[0] || row == 7;
      double want = isNamed ? 10.0 * row + c : 0.0;
      double got = started[row * width + c];
      CHECK(got == want && plain[row * width + c] == want,
            "started gather row %ld column %ld: %g (plain %g), want %g", row,
            c, got, plain[row * width + c], want);
    }
  int64_t sent = afterStarted.bytesSent - before.bytesSent;
  int64_t received = afterStarted.bytesReceived - before.bytesReceived;
  CHECK(afterStarted.calls == before.calls + 1 &&
            sent == afterPlain.bytesSent - afterStarted.bytesSent &&
            received == afterPlain.bytesReceived - afterStarted.bytesReceived &&
            received > 0,
        "started gather: calls %ld, sent %ld, received %ld; the plain one "
        "sent %ld, received %ld",
        afterStarted.calls - before.calls, sent, received,
        afterPlain.bytesSent - afterStarted.bytesSent,
        afterPlain.bytesReceived - afterStarted.bytesReceived);
  // A request waited for again, or never started, has nothing to do.
  loom::host::wait(request);
  loom::host::Request idle;
  loom::host::wait(idle);
}

int main(int argc, char **argv) {
  Runtime &runtime = Runtime::init(&argc, &argv);
  int hang = -1, crash = -1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--hang-rank") == 0)
      hang = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--crash-after-success") == 0)
      crash = std::atoi(argv[i + 1]);
  }
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--large") == 0)
      return checkLarge();
    // Rank 0 sends 16 bytes where rank 1 expects 24: rank 1 must fail,
    // naming both sizes (MPI itself would complete the receive short).
    if (std::strcmp(argv[i], "--short-message") == 0) {
      Communicator &pair = runtime.getGroup({0, 1});
      char data[24] = {};
      if (runtime.getWorldRank() == 0)
        pair.sendRecv("exchange", {{1, data, 16}}, {});
      else
        pair.sendRecv("exchange", {}, {{0, data, 24}});
      std::printf("rank %d: the short message went unnoticed\n",
                  runtime.getWorldRank());
      Runtime::finalize();
      return 0;
    }
  }
  int world = runtime.getWorldSize(), me = runtime.getWorldRank();

  if (hang >= 0) {
    runtime.setStep(7);
    std::vector<int> everyone;
    for (int r = 0; r < world; ++r)
      everyone.push_back(r);
    Communicator &group = runtime.getGroup(everyone);
    if (me == hang)
      std::this_thread::sleep_for(std::chrono::seconds(300));
    double x = 1.0;
    group.allReduceSum(&x, 1, ElementType::F64);
    std::fprintf(stderr, "rank %d: the collective completed without rank %d\n",
                 me, hang);
    return 1;
  }

  std::vector<int> everyone;
  for (int r = 0; r < world; ++r)
    everyone.push_back(r);
  checkGroup(runtime.getGroup(everyone), "world");
  // A sub-group in another order: the odd ranks, highest first.
  std::vector<int> odd;
  for (int r = world - 1; r >= 0; --r)
    if (r % 2 == 1)
      odd.push_back(r);
  if (me % 2 == 1)
    checkGroup(runtime.getGroup(odd), "odd ranks");
  // Messages in pieces.
  checkChunked(runtime.getGroup(everyone), "world");
  if (me % 2 == 1)
    checkChunked(runtime.getGroup(odd), "odd ranks");
  // Permutations of mesh axes: who sends where (a swap, a 3-cycle of axes,
  // one of four axes among others kept), then on real ranks.
  checkPermutePeers({1, 0}, {2, 2});
  checkPermutePeers({2, 0, 1}, {2, 2, 2});
  checkPermutePeers({0, 3, 1, 2}, {3, 2, 2, 2});
  if (world == 4) {
    checkPermute();
    checkSparseExchange(runtime.getGroup(everyone));
    checkStartedGather(runtime.getGroup(everyone));
  }
  // The cache gives the same communicator again.
  CHECK(&runtime.getGroup(everyone) == &runtime.getGroup(everyone),
        "the world's communicator is made once");
  std::printf("rank %d: %s\n", me, failures ? "FAILED" : "collectives ok");
  std::fflush(stdout);
  if (me == crash)
    std::abort();
  Runtime::finalize();
  return failures ? 1 : 0;
}
