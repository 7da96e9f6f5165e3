//===- KernelConformanceTest.cpp - Every target's kernels, one suite -----===//
//
// The kernel conformance suite: each case is defined once, as a one-op
// function (its text reading the arguments %a0, %a1, ...) with inputs, and
// runs on every target that has a kernel for its op and element types:
// the reference interpreter computes the expected results; the kernel's
// arguments are built from the op through the kernel contract table
// (codegen/Common/KernelContract.h) exactly as --loom-lower-to-calls
// builds them (results, operands by ODS group, attributes by name), in the
// target's memory, and the target's generated dispatcher calls
// `loom::<target>::<op>` with them (KernelCall.h, Targets.h).
//
// Agreement (per target, Targets.h):
//   host    bit for bit: the host kernels mirror the interpreter's loops,
//           accumulation types and constants. Except attention and its
//           gradient, within the tolerance below: under causal and tree
//           masks the host runs blocked GEMMs over the keys each block of
//           queries sees (runtime/kernels/AttentionKernels.cpp), summing
//           in another order than the interpreter's dense loops.
//   ascend  bit for bit (f32 only, Ascend has no f64; attention as the
//           host): Loom's CPU test double of CANN computes with the host
//           kernels, so what is
//           checked is the runtime's use of the operators (views, strides,
//           argument order), as test/ascend/AscendRuntimeTest.cpp does.
//   cuda    within 1e-12 (f64) and 1e-5 (f32), norm-wise relative, as
//           test/unit/CudaKernelsTest.cpp; integers and i1 exactly; skipped
//           without a device.
//
// Adding an op: add its cases once, to caseSets() below; the test
// EveryKernelHasCases fails for an op with a kernel and no case.
//
//===----------------------------------------------------------------------===//

#include "test/conformance/Targets.h"

#include "codegen/Common/KernelContract.h"
#include "dialects/nn/IR/NNDialect.h"
#include "runtime/ascend/Program.h"
#include "runtime/interpreter/Interpreter.h"
#include "runtime/interpreter/Tensor.h"
#if LOOM_CONFORMANCE_CUDA
#include "runtime/cuda/CudaKernels.h"
#endif

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using loom::codegen::KernelAttr;
using loom::codegen::KernelContract;
using loom::codegen::KernelTensor;
using loom::interp::ElementKind;
using loom::interp::Tensor;
namespace conf = loom::conformance;

namespace {

using Dims = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

bool ascendStarted = false;

const conf::Target kHost = {
    "host",
    [] { return static_cast<const char *>(nullptr); },
    [](size_t bytes) { return std::malloc(bytes ? bytes : 1); },
    [](void *p) { std::free(p); },
    [](void *to, const void *from, size_t bytes) {
      if (bytes)
        std::memcpy(to, from, bytes);
    },
    [](void *to, const void *from, size_t bytes) {
      if (bytes)
        std::memcpy(to, from, bytes);
    },
    conf::dispatchHost,
    conf::Agreement::Bitwise,
};

const conf::Target kAscend = {
    "ascend",
    [] {
      return ascendStarted ? static_cast<const char *>(nullptr)
                           : "the Ascend test double did not start";
    },
    [](size_t bytes) {
      return loom::ascend::target().allocate(bytes ? bytes : 1);
    },
    [](void *p) { loom::ascend::target().release(p); },
    loom::ascend::copyToDevice,
    loom::ascend::copyToHost,
    conf::dispatchAscend,
    conf::Agreement::Bitwise,
};

#if LOOM_CONFORMANCE_CUDA
const conf::Target kCuda = {
    "cuda",
    [] {
      static const bool have = loom::cuda::deviceCount() > 0;
      return have ? static_cast<const char *>(nullptr) : "no CUDA device";
    },
    [](size_t bytes) { return loom::cuda::deviceAlloc(bytes ? bytes : 1); },
    loom::cuda::deviceFree,
    loom::cuda::copyToDevice,
    loom::cuda::copyToHost,
    conf::dispatchCuda,
    conf::Agreement::Tolerance,
};
#endif

const conf::Target *const kTargets[] = {
    &kHost, &kAscend,
#if LOOM_CONFORMANCE_CUDA
    &kCuda,
#endif
};

//===----------------------------------------------------------------------===//
// Text and inputs
//===----------------------------------------------------------------------===//

MLIRContext &getContext() {
  static MLIRContext *context = [] {
    auto *ctx = new MLIRContext();
    ctx->loadDialect<loom::nn::NNDialect, func::FuncDialect,
                     arith::ArithDialect>();
    return ctx;
  }();
  return *context;
}

std::string elementName(ElementKind kind) {
  return loom::interp::getElementKindName(kind).str();
}

/// `tensor<4x8xf32>`.
std::string ty(ElementKind kind, const Dims &shape) {
  std::string text = "tensor<";
  for (int64_t size : shape)
    text += std::to_string(size) + "x";
  return text + elementName(kind) + ">";
}
std::string ty(const Tensor &tensor) { return tensor.getTypeString(); }

std::mt19937_64 &rng() {
  static std::mt19937_64 generator(20261201);
  return generator;
}

Tensor randomFloat(ElementKind kind, const Dims &shape, double lo = -1.0,
                   double hi = 1.0) {
  Tensor tensor(kind, shape);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < tensor.getNumElements(); ++i)
    tensor.setDouble(i, dist(rng()));
  return tensor;
}

Tensor randomInt(ElementKind kind, const Dims &shape, int64_t lo, int64_t hi) {
  Tensor tensor(kind, shape);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    int64_t value = dist(rng());
    if (kind == ElementKind::I64)
      tensor.data<int64_t>()[i] = value;
    else if (kind == ElementKind::I32)
      tensor.data<int32_t>()[i] = static_cast<int32_t>(value);
    else
      tensor.setDouble(i, static_cast<double>(value));
  }
  return tensor;
}

/// Random values of any kind (small integers, booleans).
Tensor randomOf(ElementKind kind, const Dims &shape) {
  if (loom::interp::isFloatKind(kind))
    return randomFloat(kind, shape);
  return randomInt(kind, shape, kind == ElementKind::I1 ? 0 : -50,
                   kind == ElementKind::I1 ? 1 : 50);
}

Tensor scalarI64(int64_t value) {
  return Tensor::fromValues<int64_t>({}, {value});
}

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

struct Case {
  /// Names the case in failures.
  std::string name;
  /// The op's text, reading %a0, %a1, ...
  std::string op;
  std::vector<Tensor> args;
  std::vector<std::string> resultTypes;
};

using Cases = std::vector<Case>;

/// The cases of one op, made per element type (`kinds`; a target runs
/// those whose tensors' types it has kernels for).
struct CaseSet {
  const char *op;
  std::vector<ElementKind> kinds;
  std::function<void(ElementKind, Cases &)> make;
};

const std::vector<ElementKind> kFloats = {ElementKind::F32, ElementKind::F64};
const std::vector<ElementKind> kAll = {ElementKind::F32, ElementKind::F64,
                                       ElementKind::I32, ElementKind::I64,
                                       ElementKind::I1};
const std::vector<ElementKind> kNumeric = {ElementKind::F32, ElementKind::F64,
                                           ElementKind::I32, ElementKind::I64};
const ElementKind kIndexKinds[] = {ElementKind::I64, ElementKind::I32};

void setNaN(Tensor &tensor, int64_t index) {
  tensor.setDouble(index, std::numeric_limits<double>::quiet_NaN());
}

/// The broadcast of two shapes (numpy's rule).
Dims broadcastDims(const Dims &a, const Dims &b) {
  Dims out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

const std::pair<Dims, Dims> kBroadcastPairs[] = {
    {{4, 8}, {4, 8}},       {{4, 8}, {8}},           {{8}, {4, 8}},
    {{4, 1}, {1, 8}},       {{}, {3, 5}},            {{3, 5}, {}},
    {{2, 3, 1, 5}, {3, 4, 1}}, {{8, 16, 32}, {8, 16, 1}}, {{}, {}},
    {{1, 7}, {5, 1}},
};

/// An element-wise op of one operand on inputs in [lo, hi], a NaN among
/// them.
CaseSet unary(const char *op, double lo, double hi) {
  return {op, kFloats, [=](ElementKind k, Cases &cases) {
            for (Dims shape : {Dims{7, 9}, Dims{}, Dims{3, 1, 4}}) {
              Tensor x = randomFloat(k, shape, lo, hi);
              if (x.getNumElements() > 2)
                setNaN(x, 1);
              cases.push_back({op, std::string(op) + " %a0 : " + ty(x), {x},
                               {ty(x)}});
            }
          }};
}

/// An element-wise op of two broadcast operands, with NaNs and ties.
CaseSet binary(const char *op) {
  return {op, kFloats, [op](ElementKind k, Cases &cases) {
            for (const auto &[l, r] : kBroadcastPairs) {
              Tensor a = randomFloat(k, l), b = randomFloat(k, r);
              if (a.getNumElements() > 3) {
                setNaN(a, 1);
                a.setDouble(2, b.getDouble(0));
              }
              cases.push_back({op, std::string(op) + " %a0, %a1 : " + ty(a) +
                                       ", " + ty(b),
                               {a, b}, {ty(k, broadcastDims(l, r))}});
            }
          }};
}

/// `[0, 2]`.
std::string list(const Dims &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

struct SliceCase {
  Dims input, offsets, sizes, strides;
};
const SliceCase kSlices[] = {
    {{4, 8}, {0, 2}, {4, 3}, {1, 2}},
    {{1, 1032}, {0, 0}, {1, 1024}, {1, 1}},
    {{5, 6, 7}, {1, 0, 2}, {2, 3, 2}, {2, 2, 3}},
    {{5, 6}, {4, 5}, {1, 1}, {1, 1}},
    {{5, 6}, {0, 0}, {0, 6}, {1, 1}},
    {{3, 4, 5}, {0, 1, 0}, {3, 2, 5}, {1, 1, 1}},
};

/// An f64 attribute value as MLIR parses it.
std::string f64(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17e", value);
  return buffer;
}

/// Subtree ends of a random prefix tree of `count` tokens packed in
/// depth-first order (token 0 the root).
std::vector<int64_t> randomSubtreeEnds(int64_t count) {
  std::vector<int64_t> parent(count, -1), path = {0};
  for (int64_t j = 1; j < count; ++j) {
    std::uniform_int_distribution<size_t> pops(0, path.size() - 1);
    path.resize(path.size() - pops(rng()));
    parent[j] = path.back();
    path.push_back(j);
  }
  std::vector<int64_t> end(count);
  for (int64_t j = count - 1; j >= 0; --j)
    end[j] = std::max(end[j], j);
  for (int64_t j = count - 1; j >= 1; --j)
    end[parent[j]] = std::max(end[parent[j]], end[j]);
  return end;
}

struct AttentionCase {
  int64_t batch, seqQ, seqK, heads, kvHeads, dim, valueDim;
  const char *mask;
  bool positions;
  double scale; // NaN: absent
};

const AttentionCase kAttention[] = {
    {2, 16, 16, 4, 4, 8, 8, "causal", false, NAN},
    {2, 16, 16, 4, 4, 8, 8, "none", false, NAN},
    {3, 9, 9, 4, 2, 8, 6, "causal", false, 0.3},
    {2, 7, 13, 2, 1, 4, 5, "none", false, NAN},
    {2, 8, 16, 4, 2, 8, 8, "causal", true, NAN},
    {2, 12, 12, 2, 2, 4, 4, "tree", false, NAN},
    {1, 6, 12, 2, 1, 4, 3, "tree", true, 0.5},
};

/// The operands and the MLIR spelling of one attention case.
struct AttentionInputs {
  Tensor query, key, value, dout, subtreeEnd, positions;
  std::string operands, types, suffix;
};

AttentionInputs makeAttentionInputs(ElementKind kind, ElementKind indexKind,
                                    const AttentionCase &c, bool backward) {
  AttentionInputs in;
  in.query = randomFloat(kind, {c.batch, c.seqQ, c.heads, c.dim}, -2, 2);
  in.key = randomFloat(kind, {c.batch, c.seqK, c.kvHeads, c.dim}, -2, 2);
  in.value = randomFloat(kind, {c.batch, c.seqK, c.kvHeads, c.valueDim});
  in.dout = randomFloat(kind, {c.batch, c.seqQ, c.heads, c.valueDim});
  int next = 0;
  auto arg = [&](const Tensor &t) {
    in.operands += (next ? ", %a" : "%a") + std::to_string(next);
    ++next;
    in.types += (in.types.empty() ? "" : ", ") + ty(t);
  };
  if (backward)
    arg(in.dout);
  arg(in.query);
  arg(in.key);
  arg(in.value);
  in.suffix = std::string(" mask = ") + c.mask;
  if (std::string(c.mask) == "tree") {
    in.subtreeEnd = Tensor(indexKind, {c.batch, c.seqK});
    for (int64_t b = 0; b < c.batch; ++b) {
      std::vector<int64_t> ends = randomSubtreeEnds(c.seqK);
      for (int64_t j = 0; j < c.seqK; ++j)
        in.subtreeEnd.setDouble(b * c.seqK + j, static_cast<double>(ends[j]));
    }
    in.suffix += " subtree_end %a" + std::to_string(next);
    arg(in.subtreeEnd);
  }
  if (c.positions) {
    // Positions in [-1, seq_k): -1 sees no key (a zero row).
    in.positions = randomInt(indexKind, {c.batch, c.seqQ}, -1, c.seqK - 1);
    in.suffix += " positions %a" + std::to_string(next);
    arg(in.positions);
  }
  if (!std::isnan(c.scale))
    in.suffix += " {scale = " + f64(c.scale) + " : f64}";
  return in;
}

std::vector<CaseSet> makeCaseSets() {
  std::vector<CaseSet> sets;
  for (auto [op, lo, hi] :
       {std::tuple{"nn.neg", -3.0, 3.0}, std::tuple{"nn.exp", -5.0, 5.0},
        std::tuple{"nn.log", 0.01, 10.0}, std::tuple{"nn.sqrt", 0.0, 10.0},
        std::tuple{"nn.rsqrt", 0.01, 10.0}, std::tuple{"nn.tanh", -4.0, 4.0},
        std::tuple{"nn.relu", -2.0, 2.0}, std::tuple{"nn.silu", -6.0, 6.0},
        std::tuple{"nn.sin", -7.0, 7.0}, std::tuple{"nn.cos", -7.0, 7.0}})
    sets.push_back(unary(op, lo, hi));
  for (const char *op : {"nn.add", "nn.sub", "nn.mul", "nn.div", "nn.maximum",
                         "nn.minimum"})
    sets.push_back(binary(op));

  sets.push_back({"nn.fill", kFloats, [](ElementKind k, Cases &cases) {
    for (Dims shape : {Dims{}, Dims{4, 8}, Dims{3, 5, 7}})
      for (const char *value : {"1.0", "0.1", "-3.25e+07", "128.0"})
        cases.push_back({"fill", std::string("nn.fill ") + value + " : " +
                                     ty(k, shape),
                         {}, {ty(k, shape)}});
  }});
  // Transposes, batches broadcast, and (GemmBlocks.h) more rows than one
  // GEMM block, a short last one among them, which LOOM_HOST_THREADS
  // threads share (the ctest host-kernels-3-gemm-threads).
  sets.push_back({"nn.matmul", kFloats, [](ElementKind k, Cases &cases) {
    struct M { Dims lhs, rhs; bool transLhs, transRhs; };
    const M ms[] = {{{5, 7}, {7, 3}, false, false},
                    {{7, 5}, {7, 3}, true, false},
                    {{5, 7}, {3, 7}, false, true},
                    {{7, 5}, {3, 7}, true, true},
                    {{1, 1}, {1, 9}, false, false},
                    {{16, 128}, {128, 33}, false, false},
                    {{2, 5, 7}, {7, 3}, false, false},
                    {{2, 1, 5, 7}, {3, 7, 4}, false, false},
                    {{3, 7, 5}, {2, 1, 4, 7}, true, true},
                    {{4, 6, 8}, {4, 6, 8}, false, true},
                    {{300, 40}, {40, 70}, false, false},
                    {{40, 300}, {70, 40}, true, true},
                    {{2, 520, 9}, {9, 5}, false, false}};
    for (const M &c : ms) {
      Tensor a = randomFloat(k, c.lhs), b = randomFloat(k, c.rhs);
      size_t lr = c.lhs.size(), rr = c.rhs.size();
      int64_t m = c.transLhs ? c.lhs[lr - 1] : c.lhs[lr - 2];
      int64_t n = c.transRhs ? c.rhs[rr - 2] : c.rhs[rr - 1];
      Dims shape = broadcastDims(Dims(c.lhs.begin(), c.lhs.end() - 2),
                                 Dims(c.rhs.begin(), c.rhs.end() - 2));
      shape.push_back(m);
      shape.push_back(n);
      cases.push_back({"matmul", std::string("nn.matmul %a0, %a1") +
                                     (c.transLhs ? " transpose_lhs" : "") +
                                     (c.transRhs ? " transpose_rhs" : "") +
                                     " : " + ty(a) + ", " + ty(b),
                       {a, b}, {ty(k, shape)}});
    }
  }});
  for (bool grad : {false, true})
    sets.push_back({grad ? "nn.gelu_grad" : "nn.gelu", kFloats,
                    [grad](ElementKind k, Cases &cases) {
      for (const char *approximate : {"none", "tanh"})
        for (Dims shape : {Dims{16, 33}, Dims{5}}) {
          Tensor x = randomFloat(k, shape, -5, 5), dy = randomFloat(k, shape);
          std::string suffix = std::string(approximate) == "tanh"
                                   ? " approximate = tanh"
                                   : "";
          if (grad)
            cases.push_back({std::string("gelu_grad ") + approximate,
                             "nn.gelu_grad %a0, %a1" + suffix + " : " + ty(x),
                             {dy, x}, {ty(x)}});
          else
            cases.push_back({std::string("gelu ") + approximate,
                             "nn.gelu %a0" + suffix + " : " + ty(x), {x},
                             {ty(x)}});
        }
    }});
  // Small integers, so that ties occur; NaNs in float operands.
  sets.push_back({"nn.compare", kNumeric, [](ElementKind k, Cases &cases) {
    for (const char *p : {"eq", "ne", "lt", "le", "gt", "ge"})
      for (const auto &[l, r] : kBroadcastPairs) {
        Tensor a = randomInt(k, l, -2, 2), b = randomInt(k, r, -2, 2);
        if (loom::interp::isFloatKind(k) && a.getNumElements() > 3)
          setNaN(a, 3);
        cases.push_back({std::string("compare ") + p,
                         std::string("nn.compare ") + p + ", %a0, %a1 : " +
                             ty(a) + ", " + ty(b),
                         {a, b}, {ty(ElementKind::I1, broadcastDims(l, r))}});
      }
  }});
  sets.push_back({"nn.select", kNumeric, [](ElementKind k, Cases &cases) {
    struct S { Dims condition, onTrue, onFalse; };
    for (const S &c : {S{{8, 16, 32}, {8, 16, 32}, {}}, S{{8, 16, 32}, {}, {}},
                       S{{4, 1}, {1, 5}, {4, 5}}, S{{3, 4}, {3, 4}, {3, 4}},
                       S{{}, {2, 3}, {3}}}) {
      Tensor cond = randomInt(ElementKind::I1, c.condition, 0, 1);
      Tensor t = randomOf(k, c.onTrue), f = randomOf(k, c.onFalse);
      Dims shape =
          broadcastDims(broadcastDims(c.condition, c.onTrue), c.onFalse);
      cases.push_back({"select", "nn.select %a0, %a1, %a2 : " + ty(cond) +
                                     ", " + ty(t) + ", " + ty(f),
                       {cond, t, f}, {ty(k, shape)}});
    }
  }});
  sets.push_back({"nn.clamp", kFloats, [](ElementKind k, Cases &cases) {
    for (auto [lo, hi] : {std::pair{"-2.0e-01", "6.0e-01"},
                          std::pair{"0.0", "6.0"}, std::pair{"0.1", "0.1"}}) {
      Tensor x = randomFloat(k, {9, 11}, -1, 7);
      setNaN(x, 4);
      cases.push_back({"clamp",
                       std::string("nn.clamp %a0 {max = ") + hi +
                           " : f64, min = " + lo + " : f64} : " + ty(x),
                       {x}, {ty(x)}});
    }
  }});
  // Fractions, negatives, large values, NaN, zero and signed zero, each
  // pair of types.
  sets.push_back({"nn.cast", kAll, [](ElementKind from, Cases &cases) {
    for (ElementKind to : kAll) {
      Tensor x(from, {12});
      const double values[] = {0.0,  -0.0,  1.5, -2.5,  3.99,  -7.0,
                               1e10, -1e10, 3e9, 1e300, -1e20, 42.0};
      for (int64_t i = 0; i < 12; ++i)
        x.setDouble(i, values[i]);
      if (loom::interp::isFloatKind(from))
        setNaN(x, 9);
      if (from == ElementKind::I64)
        x.data<int64_t>()[10] = (int64_t{1} << 40) + 3;
      cases.push_back({"cast to " + elementName(to),
                       "nn.cast %a0 : " + ty(x) + " to " + ty(to, {12}), {x},
                       {ty(to, {12})}});
    }
  }});
  sets.push_back({"nn.reduce", kFloats, [](ElementKind k, Cases &cases) {
    struct R { Dims shape, dims; };
    const R rs[] = {{{4, 5, 6}, {0}},       {{4, 5, 6}, {1}},
                    {{4, 5, 6}, {2}},       {{4, 5, 6}, {0, 1}},
                    {{4, 5, 6}, {0, 2}},    {{4, 5, 6}, {2, 1}},
                    {{4, 5, 6}, {0, 1, 2}}, {{8, 16, 32}, {0, 1}},
                    {{8, 16, 32}, {2}},     {{17}, {0}},
                    {{3, 1, 5}, {1}},       {{128, 32}, {0}}};
    for (const char *kind : {"sum", "mean", "max"})
      for (bool keep : {false, true})
        for (const R &c : rs) {
          Tensor x = randomFloat(k, c.shape, -10, 10);
          if (std::string(kind) == "max" && x.getNumElements() > 20)
            setNaN(x, 7);
          Dims shape;
          for (size_t d = 0; d < c.shape.size(); ++d) {
            bool reduced = std::find(c.dims.begin(), c.dims.end(),
                                     int64_t(d)) != c.dims.end();
            if (!reduced)
              shape.push_back(c.shape[d]);
            else if (keep)
              shape.push_back(1);
          }
          cases.push_back({std::string("reduce ") + kind,
                           std::string("nn.reduce ") + kind + " %a0 dims = " +
                               list(c.dims) + (keep ? " keep_dims" : "") +
                               " : " + ty(x),
                           {x}, {ty(k, shape)}});
        }
  }});
  sets.push_back({"nn.broadcast", kAll, [](ElementKind k, Cases &cases) {
    struct B { Dims input, result; std::optional<Dims> dims; };
    for (const B &c : {B{{8}, {4, 8}, std::nullopt},
                       B{{128, 1}, {128, 32}, std::nullopt},
                       B{{4}, {4, 8}, Dims{0}}, B{{3, 1}, {3, 4, 5}, Dims{0, 2}},
                       B{{}, {2, 3}, std::nullopt},
                       B{{1, 5}, {2, 3, 5}, std::nullopt},
                       B{{2, 3}, {2, 3}, std::nullopt}}) {
      Tensor x = randomOf(k, c.input);
      std::string op = "nn.broadcast %a0";
      if (c.dims)
        op += " broadcast_dims = " + list(*c.dims);
      cases.push_back({"broadcast", op + " : " + ty(x) + " to " +
                                        ty(k, c.result),
                       {x}, {ty(k, c.result)}});
    }
  }});
  sets.push_back({"nn.reshape", kAll, [](ElementKind k, Cases &cases) {
    for (auto [from, to] :
         {std::pair{Dims{8, 16, 32}, Dims{128, 32}},
          std::pair{Dims{6}, Dims{2, 1, 3}}, std::pair{Dims{}, Dims{1, 1}}}) {
      Tensor x = randomOf(k, from);
      cases.push_back({"reshape", "nn.reshape %a0 : " + ty(x) + " to " +
                                      ty(k, to),
                       {x}, {ty(k, to)}});
    }
  }});
  sets.push_back({"nn.transpose", kAll, [](ElementKind k, Cases &cases) {
    for (const auto &[shape, perm] :
         {std::pair{Dims{2, 16, 4, 8}, Dims{0, 2, 1, 3}},
          std::pair{Dims{3, 5}, Dims{1, 0}},
          std::pair{Dims{2, 3, 4}, Dims{2, 0, 1}},
          std::pair{Dims{4, 1, 3}, Dims{1, 0, 2}}}) {
      Tensor x = randomOf(k, shape);
      Dims result;
      for (int64_t p : perm)
        result.push_back(shape[p]);
      cases.push_back({"transpose", "nn.transpose %a0 permutation = " +
                                        list(perm) + " : " + ty(x),
                       {x}, {ty(k, result)}});
    }
  }});
  sets.push_back({"nn.slice", kAll, [](ElementKind k, Cases &cases) {
    for (const SliceCase &c : kSlices) {
      Tensor x = randomOf(k, c.input);
      cases.push_back({"slice", "nn.slice %a0 offsets = " + list(c.offsets) +
                                    " sizes = " + list(c.sizes) +
                                    " strides = " + list(c.strides) + " : " +
                                    ty(x),
                       {x}, {ty(k, c.sizes)}});
    }
  }});
  sets.push_back({"nn.slice_grad", kFloats, [](ElementKind k, Cases &cases) {
    for (const SliceCase &c : kSlices) {
      Tensor dy = randomFloat(k, c.sizes);
      cases.push_back({"slice_grad",
                       "nn.slice_grad %a0 offsets = " + list(c.offsets) +
                           " strides = " + list(c.strides) + " : " + ty(dy) +
                           " to " + ty(k, c.input),
                       {dy}, {ty(k, c.input)}});
    }
  }});
  // Variadic: one to three inputs, an empty one among them.
  sets.push_back({"nn.concat", kAll, [](ElementKind k, Cases &cases) {
    struct C { std::vector<Dims> inputs; int64_t dim; };
    for (const C &c : {C{{{4, 3}, {4, 5}}, 1}, C{{{2, 3}, {1, 3}, {4, 3}}, 0},
                       C{{{2, 1, 4}, {2, 3, 4}, {2, 0, 4}}, 1},
                       C{{{1, 512}, {1, 2048}, {1, 64}}, 1}, C{{{7}}, 0}}) {
      std::vector<Tensor> inputs;
      std::string operands, types;
      Dims shape = c.inputs[0];
      shape[c.dim] = 0;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        inputs.push_back(randomOf(k, c.inputs[i]));
        operands += (i ? ", %a" : "%a") + std::to_string(i);
        types += (i ? ", " : "") + ty(inputs.back());
        shape[c.dim] += c.inputs[i][c.dim];
      }
      cases.push_back({"concat", "nn.concat " + operands + " dim = " +
                                     std::to_string(c.dim) + " : " + types,
                       inputs, {ty(k, shape)}});
    }
  }});
  // The optional offset operand (0-d i64).
  sets.push_back({"nn.iota", kNumeric, [](ElementKind k, Cases &cases) {
    for (const auto &[shape, dim] :
         {std::pair{Dims{8, 16}, int64_t{1}}, std::pair{Dims{3, 4, 5}, 0l},
          std::pair{Dims{3, 4, 5}, 2l}, std::pair{Dims{8, 16, 64}, 2l}})
      for (bool withOffset : {false, true}) {
        std::string op = "nn.iota dim = " + std::to_string(dim);
        std::vector<Tensor> args;
        if (withOffset) {
          op += " offset %a0";
          args.push_back(scalarI64(995));
        }
        cases.push_back({"iota", op + " : " + ty(k, shape), args,
                         {ty(k, shape)}});
      }
  }});
  // Index operands of both widths; one index out of range: an undefined
  // element (NaN or 0), the same on every target.
  sets.push_back({"nn.gather", kAll, [](ElementKind k, Cases &cases) {
    struct G { Dims input, indices; int64_t dim; };
    for (const G &c : {G{{16, 64}, {16, 1}, 1}, G{{4, 5, 6}, {4, 3, 6}, 1},
                       G{{4, 5, 6}, {2, 5, 6}, 0}, G{{4, 5, 6}, {4, 5, 9}, 2}})
      for (ElementKind ik : kIndexKinds) {
        Tensor x = randomOf(k, c.input);
        Tensor idx = randomInt(ik, c.indices, 0, c.input[c.dim] - 1);
        idx.setDouble(0, static_cast<double>(c.input[c.dim]));
        cases.push_back({"gather " + elementName(ik),
                         "nn.gather %a0, %a1 dim = " + std::to_string(c.dim) +
                             " : " + ty(x) + ", " + ty(idx),
                         {x, idx}, {ty(k, c.indices)}});
      }
  }});
  sets.push_back({"nn.embedding", kFloats, [](ElementKind k, Cases &cases) {
    for (ElementKind ik : kIndexKinds)
      for (bool withOffset : {false, true}) {
        Tensor table = randomFloat(k, withOffset ? Dims{32, 32} : Dims{16, 32});
        Tensor ids = randomInt(ik, {8, 16}, 0, withOffset ? 63 : 15);
        // Without an offset, one id outside the table (undefined: NaN).
        if (!withOffset)
          ids.setDouble(5, 16);
        std::string op = "nn.embedding %a0, %a1";
        std::vector<Tensor> args = {table, ids};
        if (withOffset) {
          op += " offset %a2";
          args.push_back(scalarI64(16));
        }
        cases.push_back({"embedding " + elementName(ik),
                         op + " : " + ty(table) + ", " + ty(ids), args,
                         {ty(k, {8, 16, 32})}});
      }
    // A table of rank 3 (expert weights looked up whole by a placement's
    // ids), with and without an offset.
    for (bool withOffset : {false, true}) {
      Tensor table = randomFloat(k, {4, 6, 5});
      Tensor ids = randomInt(ElementKind::I64, {7}, 0, withOffset ? 7 : 3);
      std::string op = "nn.embedding %a0, %a1";
      std::vector<Tensor> args = {table, ids};
      if (withOffset) {
        op += " offset %a2";
        args.push_back(scalarI64(4));
      }
      cases.push_back({std::string("embedding rank-3 table") +
                           (withOffset ? " offset" : ""),
                       op + " : " + ty(table) + ", " + ty(ids), args,
                       {ty(k, {7, 6, 5})}});
    }
  }});
  // Indices of a larger range than the result: repeats add up, and some
  // fall outside (with or without offset) and add nothing.
  sets.push_back({"nn.gather_grad", kFloats, [](ElementKind k, Cases &cases) {
    struct G { Dims grad, result; int64_t dim; bool withOffset; };
    for (const G &c : {G{{128, 32}, {16, 32}, 0, false},
                       G{{128, 32}, {64, 32}, 0, false},
                       G{{128, 32}, {32, 32}, 0, true},
                       G{{16, 1}, {16, 64}, 1, false},
                       G{{4, 5, 6}, {4, 3, 6}, 1, true}})
      for (ElementKind ik : kIndexKinds) {
        Tensor dy = randomFloat(k, c.grad);
        int64_t size = c.result[c.dim];
        Tensor indices = randomInt(ik, c.grad, -1, 2 * size);
        std::string op =
            "nn.gather_grad %a0, %a1 dim = " + std::to_string(c.dim);
        std::vector<Tensor> args = {dy, indices};
        if (c.withOffset) {
          op += " offset %a2";
          args.push_back(scalarI64(size / 2));
        }
        cases.push_back({"gather_grad " + elementName(ik),
                         op + " : " + ty(dy) + ", " + ty(indices) + " to " +
                             ty(k, c.result),
                         args, {ty(k, c.result)}});
      }
  }});
  for (const char *op : {"nn.softmax", "nn.log_softmax"})
    sets.push_back({op, kFloats, [op](ElementKind k, Cases &cases) {
      for (const auto &[shape, dim] :
           {std::pair{Dims{3, 4, 5}, int64_t{0}}, std::pair{Dims{3, 4, 5}, 1l},
            std::pair{Dims{3, 4, 5}, 2l}, std::pair{Dims{8, 64}, 1l}}) {
        Tensor x = randomFloat(k, shape, -20, 20);
        cases.push_back({op, std::string(op) + " %a0 dim = " +
                                 std::to_string(dim) + " : " + ty(x),
                         {x}, {ty(x)}});
      }
    }});
  // Optional operands (scale, bias: each combination), defaults left out
  // or given.
  struct NormCase {
    Dims shape;
    int64_t normalizedDims;
    const char *epsilon; // null: the default
    bool scale, bias;
  };
  static const NormCase kNorms[] = {
      {{8, 16, 32}, 1, nullptr, true, true},
      {{8, 16, 32}, 1, nullptr, false, false},
      {{8, 16, 32}, 2, "1.0e-06", true, false},
      {{6, 7}, 1, "1.0e-03", false, true},
      {{5}, 1, nullptr, true, true},
      {{3, 4, 5}, 3, "1.0e-05", true, true}};
  for (const char *name :
       {"nn.layer_norm", "nn.layer_norm_grad", "nn.rms_norm",
        "nn.rms_norm_grad"})
    sets.push_back({name, kFloats, [name](ElementKind k, Cases &cases) {
      std::string op = name;
      bool grad = op.find("_grad") != std::string::npos;
      bool layer = op.find("layer") != std::string::npos;
      for (const NormCase &c : kNorms) {
        Dims trailing(c.shape.end() - c.normalizedDims, c.shape.end());
        Tensor x = randomFloat(k, c.shape, -3, 3), dy = randomFloat(k, c.shape);
        std::vector<Tensor> args;
        std::string text = op + " ";
        if (grad) {
          args = {dy, x};
          text += "%a0, %a1";
        } else {
          args = {x};
          text += "%a0";
        }
        auto optional = [&](bool present, const char *keyword, Tensor t) {
          if (!present)
            return;
          text += std::string(" ") + keyword + " %a" +
                  std::to_string(args.size());
          args.push_back(t);
        };
        optional(c.scale, "scale", randomFloat(k, trailing, 0.5, 1.5));
        // The gradients take no bias; rms_norm has none.
        optional(c.bias && layer && !grad, "bias", randomFloat(k, trailing));
        std::string attrs;
        if (c.epsilon)
          attrs += std::string("epsilon = ") + c.epsilon + " : f64";
        if (c.normalizedDims != 1)
          attrs += std::string(attrs.empty() ? "" : ", ") +
                   "normalized_dims = " + std::to_string(c.normalizedDims) +
                   " : i64";
        if (!attrs.empty())
          text += " {" + attrs + "}";
        std::string types;
        for (size_t i = 0; i < args.size(); ++i)
          types += (i ? ", " : "") + ty(args[i]);
        cases.push_back({op, text + " : " + types, args, {ty(x)}});
      }
    }});
  // Enumerations (mask), the optional index operands (subtree_end,
  // positions) of both widths, an absent optional F64Attr (scale).
  for (bool backward : {false, true})
    sets.push_back({backward ? "nn.attention_grad" : "nn.attention", kFloats,
                    [backward](ElementKind k, Cases &cases) {
      for (ElementKind ik : kIndexKinds)
        for (const AttentionCase &c : kAttention) {
          AttentionInputs in = makeAttentionInputs(k, ik, c, backward);
          std::vector<Tensor> args = {in.query, in.key, in.value};
          if (backward)
            args.insert(args.begin(), in.dout);
          if (std::string(c.mask) == "tree")
            args.push_back(in.subtreeEnd);
          if (c.positions)
            args.push_back(in.positions);
          std::vector<std::string> results = {
              ty(k, {c.batch, c.seqQ, c.heads, c.valueDim})};
          if (backward)
            results = {ty(in.query), ty(in.key), ty(in.value)};
          cases.push_back(
              {std::string("attention ") + c.mask + " " + elementName(ik),
               std::string(backward ? "nn.attention_grad %a0, %a1, %a2, %a3"
                                    : "nn.attention %a0, %a1, %a2") +
                   in.suffix + " : " + in.types,
               args, results});
        }
    }});
  // Weights (padding: zero weights with any label, -100 included) and the
  // normalizer as an attribute or an operand.
  for (bool backward : {false, true})
    sets.push_back({backward ? "nn.cross_entropy_grad" : "nn.cross_entropy",
                    kFloats, [backward](ElementKind k, Cases &cases) {
      struct C { Dims logits; bool weights, normalizerOperand; };
      for (ElementKind ik : kIndexKinds)
        for (const C &c : {C{{8, 16, 64}, false, false}, C{{48, 64}, false, false},
                           C{{8, 16, 64}, true, false}, C{{6, 10}, true, true},
                           C{{6, 10}, false, true}, C{{64}, false, false}}) {
          Dims rows(c.logits.begin(), c.logits.end() - 1);
          int64_t vocab = c.logits.back();
          Tensor logits = randomFloat(k, c.logits, -8, 8);
          Tensor labels = randomInt(ik, rows, 0, vocab - 1);
          Tensor weights = randomFloat(k, rows, 0, 2);
          if (c.weights) {
            weights.setDouble(0, 0);
            labels.setDouble(0, -100);
            weights.setDouble(2, 0);
          }
          std::vector<Tensor> args = {logits, labels};
          std::string operands = "%a0, %a1";
          if (backward) {
            args.insert(args.begin(), randomFloat(k, {}, 0.5, 2));
            operands = "%a0, %a1, %a2";
          }
          auto optional = [&](bool present, const char *keyword, Tensor t) {
            if (!present)
              return;
            operands += std::string(" ") + keyword + " %a" +
                        std::to_string(args.size());
            args.push_back(t);
          };
          optional(c.weights, "weights", weights);
          optional(c.normalizerOperand, "normalizer",
                   randomFloat(k, {}, 10, 20));
          std::string types;
          for (size_t i = 0; i < args.size(); ++i)
            types += (i ? ", " : "") + ty(args[i]);
          std::string attrs =
              c.normalizerOperand ? "" : " {normalizer = 1.28e+02 : f64}";
          cases.push_back(
              {std::string("cross_entropy ") + elementName(ik),
               std::string(backward ? "nn.cross_entropy_grad "
                                    : "nn.cross_entropy ") +
                   operands + attrs + " : " + types,
               args, {backward ? ty(logits) : ty(k, {})}});
        }
    }});
  // Optional (default-valued) attributes left out: passed absent.
  sets.push_back({"nn.sgd_update", kFloats, [](ElementKind k, Cases &cases) {
    struct S { const char *lr, *momentum, *weightDecay; bool nesterov; };
    for (const S &c : {S{"1.0e-02", nullptr, nullptr, false},
                       S{"1.0e-01", "9.0e-01", nullptr, false},
                       S{"5.0e-02", "9.0e-01", "1.0e-04", true},
                       S{"2.0e-02", "5.0e-01", "1.0e-02", false}}) {
      Tensor p = randomFloat(k, {37, 5}), g = randomFloat(k, {37, 5}),
             b = randomFloat(k, {37, 5});
      std::string attrs = std::string("lr = ") + c.lr + " : f64";
      if (c.momentum)
        attrs += std::string(", momentum = ") + c.momentum + " : f64";
      if (c.nesterov)
        attrs += ", nesterov";
      if (c.weightDecay)
        attrs += std::string(", weight_decay = ") + c.weightDecay + " : f64";
      cases.push_back({"sgd_update",
                       "nn.sgd_update %a0, %a1, %a2 {" + attrs + "} : " + ty(p),
                       {p, g, b}, {ty(p), ty(p)}});
    }
    // Learning-rate schedules, with the step operand.
    struct Scheduled { int64_t step; const char *attrs; };
    for (const Scheduled &c :
         {Scheduled{2, ", warmup_steps = 4 : i64"},
          Scheduled{6, ", warmup_steps = 2 : i64, decay = #nn<lr_decay linear>, "
                       "decay_steps = 8 : i64, min_lr = 1.0e-02 : f64"},
          Scheduled{5, ", decay = #nn<lr_decay cosine>, decay_steps = 8 : i64"},
          Scheduled{30, ", warmup_steps = 2 : i64, decay = #nn<lr_decay cosine>, "
                        "decay_steps = 8 : i64, min_lr = 1.0e-02 : f64"}}) {
      Tensor p = randomFloat(k, {37, 5}), g = randomFloat(k, {37, 5}),
             b = randomFloat(k, {37, 5});
      cases.push_back({"sgd_update",
                       std::string("nn.sgd_update %a0, %a1, %a2 step %a3 "
                                   "{lr = 1.0e-01 : f64, momentum = 9.0e-01 : "
                                   "f64") +
                           c.attrs + "} : " + ty(p),
                       {p, g, b, scalarI64(c.step)}, {ty(p), ty(p)}});
    }
  }});
  sets.push_back({"nn.adamw_update", kFloats, [](ElementKind k, Cases &cases) {
    struct A { const char *lr; int64_t step; const char *rest; };
    for (const A &c :
         {A{"1.0e-02", 1, ""}, A{"1.0e-03", 7, ""},
          A{"3.0e-04", 1000,
            ", beta1 = 8.0e-01 : f64, beta2 = 9.5e-01 : f64, epsilon = "
            "1.0e-06 : f64, weight_decay = 1.0e-01 : f64"},
          A{"1.0e-03", 3, ", warmup_steps = 5 : i64"},
          A{"1.0e-03", 9,
            ", warmup_steps = 2 : i64, decay = #nn<lr_decay cosine>, "
            "decay_steps = 10 : i64, min_lr = 1.0e-04 : f64"},
          A{"1.0e-03", 9,
            ", decay = #nn<lr_decay linear>, decay_steps = 10 : i64"}}) {
      Tensor p = randomFloat(k, {16, 33}), g = randomFloat(k, {16, 33}),
             m = randomFloat(k, {16, 33}, -0.1, 0.1),
             v = randomFloat(k, {16, 33}, 0, 0.01);
      cases.push_back({"adamw_update",
                       std::string("nn.adamw_update %a0, %a1, %a2, %a3, %a4 "
                                   "{lr = ") +
                           c.lr + " : f64" + c.rest + "} : " + ty(p),
                       {p, g, m, v, scalarI64(c.step)},
                       {ty(p), ty(p), ty(p)}});
    }
  }});
  sets.push_back({"nn.rope", kFloats, [](ElementKind k, Cases &cases) {
    for (ElementKind ik : kIndexKinds)
      for (bool inverse : {false, true})
        for (const char *theta : {(const char *)nullptr, "5.0e+02"})
          for (Dims shape : {Dims{2, 16, 4, 8}, Dims{5, 3, 6}}) {
            Tensor x = randomFloat(k, shape);
            Tensor positions =
                randomInt(ik, Dims(shape.begin(), shape.end() - 2), 0, 4000);
            std::string attrs =
                theta ? std::string(" {theta = ") + theta + " : f64}" : "";
            cases.push_back({"rope " + elementName(ik),
                             std::string("nn.rope %a0, %a1") +
                                 (inverse ? " inverse" : "") + attrs + " : " +
                                 ty(x) + ", " + ty(positions),
                             {x, positions}, {ty(x)}});
          }
  }});
  // The offset operand (optional), and a block's starts (variadic 0-d i64)
  // with the global shape.
  sets.push_back({"nn.dropout", kFloats, [](ElementKind k, Cases &cases) {
    for (const char *rate : {"0.0", "1.0e-01", "5.0e-01"})
      for (bool withOffset : {false, true}) {
        Tensor x = randomFloat(k, {8, 32});
        std::vector<Tensor> args = {x};
        if (withOffset)
          args.push_back(scalarI64(12345));
        cases.push_back({"dropout",
                         std::string("nn.dropout %a0") +
                             (withOffset ? ", %a1" : "") + " {rate = " + rate +
                             " : f64, seed = 42 : i64} : " + ty(x),
                         args, {ty(x)}});
      }
    // The block [2:5, 0:10, 4:12] of a [6, 10, 12] tensor.
    Tensor block = randomFloat(k, {3, 10, 8});
    cases.push_back({"dropout of a block",
                     "nn.dropout %a0, %a1 at [%a2, %a3, %a4] {global_shape = "
                     "array<i64: 6, 10, 12>, rate = 5.0e-01 : f64, seed = 9 : "
                     "i64} : " + ty(block),
                     {block, scalarI64(3), scalarI64(2), scalarI64(0),
                      scalarI64(4)},
                     {ty(block)}});
  }});
  // The router's top k: distinct scores, ties (index order) and a NaN
  // (above any number); k from 1 to the whole row.
  sets.push_back({"nn.topk", kFloats, [](ElementKind k, Cases &cases) {
    for (int64_t top : {1, 2, 8}) {
      Tensor x = randomFloat(k, {16, 8});
      cases.push_back({"topk " + std::to_string(top),
                       "nn.topk %a0 k = " + std::to_string(top) + " : " +
                           ty(x),
                       {x}, {ty(ElementKind::I64, {16, top})}});
    }
    Tensor ties = randomFloat(k, {4, 3, 6});
    for (int64_t i = 0; i < 24; ++i)
      ties.setDouble(i, static_cast<double>(i % 3));
    ties.setDouble(30, std::nan(""));
    // +inf and -inf beside NaNs: NaN ranks first, then +inf, and -inf
    // last.
    ties.setDouble(36, std::numeric_limits<double>::infinity());
    ties.setDouble(37, std::nan(""));
    ties.setDouble(38, -std::numeric_limits<double>::infinity());
    ties.setDouble(39, std::numeric_limits<double>::infinity());
    cases.push_back({"topk ties and NaN", "nn.topk %a0 k = 3 : " + ty(ties),
                     {ties}, {ty(ElementKind::I64, {4, 3, 3})}});
  }});
  // Routing with and without a capacity; an expert out of range drops its
  // entry; an expert nobody picks keeps none.
  sets.push_back({"nn.moe_route", {ElementKind::I64},
                  [](ElementKind, Cases &cases) {
    Tensor experts = randomInt(ElementKind::I64, {16, 2}, 0, 4);
    experts.setDouble(3, 7);
    experts.setDouble(8, -1);
    // (In blocks of experts too: each block's from its first row.)
    for (const char *capacity : {"", " capacity = 5"})
      for (const char *blocks : {"", " blocks = 2", " blocks = 3"})
        cases.push_back({std::string("moe_route") + capacity + blocks,
                         std::string("nn.moe_route %a0 num_experts = 6") +
                             capacity + blocks + " : " + ty(experts),
                         {experts},
                         {ty(ElementKind::I64, {16, 2}),
                          ty(ElementKind::I64, {6})}});
    // By a placement (2 devices of 4 slots: expert 0 twice, 6 (out of
    // range) and -1 empty slots, expert 5 nowhere and never chosen), with
    // and without a capacity.
    Tensor hosts(ElementKind::I64, {8});
    int64_t placement[] = {0, 1, 2, -1, 0, 3, 4, 6};
    for (int64_t i = 0; i < 8; ++i)
      hosts.setDouble(i, static_cast<double>(placement[i]));
    Tensor routed = randomInt(ElementKind::I64, {16, 2}, 0, 4);
    routed.setDouble(3, 7);
    for (const char *capacity : {"", " capacity = 5"})
      cases.push_back({std::string("moe_route hosts") + capacity,
                       std::string("nn.moe_route %a0 hosts %a1 num_experts = "
                                   "6") +
                           capacity + " blocks = 2 : " + ty(routed) + ", " +
                           ty(hosts),
                       {routed, hosts},
                       {ty(ElementKind::I64, {16, 2}),
                        ty(ElementKind::I64, {8})}});
    // One share of a batch routed as one: member 1 of 3, the other
    // shares' counts random (expert 5 never chosen, as the placement
    // needs), its own row its share's counts; plain, in blocks, with a
    // capacity, by the placement.
    auto tableFor = [](const Tensor &share) {
      Tensor table = randomInt(ElementKind::I64, {3, 6}, 0, 5);
      for (int64_t m = 0; m < 3; ++m)
        table.setDouble(m * 6 + 5, 0);
      for (int64_t e = 0; e < 6; ++e)
        table.setDouble(6 + e, 0);
      for (int64_t i = 0; i < share.getNumElements(); ++i) {
        auto e = static_cast<int64_t>(share.getDouble(i));
        if (e >= 0 && e < 6)
          table.setDouble(6 + e, table.getDouble(6 + e) + 1);
      }
      return table;
    };
    Tensor member(ElementKind::I64, {});
    member.setDouble(0, 1);
    Tensor plainTable = tableFor(experts), placedTable = tableFor(routed);
    for (const char *variant : {"", " capacity = 5", " blocks = 2"})
      cases.push_back({std::string("moe_route shares") + variant,
                       "nn.moe_route %a0 shares(%a1 : " + ty(plainTable) +
                           ") at %a2 num_experts = 6" + variant + " : " +
                           ty(experts),
                       {experts, plainTable, member},
                       {ty(ElementKind::I64, {16, 2}),
                        ty(ElementKind::I64, {6})}});
    cases.push_back({"moe_route hosts shares",
                     "nn.moe_route %a0 hosts %a1 shares(%a2 : " +
                         ty(placedTable) +
                         ") at %a3 num_experts = 6 capacity = 5 blocks = 2 "
                         ": " +
                         ty(routed) + ", " + ty(hosts),
                     {routed, hosts, placedTable, member},
                     {ty(ElementKind::I64, {16, 2}),
                      ty(ElementKind::I64, {8})}});
    // No entries at all, with and without a capacity.
    Tensor none(ElementKind::I64, {0, 2});
    for (const char *capacity : {"", " capacity = 1"})
      cases.push_back({std::string("moe_route empty") + capacity,
                       std::string("nn.moe_route %a0 num_experts = 3") +
                           capacity + " : " + ty(none),
                       {none},
                       {ty(ElementKind::I64, {0, 2}),
                        ty(ElementKind::I64, {3})}});
  }});
  // Plans: two layers' forecasts (3 rows summed), moves free or costed,
  // one node or two; an all-zero forecast.
  sets.push_back({"nn.moe_plan", {ElementKind::I64},
                  [](ElementKind, Cases &cases) {
    Tensor forecast = randomInt(ElementKind::I64, {3, 2, 8}, 0, 50);
    const char *variants[] = {
        "layer = 0 devices = 2 slots = 5",
        "layer = 1 devices = 2 slots = 5 expert_bytes = 100000000",
        "layer = 1 devices = 4 slots = 3 nodes = 2 expert_bytes = 4096"};
    for (const char *attrs : variants) {
      int64_t hostsSize = std::string(attrs).find("devices = 4") !=
                                  std::string::npos
                              ? 12
                              : 10;
      cases.push_back({std::string("moe_plan ") + attrs,
                       std::string("nn.moe_plan %a0 ") + attrs + " : " +
                           ty(forecast),
                       {forecast},
                       {ty(ElementKind::I64, {hostsSize}),
                        ty(ElementKind::I64, {hostsSize})}});
    }
    Tensor zeros(ElementKind::I64, {1, 1, 8});
    cases.push_back({"moe_plan of nothing",
                     "nn.moe_plan %a0 layer = 0 devices = 2 slots = 4 : " +
                         ty(zeros),
                     {zeros},
                     {ty(ElementKind::I64, {8}), ty(ElementKind::I64, {8})}});
    // After a previous micro-step's lookup (resident replicas): every
    // slot holds an expert, some of them twice.
    Tensor previous = randomInt(ElementKind::I64, {10}, 0, 7);
    cases.push_back({"moe_plan previous",
                     "nn.moe_plan %a0 previous %a1 layer = 1 devices = 2 "
                     "slots = 5 expert_bytes = 4096 : " +
                         ty(forecast) + ", " + ty(previous),
                     {forecast, previous},
                     {ty(ElementKind::I64, {10}), ty(ElementKind::I64, {10})}});
  }});
  // The buffer ops: slots from a permutation of the 32 buffer rows with a
  // dropped entry (-1) and one past the rows (ignored); the grouped matmul
  // with an expert without rows and an unused tail, or groups filling the
  // buffer.
  auto moeSlots = []() {
    Tensor slots(ElementKind::I64, {16, 2});
    for (int64_t i = 0; i < 32; ++i)
      slots.setDouble(i, static_cast<double>((i * 7 + 3) % 32));
    slots.setDouble(5, -1);
    slots.setDouble(12, 40);
    return slots;
  };
  auto moeCounts = [](std::initializer_list<int64_t> values) {
    Tensor counts(ElementKind::I64, {static_cast<int64_t>(values.size())});
    int64_t i = 0;
    for (int64_t value : values)
      counts.setDouble(i++, static_cast<double>(value));
    return counts;
  };
  sets.push_back({"nn.moe_dispatch", kFloats, [=](ElementKind k, Cases &cases) {
    Tensor x = randomFloat(k, {16, 8}), w = randomFloat(k, {16, 2}, 0, 1);
    Tensor slots = moeSlots();
    for (int64_t rows : {32, 20})
      for (bool weighted : {false, true})
        cases.push_back(
            {"moe_dispatch rows " + std::to_string(rows),
             std::string("nn.moe_dispatch %a0, %a1") +
                 (weighted ? " weights %a2" : "") + " rows = " +
                 std::to_string(rows) + " : " + ty(x) + ", " + ty(slots) +
                 (weighted ? ", " + ty(w) : ""),
             weighted ? std::vector<Tensor>{x, slots, w}
                      : std::vector<Tensor>{x, slots},
             {ty(k, {rows, 8})}});
    // Two entries in one row sum there.
    Tensor shared = moeSlots();
    shared.setDouble(7, shared.getDouble(6));
    cases.push_back({"moe_dispatch shared row",
                     "nn.moe_dispatch %a0, %a1 weights %a2 rows = 32 : " +
                         ty(x) + ", " + ty(shared) + ", " + ty(w),
                     {x, shared, w}, {ty(k, {32, 8})}});
  }});
  sets.push_back({"nn.moe_combine", kFloats, [=](ElementKind k, Cases &cases) {
    Tensor buffer = randomFloat(k, {32, 8}), w = randomFloat(k, {16, 2}, 0, 1);
    Tensor slots = moeSlots();
    for (bool weighted : {false, true})
      cases.push_back({"moe_combine",
                       std::string("nn.moe_combine %a0, %a1") +
                           (weighted ? " weights %a2" : "") + " : " +
                           ty(buffer) + ", " + ty(slots) +
                           (weighted ? ", " + ty(w) : ""),
                       weighted ? std::vector<Tensor>{buffer, slots, w}
                                : std::vector<Tensor>{buffer, slots},
                       {ty(k, {16, 8})}});
  }});
  sets.push_back({"nn.moe_slot_dot", kFloats, [=](ElementKind k, Cases &cases) {
    Tensor buffer = randomFloat(k, {32, 8}), tokens = randomFloat(k, {16, 8});
    Tensor slots = moeSlots();
    cases.push_back({"moe_slot_dot",
                     "nn.moe_slot_dot %a0, %a1, %a2 : " + ty(buffer) + ", " +
                         ty(tokens) + ", " + ty(slots),
                     {buffer, tokens, slots}, {ty(k, {16, 2})}});
  }});
  sets.push_back({"nn.grouped_matmul", kFloats, [=](ElementKind k,
                                                    Cases &cases) {
    Tensor x = randomFloat(k, {32, 8});
    for (bool transposed : {false, true})
      for (Tensor counts : {moeCounts({10, 0, 12, 7}), moeCounts({8, 8, 8, 8})}) {
        Tensor w = randomFloat(k, transposed ? Dims{4, 6, 8} : Dims{4, 8, 6});
        cases.push_back({"grouped_matmul",
                         std::string("nn.grouped_matmul %a0, %a1, %a2") +
                             (transposed ? " transpose_rhs" : "") + " : " +
                             ty(x) + ", " + ty(w) + ", " + ty(counts),
                         {x, w, counts}, {ty(k, {32, 6})}});
      }
    // No experts at all: every row is the unused tail (zero).
    {
      Tensor none = moeCounts({});
      Tensor w = randomFloat(k, Dims{0, 8, 6});
      cases.push_back({"grouped_matmul no experts",
                       "nn.grouped_matmul %a0, %a1, %a2 : " + ty(x) + ", " +
                           ty(w) + ", " + ty(none),
                       {x, w, none}, {ty(k, {32, 6})}});
    }
    // Two blocks of 16 rows: an expert without rows and unused tails in
    // both, or both blocks full.
    for (bool transposed : {false, true})
      for (Tensor counts : {moeCounts({10, 0, 12, 3}), moeCounts({8, 8, 9, 7})}) {
        Tensor w = randomFloat(k, transposed ? Dims{4, 6, 8} : Dims{4, 8, 6});
        cases.push_back({"grouped_matmul blocks",
                         std::string("nn.grouped_matmul %a0, %a1, %a2") +
                             (transposed ? " transpose_rhs" : "") +
                             " blocks = 2 : " + ty(x) + ", " + ty(w) + ", " +
                             ty(counts),
                         {x, w, counts}, {ty(k, {32, 6})}});
      }
  }});
  sets.push_back({"nn.grouped_matmul_grad", kFloats, [=](ElementKind k,
                                                         Cases &cases) {
    Tensor lhs = randomFloat(k, {32, 8}), rhs = randomFloat(k, {32, 6});
    for (Tensor counts : {moeCounts({10, 0, 12, 7}), moeCounts({8, 8, 8, 8})})
      cases.push_back({"grouped_matmul_grad",
                       "nn.grouped_matmul_grad %a0, %a1, %a2 : " + ty(lhs) +
                           ", " + ty(rhs) + ", " + ty(counts),
                       {lhs, rhs, counts}, {ty(k, {4, 8, 6})}});
    for (Tensor counts : {moeCounts({10, 0, 12, 3}), moeCounts({8, 8, 9, 7})})
      cases.push_back({"grouped_matmul_grad blocks",
                       "nn.grouped_matmul_grad %a0, %a1, %a2 blocks = 2 : " +
                           ty(lhs) + ", " + ty(rhs) + ", " + ty(counts),
                       {lhs, rhs, counts}, {ty(k, {4, 8, 6})}});
  }});
  return sets;
}

const std::vector<CaseSet> &caseSets() {
  static const std::vector<CaseSet> sets = makeCaseSets();
  return sets;
}

//===----------------------------------------------------------------------===//
// Running a case on a target
//===----------------------------------------------------------------------===//

/// `f32`, `i1`, ... of a tensor type.
std::string elementTypeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  cast<RankedTensorType>(type).getElementType().print(os);
  return text;
}

loom::host::Shape shapeOf(Type type) {
  loom::host::Shape shape;
  for (int64_t size : cast<RankedTensorType>(type).getShape())
    shape.dims[shape.rank++] = size;
  return shape;
}

/// An enumeration's keyword as the call layer passes it (LowerToCalls.cpp:
/// the last word of the printed attribute inside its brackets).
std::string keywordOf(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os, /*elideType=*/true);
  llvm::StringRef keyword = text;
  size_t open = keyword.find('<'), close = keyword.rfind('>');
  if (open != llvm::StringRef::npos && close != llvm::StringRef::npos &&
      close > open)
    keyword = keyword.slice(open + 1, close);
  keyword = keyword.trim();
  if (!keyword.rsplit(' ').second.empty())
    keyword = keyword.rsplit(' ').second;
  return keyword.str();
}

/// How `target`'s kernel of `op` agrees with the interpreter (see the file
/// comment: the host's blocked attention sums in its own order).
conf::Agreement agreementOf(const conf::Target &target, llvm::StringRef op) {
  if (target.agreement == conf::Agreement::Bitwise &&
      (op == "nn.attention" || op == "nn.attention_grad"))
    return conf::Agreement::Tolerance;
  return target.agreement;
}

/// Results agree: bit for bit, or (Tolerance) norm-wise within 1e-12 (f64)
/// or 1e-5 (f32) with NaNs in the same places; integers exactly.
void expectAgree(const conf::Target &target, const std::string &what,
                 const Tensor &got, const Tensor &want,
                 conf::Agreement agreement) {
  ASSERT_EQ(got.getByteSize(), want.getByteSize()) << what;
  if (!got.getByteSize() ||
      std::memcmp(got.rawData(), want.rawData(), got.getByteSize()) == 0)
    return;
  if (agreement == conf::Agreement::Bitwise ||
      !loom::interp::isFloatKind(want.getKind())) {
    int64_t first = 0;
    for (; first < want.getNumElements(); ++first)
      if (!(got.getDouble(first) == want.getDouble(first)) &&
          !(std::isnan(got.getDouble(first)) &&
            std::isnan(want.getDouble(first))))
        break;
    ADD_FAILURE() << what << ": not bit for bit the interpreter's"
                  << (first < want.getNumElements()
                          ? ", first at element " + std::to_string(first) +
                                ": " + std::to_string(got.getDouble(first)) +
                                " (want " +
                                std::to_string(want.getDouble(first)) + ")"
                          : std::string(" (NaN payloads or signed zeros)"));
    return;
  }
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.getNumElements(); ++i) {
    double a = got.getDouble(i), b = want.getDouble(i);
    if (std::isnan(a) || std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a) && std::isnan(b))
          << what << ": element " << i << " is " << a << " (want " << b << ")";
      continue;
    }
    diff += (a - b) * (a - b);
    norm += b * b;
  }
  double tolerance = want.getKind() == ElementKind::F64 ? 1e-12 : 1e-5;
  EXPECT_LE(std::sqrt(diff), tolerance * std::max(std::sqrt(norm), 1.0))
      << what << ": relative error over " << tolerance;
}

/// Runs `c` on `target`; false when the target has no kernel for its
/// element types (the case is not counted).
bool runCase(const conf::Target &target, const KernelContract &contract,
             const Case &c) {
  std::string text = "func.func @f(";
  for (size_t i = 0; i < c.args.size(); ++i)
    text += (i ? ", " : "") + std::string("%a") + std::to_string(i) + ": " +
            ty(c.args[i]);
  std::string types = llvm::join(c.resultTypes, ", ");
  text += ") -> (" + types + ") {\n  %r";
  if (c.resultTypes.size() > 1)
    text += ":" + std::to_string(c.resultTypes.size());
  text += " = " + c.op + "\n  return ";
  for (size_t i = 0; i < c.resultTypes.size(); ++i)
    text += (i ? ", " : "") + std::string("%r") +
            (c.resultTypes.size() > 1 ? "#" + std::to_string(i) : "");
  text += " : " + types + "\n}\n";
  std::string what = std::string(target.name) + " " + contract.op + " (" +
                     c.name + "): " + c.op;

  std::string diagnostics;
  ScopedDiagnosticHandler handler(&getContext(), [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, &getContext());
  if (!module) {
    ADD_FAILURE() << "cannot parse:\n" << text << diagnostics;
    return true;
  }
  auto func = cast<func::FuncOp>(module->getBody()->front());
  Operation *op = &func.getBody().front().front();
  if (op->getName().getStringRef() != contract.op) {
    ADD_FAILURE() << what << ": the case's op is " << op->getName().getStringRef().str();
    return true;
  }

  // The element types of the typed tensors, results first: the overload.
  std::vector<std::string> typed;
  auto addTyped = [&](KernelTensor::Kind kind, ValueRange values) {
    if (kind == KernelTensor::Typed && !values.empty())
      typed.push_back(elementTypeName(values.front().getType()));
  };
  for (auto [i, tensor] : llvm::enumerate(contract.results))
    addTyped(tensor.kind, op->getResult(i));

  // Operands by ODS group, as LowerToCalls.cpp groups them.
  std::vector<ValueRange> groups;
  {
    auto segments = dyn_cast_or_null<DenseI32ArrayAttr>(
        op->getInherentAttr(OpTrait::AttrSizedOperandSegments<
                                void>::getOperandSegmentSizeAttr())
            .value_or(Attribute()));
    llvm::ArrayRef<KernelTensor> tensors = contract.operands;
    unsigned variable = llvm::count_if(tensors, [](const KernelTensor &t) {
      return t.optional || t.variadic;
    });
    unsigned rest = op->getNumOperands() - (tensors.size() - variable);
    unsigned next = 0;
    for (auto [i, tensor] : llvm::enumerate(tensors)) {
      unsigned size = segments                            ? segments[i]
                      : tensor.optional || tensor.variadic ? rest
                                                           : 1;
      groups.push_back(op->getOperands().slice(next, size));
      addTyped(tensor.kind, groups.back());
      next += size;
    }
  }
  size_t slots = 0;
  for (const KernelTensor &t : contract.results)
    slots += t.kind == KernelTensor::Typed;
  for (const KernelTensor &t : contract.operands)
    slots += t.kind == KernelTensor::Typed;
  if (!contract.typesIndependent && !typed.empty())
    typed.assign(slots, typed.front());
  const loom::codegen::KernelTarget *has = contract.getTarget(target.name);
  for (const std::string &type : typed)
    if (!has->hasType(type))
      return false;

  // The reference.
  loom::interp::Interpreter interpreter(*module);
  FailureOr<std::vector<Tensor>> want = interpreter.call("f", c.args);
  if (failed(want)) {
    ADD_FAILURE() << "the interpreter failed on:\n" << text << diagnostics;
    return true;
  }

  // The kernel's arguments in the target's memory.
  std::vector<void *> allocated;
  auto buffer = [&](const Tensor &tensor, bool copy) {
    void *memory = target.allocate(tensor.getByteSize());
    allocated.push_back(memory);
    if (copy) {
      if (tensor.getByteSize())
        target.toDevice(memory, tensor.rawData(), tensor.getByteSize());
    } else {
      // Garbage the kernel must overwrite.
      std::vector<unsigned char> bytes(tensor.getByteSize(), 0xA5);
      target.toDevice(memory, bytes.data(), bytes.size());
    }
    conf::KernelBuffer b;
    b.data = memory;
    b.index64 = tensor.getKind() == ElementKind::I64;
    return b;
  };
  conf::KernelCall call;
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    conf::KernelBuffer b = buffer((*want)[i], false);
    b.shape = shapeOf(result.getType());
    call.results.push_back(b);
  }
  for (ValueRange group : groups) {
    call.operands.emplace_back();
    for (Value value : group) {
      auto arg = cast<BlockArgument>(value);
      conf::KernelBuffer b = buffer(c.args[arg.getArgNumber()], true);
      b.shape = shapeOf(value.getType());
      call.operands.back().push_back(b);
    }
  }
  std::deque<std::string> keywords;
  for (const KernelAttr &a : contract.attributes) {
    conf::KernelValue value;
    Attribute attr = op->getAttr(a.name);
    // Absent: a flag is false; the other kinds have an absent value.
    value.f64 = loom::host::kAbsent;
    value.i64 = std::numeric_limits<int64_t>::min();
    value.shape = loom::host::kAbsentShape;
    if (attr) {
      if (auto flag = dyn_cast<BoolAttr>(attr))
        value.flag = flag.getValue();
      else if (isa<UnitAttr>(attr))
        value.flag = true;
      else if (auto number = dyn_cast<FloatAttr>(attr))
        value.f64 = number.getValueAsDouble();
      else if (auto number = dyn_cast<IntegerAttr>(attr))
        value.i64 = number.getInt();
      else if (auto array = dyn_cast<DenseI64ArrayAttr>(attr)) {
        value.shape = {};
        for (int64_t v : array.asArrayRef())
          value.shape.dims[value.shape.rank++] = v;
      } else {
        keywords.push_back(keywordOf(attr));
        value.keyword = keywords.back().c_str();
      }
    }
    call.attributes.push_back(value);
  }

  EXPECT_TRUE(target.dispatch(contract.op, typed, call))
      << what << ": the " << target.name << " dispatcher has no kernel for "
      << llvm::join(typed, ", ");
  for (size_t i = 0; i < want->size(); ++i) {
    Tensor got((*want)[i].getKind(), (*want)[i].getShape());
    if (got.getByteSize())
      target.toHost(got.rawData(), call.results[i].data, got.getByteSize());
    expectAgree(target, what + " result " + std::to_string(i), got,
                (*want)[i], agreementOf(target, contract.op));
  }
  for (void *memory : allocated)
    target.release(memory);
  return true;
}

//===----------------------------------------------------------------------===//
// The suite
//===----------------------------------------------------------------------===//

using Param = std::tuple<const conf::Target *, const CaseSet *>;

class Conformance : public testing::TestWithParam<Param> {};

TEST_P(Conformance, AgreesWithTheInterpreter) {
  const conf::Target &target = *std::get<0>(GetParam());
  const CaseSet &set = *std::get<1>(GetParam());
  if (const char *why = target.unavailable())
    GTEST_SKIP() << why;
  const KernelContract *contract = loom::codegen::lookupKernelContract(set.op);
  ASSERT_TRUE(contract) << set.op << " has no kernel contract";
  if (!contract->getTarget(target.name)->implemented)
    GTEST_SKIP() << "the " << target.name << " target has no kernel for "
                 << set.op;
  int ran = 0;
  for (ElementKind kind : set.kinds) {
    Cases cases;
    set.make(kind, cases);
    for (const Case &c : cases)
      ran += runCase(target, *contract, c);
  }
  if (!ran)
    GTEST_SKIP() << "no case of an element type the " << target.name
                 << " target has";
  RecordProperty("cases", ran);
}

std::string paramName(const testing::TestParamInfo<Param> &info) {
  return std::string(std::get<0>(info.param)->name) + "_" +
         std::string(std::get<1>(info.param)->op).substr(3);
}

std::vector<const CaseSet *> allCaseSets() {
  std::vector<const CaseSet *> list;
  for (const CaseSet &set : caseSets())
    list.push_back(&set);
  return list;
}

INSTANTIATE_TEST_SUITE_P(Kernels, Conformance,
                         testing::Combine(testing::ValuesIn(kTargets),
                                          testing::ValuesIn(allCaseSets())),
                         paramName);

// Every op with kernels on a target has conformance cases of an element
// type they take, and every case set names an op of the contract: a new
// op fails here until its cases are added to caseSets().
TEST(ConformanceCoverage, EveryKernelHasCases) {
  std::set<std::string> covered;
  for (const CaseSet &set : caseSets()) {
    EXPECT_TRUE(loom::codegen::lookupKernelContract(set.op))
        << set.op << " has cases but no kernel contract";
    covered.insert(set.op);
  }
  for (const KernelContract &contract : loom::codegen::getKernelContracts()) {
    const CaseSet *set = nullptr;
    for (const CaseSet &candidate : caseSets())
      if (contract.op == std::string(candidate.op))
        set = &candidate;
    for (const conf::Target *target : kTargets) {
      const loom::codegen::KernelTarget *has =
          contract.getTarget(target->name);
      if (!has->implemented)
        continue;
      // Some case of an element type the target has kernels for.
      bool typed = false;
      for (ElementKind kind : set ? set->kinds : std::vector<ElementKind>())
        typed |= has->hasType(elementName(kind));
      EXPECT_TRUE(typed) << contract.op << " has " << target->name
                         << " kernels but no conformance cases of their "
                            "types (test/conformance/"
                            "KernelConformanceTest.cpp, caseSets())";
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (::testing::GTEST_FLAG(list_tests))
    return RUN_ALL_TESTS();
  // The Ascend kernels on Loom's CPU test double of CANN (on the library
  // path): one rank, without mpirun.
  unsetenv("LOOM_ASCEND_DOUBLE_DEVICES");
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  loom::rt::Runtime::init(&argc, &argv);
  loom::ascend::startDevice(0);
  ascendStarted = true;
  int code = RUN_ALL_TESTS();
  loom::ascend::finishDevice();
  loom::rt::Runtime::finalize();
  return code;
}
