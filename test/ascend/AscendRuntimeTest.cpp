//===- AscendRuntimeTest.cpp - The Ascend runtime on 2 ranks --------------===//
//
// Loom's Ascend runtime (runtime/ascend) driven directly on 2 MPI ranks,
// over the CPU test double of CANN (found on the library path): HCCL
// collectives including the means HCCL lacks (a sum, then a scale) and
// all-gathers along an inner dimension (2-D copies), and each kind of aclnn
// call the kernels make (matmul through transposed views, reductions,
// strided copies for slices, broadcasts and transposes, concatenation, a
// Loom operator), every result against the host kernel of the same op in
// f64, bit for bit (the double computes with the host kernels; what is
// checked is the runtime's use of the operators: views, strides, argument
// order). Prints `rank R: ascend runtime ok`; test/ascend/runtime-calls.test
// also checks the call sequence the double logs.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/Program.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace loom;
using host::Shape;

namespace {

int failures = 0;

void expectEqual(const char *what, const std::vector<double> &got,
                 const std::vector<double> &want) {
  if (got.size() == want.size() &&
      std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0)
    return;
  std::printf("check failed: %s:", what);
  for (double v : got)
    std::printf(" %g", v);
  std::printf(" (want");
  for (double v : want)
    std::printf(" %g", v);
  std::printf(")\n");
  ++failures;
}

/// Device buffers carved from one arena.
struct Buffers {
  ascend::Arena arena{1 << 16};
  int64_t used = 0;
  double *make(const std::vector<double> &values) {
    double *p = ascend::at<double>(arena, used);
    used +=
        static_cast<int64_t>((values.size() * sizeof(double) + 63) / 64 * 64);
    ascend::copyToDevice(p, values.data(), values.size() * sizeof(double));
    return p;
  }
  double *make(size_t count) { return make(std::vector<double>(count, 0.0)); }
};

std::vector<double> read(const double *p, size_t count) {
  std::vector<double> out(count);
  ascend::copyToHost(out.data(), p, count * sizeof(double));
  return out;
}

} // namespace

int main(int argc, char **argv) {
  rt::Runtime::init(&argc, &argv);
  ascend::startDevice();
  host::openGroups({{0, 1}});
  int rank = rt::Runtime::get().getWorldRank();
  {
    ascend::Communicator *comm = ascend::subgroup({0, 1}, {2}, {0});
    Buffers b;
    double r = rank;

    // all_reduce mean: HcclAllReduce (sum), then aclnnInplaceMuls by 1/2.
    double *x = b.make({1 + r, 2 + r, 3 + r, 4 + r}), *mean = b.make(4);
    ascend::all_reduce(mean, {4}, x, {4}, comm, "mean");
    expectEqual("all_reduce mean", read(mean, 4), {1.5, 2.5, 3.5, 4.5});

    // reduce_scatter mean along dim 1 of [2, 4]: packed first.
    double *y = b.make({r, 1, 2, 3, 4, 5, 6, 7 + r}), *part = b.make(4);
    ascend::reduce_scatter(part, {2, 2}, y, {2, 4}, comm, 1, "mean");
    std::vector<double> wantPart = rank == 0
                                       ? std::vector<double>{0.5, 1, 4, 5}
                                       : std::vector<double>{2, 3, 6, 7.5};
    expectEqual("reduce_scatter mean dim 1", read(part, 4), wantPart);

    // all_gather along dim 1: [2, 2] -> [2, 4].
    double *g = b.make({10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3});
    double *gathered = b.make(8);
    ascend::all_gather(gathered, {2, 4}, g, {2, 2}, comm, 1);
    expectEqual("all_gather dim 1", read(gathered, 8),
                {0, 1, 10, 11, 2, 3, 12, 13});

    // Kernels against the host kernels.
    std::vector<double> a = {0.5, -1.25, 2, 3.5, 0.75, -2.5}; // [2, 3]
    std::vector<double> bt = {1.5, 0.25, -1, 2, -0.5, 0.125}; // [2, 3]
    double *da = b.make(a), *dbt = b.make(bt), *dm = b.make(4);
    ascend::matmul(dm, {2, 2}, da, {2, 3}, dbt, {2, 3}, false, true);
    std::vector<double> hm(4);
    host::matmul(hm.data(), {2, 2}, a.data(), {2, 3}, bt.data(), {2, 3}, false,
                 true);
    expectEqual("matmul (transposed rhs)", read(dm, 4), hm);
    double *dm2 = b.make(9);
    ascend::matmul(dm2, {3, 3}, da, {2, 3}, dbt, {2, 3}, true, false);
    std::vector<double> hm2(9);
    host::matmul(hm2.data(), {3, 3}, a.data(), {2, 3}, bt.data(), {2, 3}, true,
                 false);
    expectEqual("matmul (transposed lhs)", read(dm2, 9), hm2);

    double *dsum = b.make(2);
    ascend::reduce(dsum, {2}, da, {2, 3}, Shape{1}, false, "sum");
    std::vector<double> hsum(2);
    host::reduce(hsum.data(), {2}, a.data(), {2, 3}, Shape{1}, false, "sum");
    expectEqual("reduce sum", read(dsum, 2), hsum);

    double *dslice = b.make(2);
    ascend::slice(dslice, {2, 1}, da, {2, 3}, Shape{0, 1}, Shape{2, 1},
                  Shape{1, 2});
    std::vector<double> hslice(2);
    host::slice(hslice.data(), {2, 1}, a.data(), {2, 3}, Shape{0, 1},
                Shape{2, 1}, Shape{1, 2});
    expectEqual("slice", read(dslice, 2), hslice);

    double *dbc = b.make(6), *drow = b.make({7, 8, 9});
    ascend::broadcast(dbc, {2, 3}, drow, {3}, host::kAbsentShape);
    expectEqual("broadcast", read(dbc, 6), {7, 8, 9, 7, 8, 9});

    double *dtr = b.make(6);
    ascend::transpose(dtr, {3, 2}, da, {2, 3}, Shape{1, 0});
    expectEqual("transpose", read(dtr, 6),
                {a[0], a[3], a[1], a[4], a[2], a[5]});

    double *dcat = b.make(9);
    ascend::concat(dcat, {3, 3}, {da, drow}, {{2, 3}, {1, 3}}, 0);
    expectEqual("concat", read(dcat, 9),
                {a[0], a[1], a[2], a[3], a[4], a[5], 7, 8, 9});

    // Element-wise ops (the rhs broadcast along rows), each its aclnn
    // operator.
    std::vector<double> pos = {0.5, 1.25, 2, 3.5, 0.75, 2.5};
    double *dpos = b.make(pos);
    using Binary =
        void (*)(double *, Shape, const double *, Shape, const double *, Shape);
    struct {
      const char *name;
      Binary device, reference;
    } binaries[] = {
        {"add", ascend::add<double>, host::add},
        {"sub", ascend::sub<double>, host::sub},
        {"mul", ascend::mul<double>, host::mul},
        {"div", ascend::div<double>, host::div},
        {"maximum", ascend::maximum<double>, host::maximum},
        {"minimum", ascend::minimum<double>, host::minimum},
    };
    for (auto &op : binaries) {
      double *out = b.make(6);
      op.device(out, {2, 3}, da, {2, 3}, drow, {3});
      std::vector<double> want(6), row = {7, 8, 9};
      op.reference(want.data(), {2, 3}, a.data(), {2, 3}, row.data(), {3});
      expectEqual(op.name, read(out, 6), want);
    }
    using Unary = void (*)(double *, Shape, const double *, Shape);
    struct {
      const char *name;
      Unary device, reference;
    } unaries[] = {
        {"neg", ascend::neg<double>, host::neg},
        {"exp", ascend::exp<double>, host::exp},
        {"log", ascend::log<double>, host::log},
        {"sqrt", ascend::sqrt<double>, host::sqrt},
        {"rsqrt", ascend::rsqrt<double>, host::rsqrt},
        {"tanh", ascend::tanh<double>, host::tanh},
        {"relu", ascend::relu<double>, host::relu},
        {"silu", ascend::silu<double>, host::silu},
        {"sin", ascend::sin<double>, host::sin},
        {"cos", ascend::cos<double>, host::cos},
    };
    for (auto &op : unaries) {
      double *out = b.make(6);
      op.device(out, {2, 3}, dpos, {2, 3});
      std::vector<double> want(6);
      op.reference(want.data(), {2, 3}, pos.data(), {2, 3});
      expectEqual(op.name, read(out, 6), want);
    }
    for (const char *kind : {"mean", "max"}) {
      double *out = b.make(3);
      ascend::reduce(out, {1, 3}, da, {2, 3}, Shape{0}, true, kind);
      std::vector<double> want(3);
      host::reduce(want.data(), {1, 3}, a.data(), {2, 3}, Shape{0}, true, kind);
      expectEqual(kind, read(out, 3), want);
    }
    double *dsoft = b.make(6), *dlogsoft = b.make(6), *dfill = b.make(6);
    ascend::softmax(dsoft, {2, 3}, da, {2, 3}, 1);
    ascend::log_softmax(dlogsoft, {2, 3}, da, {2, 3}, 1);
    ascend::fill(dfill, {2, 3}, 0.25);
    std::vector<double> hsoft(6), hlogsoft(6);
    host::softmax(hsoft.data(), {2, 3}, a.data(), {2, 3}, 1);
    host::log_softmax(hlogsoft.data(), {2, 3}, a.data(), {2, 3}, 1);
    expectEqual("softmax", read(dsoft, 6), hsoft);
    expectEqual("log_softmax", read(dlogsoft, 6), hlogsoft);
    expectEqual("fill", read(dfill, 6), std::vector<double>(6, 0.25));

    double *dgelu = b.make(6);
    ascend::gelu(dgelu, {2, 3}, da, {2, 3}, "tanh");
    std::vector<double> hgelu(6);
    host::gelu(hgelu.data(), {2, 3}, a.data(), {2, 3}, "tanh");
    expectEqual("gelu (Loom operator)", read(dgelu, 6), hgelu);
  }
  if (failures == 0)
    std::printf("rank %d: ascend runtime ok\n", rank);
  std::fflush(stdout);
  ascend::finishDevice();
  rt::Runtime::finalize();
  return failures ? 1 : 0;
}
