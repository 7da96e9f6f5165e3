//===- CudaKernels.h - CUDA kernels that generated code calls --*- C++ -*-===//
//
// The CUDA counterparts of the host kernels (runtime/kernels/HostKernels.h):
// one function per nn op, `loom::cuda::<op>`, with exactly the parameters of
// `loom::host::<op>` and the same conventions (results first, every tensor a
// pointer and a `Shape`, attributes in alphabetical order, `kAbsent`,
// `INT64_MIN` and `kAbsentShape` for absent attributes, `IndexPtr` for index
// operands). Differences:
//
// * Every tensor pointer is a DEVICE pointer, including the 0-d operands
//   (`offset`, `step`, cross_entropy's `normalizer_value` and
//   cross_entropy_grad's `grad`): kernels read them on the device. Shapes,
//   attributes and concat's pointer arrays are host values.
// * Kernels are launched asynchronously on the stream set by setContext (the
//   default stream until then); they return before the results are ready.
//   synchronize() waits for them. A kernel that needs scratch memory takes
//   it from the stream-ordered allocator (cudaMallocAsync) on that stream.
// * Matrix products go through cuBLAS on the handle set by setContext (one
//   created on first use otherwise), in the handle's math mode: the default
//   mode computes f32 in f32 (no TF32).
// * Results agree with the host kernels' to rounding: f64 within 1e-12 and
//   f32 within 1e-5 norm-wise relative error (test/unit/CudaKernelsTest.cpp).
//   Per-element maths is the host kernels' (runtime/kernels/Math.h), compiled
//   without fused multiply-adds; sums may be in another order than the host
//   kernels' (tree reductions, cuBLAS), but always in the same order for
//   the same shapes: no floating-point atomics, so repeated runs give the
//   same bits.
// * Shape errors end the process with a message naming `loom::cuda::<op>`;
//   so does a failed launch or CUDA call.
//
// This header includes no CUDA header: generated C++ compiled by the host
// compiler includes it and links LoomCudaKernels.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDAKERNELS_H
#define LOOM_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/kernels/HostKernels.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace loom::cuda {

using loom::host::IndexPtr;
using loom::host::kAbsent;
using loom::host::kAbsentShape;
using loom::host::kMaxRank;
using loom::host::Shape;

//===----------------------------------------------------------------------===//
// Context and device helpers
//===----------------------------------------------------------------------===//

/// Sets the stream (a `cudaStream_t`, null for the default stream) kernels
/// launch on and the cuBLAS handle (a `cublasHandle_t`, null to let the
/// kernels create their own) matmul uses; the handle is bound to the stream.
void setContext(void *stream, void *cublasHandle);
/// Waits until every kernel launched on the current stream has finished.
void synchronize();

/// The number of CUDA devices, 0 when there are none or CUDA fails.
int deviceCount();
/// cudaMalloc / cudaFree; end the process on failure.
void *deviceAlloc(size_t bytes);
void deviceFree(void *pointer);
/// Synchronous copies (after the current stream's work has finished).
void copyToDevice(void *device, const void *host, size_t bytes);
void copyToHost(void *host, const void *device, size_t bytes);

//===----------------------------------------------------------------------===//
// Copies and constants
//===----------------------------------------------------------------------===//

void copy(float *out, Shape outShape, const float *in, Shape inShape);
void copy(double *out, Shape outShape, const double *in, Shape inShape);
void copy(int32_t *out, Shape outShape, const int32_t *in, Shape inShape);
void copy(int64_t *out, Shape outShape, const int64_t *in, Shape inShape);
void copy(bool *out, Shape outShape, const bool *in, Shape inShape);

void fill(float *result, Shape resultShape, double value);
void fill(double *result, Shape resultShape, double value);
void fill(int32_t *result, Shape resultShape, double value);
void fill(int64_t *result, Shape resultShape, double value);
void fill(bool *result, Shape resultShape, double value);

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

void matmul(float *result, Shape resultShape, const float *lhs, Shape lhsShape,
            const float *rhs, Shape rhsShape, bool transposeLhs,
            bool transposeRhs);
void matmul(double *result, Shape resultShape, const double *lhs,
            Shape lhsShape, const double *rhs, Shape rhsShape,
            bool transposeLhs, bool transposeRhs);

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

#define LOOM_CUDA_BINARY(NAME)                                                 \
  void NAME(float *result, Shape resultShape, const float *lhs,                \
            Shape lhsShape, const float *rhs, Shape rhsShape);                 \
  void NAME(double *result, Shape resultShape, const double *lhs,              \
            Shape lhsShape, const double *rhs, Shape rhsShape);
LOOM_CUDA_BINARY(add)
LOOM_CUDA_BINARY(sub)
LOOM_CUDA_BINARY(mul)
LOOM_CUDA_BINARY(div)
LOOM_CUDA_BINARY(maximum)
LOOM_CUDA_BINARY(minimum)
#undef LOOM_CUDA_BINARY

#define LOOM_CUDA_UNARY(NAME)                                                  \
  void NAME(float *result, Shape resultShape, const float *input,              \
            Shape inputShape);                                                 \
  void NAME(double *result, Shape resultShape, const double *input,            \
            Shape inputShape);
LOOM_CUDA_UNARY(neg)
LOOM_CUDA_UNARY(exp)
LOOM_CUDA_UNARY(log)
LOOM_CUDA_UNARY(sqrt)
LOOM_CUDA_UNARY(rsqrt)
LOOM_CUDA_UNARY(tanh)
LOOM_CUDA_UNARY(relu)
LOOM_CUDA_UNARY(silu)
LOOM_CUDA_UNARY(sin)
LOOM_CUDA_UNARY(cos)
#undef LOOM_CUDA_UNARY

void gelu(float *result, Shape resultShape, const float *input,
          Shape inputShape, const char *approximate);
void gelu(double *result, Shape resultShape, const double *input,
          Shape inputShape, const char *approximate);

void gelu_grad(float *result, Shape resultShape, const float *grad,
               Shape gradShape, const float *input, Shape inputShape,
               const char *approximate);
void gelu_grad(double *result, Shape resultShape, const double *grad,
               Shape gradShape, const double *input, Shape inputShape,
               const char *approximate);

void clamp(float *result, Shape resultShape, const float *input,
           Shape inputShape, double max, double min);
void clamp(double *result, Shape resultShape, const double *input,
           Shape inputShape, double max, double min);

//===----------------------------------------------------------------------===//
// Comparison, selection, casts
//===----------------------------------------------------------------------===//

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

#define LOOM_CUDA_CAST_FROM(TO)                                                \
  void cast(TO *result, Shape resultShape, const float *input,                 \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const double *input,                \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const int32_t *input,               \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const int64_t *input,               \
            Shape inputShape);                                                 \
  void cast(TO *result, Shape resultShape, const bool *input, Shape inputShape);
LOOM_CUDA_CAST_FROM(float)
LOOM_CUDA_CAST_FROM(double)
LOOM_CUDA_CAST_FROM(int32_t)
LOOM_CUDA_CAST_FROM(int64_t)
LOOM_CUDA_CAST_FROM(bool)
#undef LOOM_CUDA_CAST_FROM

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

void reduce(float *result, Shape resultShape, const float *input,
            Shape inputShape, Shape dims, bool keepDims, const char *kind);
void reduce(double *result, Shape resultShape, const double *input,
            Shape inputShape, Shape dims, bool keepDims, const char *kind);

//===----------------------------------------------------------------------===//
// Shape ops (any element type: float, double, int32_t, int64_t, bool)
//===----------------------------------------------------------------------===//

// concat's pointer lists (initializer_list or array) are host arrays of
// device pointers.
#define LOOM_CUDA_DATA_MOVEMENT(T)                                             \
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
LOOM_CUDA_DATA_MOVEMENT(float)
LOOM_CUDA_DATA_MOVEMENT(double)
LOOM_CUDA_DATA_MOVEMENT(int32_t)
LOOM_CUDA_DATA_MOVEMENT(int64_t)
LOOM_CUDA_DATA_MOVEMENT(bool)
#undef LOOM_CUDA_DATA_MOVEMENT

void iota(float *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);
void iota(double *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);
void iota(int32_t *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);
void iota(int64_t *result, Shape resultShape, const int64_t *offset,
          Shape offsetShape, int64_t dim);

void slice_grad(float *result, Shape resultShape, const float *grad,
                Shape gradShape, Shape offsets, Shape strides);
void slice_grad(double *result, Shape resultShape, const double *grad,
                Shape gradShape, Shape offsets, Shape strides);

void embedding(float *result, Shape resultShape, const float *table,
               Shape tableShape, IndexPtr ids, Shape idsShape,
               const int64_t *offset, Shape offsetShape);
void embedding(double *result, Shape resultShape, const double *table,
               Shape tableShape, IndexPtr ids, Shape idsShape,
               const int64_t *offset, Shape offsetShape);

void gather_grad(float *result, Shape resultShape, const float *grad,
                 Shape gradShape, IndexPtr indices, Shape indicesShape,
                 const int64_t *offset, Shape offsetShape, int64_t dim);
void gather_grad(double *result, Shape resultShape, const double *grad,
                 Shape gradShape, IndexPtr indices, Shape indicesShape,
                 const int64_t *offset, Shape offsetShape, int64_t dim);

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

void softmax(float *result, Shape resultShape, const float *input,
             Shape inputShape, int64_t dim);
void softmax(double *result, Shape resultShape, const double *input,
             Shape inputShape, int64_t dim);
void log_softmax(float *result, Shape resultShape, const float *input,
                 Shape inputShape, int64_t dim);
void log_softmax(double *result, Shape resultShape, const double *input,
                 Shape inputShape, int64_t dim);

void layer_norm(float *result, Shape resultShape, const float *input,
                Shape inputShape, const float *scale, Shape scaleShape,
                const float *bias, Shape biasShape, double epsilon,
                int64_t normalizedDims);
void layer_norm(double *result, Shape resultShape, const double *input,
                Shape inputShape, const double *scale, Shape scaleShape,
                const double *bias, Shape biasShape, double epsilon,
                int64_t normalizedDims);

void layer_norm_grad(float *result, Shape resultShape, const float *grad,
                     Shape gradShape, const float *input, Shape inputShape,
                     const float *scale, Shape scaleShape, double epsilon,
                     int64_t normalizedDims);
void layer_norm_grad(double *result, Shape resultShape, const double *grad,
                     Shape gradShape, const double *input, Shape inputShape,
                     const double *scale, Shape scaleShape, double epsilon,
                     int64_t normalizedDims);

void rms_norm(float *result, Shape resultShape, const float *input,
              Shape inputShape, const float *scale, Shape scaleShape,
              double epsilon, int64_t normalizedDims);
void rms_norm(double *result, Shape resultShape, const double *input,
              Shape inputShape, const double *scale, Shape scaleShape,
              double epsilon, int64_t normalizedDims);

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

void rope(float *result, Shape resultShape, const float *input,
          Shape inputShape, IndexPtr positions, Shape positionsShape,
          bool inverse, double theta);
void rope(double *result, Shape resultShape, const double *input,
          Shape inputShape, IndexPtr positions, Shape positionsShape,
          bool inverse, double theta);

// The starts are device scalars, their list a host one.
void dropout(float *result, Shape resultShape, const float *input,
             Shape inputShape, const int64_t *offset, Shape offsetShape,
             std::initializer_list<const int64_t *> starts,
             std::initializer_list<Shape> startsShapes, Shape globalShape,
             double rate, int64_t seed);
void dropout(double *result, Shape resultShape, const double *input,
             Shape inputShape, const int64_t *offset, Shape offsetShape,
             std::initializer_list<const int64_t *> starts,
             std::initializer_list<Shape> startsShapes, Shape globalShape,
             double rate, int64_t seed);

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

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

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDAKERNELS_H
