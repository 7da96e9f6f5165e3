//===- HostKernelsTest.cpp - Host kernel conventions -----------*- C++ -*-===//
//
// What the kernel conformance suite (test/conformance) does not express
// for the host kernels (runtime/kernels/HostKernels.h): the Shape and
// absent-value conventions, the generated call syntax, what is beyond the
// contracts (copy, splat constants lowered to fill, the concat arrays
// overload), the update ops in place, explicit kAbsent defaults, a dropout
// block against the cut of the whole tensor's, and a kernel's failure
// message. Each result is compared with the reference interpreter, bit for
// bit (the norm-wise relative error bounds, 1e-13 for f64 and 1e-5 for
// f32, are checked as well and reported at the end). Every op's cases
// against the interpreter, on every target, are the conformance suite's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/HostKernels.h"
#include "runtime/kernels/Math.h"

#include "runtime/interpreter/Interpreter.h"
#include "runtime/interpreter/Tensor.h"

#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using loom::interp::ElementKind;
using loom::interp::Tensor;
namespace host = loom::host;

namespace {

using Dims = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Running one op in the interpreter
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

/// An f64 attribute value as MLIR parses it.
std::string f64(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17e", value);
  return buffer;
}

/// Runs `op` (its text, reading the arguments as %a0, %a1, ...) with
/// `args`; the op has results of `resultTypes`.
std::vector<Tensor> interpret(const std::string &op,
                              const std::vector<Tensor> &args,
                              const std::vector<std::string> &resultTypes) {
  std::string text = "func.func @f(";
  for (size_t i = 0; i < args.size(); ++i)
    text += (i ? ", " : "") + std::string("%a") + std::to_string(i) + ": " +
            ty(args[i]);
  text += ") -> (";
  std::string types;
  for (size_t i = 0; i < resultTypes.size(); ++i)
    types += (i ? ", " : "") + resultTypes[i];
  text += types + ") {\n  %r";
  if (resultTypes.size() > 1)
    text += ":" + std::to_string(resultTypes.size());
  text += " = " + op + "\n  return ";
  for (size_t i = 0; i < resultTypes.size(); ++i)
    text += (i ? ", " : "") + std::string("%r") +
            (resultTypes.size() > 1 ? "#" + std::to_string(i) : "");
  text += " : " + types + "\n}\n";

  std::string diagnostics;
  ScopedDiagnosticHandler handler(&getContext(), [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, &getContext());
  if (!module) {
    ADD_FAILURE() << "cannot parse:\n" << text << diagnostics;
    return {};
  }
  loom::interp::Interpreter interpreter(*module);
  FailureOr<std::vector<Tensor>> results = interpreter.call("f", args);
  if (failed(results)) {
    ADD_FAILURE() << "the interpreter failed on:\n" << text << diagnostics;
    return {};
  }
  return std::move(*results);
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

std::mt19937_64 &rng() {
  static std::mt19937_64 generator(20261129);
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

Tensor scalarI64(int64_t value) {
  return Tensor::fromValues<int64_t>({}, {value});
}

/// A result buffer of `like`'s type, filled with garbage the kernel must
/// overwrite.
Tensor garbageLike(const Tensor &like) {
  Tensor tensor(like.getKind(), like.getShape());
  if (tensor.getByteSize())
    std::memset(tensor.rawData(), 0xA5, tensor.getByteSize());
  return tensor;
}

//===----------------------------------------------------------------------===//
// Host kernel arguments
//===----------------------------------------------------------------------===//

host::Shape sh(const Tensor &tensor) {
  host::Shape shape;
  for (int64_t size : tensor.getShape())
    shape.dims[shape.rank++] = size;
  return shape;
}

template <typename T> T *ptr(Tensor &tensor) {
  if constexpr (std::is_same_v<T, bool>)
    return reinterpret_cast<bool *>(tensor.data<uint8_t>());
  else
    return tensor.data<T>();
}
template <typename T> const T *cptr(const Tensor &tensor) {
  if constexpr (std::is_same_v<T, bool>)
    return reinterpret_cast<const bool *>(tensor.data<uint8_t>());
  else
    return tensor.data<T>();
}

/// Calls `fn(T{})` with the C++ type of `kind`.
template <typename Fn> void withType(ElementKind kind, Fn &&fn) {
  switch (kind) {
  case ElementKind::F32:
    return fn(float{});
  case ElementKind::F64:
    return fn(double{});
  case ElementKind::I32:
    return fn(int32_t{});
  case ElementKind::I64:
    return fn(int64_t{});
  case ElementKind::I1:
    return fn(bool{});
  case ElementKind::BF16:
    break;
  }
  FAIL() << "no host type for " << elementName(kind);
}
template <typename Fn> void withFloat(ElementKind kind, Fn &&fn) {
  if (kind == ElementKind::F32)
    return fn(float{});
  return fn(double{});
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

struct Agreement {
  int cases = 0;
  int bitwise = 0;
  double maxError = 0;
};

std::map<std::string, Agreement> &agreements() {
  static std::map<std::string, Agreement> table;
  return table;
}

/// The norm-wise relative error of `actual` against `expected` (NaNs in the
/// same places count as equal; a NaN against a number is infinite error).
double relativeError(const Tensor &actual, const Tensor &expected) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < expected.getNumElements(); ++i) {
    double a = actual.getDouble(i), e = expected.getDouble(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e))
        return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e)
        return std::numeric_limits<double>::infinity();
      continue;
    }
    diff += (a - e) * (a - e);
    norm += e * e;
  }
  if (diff == 0)
    return 0;
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
}

/// Checks that the host result agrees with the interpreter's: within the
/// tolerance of the element type and, unless `bitwise` is false, bit for
/// bit. Records the agreement under `op`.
void expectAgree(const std::string &op, const Tensor &actual,
                 const Tensor &expected, bool bitwise = true) {
  ASSERT_EQ(actual.getTypeString(), expected.getTypeString()) << op;
  bool same = actual.getByteSize() == expected.getByteSize() &&
              (actual.getByteSize() == 0 ||
               std::memcmp(actual.rawData(), expected.rawData(),
                           actual.getByteSize()) == 0);
  double error = relativeError(actual, expected);
  ElementKind kind = expected.getKind();
  double tolerance = kind == ElementKind::F64   ? 1e-13
                     : kind == ElementKind::F32 ? 1e-5
                                                : 0.0;
  EXPECT_LE(error, tolerance) << op << " on " << expected.getTypeString();
  if (bitwise && loom::interp::isFloatKind(kind)) {
    // NaNs may differ in payload only.
    bool equal = same;
    if (!equal && error == 0) {
      equal = true;
      for (int64_t i = 0; i < expected.getNumElements() && equal; ++i) {
        double a = actual.getDouble(i), e = expected.getDouble(i);
        equal = (std::isnan(a) && std::isnan(e)) ||
                (a == e && std::signbit(a) == std::signbit(e));
      }
    }
    same = equal;
    EXPECT_TRUE(same) << op << " on " << expected.getTypeString()
                      << " is not bitwise equal (relative error " << error
                      << ")";
  } else if (!loom::interp::isFloatKind(kind)) {
    EXPECT_TRUE(same) << op << " on " << expected.getTypeString();
  }
  Agreement &entry = agreements()[op + " " + elementName(kind)];
  ++entry.cases;
  entry.bitwise += same;
  entry.maxError = std::max(entry.maxError, error);
}

/// Prints the agreement table after all tests.
class AgreementReport : public ::testing::Environment {
public:
  void TearDown() override {
    std::printf("\nHost kernels against the interpreter (per op and element "
                "type):\n");
    std::printf("  %-28s %6s %8s %12s\n", "op", "cases", "bitwise",
                "max rel err");
    for (const auto &[name, entry] : agreements())
      std::printf("  %-28s %6d %8d %12.3g\n", name.c_str(), entry.cases,
                  entry.bitwise, entry.maxError);
  }
};
const auto *const kReport =
    ::testing::AddGlobalTestEnvironment(new AgreementReport);

const ElementKind kFloats[] = {ElementKind::F32, ElementKind::F64};

//===----------------------------------------------------------------------===//
// Shape and attribute plumbing
//===----------------------------------------------------------------------===//

TEST(HostKernels, ShapeAndAbsentValues) {
  host::Shape empty = {};
  EXPECT_EQ(empty.rank, 0);
  EXPECT_EQ(empty.numElements(), 1);
  host::Shape shape = {24, 128};
  EXPECT_EQ(shape.rank, 2);
  EXPECT_EQ(shape[1], 128);
  EXPECT_EQ(shape.numElements(), 24 * 128);
  EXPECT_TRUE(host::kAbsentShape.isAbsent());
  EXPECT_EQ(host::kAbsentShape.rank, -1);
  EXPECT_TRUE(std::isnan(host::kAbsent));
  // The constants of Math.h are the values the interpreter computes.
  EXPECT_EQ(loom::math::kInvSqrt2Computed, 1.0 / std::sqrt(2.0));
  EXPECT_EQ(loom::math::kInvSqrt2, 0.70710678118654752440);
  EXPECT_EQ(loom::math::kSqrt2OverPi, std::sqrt(2.0 / M_PI));
  EXPECT_EQ(loom::math::kSqrt2OverPi, 0.79788456080286535588);
  EXPECT_EQ(loom::math::kInvSqrt2Pi, 1.0 / std::sqrt(2.0 * M_PI));
}

TEST(HostKernels, GeneratedCallSyntax) {
  // Calls spelled as the code generator emits them: shapes as braced lists,
  // absent operands as `nullptr, {}`, non-const result buffers of other ops
  // passed as operands, attributes in alphabetical order.
  std::vector<double> table(16 * 4), rows(2 * 3 * 4), grad(16 * 4);
  std::vector<int64_t> ids = {0, 1, 2, 3, 15, 4};
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = static_cast<double>(i);
  host::embedding(rows.data(), {2, 3, 4}, table.data(), {16, 4}, ids.data(),
                  {2, 3}, nullptr, {});
  EXPECT_EQ(rows[4 * 4], 60.0);
  std::vector<int32_t> wide(6 * 4);
  for (size_t i = 0; i < wide.size(); ++i)
    wide[i] = static_cast<int32_t>(ids[i / 4]);
  host::gather_grad(grad.data(), {16, 4}, rows.data(), {6, 4}, wide.data(),
                    {6, 4}, nullptr, {}, 0);
  EXPECT_EQ(grad[15 * 4 + 1], 61.0);

  std::vector<double> q(1 * 4 * 2 * 3, 0.5), out(q.size());
  host::attention(out.data(), {1, 4, 2, 3}, q.data(), {1, 4, 2, 3}, q.data(),
                  {1, 4, 2, 3}, q.data(), {1, 4, 2, 3}, nullptr, {}, nullptr,
                  {}, "causal", host::kAbsent);
  EXPECT_EQ(out[5], 0.5);

  std::vector<float> x(6, 2.0f), y(6);
  host::reduce(y.data(), {2}, x.data(), {2, 3}, {1}, false, "mean");
  EXPECT_EQ(y[1], 2.0f);
  host::broadcast(x.data(), {2, 3}, y.data(), {2}, {0});
  host::broadcast(x.data(), {2, 3}, y.data(), {2, 1}, host::kAbsentShape);
  EXPECT_EQ(x[5], 2.0f);
  std::vector<float> joined(2 * 6);
  host::concat(joined.data(), {2, 6}, {x.data(), x.data()}, {{2, 3}, {2, 3}},
               1);
  EXPECT_EQ(joined[11], 2.0f);
  int64_t step = 1;
  std::vector<float> p(6, 1.0f), g(6, 0.5f), m(6), v(6);
  host::adamw_update(p.data(), {6}, m.data(), {6}, v.data(), {6}, p.data(), {6},
                     g.data(), {6}, m.data(), {6}, v.data(), {6}, &step, {},
                     0.9, 0.999, "constant", 0, 1e-8, 1e-3, 0.0, 0, 0.01);
  EXPECT_NEAR(p[0], 1.0f - 1e-5f - 1e-3f, 1e-6f);
}

TEST(HostKernels, Copy) {
  for (ElementKind kind : {ElementKind::F32, ElementKind::F64, ElementKind::I32,
                           ElementKind::I64, ElementKind::I1}) {
    Tensor in = randomInt(kind, {3, 5}, -100, 100);
    Tensor out = garbageLike(in);
    withType(kind, [&](auto tag) {
      using T = decltype(tag);
      host::copy(ptr<T>(out), {3, 5}, cptr<T>(in), {15});
    });
    expectAgree("copy", out, in);
  }
}

//===----------------------------------------------------------------------===//
// Beyond the contracts: splat constants, the concat and dropout arrays
//===----------------------------------------------------------------------===//

TEST(HostKernels, FillSplatConstants) {
  // The generator lowers splat arith.constants of any element type to fill.
  for (ElementKind kind : {ElementKind::I32, ElementKind::I64, ElementKind::I1,
                           ElementKind::F32, ElementKind::F64})
    for (int64_t value : {0, 1, -7, 123456}) {
      if (kind == ElementKind::I1 && (value < 0 || value > 1))
        continue;
      bool isFloat = loom::interp::isFloatKind(kind);
      std::string literal = kind == ElementKind::I1 ? (value ? "true" : "false")
                            : isFloat ? f64(static_cast<double>(value))
                                      : std::to_string(value);
      std::vector<Tensor> ref = interpret("arith.constant dense<" + literal +
                                              "> : " + ty(kind, {3, 4}),
                                          {}, {ty(kind, {3, 4})});
      ASSERT_EQ(ref.size(), 1u);
      Tensor out = garbageLike(ref[0]);
      withType(kind, [&](auto tag) {
        using T = decltype(tag);
        host::fill(ptr<T>(out), sh(out), static_cast<double>(value));
      });
      expectAgree("fill (constant)", out, ref[0]);
    }
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

const ElementKind kAllKinds[] = {ElementKind::F32, ElementKind::F64,
                                 ElementKind::I32, ElementKind::I64,
                                 ElementKind::I1};

Tensor randomOf(ElementKind kind, const Dims &shape) {
  if (loom::interp::isFloatKind(kind))
    return randomFloat(kind, shape);
  return randomInt(kind, shape, kind == ElementKind::I1 ? 0 : -1000,
                   kind == ElementKind::I1 ? 1 : 1000);
}

// The array overload (not the contract's braced lists, which the
// conformance suite checks): what the Ascend double's operator calls.
TEST(HostKernels, ConcatArrays) {
  struct Case {
    std::vector<Dims> inputs;
    int64_t dim;
  };
  const Case cases[] = {{{{4, 3}, {4, 5}}, 1},
                        {{{2, 3}, {1, 3}, {4, 3}}, 0},
                        {{{2, 1, 4}, {2, 3, 4}, {2, 0, 4}}, 1},
                        {{{1, 512}, {1, 2048}, {1, 64}}, 1},
                        {{{7}}, 0}};
  for (ElementKind kind : kAllKinds)
    for (const Case &c : cases) {
      std::vector<Tensor> inputs;
      std::string operands, types;
      Dims shape = c.inputs[0];
      shape[c.dim] = 0;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        inputs.push_back(randomOf(kind, c.inputs[i]));
        operands += (i ? ", %a" : "%a") + std::to_string(i);
        types += (i ? ", " : "") + ty(inputs.back());
        shape[c.dim] += c.inputs[i][c.dim];
      }
      std::vector<Tensor> ref =
          interpret("nn.concat " + operands +
                        " dim = " + std::to_string(c.dim) + " : " + types,
                    inputs, {ty(kind, shape)});
      ASSERT_EQ(ref.size(), 1u);
      Tensor out = garbageLike(ref[0]);
      withType(kind, [&](auto tag) {
        using T = decltype(tag);
        std::vector<const T *> pointers;
        std::vector<host::Shape> shapes;
        for (const Tensor &input : inputs) {
          pointers.push_back(cptr<T>(input));
          shapes.push_back(sh(input));
        }
        host::concat(ptr<T>(out), sh(out),
                     static_cast<int64_t>(pointers.size()), pointers.data(),
                     shapes.data(), c.dim);
        expectAgree("concat (arrays)", out, ref[0]);
      });
    }
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

TEST(HostKernels, NormDefaultsFromAbsentValues) {
  // kAbsent and INT64_MIN stand for the ODS defaults (epsilon 1e-5,
  // normalized_dims 1).
  Tensor x = randomFloat(ElementKind::F64, {4, 9}, -3, 3);
  std::vector<Tensor> ref =
      interpret("nn.layer_norm %a0 : " + ty(x), {x}, {ty(x)});
  ASSERT_EQ(ref.size(), 1u);
  Tensor out = garbageLike(ref[0]);
  host::layer_norm(ptr<double>(out), sh(out), cptr<double>(x), sh(x), nullptr,
                   {}, nullptr, {}, host::kAbsent, INT64_MIN);
  expectAgree("layer_norm", out, ref[0]);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

// In place (each result the operand it updates, which the contract
// allows): the conformance suite runs the update ops into fresh buffers.
// Schedules: the interpreter's is written apart from the kernels' (Math.h),
// so agreeing bit for bit checks both against the op docs' formula.
struct ScheduleCase {
  int64_t warmup = 0;
  const char *decay = "constant";
  int64_t decaySteps = 0;
  double minLr = 0.0;
  int64_t step = 1;
  std::string attrs() const {
    std::string a;
    if (warmup)
      a += ", warmup_steps = " + std::to_string(warmup) + " : i64";
    if (std::string(decay) != "constant")
      a += ", decay = #nn<lr_decay " + std::string(decay) +
           ">, decay_steps = " + std::to_string(decaySteps) +
           " : i64, min_lr = " + f64(minLr) + " : f64";
    return a;
  }
  bool any() const { return warmup || std::string(decay) != "constant"; }
};

TEST(HostKernels, SgdUpdateInPlace) {
  struct Case {
    double lr, momentum, weightDecay;
    bool nesterov;
    ScheduleCase schedule;
  };
  const Case cases[] = {
      {0.01, 0.0, 0.0, false, {}},
      {0.1, 0.9, 0.0, false, {}},
      {0.05, 0.9, 1e-4, true, {}},
      {0.02, 0.5, 0.01, false, {}},
      // In the warm-up, in a linear and a cosine decay, past the decay.
      {0.1, 0.9, 0.0, false, {4, "constant", 0, 0.0, 3}},
      {0.1, 0.9, 0.01, false, {2, "linear", 6, 0.01, 5}},
      {0.1, 0.0, 0.0, false, {0, "cosine", 10, 0.02, 7}},
      {0.1, 0.9, 0.0, true, {3, "cosine", 4, 0.001, 9}}};
  for (ElementKind kind : kFloats)
    for (const Case &c : cases)
      for (bool inPlace : {true}) {
        Dims shape = {37, 5};
        Tensor param = randomFloat(kind, shape),
               grad = randomFloat(kind, shape),
               buffer = randomFloat(kind, shape);
        std::string attrs = "lr = " + f64(c.lr) + " : f64";
        if (c.momentum != 0)
          attrs += ", momentum = " + f64(c.momentum) + " : f64";
        if (c.nesterov)
          attrs += ", nesterov";
        if (c.weightDecay != 0)
          attrs += ", weight_decay = " + f64(c.weightDecay) + " : f64";
        attrs += c.schedule.attrs();
        Tensor step = scalarI64(c.schedule.step);
        std::vector<Tensor> operands = {param, grad, buffer};
        if (c.schedule.any())
          operands.push_back(step);
        std::vector<Tensor> ref = interpret(
            std::string("nn.sgd_update %a0, %a1, %a2") +
                (c.schedule.any() ? " step %a3" : "") + " {" + attrs +
                "} : " + ty(param),
            operands, {ty(param), ty(param)});
        ASSERT_EQ(ref.size(), 2u);
        // In place: the results are the operands' own buffers.
        Tensor newParam = inPlace ? param : garbageLike(ref[0]);
        Tensor newBuffer = inPlace ? buffer : garbageLike(ref[1]);
        withFloat(kind, [&](auto tag) {
          using T = decltype(tag);
          host::sgd_update(
              ptr<T>(newParam), sh(newParam), ptr<T>(newBuffer), sh(newBuffer),
              inPlace ? cptr<T>(newParam) : cptr<T>(param), sh(param),
              cptr<T>(grad), sh(grad),
              inPlace ? cptr<T>(newBuffer) : cptr<T>(buffer), sh(buffer),
              c.schedule.any() ? step.data<int64_t>() : nullptr, sh(step),
              c.schedule.decay, c.schedule.decaySteps, c.lr, c.schedule.minLr,
              c.momentum, c.nesterov, c.schedule.warmup, c.weightDecay);
        });
        expectAgree("sgd_update", newParam, ref[0]);
        expectAgree("sgd_update", newBuffer, ref[1]);
      }
}

// In place, and the defaults passed explicitly as kAbsent.
TEST(HostKernels, AdamWUpdateInPlace) {
  struct Case {
    double lr, beta1, beta2, epsilon, weightDecay;
    int64_t step;
    bool defaults;
    ScheduleCase schedule;
  };
  const Case cases[] = {
      {1e-2, 0.9, 0.999, 1e-8, 0.01, 1, true, {}},
      {1e-3, 0.9, 0.999, 1e-8, 0.01, 7, true, {}},
      {3e-4, 0.8, 0.95, 1e-6, 0.1, 1000, false, {}},
      {1e-3, 0.9, 0.999, 1e-8, 0.01, 2, true, {5, "constant", 0, 0.0, 2}},
      {1e-3, 0.9, 0.95, 1e-6, 0.1, 8, false, {3, "cosine", 10, 1e-4, 8}},
      {1e-3, 0.9, 0.95, 1e-6, 0.1, 20, false, {3, "linear", 10, 1e-4, 20}}};
  for (ElementKind kind : kFloats)
    for (const Case &c : cases)
      for (bool inPlace : {true})
        for (bool absent : {false, true}) {
          if (absent && !c.defaults)
            continue;
          Dims shape = {16, 33};
          Tensor param = randomFloat(kind, shape),
                 grad = randomFloat(kind, shape),
                 m = randomFloat(kind, shape, -0.1, 0.1),
                 v = randomFloat(kind, shape, 0, 0.01);
          Tensor step = scalarI64(c.step);
          std::string attrs = "lr = " + f64(c.lr) + " : f64";
          if (!c.defaults)
            attrs += ", beta1 = " + f64(c.beta1) +
                     " : f64, beta2 = " + f64(c.beta2) +
                     " : f64, epsilon = " + f64(c.epsilon) +
                     " : f64, weight_decay = " + f64(c.weightDecay) + " : f64";
          attrs += c.schedule.attrs();
          std::vector<Tensor> ref = interpret(
              "nn.adamw_update %a0, %a1, %a2, %a3, %a4 {" + attrs +
                  "} : " + ty(param),
              {param, grad, m, v, step}, {ty(param), ty(param), ty(param)});
          ASSERT_EQ(ref.size(), 3u);
          Tensor newParam = inPlace ? param : garbageLike(ref[0]);
          Tensor newM = inPlace ? m : garbageLike(ref[1]);
          Tensor newV = inPlace ? v : garbageLike(ref[2]);
          const Tensor &p = inPlace ? newParam : param;
          const Tensor &mIn = inPlace ? newM : m;
          const Tensor &vIn = inPlace ? newV : v;
          double beta1 = absent ? host::kAbsent : c.beta1;
          double beta2 = absent ? host::kAbsent : c.beta2;
          double epsilon = absent ? host::kAbsent : c.epsilon;
          double weightDecay = absent ? host::kAbsent : c.weightDecay;
          withFloat(kind, [&](auto tag) {
            using T = decltype(tag);
            host::adamw_update(ptr<T>(newParam), sh(newParam), ptr<T>(newM),
                               sh(newM), ptr<T>(newV), sh(newV), cptr<T>(p),
                               sh(p), cptr<T>(grad), sh(grad), cptr<T>(mIn),
                               sh(mIn), cptr<T>(vIn), sh(vIn),
                               step.data<int64_t>(), sh(step), beta1, beta2,
                               c.schedule.decay, c.schedule.decaySteps,
                               epsilon, c.lr, c.schedule.minLr,
                               c.schedule.warmup, weightDecay);
          });
          expectAgree("adamw_update", newParam, ref[0]);
          expectAgree("adamw_update", newM, ref[1]);
          expectAgree("adamw_update", newV, ref[2]);
        }
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

// A block of a larger tensor draws the mask elements of its global
// indices: the same bits as the interpreter, and as the same block cut
// from the whole tensor's dropout.
TEST(HostKernels, DropoutOfABlock) {
  for (ElementKind kind : kFloats) {
    Tensor whole = randomFloat(kind, {6, 10, 12});
    Tensor step = scalarI64(3);
    std::vector<Tensor> wholeRef =
        interpret("nn.dropout %a0, %a1 {rate = 0.5 : f64, seed = 9 : i64} : " +
                      ty(whole),
                  {whole, step}, {ty(whole)});
    ASSERT_EQ(wholeRef.size(), 1u);
    // The block [2:5, 0:10, 4:12].
    const int64_t starts[3] = {2, 0, 4}, sizes[3] = {3, 10, 8};
    Tensor x = randomFloat(kind, {3, 10, 8});
    withFloat(kind, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 10; ++j)
          for (int64_t k = 0; k < 8; ++k)
            ptr<T>(x)[(i * 10 + j) * 8 + k] =
                cptr<T>(whole)[((i + 2) * 10 + j) * 12 + k + 4];
    });
    Tensor s0 = scalarI64(starts[0]), s1 = scalarI64(starts[1]),
           s2 = scalarI64(starts[2]);
    std::vector<Tensor> ref = interpret(
        "nn.dropout %a0, %a1 at [%a2, %a3, %a4] {global_shape = array<i64: "
        "6, 10, 12>, rate = 0.5 : f64, seed = 9 : i64} : " +
            ty(x),
        {x, step, s0, s1, s2}, {ty(x)});
    ASSERT_EQ(ref.size(), 1u);
    Tensor out = garbageLike(ref[0]);
    withFloat(kind, [&](auto tag) {
      using T = decltype(tag);
      host::dropout(ptr<T>(out), sh(out), cptr<T>(x), sh(x),
                    step.data<int64_t>(), sh(step),
                    {s0.data<int64_t>(), s1.data<int64_t>(), s2.data<int64_t>()},
                    {sh(s0), sh(s1), sh(s2)}, host::Shape{6, 10, 12}, 0.5, 9);
      // The block cut from the whole tensor's dropout, bit for bit.
      for (int64_t i = 0; i < sizes[0]; ++i)
        for (int64_t j = 0; j < sizes[1]; ++j)
          for (int64_t k = 0; k < sizes[2]; ++k) {
            T got = cptr<T>(out)[(i * 10 + j) * 8 + k];
            T want = cptr<T>(wholeRef[0])[((i + 2) * 10 + j) * 12 + k + 4];
            ASSERT_EQ(std::memcmp(&got, &want, sizeof(T)), 0)
                << "element " << i << ", " << j << ", " << k;
          }
    });
    expectAgree("dropout of a block", out, ref[0]);
  }
}

// A kernel given shapes that do not fit ends the process with a message
// naming the kernel, after the prefix the runtime sets (its rank).
/// A random prefix tree of `count` tokens packed depth first: per token its
/// parent (-1 for a root) and subtree end.
static void randomTree(std::mt19937 &rng, int64_t count, std::vector<int64_t> &parent,
                std::vector<int64_t> &end) {
  parent.assign(count, -1);
  end.resize(count);
  std::vector<int64_t> path;
  for (int64_t j = 0; j < count; ++j) {
    std::uniform_int_distribution<size_t> pops(0, path.size());
    path.resize(path.size() - pops(rng));
    parent[j] = path.empty() ? -1 : path.back();
    path.push_back(j);
  }
  for (int64_t j = 0; j < count; ++j)
    end[j] = j;
  for (int64_t j = count - 1; j >= 0; --j)
    if (parent[j] >= 0)
      end[parent[j]] = std::max(end[parent[j]], end[j]);
}

static double relativeError(const std::vector<double> &a,
                     const std::vector<double> &b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      return std::numeric_limits<double>::infinity();
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
}

// The tree-aware attention (runtime/kernels/AttentionKernels.cpp): on
// random prefix trees, against the dense masked path (the oracle, range
// skipping off) in f64: the exact walk (Always) forward within 1e-12 and
// backward bit for bit, each query visiting exactly its ancestors and
// itself (the keys counted are the sum of depths + 1 per query; the causal
// mask visits [0, p]); the blocked GEMMs (Auto, the default) forward and
// backward within 1e-12, counting nothing (sequences up to 12 query
// blocks, so runs merge and split); subtree ends that do not nest take the
// dense path.
const host::AttentionSkipping kSkippingModes[3] = {
    host::AttentionSkipping::Never, host::AttentionSkipping::Always,
    host::AttentionSkipping::Auto};

TEST(HostKernels, TreeAttentionVisitsOnlyAncestors) {
  std::mt19937 rng(41);
  const int64_t batch = 2, heads = 4, kvHeads = 2, dim = 8, valueDim = 6;
  for (int round = 0; round < 14; ++round) {
    const int64_t seq = round < 12 ? 5 + round * 7 : 300 + (round - 11) * 250;
    host::Shape qs{batch, seq, heads, dim}, ks{batch, seq, kvHeads, dim},
        vs{batch, seq, kvHeads, valueDim}, os{batch, seq, heads, valueDim};
    std::uniform_real_distribution<double> uniform(-2, 2);
    auto fill = [&](std::vector<double> &v, const host::Shape &shape) {
      v.resize(shape.numElements());
      for (double &x : v)
        x = uniform(rng);
    };
    std::vector<double> q, k, v, dout;
    fill(q, qs);
    fill(k, ks);
    fill(v, vs);
    fill(dout, os);
    std::vector<int64_t> ends(batch * seq);
    int64_t expected = 0;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<int64_t> parent, end;
      randomTree(rng, seq, parent, end);
      for (int64_t j = 0; j < seq; ++j) {
        ends[b * seq + j] = end[j];
        for (int64_t up = j; up >= 0; up = parent[up])
          ++expected; // j's ancestors and itself
      }
    }
    for (const char *mask : {"tree", "causal"}) {
      bool tree = !std::strcmp(mask, "tree");
      host::IndexPtr endsPtr =
          tree ? host::IndexPtr(ends.data()) : host::IndexPtr(nullptr);
      host::Shape endsShape = tree ? host::Shape{batch, seq} : host::Shape{};
      std::vector<double> out[3], dq[3], dk[3], dv[3];
      int64_t visited[3] = {0, 0, 0};
      for (int skipping = 0; skipping < 3; ++skipping) {
        host::setAttentionRangeSkipping(kSkippingModes[skipping]);
        out[skipping].resize(os.numElements());
        dq[skipping].resize(qs.numElements());
        dk[skipping].resize(ks.numElements());
        dv[skipping].resize(vs.numElements());
        int64_t before = host::getAttentionKeysVisited();
        host::attention(out[skipping].data(), os, q.data(), qs, k.data(), ks,
                        v.data(), vs, endsPtr, endsShape, nullptr, {}, mask,
                        host::kAbsent);
        visited[skipping] = host::getAttentionKeysVisited() - before;
        host::attention_grad(dq[skipping].data(), qs, dk[skipping].data(), ks,
                             dv[skipping].data(), vs, dout.data(), os,
                             q.data(), qs, k.data(), ks, v.data(), vs, endsPtr,
                             endsShape, nullptr, {}, mask, host::kAbsent);
      }
      host::setAttentionRangeSkipping(host::AttentionSkipping::Auto);
      EXPECT_EQ(visited[0], 0) << "the dense path skips nothing";
      EXPECT_EQ(visited[1], tree ? expected : batch * seq * (seq + 1) / 2)
          << mask << ", seq " << seq;
      EXPECT_LE(relativeError(out[1], out[0]), 1e-12) << mask << ", seq " << seq;
      EXPECT_EQ(dq[1], dq[0]) << mask;
      EXPECT_EQ(dk[1], dk[0]) << mask;
      EXPECT_EQ(dv[1], dv[0]) << mask;
      EXPECT_EQ(visited[2], 0) << "the blocked path counts nothing";
      EXPECT_LE(relativeError(out[2], out[0]), 1e-12) << mask << " blocked";
      EXPECT_LE(relativeError(dq[2], dq[0]), 1e-12) << mask << " blocked";
      EXPECT_LE(relativeError(dk[2], dk[0]), 1e-12) << mask << " blocked";
      EXPECT_LE(relativeError(dv[2], dv[0]), 1e-12) << mask << " blocked";
    }
    // Query positions (chunked prefill, a KV cache): fewer queries than
    // keys, at positions from -1 (sees nothing) to past the last key (sees
    // every key it reaches), both masks, skipping forced against dense;
    // and f32 within its tolerance.
    {
      const int64_t seqQ = seq / 2 + 1;
      host::Shape pqs{batch, seqQ, heads, dim},
          pos{batch, seqQ, heads, valueDim};
      std::vector<double> pq, pdout;
      fill(pq, pqs);
      fill(pdout, pos);
      std::vector<int64_t> positions(batch * seqQ);
      std::uniform_int_distribution<int64_t> at(-1, seq + 2);
      for (int64_t &p : positions)
        p = at(rng);
      for (const char *mask : {"tree", "causal"}) {
        bool tree = !std::strcmp(mask, "tree");
        host::IndexPtr endsPtr =
            tree ? host::IndexPtr(ends.data()) : host::IndexPtr(nullptr);
        host::Shape endsShape = tree ? host::Shape{batch, seq} : host::Shape{};
        std::vector<double> out[3], dq[3], dk[3], dv[3];
        std::vector<float> out32[3];
        for (int skipping = 0; skipping < 3; ++skipping) {
          host::setAttentionRangeSkipping(kSkippingModes[skipping]);
          out[skipping].resize(pos.numElements());
          dq[skipping].resize(pqs.numElements());
          dk[skipping].resize(ks.numElements());
          dv[skipping].resize(vs.numElements());
          host::attention(out[skipping].data(), pos, pq.data(), pqs, k.data(),
                          ks, v.data(), vs, endsPtr, endsShape,
                          positions.data(), {batch, seqQ}, mask,
                          host::kAbsent);
          host::attention_grad(dq[skipping].data(), pqs, dk[skipping].data(),
                               ks, dv[skipping].data(), vs, pdout.data(), pos,
                               pq.data(), pqs, k.data(), ks, v.data(), vs,
                               endsPtr, endsShape, positions.data(),
                               {batch, seqQ}, mask, host::kAbsent);
          std::vector<float> q32(pq.begin(), pq.end()), k32(k.begin(), k.end()),
              v32(v.begin(), v.end());
          out32[skipping].resize(pos.numElements());
          host::attention(out32[skipping].data(), pos, q32.data(), pqs,
                          k32.data(), ks, v32.data(), vs, endsPtr, endsShape,
                          positions.data(), {batch, seqQ}, mask,
                          host::kAbsent);
        }
        host::setAttentionRangeSkipping(host::AttentionSkipping::Auto);
        EXPECT_LE(relativeError(out[1], out[0]), 1e-12) << mask << " positions";
        EXPECT_EQ(dq[1], dq[0]) << mask << " positions";
        EXPECT_EQ(dk[1], dk[0]) << mask << " positions";
        EXPECT_EQ(dv[1], dv[0]) << mask << " positions";
        std::vector<double> a(out32[1].begin(), out32[1].end()),
            b(out32[0].begin(), out32[0].end());
        EXPECT_LE(relativeError(a, b), 1e-5) << mask << " positions, f32";
        for (auto [got, want] :
             {std::pair(&out[2], &out[0]), std::pair(&dq[2], &dq[0]),
              std::pair(&dk[2], &dk[0]), std::pair(&dv[2], &dv[0])})
          EXPECT_LE(relativeError(*got, *want), 1e-12)
              << mask << " positions, blocked";
        std::vector<double> c(out32[2].begin(), out32[2].end());
        EXPECT_LE(relativeError(c, b), 1e-5) << mask << " positions, f32 blocked";
      }
    }
    // Ends that do not nest (key 0's subtree stops inside key 1's, which
    // would hide key 1 from later queries if skipped): the dense path,
    // forward and backward, even when skipping is forced; nothing counted.
    std::vector<int64_t> crossing(batch * seq, seq - 1);
    for (int64_t b = 0; b < batch; ++b)
      crossing[b * seq] = 1;
    std::vector<double> out[2], dq[2], dk[2], dv[2];
    int64_t before = host::getAttentionKeysVisited();
    for (int forced = 0; forced < 2; ++forced) {
      host::setAttentionRangeSkipping(forced ? host::AttentionSkipping::Always
                                             : host::AttentionSkipping::Never);
      out[forced].resize(os.numElements());
      dq[forced].resize(qs.numElements());
      dk[forced].resize(ks.numElements());
      dv[forced].resize(vs.numElements());
      host::attention(out[forced].data(), os, q.data(), qs, k.data(), ks,
                      v.data(), vs, crossing.data(), {batch, seq}, nullptr, {},
                      "tree", host::kAbsent);
      host::attention_grad(dq[forced].data(), qs, dk[forced].data(), ks,
                           dv[forced].data(), vs, dout.data(), os, q.data(),
                           qs, k.data(), ks, v.data(), vs, crossing.data(),
                           {batch, seq}, nullptr, {}, "tree", host::kAbsent);
    }
    host::setAttentionRangeSkipping(host::AttentionSkipping::Auto);
    EXPECT_EQ(host::getAttentionKeysVisited(), before);
    EXPECT_EQ(out[1], out[0]);
    EXPECT_EQ(dq[1], dq[0]);
    EXPECT_EQ(dk[1], dk[0]);
  }
}

// A NaN in a key's value reaches exactly the queries that see the key: the
// blocked GEMMs would carry it through their zero probabilities into hidden
// pairs, so a batch holding one takes the exact walk. Backward, every path
// gives the dense oracle's NaNs; forward, the dense oracle's GEMM (as the
// interpreter's) spreads it to every query, the skipping paths to those
// that see the key only.
TEST(HostKernels, TreeAttentionKeepsNaNsWhereTheyAreSeen) {
  const int64_t seq = 150, heads = 2, dim = 4;
  host::Shape s{1, seq, heads, dim};
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> q(s.numElements()), k(q.size()), v(q.size()),
      dout(q.size());
  for (auto *x : {&q, &k, &v, &dout})
    for (double &e : *x)
      e = uniform(rng);
  const int64_t poisoned = 130;
  v[(poisoned * heads) * dim] = std::nan("");
  std::vector<double> out[3], dq[3], dk[3], dv[3];
  for (int mode = 0; mode < 3; ++mode) {
    host::setAttentionRangeSkipping(kSkippingModes[mode]);
    out[mode].resize(q.size());
    dq[mode].resize(q.size());
    dk[mode].resize(q.size());
    dv[mode].resize(q.size());
    host::attention(out[mode].data(), s, q.data(), s, k.data(), s, v.data(), s,
                    nullptr, {}, nullptr, {}, "causal", host::kAbsent);
    host::attention_grad(dq[mode].data(), s, dk[mode].data(), s,
                         dv[mode].data(), s, dout.data(), s, q.data(), s,
                         k.data(), s, v.data(), s, nullptr, {}, nullptr, {},
                         "causal", host::kAbsent);
  }
  host::setAttentionRangeSkipping(host::AttentionSkipping::Auto);
  auto nanPattern = [](const std::vector<double> &x) {
    std::vector<bool> pattern(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      pattern[i] = std::isnan(x[i]);
    return pattern;
  };
  std::vector<bool> seen(q.size());
  for (int64_t i = poisoned; i < seq; ++i)
    seen[(i * heads) * dim] = true; // head 0's first value element
  for (int mode = 1; mode < 3; ++mode) {
    EXPECT_EQ(nanPattern(out[mode]), seen) << "mode " << mode;
    EXPECT_EQ(nanPattern(dq[mode]), nanPattern(dq[0])) << "mode " << mode;
    EXPECT_EQ(nanPattern(dk[mode]), nanPattern(dk[0])) << "mode " << mode;
    EXPECT_EQ(nanPattern(dv[mode]), nanPattern(dv[0])) << "mode " << mode;
  }
  // The queries before the poisoned key have finite gradients; those that
  // see it do not.
  EXPECT_TRUE(std::isfinite(dq[2][(10 * heads) * dim]));
  EXPECT_TRUE(std::isnan(dq[2][(140 * heads) * dim]));
}

// A share's route whose table disagrees with the share (a wrong exchange)
// fails with the routine's message; so does a table of the wrong shape.
TEST(HostKernelsDeathTest, ShareRouteChecksTheTable) {
  const int64_t experts[] = {0, 1, 1, 2};
  const int64_t table[] = {1, 1, 2, 0, 0, 4};
  const int64_t member = 0;
  int64_t slots[4], counts[3];
  EXPECT_DEATH(host::moe_route(slots, {2, 2}, counts, {3}, experts, {2, 2},
                               nullptr, {}, table, {2, 3}, &member, {}, 1,
                               INT64_MIN, 3),
               "loom::host::moe_route: the shares' table gives member 0 1 "
               "entries of expert 1 but its share has 2");
  EXPECT_DEATH(host::moe_route(slots, {2, 2}, counts, {3}, experts, {2, 2},
                               nullptr, {}, table, {3, 2}, &member, {}, 1,
                               INT64_MIN, 3),
               "loom::host::moe_route: shares of shape \\[3, 2\\] and a "
               "member of shape \\[\\]");
}

TEST(HostKernelsDeathTest, FailureNamesTheRankAndTheKernel) {
  float out[4], lhs[6], rhs[6];
  EXPECT_DEATH(
      {
        host::setFailurePrefix("loom runtime: rank 7: ");
        host::matmul(out, {2, 2}, lhs, {2, 3}, rhs, {2, 3}, false, false);
      },
      "loom runtime: rank 7: loom::host::matmul: ");
}

} // namespace
