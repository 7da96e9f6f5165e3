//===- CollectivesTest.cpp - The MPI collectives on real ranks ------------===//
//
// Run under mpirun (see CMakeLists.txt). Every collective runs on data
// whose sums are exact (small integers), over the whole world and over a
// sub-group, and each rank checks its result and the bytes it counted
// against the simulator's formulas (runtime/simulator/Simulator.h).
// On 4 ranks, hspmd.permute as generated code calls it (Program.h): the
// world read as a 2 x 2 mesh, its two axes swapped.
// `--hang-rank R`: rank R sleeps before a collective instead of joining
// it; the others must end with Loom's error (the fault test).
//
//===----------------------------------------------------------------------===//

#include "runtime/host/Collectives.h"
#include "runtime/host/Program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
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

} // namespace

int main(int argc, char **argv) {
  Runtime &runtime = Runtime::init(&argc, &argv);
  int hang = -1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--hang-rank") == 0)
      hang = std::atoi(argv[i + 1]);
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
  // Permutations of mesh axes: who sends where (a swap, a 3-cycle of axes,
  // one of four axes among others kept), then on real ranks.
  checkPermutePeers({1, 0}, {2, 2});
  checkPermutePeers({2, 0, 1}, {2, 2, 2});
  checkPermutePeers({0, 3, 1, 2}, {3, 2, 2, 2});
  if (world == 4)
    checkPermute();
  // The cache gives the same communicator again.
  CHECK(&runtime.getGroup(everyone) == &runtime.getGroup(everyone),
        "the world's communicator is made once");
  std::printf("rank %d: %s\n", me, failures ? "FAILED" : "collectives ok");
  Runtime::finalize();
  return failures ? 1 : 0;
}
