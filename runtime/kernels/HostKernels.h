//===- HostKernels.h - Host kernels that generated code calls --*- C++ -*-===//
//
// One function per nn op, `loom::host::<op>` (the op name without `nn.`),
// that the host code generator calls with the op's tensors and attributes:
//
//   loom::host::<op>(results..., operands..., attributes...)
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
//   bf16 has no host kernels.
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
// Copies and constants
//===----------------------------------------------------------------------===//

// copy(out, out_shape, in, in_shape): a plain copy of numElements elements.
void copy(float *out, Shape outShape, const float *in, Shape inShape);
void copy(double *out, Shape outShape, const double *in, Shape inShape);
void copy(int32_t *out, Shape outShape, const int32_t *in, Shape inShape);
void copy(int64_t *out, Shape outShape, const int64_t *in, Shape inShape);
void copy(bool *out, Shape outShape, const bool *in, Shape inShape);

// nn.fill: fill(result, result_shape, double value)
void fill(float *result, Shape resultShape, double value);
void fill(double *result, Shape resultShape, double value);
// Splat constants of other element types (the generator lowers splat
// `arith.constant`s to fill): the value converted as the interpreter
// converts a constant's (integers exactly, i1 non-zero as true).
void fill(int32_t *result, Shape resultShape, double value);
void fill(int64_t *result, Shape resultShape, double value);
void fill(bool *result, Shape resultShape, double value);

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// nn.matmul: matmul(result, result_shape, lhs, lhs_shape, rhs, rhs_shape,
//                   bool transpose_lhs, bool transpose_rhs)
void matmul(float *result, Shape resultShape, const float *lhs, Shape lhsShape,
            const float *rhs, Shape rhsShape, bool transposeLhs,
            bool transposeRhs);
void matmul(double *result, Shape resultShape, const double *lhs,
            Shape lhsShape, const double *rhs, Shape rhsShape,
            bool transposeLhs, bool transposeRhs);

//===----------------------------------------------------------------------===//
// Element-wise binary ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

// nn.add, nn.sub, nn.mul, nn.div, nn.maximum, nn.minimum:
//   <op>(result, result_shape, lhs, lhs_shape, rhs, rhs_shape)
#define LOOM_HOST_BINARY(NAME)                                                 \
  void NAME(float *result, Shape resultShape, const float *lhs,                \
            Shape lhsShape, const float *rhs, Shape rhsShape);                 \
  void NAME(double *result, Shape resultShape, const double *lhs,              \
            Shape lhsShape, const double *rhs, Shape rhsShape);
LOOM_HOST_BINARY(add)
LOOM_HOST_BINARY(sub)
LOOM_HOST_BINARY(mul)
LOOM_HOST_BINARY(div)
LOOM_HOST_BINARY(maximum)
LOOM_HOST_BINARY(minimum)
#undef LOOM_HOST_BINARY

//===----------------------------------------------------------------------===//
// Element-wise unary ops
//===----------------------------------------------------------------------===//

// nn.neg, nn.exp, nn.log, nn.sqrt, nn.rsqrt, nn.tanh, nn.relu, nn.silu,
// nn.sin, nn.cos: <op>(result, result_shape, input, input_shape)
#define LOOM_HOST_UNARY(NAME)                                                  \
  void NAME(float *result, Shape resultShape, const float *input,              \
            Shape inputShape);                                                 \
  void NAME(double *result, Shape resultShape, const double *input,            \
            Shape inputShape);
LOOM_HOST_UNARY(neg)
LOOM_HOST_UNARY(exp)
LOOM_HOST_UNARY(log)
LOOM_HOST_UNARY(sqrt)
LOOM_HOST_UNARY(rsqrt)
LOOM_HOST_UNARY(tanh)
LOOM_HOST_UNARY(relu)
LOOM_HOST_UNARY(silu)
LOOM_HOST_UNARY(sin)
LOOM_HOST_UNARY(cos)
#undef LOOM_HOST_UNARY

// nn.gelu: gelu(result, result_shape, input, input_shape,
//               const char *approximate /* "none" | "tanh" */)
void gelu(float *result, Shape resultShape, const float *input,
          Shape inputShape, const char *approximate);
void gelu(double *result, Shape resultShape, const double *input,
          Shape inputShape, const char *approximate);

// nn.gelu_grad: gelu_grad(result, result_shape, grad, grad_shape, input,
//                         input_shape, const char *approximate)
void gelu_grad(float *result, Shape resultShape, const float *grad,
               Shape gradShape, const float *input, Shape inputShape,
               const char *approximate);
void gelu_grad(double *result, Shape resultShape, const double *grad,
               Shape gradShape, const double *input, Shape inputShape,
               const char *approximate);

// nn.clamp: clamp(result, result_shape, input, input_shape, double max,
//                 double min)
void clamp(float *result, Shape resultShape, const float *input,
           Shape inputShape, double max, double min);
void clamp(double *result, Shape resultShape, const double *input,
           Shape inputShape, double max, double min);

//===----------------------------------------------------------------------===//
// Comparison, selection, casts
//===----------------------------------------------------------------------===//

// nn.compare: compare(bool *result, result_shape, lhs, lhs_shape, rhs,
//   rhs_shape, const char *predicate /* "eq" "ne" "lt" "le" "gt" "ge" */)
void compare(bool *result, Shape resultShape, const float *lhs, Shape lhsShape,
             const float *rhs, Shape rhsShape, const char *predicate);
void compare(bool *result, Shape resultShape, const double *lhs, Shape lhsShape,
             const double *rhs, Shape rhsShape, const char *predicate);
void compare(bool *result, Shape resultShape, const int32_t *lhs,
             Shape lhsShape, const int32_t *rhs, Shape rhsShape,
             const char *predicate);
void compare(bool *result, Shape resultShape, const int64_t *lhs,
             Shape lhsShape, const int64_t *rhs, Shape rhsShape,
             const char *predicate);

// nn.select: select(result, result_shape, const bool *condition,
//   condition_shape, true_value, true_shape, false_value, false_shape)
void select(float *result, Shape resultShape, const bool *condition,
            Shape conditionShape, const float *trueValue, Shape trueShape,
            const float *falseValue, Shape falseShape);
void select(double *result, Shape resultShape, const bool *condition,
            Shape conditionShape, const double *trueValue, Shape trueShape,
            const double *falseValue, Shape falseShape);
void select(int32_t *result, Shape resultShape, const bool *condition,
            Shape conditionShape, const int32_t *trueValue, Shape trueShape,
            const int32_t *falseValue, Shape falseShape);
void select(int64_t *result, Shape resultShape, const bool *condition,
            Shape conditionShape, const int64_t *trueValue, Shape trueShape,
            const int64_t *falseValue, Shape falseShape);

// nn.cast: cast(result, result_shape, input, input_shape), every pair of
// float, double, int32_t, int64_t and bool.
#define LOOM_HOST_CAST_FROM(TO)                                                \
  void cast(TO *result, Shape resultShape, const float *input,                 \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const double *input,                \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const int32_t *input,               \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const int64_t *input,               \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const bool *input, Shape inputShape);
LOOM_HOST_CAST_FROM(float)
LOOM_HOST_CAST_FROM(double)
LOOM_HOST_CAST_FROM(int32_t)
LOOM_HOST_CAST_FROM(int64_t)
LOOM_HOST_CAST_FROM(bool)
#undef LOOM_HOST_CAST_FROM

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// nn.reduce: reduce(result, result_shape, input, input_shape, Shape dims,
//                   bool keep_dims, const char *kind /* "sum" "mean" "max" */)
void reduce(float *result, Shape resultShape, const float *input,
            Shape inputShape, Shape dims, bool keepDims, const char *kind);
void reduce(double *result, Shape resultShape, const double *input,
            Shape inputShape, Shape dims, bool keepDims, const char *kind);

//===----------------------------------------------------------------------===//
// Shape ops (any element type: float, double, int32_t, int64_t, bool)
//===----------------------------------------------------------------------===//

// nn.broadcast: broadcast(result, result_shape, input, input_shape,
//                         Shape broadcast_dims /* kAbsentShape: numpy */)
// nn.reshape: reshape(result, result_shape, input, input_shape)
// nn.transpose: transpose(result, result_shape, input, input_shape,
//                         Shape permutation)
// nn.slice: slice(result, result_shape, input, input_shape, Shape offsets,
//                 Shape sizes, Shape strides)
// nn.concat: concat(result, result_shape, {inputs...}, {input_shapes...},
//                   int64_t dim); also with `count` inputs as arrays.
// nn.gather: gather(result, result_shape, input, input_shape, IndexPtr
//                   indices, indices_shape, int64_t dim)
#define LOOM_HOST_DATA_MOVEMENT(T)                                             \
  void broadcast(T *result, Shape resultShape, const T *input,                 \
                 Shape inputShape, Shape broadcastDims);                       \
  void reshape(T *result, Shape resultShape, const T *input,                   \
               Shape inputShape);                                              \
  void transpose(T *result, Shape resultShape, const T *input,                 \
                 Shape inputShape, Shape permutation);                         \
  void slice(T *result, Shape resultShape, const T *input, Shape inputShape,   \
             Shape offsets, Shape sizes, Shape strides);                       \
  void concat(T *result, Shape resultShape,                                    \
              std::initializer_list<const T *> inputs,                         \
              std::initializer_list<Shape> inputShapes, int64_t dim);          \
  void concat(T *result, Shape resultShape, int64_t count,                     \
              const T *const *inputs, const Shape *inputShapes, int64_t dim);  \
  void gather(T *result, Shape resultShape, const T *input, Shape inputShape,  \
              IndexPtr indices, Shape indicesShape, int64_t dim);
LOOM_HOST_DATA_MOVEMENT(float)
LOOM_HOST_DATA_MOVEMENT(double)
LOOM_HOST_DATA_MOVEMENT(int32_t)
LOOM_HOST_DATA_MOVEMENT(int64_t)
LOOM_HOST_DATA_MOVEMENT(bool)
#undef LOOM_HOST_DATA_MOVEMENT

// nn.iota: iota(result, result_shape, const int64_t *offset, offset_shape,
//               int64_t dim)
void iota(float *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);
void iota(double *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);
void iota(int32_t *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);
void iota(int64_t *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);

// nn.slice_grad: slice_grad(result, result_shape, grad, grad_shape,
//                           Shape offsets, Shape strides)
void slice_grad(float *result, Shape resultShape, const float *grad,
                Shape gradShape, Shape offsets, Shape strides);
void slice_grad(double *result, Shape resultShape, const double *grad,
                Shape gradShape, Shape offsets, Shape strides);

// nn.embedding: embedding(result, result_shape, table, table_shape,
//   IndexPtr ids, ids_shape, const int64_t *offset, offset_shape)
void embedding(float *result, Shape resultShape, const float *table,
               Shape tableShape, IndexPtr ids, Shape idsShape,
               const int64_t *offset, Shape offsetShape);
void embedding(double *result, Shape resultShape, const double *table,
               Shape tableShape, IndexPtr ids, Shape idsShape,
               const int64_t *offset, Shape offsetShape);

// nn.gather_grad: gather_grad(result, result_shape, grad, grad_shape,
//   IndexPtr indices, indices_shape, const int64_t *offset, offset_shape,
//   int64_t dim)
void gather_grad(float *result, Shape resultShape, const float *grad,
                 Shape gradShape, IndexPtr indices, Shape indicesShape,
                 const int64_t *offset, Shape offsetShape, int64_t dim);
void gather_grad(double *result, Shape resultShape, const double *grad,
                 Shape gradShape, IndexPtr indices, Shape indicesShape,
                 const int64_t *offset, Shape offsetShape, int64_t dim);

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

// nn.softmax, nn.log_softmax: <op>(result, result_shape, input, input_shape,
//                                  int64_t dim)
void softmax(float *result, Shape resultShape, const float *input,
             Shape inputShape, int64_t dim);
void softmax(double *result, Shape resultShape, const double *input,
             Shape inputShape, int64_t dim);
void log_softmax(float *result, Shape resultShape, const float *input,
                 Shape inputShape, int64_t dim);
void log_softmax(double *result, Shape resultShape, const double *input,
                 Shape inputShape, int64_t dim);

// nn.layer_norm: layer_norm(result, result_shape, input, input_shape, scale,
//   scale_shape, bias, bias_shape, double epsilon, int64_t normalized_dims)
void layer_norm(float *result, Shape resultShape, const float *input,
                Shape inputShape, const float *scale, Shape scaleShape,
                const float *bias, Shape biasShape, double epsilon,
                int64_t normalizedDims);
void layer_norm(double *result, Shape resultShape, const double *input,
                Shape inputShape, const double *scale, Shape scaleShape,
                const double *bias, Shape biasShape, double epsilon,
                int64_t normalizedDims);

// nn.layer_norm_grad: layer_norm_grad(result, result_shape, grad, grad_shape,
//   input, input_shape, scale, scale_shape, double epsilon,
//   int64_t normalized_dims)
void layer_norm_grad(float *result, Shape resultShape, const float *grad,
                     Shape gradShape, const float *input, Shape inputShape,
                     const float *scale, Shape scaleShape, double epsilon,
                     int64_t normalizedDims);
void layer_norm_grad(double *result, Shape resultShape, const double *grad,
                     Shape gradShape, const double *input, Shape inputShape,
                     const double *scale, Shape scaleShape, double epsilon,
                     int64_t normalizedDims);

// nn.rms_norm: rms_norm(result, result_shape, input, input_shape, scale,
//   scale_shape, double epsilon, int64_t normalized_dims)
void rms_norm(float *result, Shape resultShape, const float *input,
              Shape inputShape, const float *scale, Shape scaleShape,
              double epsilon, int64_t normalizedDims);
void rms_norm(double *result, Shape resultShape, const double *input,
              Shape inputShape, const double *scale, Shape scaleShape,
              double epsilon, int64_t normalizedDims);

// nn.rms_norm_grad: rms_norm_grad(result, result_shape, grad, grad_shape,
//   input, input_shape, scale, scale_shape, double epsilon,
//   int64_t normalized_dims)
void rms_norm_grad(float *result, Shape resultShape, const float *grad,
                   Shape gradShape, const float *input, Shape inputShape,
                   const float *scale, Shape scaleShape, double epsilon,
                   int64_t normalizedDims);
void rms_norm_grad(double *result, Shape resultShape, const double *grad,
                   Shape gradShape, const double *input, Shape inputShape,
                   const double *scale, Shape scaleShape, double epsilon,
                   int64_t normalizedDims);

//===----------------------------------------------------------------------===//
// Transformer building blocks
//===----------------------------------------------------------------------===//

// nn.attention: attention(result, result_shape, query, query_shape, key,
//   key_shape, value, value_shape, IndexPtr subtree_end, subtree_end_shape,
//   IndexPtr positions, positions_shape,
//   const char *mask /* "none" "causal" "tree" */,
//   double scale /* kAbsent: 1 / sqrt(head_dim) */)
void attention(float *result, Shape resultShape, const float *query,
               Shape queryShape, const float *key, Shape keyShape,
               const float *value, Shape valueShape, IndexPtr subtreeEnd,
               Shape subtreeEndShape, IndexPtr positions, Shape positionsShape,
               const char *mask, double scale);
void attention(double *result, Shape resultShape, const double *query,
               Shape queryShape, const double *key, Shape keyShape,
               const double *value, Shape valueShape, IndexPtr subtreeEnd,
               Shape subtreeEndShape, IndexPtr positions, Shape positionsShape,
               const char *mask, double scale);

// nn.attention_grad: attention_grad(dquery, dquery_shape, dkey, dkey_shape,
//   dvalue, dvalue_shape, grad, grad_shape, query, query_shape, key,
//   key_shape, value, value_shape, IndexPtr subtree_end, subtree_end_shape,
//   IndexPtr positions, positions_shape, const char *mask, double scale)
void attention_grad(float *dquery, Shape dqueryShape, float *dkey,
                    Shape dkeyShape, float *dvalue, Shape dvalueShape,
                    const float *grad, Shape gradShape, const float *query,
                    Shape queryShape, const float *key, Shape keyShape,
                    const float *value, Shape valueShape, IndexPtr subtreeEnd,
                    Shape subtreeEndShape, IndexPtr positions,
                    Shape positionsShape, const char *mask, double scale);
void attention_grad(double *dquery, Shape dqueryShape, double *dkey,
                    Shape dkeyShape, double *dvalue, Shape dvalueShape,
                    const double *grad, Shape gradShape, const double *query,
                    Shape queryShape, const double *key, Shape keyShape,
                    const double *value, Shape valueShape, IndexPtr subtreeEnd,
                    Shape subtreeEndShape, IndexPtr positions,
                    Shape positionsShape, const char *mask, double scale);

// nn.rope: rope(result, result_shape, input, input_shape, IndexPtr positions,
//               positions_shape, bool inverse, double theta)
void rope(float *result, Shape resultShape, const float *input,
          Shape inputShape, IndexPtr positions, Shape positionsShape,
          bool inverse, double theta);
void rope(double *result, Shape resultShape, const double *input,
          Shape inputShape, IndexPtr positions, Shape positionsShape,
          bool inverse, double theta);

// nn.dropout: dropout(result, result_shape, input, input_shape,
//   const int64_t *offset, offset_shape, {starts...}, {starts_shapes...},
//   Shape global_shape, double rate, int64_t seed); a whole tensor has no
//   starts (`{}, {}`) and kAbsentShape. Also with `count` starts as arrays.
#define LOOM_HOST_DROPOUT(T)                                                   \
  void dropout(T *result, Shape resultShape, const T *input, Shape inputShape, \
               const int64_t *offset, Shape offsetShape,                       \
               std::initializer_list<const int64_t *> starts,                  \
               std::initializer_list<Shape> startsShapes, Shape globalShape,   \
               double rate, int64_t seed);                                     \
  void dropout(T *result, Shape resultShape, const T *input, Shape inputShape, \
               const int64_t *offset, Shape offsetShape, int64_t count,        \
               const int64_t *const *starts, const Shape *startsShapes,        \
               Shape globalShape, double rate, int64_t seed);
LOOM_HOST_DROPOUT(float)
LOOM_HOST_DROPOUT(double)
#undef LOOM_HOST_DROPOUT

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

// nn.cross_entropy: cross_entropy(result, result_shape, logits, logits_shape,
//   IndexPtr labels, labels_shape, weights, weights_shape, normalizer_value,
//   normalizer_value_shape, double normalizer /* kAbsent with the operand */)
void cross_entropy(float *result, Shape resultShape, const float *logits,
                   Shape logitsShape, IndexPtr labels, Shape labelsShape,
                   const float *weights, Shape weightsShape,
                   const float *normalizerValue, Shape normalizerValueShape,
                   double normalizer);
void cross_entropy(double *result, Shape resultShape, const double *logits,
                   Shape logitsShape, IndexPtr labels, Shape labelsShape,
                   const double *weights, Shape weightsShape,
                   const double *normalizerValue, Shape normalizerValueShape,
                   double normalizer);

// nn.cross_entropy_grad: cross_entropy_grad(result, result_shape, grad,
//   grad_shape, logits, logits_shape, IndexPtr labels, labels_shape, weights,
//   weights_shape, normalizer_value, normalizer_value_shape,
//   double normalizer)
void cross_entropy_grad(float *result, Shape resultShape, const float *grad,
                        Shape gradShape, const float *logits, Shape logitsShape,
                        IndexPtr labels, Shape labelsShape,
                        const float *weights, Shape weightsShape,
                        const float *normalizerValue,
                        Shape normalizerValueShape, double normalizer);
void cross_entropy_grad(double *result, Shape resultShape, const double *grad,
                        Shape gradShape, const double *logits,
                        Shape logitsShape, IndexPtr labels, Shape labelsShape,
                        const double *weights, Shape weightsShape,
                        const double *normalizerValue,
                        Shape normalizerValueShape, double normalizer);

//===----------------------------------------------------------------------===//
// Optimizer updates (results may alias the state they update)
//===----------------------------------------------------------------------===//

// nn.sgd_update: sgd_update(new_param, new_param_shape, new_momentum_buffer,
//   new_momentum_buffer_shape, param, param_shape, grad, grad_shape,
//   momentum_buffer, momentum_buffer_shape, double lr, double momentum,
//   bool nesterov, double weight_decay)
void sgd_update(float *newParam, Shape newParamShape, float *newMomentumBuffer,
                Shape newMomentumBufferShape, const float *param,
                Shape paramShape, const float *grad, Shape gradShape,
                const float *momentumBuffer, Shape momentumBufferShape,
                double lr, double momentum, bool nesterov, double weightDecay);
void sgd_update(double *newParam, Shape newParamShape,
                double *newMomentumBuffer, Shape newMomentumBufferShape,
                const double *param, Shape paramShape, const double *grad,
                Shape gradShape, const double *momentumBuffer,
                Shape momentumBufferShape, double lr, double momentum,
                bool nesterov, double weightDecay);

// nn.adamw_update: adamw_update(new_param, new_param_shape, new_m,
//   new_m_shape, new_v, new_v_shape, param, param_shape, grad, grad_shape, m,
//   m_shape, v, v_shape, const int64_t *step, step_shape, double beta1,
//   double beta2, double epsilon, double lr, double weight_decay)
void adamw_update(float *newParam, Shape newParamShape, float *newM,
                  Shape newMShape, float *newV, Shape newVShape,
                  const float *param, Shape paramShape, const float *grad,
                  Shape gradShape, const float *m, Shape mShape, const float *v,
                  Shape vShape, const int64_t *step, Shape stepShape,
                  double beta1, double beta2, double epsilon, double lr,
                  double weightDecay);
void adamw_update(double *newParam, Shape newParamShape, double *newM,
                  Shape newMShape, double *newV, Shape newVShape,
                  const double *param, Shape paramShape, const double *grad,
                  Shape gradShape, const double *m, Shape mShape,
                  const double *v, Shape vShape, const int64_t *step,
                  Shape stepShape, double beta1, double beta2, double epsilon,
                  double lr, double weightDecay);

} // namespace loom::host

#endif // LOOM_RUNTIME_KERNELS_HOSTKERNELS_H
