//===- HostKernels.h - Host kernels that generated code calls --*- C++ -*-===//
//
// One function per nn op, `loom::host::<op>` (the op name without `nn.`),
// that the host code generator calls with the op's tensors and attributes:
//
//   loom::host::<op>(results..., operands..., attributes...)
//
// The declarations are generated from the op's kernel contract in its ODS
// (HostKernels.h.inc, by loom-tblgen; see docs/op-contract.md), so the
// convention below is what the generator writes; the code generator's call
// layer is built from the same contract.
//
// * Every tensor, result or operand, is two arguments: a pointer to its
//   row-major, contiguous elements (`T *` for results, `const T *` for
//   operands) and its shape, a `Shape` written as a braced list (`{24, 128}`;
//   a 0-d tensor is `{}`). Results come first in the op's result order, then
//   operands in the op's operand order. An absent optional operand is
//   `nullptr, {}`.
// * Attributes follow in alphabetical order of their names (the op's
//   `getAttributeNames()`, without `operandSegmentSizes`): F64Attr -> double,
//   I64Attr -> int64_t, UnitAttr -> bool (absent: false), DenseI64ArrayAttr
//   -> Shape, an enumeration -> `const char *` holding its keyword as printed
//   in the IR (`"sum"`, `"causal"`, `"tanh"`, `"eq"`, ...). An absent
//   optional F64Attr is `kAbsent`, an absent optional I64Attr `INT64_MIN`, an
//   absent optional array `kAbsentShape`. For attributes with a default
//   value (`DefaultValuedAttr`) the generator passes the value; `kAbsent` or
//   `INT64_MIN` there, or a null enumeration keyword, also mean the default.
// * Element types: f32 -> float, f64 -> double, i32 -> int32_t,
//   i64 -> int64_t, i1 -> bool (one byte). Integer index operands (ids,
//   labels, indices, positions, subtree ends; i32 or i64) are `IndexPtr`,
//   which a `const int32_t *`, a `const int64_t *` or `nullptr` converts to
//   implicitly. 0-d i64 operands (`offset`, `step`) are `const int64_t *`.
//   An op has kernels for the element types its contract lists (f32 and
//   f64 unless it says otherwise); bf16 has no host kernels, and
//   --loom-emit-host reports a type or op without a kernel at the op.
// * Variadic operands (nn.concat's inputs) are two braced lists, the
//   pointers and the shapes: `{a, b}, {{4, 3}, {4, 5}}`.
//
// Results are written entirely (never accumulated into); results never
// alias operands, except that each result of sgd_update and adamw_update may
// alias the operand it updates (param, momentum buffer, m, v): those update
// in place, element by element. Kernels trust their arguments (the program
// was verified); shapes that do not fit together end the process with a
// message naming the kernel.
//
// The kernels compute what the reference interpreter (runtime/interpreter)
// computes, in the same order and precision, so f64 results agree with it
// bit for bit (see test/unit/HostKernelsTest.cpp). Matrix products go
// through OpenBLAS pinned to one thread. Kernels allocate nothing per call
// except thread-local scratch that grows as needed (attention,
// attention_grad, rope).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELS_HOSTKERNELS_H
#define LOOM_RUNTIME_KERNELS_HOSTKERNELS_H

#include <cstdint>
#include <initializer_list>

namespace loom::host {

/// A prefix for the kernels' failure messages, such as "loom runtime: rank
/// 3: " (the runtime sets it once it knows its rank); empty by default.
/// The CUDA kernels use it too.
void setFailurePrefix(const char *prefix);
const char *failurePrefix();
/// What a kernel that fails calls with its message instead of printing it
/// and aborting the process (a program library's runtime throws from it, so
/// that the error reaches its caller); null (the default): print and abort.
/// The handler must not return.
using FailureHandler = void (*)(const char *message);
void setFailureHandler(FailureHandler handler);
/// The handler set (the CUDA kernels call it too).
FailureHandler getFailureHandler();

/// Whether attention and attention_grad visit only the keys a query sees
/// under a causal or nested tree mask: Auto (the default) blocked, GEMMs
/// per block of queries over the runs of keys the block sees; Always, the
/// exact scalar walk per query over its own keys; or Never (the dense
/// path, the tests' oracle). getAttentionKeysVisited: how many (query,
/// key) pairs the exact walk visited so far in this process (per batch and
/// query, not per head).
enum class AttentionSkipping { Auto, Always, Never };
void setAttentionRangeSkipping(AttentionSkipping mode);
int64_t getAttentionKeysVisited();

/// The most dimensions a Shape holds.
constexpr int kMaxRank = 8;

/// A tensor shape (or an integer-array attribute): up to kMaxRank sizes.
/// `{}` is the 0-d shape; `kAbsentShape` (rank -1) an absent array attribute.
struct Shape {
  int64_t dims[kMaxRank] = {};
  int64_t rank = 0;

  constexpr Shape() = default;
  constexpr Shape(std::initializer_list<int64_t> sizes) {
    if (sizes.size() > static_cast<unsigned>(kMaxRank))
      __builtin_trap();
    for (int64_t size : sizes)
      dims[rank++] = size;
  }
  constexpr int64_t operator[](int64_t d) const { return dims[d]; }
  constexpr bool isAbsent() const { return rank < 0; }
  /// The product of the sizes (1 for a 0-d shape).
  constexpr int64_t numElements() const {
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d)
      count *= dims[d];
    return count;
  }
  static constexpr Shape absent() {
    Shape shape;
    shape.rank = -1;
    return shape;
  }
};

/// An absent optional F64Attr (a quiet NaN).
constexpr double kAbsent = __builtin_nan("");
/// An absent optional DenseI64ArrayAttr.
constexpr Shape kAbsentShape = Shape::absent();

/// The elements of an integer index tensor, i32 or i64 (or none).
struct IndexPtr {
  const void *data = nullptr;
  bool is64 = true;

  constexpr IndexPtr(decltype(nullptr)) {}
  constexpr IndexPtr(const int64_t *values) : data(values), is64(true) {}
  constexpr IndexPtr(const int32_t *values) : data(values), is64(false) {}
  explicit operator bool() const { return data != nullptr; }
  int64_t operator[](int64_t i) const {
    return is64 ? static_cast<const int64_t *>(data)[i]
                : static_cast<const int32_t *>(data)[i];
  }
};

//===----------------------------------------------------------------------===//
// Kernels of the nn ops
//===----------------------------------------------------------------------===//

// Generated from the ops' kernel contracts (dialects/nn/IR/NNDialect.td,
// docs/op-contract.md): for each op a comment naming its parameters, then
// one declaration per element type. Ops whose operands include 0-d i64
// tensors (`offset`, `step`) take `const int64_t *`; index operands
// `IndexPtr`.
#include "runtime/kernels/HostKernels.h.inc"

//===----------------------------------------------------------------------===//
// Beyond the ops' contracts
//===----------------------------------------------------------------------===//

// copy(out, out_shape, in, in_shape): a plain copy of numElements elements
// (results returned by copy, updates copied back).
void copy(float *out, Shape outShape, const float *in, Shape inShape);
void copy(double *out, Shape outShape, const double *in, Shape inShape);
void copy(int32_t *out, Shape outShape, const int32_t *in, Shape inShape);
void copy(int64_t *out, Shape outShape, const int64_t *in, Shape inShape);
void copy(bool *out, Shape outShape, const bool *in, Shape inShape);

// nn.fill also fills splat constants of other element types (the generator
// lowers splat `arith.constant`s to fill): the value converted as the
// interpreter converts a constant's (integers exactly, i1 non-zero as
// true).

// nn.concat with `count` inputs as arrays.
#define LOOM_HOST_CONCAT_ARRAYS(T)                                             \
  void concat(T *result, Shape resultShape, int64_t count,                     \
              const T *const *inputs, const Shape *inputShapes, int64_t dim);
LOOM_HOST_CONCAT_ARRAYS(float)
LOOM_HOST_CONCAT_ARRAYS(double)
LOOM_HOST_CONCAT_ARRAYS(int32_t)
LOOM_HOST_CONCAT_ARRAYS(int64_t)
LOOM_HOST_CONCAT_ARRAYS(bool)
#undef LOOM_HOST_CONCAT_ARRAYS

// nn.dropout with `count` starts as arrays (the Ascend test double's
// operator builds them at run time).
#define LOOM_HOST_DROPOUT_ARRAYS(T)                                            \
  void dropout(T *result, Shape resultShape, const T *input, Shape inputShape, \
               const int64_t *offset, Shape offsetShape, int64_t count,        \
               const int64_t *const *starts, const Shape *startsShapes,        \
               Shape globalShape, double rate, int64_t seed);
LOOM_HOST_DROPOUT_ARRAYS(float)
LOOM_HOST_DROPOUT_ARRAYS(double)
#undef LOOM_HOST_DROPOUT_ARRAYS

} // namespace loom::host

#endif // LOOM_RUNTIME_KERNELS_HOSTKERNELS_H
