//===- AscendRuntimeTest.cpp - The Ascend runtime on 2 ranks --------------===//
//
// Loom's Ascend runtime (runtime/ascend) driven directly on 2 MPI ranks,
// over the CPU test double of CANN (found on the library path): HCCL
// collectives (means as a sum then a scale, blocks along inner dimensions
// moved by strided copies, all-to-all, a permute's send/recv pair and a
// permute that keeps the buffer, slices, partial sums, axis index)
// and the kernels (matmul through transposed views, element-wise ops,
// reductions, strided copies for slices, broadcasts and transposes,
// concatenation, comparisons, casts, clamp, select, slice gradients, and
// gather, dropout, RMS norm and rotary embeddings), every result against
// the host kernel of the same op (or hand-computed values) in f32, bit for
// bit (the double computes with the host kernels; what is
// checked is the runtime's use of the operators: views, strides, argument
// order). Prints `rank R: ascend runtime ok`. With --permute-cycles, on 8
// ranks: permutes with cycles of 3 members, and in place (`rank R: ascend
// permute ok`); test/ascend/runtime-calls.test
// also checks the call sequence the double logs.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/Internal.h"
#include "runtime/ascend/Program.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace loom;
using host::Shape;

/// Ascend computes in f32 (aclnnMatmul and HCCL's reductions take no
/// f64).
using Real = float;

namespace {

int failures = 0;

void expectEqual(const char *what, const std::vector<Real> &got,
                 const std::vector<Real> &want) {
  if (got.size() == want.size() &&
      std::memcmp(got.data(), want.data(), got.size() * sizeof(Real)) == 0)
    return;
  std::printf("check failed: %s:", what);
  for (Real v : got)
    std::printf(" %g", v);
  std::printf(" (want");
  for (Real v : want)
    std::printf(" %g", v);
  std::printf(")\n");
  ++failures;
}

/// Device buffers carved from one arena.
struct Buffers {
  ascend::Arena arena{1 << 16};
  int64_t used = 0;
  Real *make(const std::vector<Real> &values) {
    Real *p = ascend::at<Real>(arena, used);
    used += static_cast<int64_t>((values.size() * sizeof(Real) + 63) / 64 * 64);
    ascend::copyToDevice(p, values.data(), values.size() * sizeof(Real));
    return p;
  }
  Real *make(size_t count) { return make(std::vector<Real>(count, 0.0)); }
  /// Any element type (bool as char: std::vector<bool> is packed).
  template <typename T> T *makeOf(const std::vector<T> &values) {
    T *p = ascend::at<T>(arena, used);
    used += static_cast<int64_t>((values.size() * sizeof(T) + 63) / 64 * 64);
    ascend::copyToDevice(p, values.data(), values.size() * sizeof(T));
    return p;
  }
};

template <typename T> std::vector<T> readOf(const T *p, size_t count) {
  std::vector<T> out(count);
  ascend::copyToHost(out.data(), p, count * sizeof(T));
  return out;
}

/// Bit-equal element arrays of any type.
template <typename T>
void expectSame(const char *what, const std::vector<T> &got,
                const std::vector<T> &want) {
  if (got.size() == want.size() &&
      std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0)
    return;
  std::printf("check failed: %s\n", what);
  ++failures;
}

std::vector<Real> read(const Real *p, size_t count) {
  std::vector<Real> out(count);
  ascend::copyToHost(out.data(), p, count * sizeof(Real));
  return out;
}

/// `--permute-cycles`, on 8 ranks: hspmd.permute through the runtime over
/// the world read as the mesh [2, 2, 2]. Perm [2, 0, 1] over all three
/// axes has two 3-cycles ({1, 4, 2} and {3, 6, 5}: rank (a, b, c) receives
/// from (c, a, b)) and two kept ranks (0 and 7), so HcclSend/HcclRecv must
/// be ordered around each cycle (one member sending first) or the members
/// wait for each other; perm [1, 0] over the last two axes swaps ranks 1
/// and 2 and ranks 5 and 6, here in place (the result is the operand's
/// buffer). Values and the counted calls and bytes.
void permuteCycles(int rank) {
  Buffers b;
  auto digit = [](int r, int i) { return (r >> (2 - i)) & 1; };
  auto fromDigits = [](int a, int c1, int c2) { return 4 * a + 2 * c1 + c2; };
  ascend::Communicator *all =
      ascend::subgroup({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, {0, 1, 2});
  ascend::Communicator *halves =
      ascend::subgroup({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, {1, 2});
  auto values = [](int r) {
    return std::vector<Real>{Real(100 * r), Real(100 * r + 1),
                             Real(100 * r + 2)};
  };
  Real *in = b.make(values(rank)), *out = b.make(3);
  ascend::permute(out, {3}, in, {3}, all, {2, 0, 1}, {2, 2, 2});
  int cycled = fromDigits(digit(rank, 2), digit(rank, 0), digit(rank, 1));
  expectEqual("permute [2, 0, 1] (3-cycles)", read(out, 3), values(cycled));
  ascend::permute(out, {3}, out, {3}, halves, {1, 0}, {2, 2});
  int swapped = fromDigits(digit(rank, 0), digit(rank, 2), digit(rank, 1));
  int twice = fromDigits(digit(swapped, 2), digit(swapped, 0),
                         digit(swapped, 1));
  expectEqual("permute [1, 0] in place", read(out, 3), values(twice));
  rt::Traffic traffic = rt::Runtime::get().getTraffic().at("permute");
  int64_t bytes = (cycled != rank ? 12 : 0) + (swapped != rank ? 12 : 0);
  if (traffic.calls != 2 || traffic.bytesSent != bytes ||
      traffic.bytesReceived != bytes) {
    std::printf("check failed: permute counted %ld calls, %ld bytes sent, "
                "%ld received (want 2, %ld, %ld)\n",
                static_cast<long>(traffic.calls),
                static_cast<long>(traffic.bytesSent),
                static_cast<long>(traffic.bytesReceived),
                static_cast<long>(bytes), static_cast<long>(bytes));
    ++failures;
  }
}

} // namespace

int main(int argc, char **argv) {
  rt::Runtime::init(&argc, &argv);
  ascend::startDevice(rt::Runtime::get().getLocalRank());
  int rank = rt::Runtime::get().getWorldRank();
  if (argc > 1 && std::strcmp(argv[1], "--permute-cycles") == 0) {
    if (rt::Runtime::get().getWorldSize() != 8)
      rt::Runtime::get().fail("--permute-cycles runs on 8 ranks");
    host::openGroups({{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}});
    permuteCycles(rank);
    if (failures == 0)
      std::printf("rank %d: ascend permute ok\n", rank);
    std::fflush(stdout);
    ascend::finishDevice();
    rt::Runtime::finalize();
    return failures ? 1 : 0;
  }
  host::openGroups({{0, 1}});
  {
    ascend::Communicator *comm = ascend::subgroup({0, 1}, {2}, {0});
    Buffers b;
    Real r = rank;

    // all_reduce mean: HcclAllReduce (sum), then aclnnInplaceMuls by 1/2.
    Real *x = b.make({1 + r, 2 + r, 3 + r, 4 + r}), *mean = b.make(4);
    ascend::all_reduce(mean, {4}, x, {4}, comm, "mean");
    expectEqual("all_reduce mean", read(mean, 4), {1.5, 2.5, 3.5, 4.5});

    // reduce_scatter mean along dim 1 of [2, 4]: packed first.
    Real *y = b.make({r, 1, 2, 3, 4, 5, 6, 7 + r}), *part = b.make(4);
    ascend::reduce_scatter(part, {2, 2}, y, {2, 4}, comm, 1, "mean");
    std::vector<Real> wantPart = rank == 0 ? std::vector<Real>{0.5, 1, 4, 5}
                                           : std::vector<Real>{2, 3, 6, 7.5};
    expectEqual("reduce_scatter mean dim 1", read(part, 4), wantPart);

    // all_gather along dim 1: [2, 2] -> [2, 4].
    Real *g = b.make({10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3});
    Real *gathered = b.make(8);
    ascend::all_gather(gathered, {2, 4}, g, {2, 2}, comm, 1);
    expectEqual("all_gather dim 1", read(gathered, 8),
                {0, 1, 10, 11, 2, 3, 12, 13});

    // all_reduce sum and max: HCCL's own reductions, no scale.
    Real *sum = b.make(4), *max = b.make(4);
    ascend::all_reduce(sum, {4}, x, {4}, comm, "sum");
    ascend::all_reduce(max, {4}, x, {4}, comm, "max");
    expectEqual("all_reduce sum", read(sum, 4), {3, 5, 7, 9});
    expectEqual("all_reduce max", read(max, 4), {2, 3, 4, 5});

    // all_to_all: [2, 4] split along dim 1, the blocks received
    // concatenated along dim 0 -> [4, 2].
    std::vector<Real> mine(8);
    for (int i = 0; i < 8; ++i)
      mine[i] = 10 * r + i;
    Real *a2a = b.make(mine), *swapped = b.make(8);
    ascend::all_to_all(swapped, {4, 2}, a2a, {2, 4}, comm, 1, 0);
    std::vector<Real> wantSwap;
    for (int from = 0; from < 2; ++from)
      for (int row = 0; row < 2; ++row)
        for (int col = 0; col < 2; ++col)
          wantSwap.push_back(10 * from + row * 4 + 2 * rank + col);
    expectEqual("all_to_all", read(swapped, 8), wantSwap);

    // A permute's send/recv pair (what host::device::permute hands the
    // target): the two members swap their buffers, rank 0 (its cycle's
    // smallest) sending first, rank 1 receiving first.
    Real *pin = b.make({100 * r, 100 * r + 1, 100 * r + 2, 100 * r + 3});
    Real *pout = b.make(4);
    {
      host::device::CollectiveScope scope("permute");
      ascend::target().sendRecv(comm->getHandle(), pout, pin, 4,
                                rt::ElementType::F32, 1 - rank, 1 - rank,
                                rank == 0);
    }
    Real other = 1 - r;
    expectEqual(
        "send/recv pair", read(pout, 4),
        {100 * other, 100 * other + 1, 100 * other + 2, 100 * other + 3});
    // A pair that disagrees (4 elements sent, 3 expected) fails on both
    // members with HCCL_E_PARA instead of leaving one waiting (the library
    // called directly: the runtime would end the rank).
    const ascend::Api &api = ascend::api();
    HcclResult mismatched =
        rank == 0 ? api.HcclSend(pin, 4, HCCL_DATA_TYPE_FP32, 1,
                                 comm->getHandle(), ascend::internal::stream())
                  : api.HcclRecv(pout, 3, HCCL_DATA_TYPE_FP32, 0,
                                 comm->getHandle(), ascend::internal::stream());
    const char *why = api.aclGetRecentErrMsg();
    if (mismatched != HCCL_E_PARA || !why ||
        !std::strstr(why, "disagrees on the count or type")) {
      std::printf("check failed: a mismatched send/recv pair: %d (%s)\n",
                  static_cast<int>(mismatched), why ? why : "no message");
      ++failures;
    }
    // A permute that keeps the rank's buffer (the axes it permutes have
    // size 1): a device copy, nothing through HCCL, one call of no bytes.
    ascend::Communicator *alone = ascend::subgroup({0, 1}, {2, 1, 1}, {1, 2});
    Real *kept = b.make(4);
    rt::Traffic before = rt::Runtime::get().getTraffic().count("permute")
                             ? rt::Runtime::get().getTraffic().at("permute")
                             : rt::Traffic();
    ascend::permute(kept, {4}, pin, {4}, alone, {1, 0}, {1, 1});
    expectEqual("permute (kept)", read(kept, 4), read(pin, 4));
    rt::Traffic after = rt::Runtime::get().getTraffic().at("permute");
    if (after.calls != before.calls + 1 ||
        after.bytesSent != before.bytesSent ||
        after.bytesReceived != before.bytesReceived) {
      std::printf("check failed: a kept permute counts one call, no bytes\n");
      ++failures;
    }

    // local_slice / make_partial along dim 0, axis_index.
    Real *whole = b.make({1, 2, 3, 4}), *mineSlice = b.make(2);
    ascend::local_slice(mineSlice, {2}, whole, {4}, comm, 0);
    expectEqual("local_slice", read(mineSlice, 2),
                {Real(1 + 2 * rank), Real(2 + 2 * rank)});
    Real *partial = b.make({9, 9, 9, 9});
    ascend::make_partial(partial, {4}, mineSlice, {2}, comm, 0);
    std::vector<Real> wantPartial(4, 0);
    wantPartial[2 * rank] = Real(1 + 2 * rank);
    wantPartial[2 * rank + 1] = Real(2 + 2 * rank);
    expectEqual("make_partial", read(partial, 4), wantPartial);
    Real *index = b.make(1);
    ascend::axis_index(index, {}, comm, 3, 1);
    expectEqual("axis_index", read(index, 1), {Real(3 * rank + 1)});

    // Kernels against the host kernels.
    std::vector<Real> a = {0.5, -1.25, 2, 3.5, 0.75, -2.5}; // [2, 3]
    std::vector<Real> bt = {1.5, 0.25, -1, 2, -0.5, 0.125}; // [2, 3]
    Real *da = b.make(a), *dbt = b.make(bt), *dm = b.make(4);
    ascend::matmul(dm, {2, 2}, da, {2, 3}, dbt, {2, 3}, false, true);
    std::vector<Real> hm(4);
    host::matmul(hm.data(), {2, 2}, a.data(), {2, 3}, bt.data(), {2, 3}, false,
                 true);
    expectEqual("matmul (transposed rhs)", read(dm, 4), hm);
    Real *dm2 = b.make(9);
    ascend::matmul(dm2, {3, 3}, da, {2, 3}, dbt, {2, 3}, true, false);
    std::vector<Real> hm2(9);
    host::matmul(hm2.data(), {3, 3}, a.data(), {2, 3}, bt.data(), {2, 3}, true,
                 false);
    expectEqual("matmul (transposed lhs)", read(dm2, 9), hm2);

    Real *dsum = b.make(2);
    ascend::reduce(dsum, {2}, da, {2, 3}, Shape{1}, false, "sum");
    std::vector<Real> hsum(2);
    host::reduce(hsum.data(), {2}, a.data(), {2, 3}, Shape{1}, false, "sum");
    expectEqual("reduce sum", read(dsum, 2), hsum);

    // Two launches with workspaces back to back: past the workspace budget
    // (LOOM_ASCEND_WORKSPACE_BUDGET, small in runtime-calls.test) the
    // second drains the stream and frees the first's workspace, but not
    // the descriptors its own executor still needs.
    Real *dsum2 = b.make(2), *dmean2 = b.make(2);
    ascend::reduce(dsum2, {2}, da, {2, 3}, Shape{1}, false, "sum");
    ascend::reduce(dmean2, {2}, da, {2, 3}, Shape{1}, false, "mean");
    std::vector<Real> hmean(2);
    host::reduce(hmean.data(), {2}, a.data(), {2, 3}, Shape{1}, false, "mean");
    expectEqual("reduce sum (then mean)", read(dsum2, 2), hsum);
    expectEqual("reduce mean (after sum)", read(dmean2, 2), hmean);

    Real *dslice = b.make(2);
    ascend::slice(dslice, {2, 1}, da, {2, 3}, Shape{0, 1}, Shape{2, 1},
                  Shape{1, 2});
    std::vector<Real> hslice(2);
    host::slice(hslice.data(), {2, 1}, a.data(), {2, 3}, Shape{0, 1},
                Shape{2, 1}, Shape{1, 2});
    expectEqual("slice", read(dslice, 2), hslice);

    Real *dbc = b.make(6), *drow = b.make({7, 8, 9});
    ascend::broadcast(dbc, {2, 3}, drow, {3}, host::kAbsentShape);
    expectEqual("broadcast", read(dbc, 6), {7, 8, 9, 7, 8, 9});

    Real *dtr = b.make(6);
    ascend::transpose(dtr, {3, 2}, da, {2, 3}, Shape{1, 0});
    expectEqual("transpose", read(dtr, 6),
                {a[0], a[3], a[1], a[4], a[2], a[5]});

    Real *dcat = b.make(9);
    ascend::concat(dcat, {3, 3}, {da, drow}, {{2, 3}, {1, 3}}, 0);
    expectEqual("concat", read(dcat, 9),
                {a[0], a[1], a[2], a[3], a[4], a[5], 7, 8, 9});

    // Element-wise ops (the rhs broadcast along rows), each its aclnn
    // operator.
    std::vector<Real> pos = {0.5, 1.25, 2, 3.5, 0.75, 2.5};
    Real *dpos = b.make(pos);
    using Binary =
        void (*)(Real *, Shape, const Real *, Shape, const Real *, Shape);
    struct {
      const char *name;
      Binary device, reference;
    } binaries[] = {
        {"add", ascend::add, host::add},
        {"sub", ascend::sub, host::sub},
        {"mul", ascend::mul, host::mul},
        {"div", ascend::div, host::div},
        {"maximum", ascend::maximum, host::maximum},
        {"minimum", ascend::minimum, host::minimum},
    };
    for (auto &op : binaries) {
      Real *out = b.make(6);
      op.device(out, {2, 3}, da, {2, 3}, drow, {3});
      std::vector<Real> want(6), row = {7, 8, 9};
      op.reference(want.data(), {2, 3}, a.data(), {2, 3}, row.data(), {3});
      expectEqual(op.name, read(out, 6), want);
    }
    using Unary = void (*)(Real *, Shape, const Real *, Shape);
    struct {
      const char *name;
      Unary device, reference;
    } unaries[] = {
        {"neg", ascend::neg, host::neg},
        {"exp", ascend::exp, host::exp},
        {"log", ascend::log, host::log},
        {"sqrt", ascend::sqrt, host::sqrt},
        {"rsqrt", ascend::rsqrt, host::rsqrt},
        {"tanh", ascend::tanh, host::tanh},
        {"relu", ascend::relu, host::relu},
        {"silu", ascend::silu, host::silu},
        {"sin", ascend::sin, host::sin},
        {"cos", ascend::cos, host::cos},
    };
    for (auto &op : unaries) {
      Real *out = b.make(6);
      op.device(out, {2, 3}, dpos, {2, 3});
      std::vector<Real> want(6);
      op.reference(want.data(), {2, 3}, pos.data(), {2, 3});
      expectEqual(op.name, read(out, 6), want);
    }
    for (const char *kind : {"mean", "max"}) {
      Real *out = b.make(3);
      ascend::reduce(out, {1, 3}, da, {2, 3}, Shape{0}, true, kind);
      std::vector<Real> want(3);
      host::reduce(want.data(), {1, 3}, a.data(), {2, 3}, Shape{0}, true, kind);
      expectEqual(kind, read(out, 3), want);
    }
    Real *dsoft = b.make(6), *dlogsoft = b.make(6), *dfill = b.make(6);
    ascend::softmax(dsoft, {2, 3}, da, {2, 3}, 1);
    ascend::log_softmax(dlogsoft, {2, 3}, da, {2, 3}, 1);
    ascend::fill(dfill, {2, 3}, 0.25);
    std::vector<Real> hsoft(6), hlogsoft(6);
    host::softmax(hsoft.data(), {2, 3}, a.data(), {2, 3}, 1);
    host::log_softmax(hlogsoft.data(), {2, 3}, a.data(), {2, 3}, 1);
    expectEqual("softmax", read(dsoft, 6), hsoft);
    expectEqual("log_softmax", read(dlogsoft, 6), hlogsoft);
    expectEqual("fill", read(dfill, 6), std::vector<Real>(6, 0.25));

    // Comparisons (each its aclnn operator), casts, clamp, select.
    for (const char *predicate : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      bool *out = reinterpret_cast<bool *>(b.makeOf(std::vector<char>(6, 0)));
      ascend::compare(out, {2, 3}, da, {2, 3}, dpos, {2, 3}, predicate);
      bool want[6];
      host::compare(want, {2, 3}, a.data(), {2, 3}, pos.data(), {2, 3},
                    predicate);
      std::vector<char> got(6);
      ascend::copyToHost(got.data(), out, 6);
      expectSame(predicate, got, std::vector<char>(want, want + 6));
    }
    int32_t *asInt = b.makeOf(std::vector<int32_t>(6));
    ascend::cast(asInt, {2, 3}, da, {2, 3});
    std::vector<int32_t> wantInt(6);
    host::cast(wantInt.data(), {2, 3}, a.data(), {2, 3});
    expectSame("cast f32 -> i32", readOf(asInt, 6), wantInt);
    Real *backToReal = b.make(6);
    ascend::cast(backToReal, {2, 3}, asInt, {2, 3});
    std::vector<Real> wantBack(6);
    host::cast(wantBack.data(), {2, 3}, wantInt.data(), {2, 3});
    expectEqual("cast i32 -> f32", read(backToReal, 6), wantBack);
    for (double low : {host::kAbsent, -1.0}) {
      Real *out = b.make(6);
      ascend::clamp(out, {2, 3}, da, {2, 3}, 1.0, low);
      std::vector<Real> want(6);
      host::clamp(want.data(), {2, 3}, a.data(), {2, 3}, 1.0, low);
      expectEqual("clamp", read(out, 6), want);
    }
    std::vector<char> pick = {1, 0, 1, 0, 0, 1};
    bool *dpick = reinterpret_cast<bool *>(b.makeOf(pick));
    Real *selected = b.make(6);
    ascend::select(selected, {2, 3}, dpick, {2, 3}, da, {2, 3}, dpos, {2, 3});
    std::vector<Real> wantSelected(6);
    host::select(wantSelected.data(), {2, 3},
                 reinterpret_cast<const bool *>(pick.data()), {2, 3}, a.data(),
                 {2, 3}, pos.data(), {2, 3});
    expectEqual("select", read(selected, 6), wantSelected);

    // slice_grad: zeros, then the gradient into a strided view.
    Real *sg = b.make(6), *g2 = b.make({5, 6});
    ascend::slice_grad(sg, {2, 3}, g2, {2, 1}, Shape{0, 1}, Shape{1, 2});
    std::vector<Real> wantSg(6), g2h = {5, 6};
    host::slice_grad(wantSg.data(), {2, 3}, g2h.data(), {2, 1}, Shape{0, 1},
                     Shape{1, 2});
    expectEqual("slice_grad", read(sg, 6), wantSg);

    // Loom's gather, dropout, RMS norm (and gradient), rotary embedding.
    std::vector<int64_t> idx = {2, 0, 1, 1, 2, 0};
    int64_t *didx = b.makeOf(idx);
    Real *gathered2 = b.make(6);
    ascend::gather(gathered2, {2, 3}, da, {2, 3}, didx, {2, 3}, 1);
    std::vector<Real> wantGather(6);
    host::gather(wantGather.data(), {2, 3}, a.data(), {2, 3}, idx.data(),
                 {2, 3}, 1);
    expectEqual("gather", read(gathered2, 6), wantGather);
    Real *dropped = b.make(6);
    ascend::dropout(dropped, {2, 3}, da, {2, 3}, nullptr, {}, {}, {},
                    host::kAbsentShape, 0.5, 7);
    std::vector<Real> wantDropped(6);
    host::dropout(wantDropped.data(), {2, 3}, a.data(), {2, 3}, nullptr, {},
                  {}, {}, host::kAbsentShape, 0.5, 7);
    expectEqual("dropout", read(dropped, 6), wantDropped);
    // The block [1:3, 2:5] of a 4x7 tensor: its starts are device scalars.
    std::vector<int64_t> row = {1}, column = {2};
    int64_t *dStartRow = b.makeOf(row), *dStartColumn = b.makeOf(column);
    Real *blockDropped = b.make(6);
    ascend::dropout(blockDropped, {2, 3}, da, {2, 3}, nullptr, {},
                    {dStartRow, dStartColumn}, {{}, {}}, Shape{4, 7}, 0.5, 7);
    host::dropout(wantDropped.data(), {2, 3}, a.data(), {2, 3}, nullptr, {},
                  {row.data(), column.data()}, {{}, {}}, Shape{4, 7}, 0.5, 7);
    expectEqual("dropout of a block", read(blockDropped, 6), wantDropped);
    std::vector<Real> gamma = {1.5, 0.5, -1};
    Real *dgamma = b.make(gamma), *rms = b.make(6), *rmsGrad = b.make(6);
    ascend::rms_norm(rms, {2, 3}, da, {2, 3}, dgamma, {3}, 1e-5, 1);
    ascend::rms_norm_grad(rmsGrad, {2, 3}, dpos, {2, 3}, da, {2, 3}, dgamma,
                          {3}, 1e-5, 1);
    std::vector<Real> wantRms(6), wantRmsGrad(6);
    host::rms_norm(wantRms.data(), {2, 3}, a.data(), {2, 3}, gamma.data(), {3},
                   1e-5, 1);
    host::rms_norm_grad(wantRmsGrad.data(), {2, 3}, pos.data(), {2, 3},
                        a.data(), {2, 3}, gamma.data(), {3}, 1e-5, 1);
    expectEqual("rms_norm", read(rms, 6), wantRms);
    expectEqual("rms_norm_grad", read(rmsGrad, 6), wantRmsGrad);
    std::vector<Real> heads(16);
    for (int i = 0; i < 16; ++i)
      heads[i] = Real(0.25 * i - 1);
    Real *dheads = b.make(heads), *rotated = b.make(16);
    std::vector<int64_t> positions = {3, 5};
    int64_t *dpositions = b.makeOf(positions);
    ascend::rope(rotated, {1, 2, 2, 4}, dheads, {1, 2, 2, 4}, dpositions,
                 {1, 2}, false, 10000.0);
    std::vector<Real> wantRot(16);
    host::rope(wantRot.data(), {1, 2, 2, 4}, heads.data(), {1, 2, 2, 4},
               positions.data(), {1, 2}, false, 10000.0);
    expectEqual("rope", read(rotated, 16), wantRot);

    Real *dgelu = b.make(6);
    ascend::gelu(dgelu, {2, 3}, da, {2, 3}, "tanh");
    std::vector<Real> hgelu(6);
    host::gelu(hgelu.data(), {2, 3}, a.data(), {2, 3}, "tanh");
    expectEqual("gelu (aclnnGeluV2)", read(dgelu, 6), hgelu);
  }
  if (failures == 0)
    std::printf("rank %d: ascend runtime ok\n", rank);
  std::fflush(stdout);
  ascend::finishDevice();
  rt::Runtime::finalize();
  return failures ? 1 : 0;
}
