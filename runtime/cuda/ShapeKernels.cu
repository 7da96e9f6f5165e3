//===- ShapeKernels.cu - Data movement nn ops on the device ---------------===//
//
// reshape, broadcast, transpose, slice, concat, gather, iota, slice_grad,
// embedding and gather_grad, exact for every element type. The scatter-add
// gather_grad runs one thread per column of the gradient (every coordinate
// but `dim`): the thread owns the result elements of its column and adds
// the column's gradient into them in increasing order along `dim`, the
// order of the host kernel, so the sums agree with it bit for bit and no
// two threads write the same element (no atomics).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

#include <type_traits>

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// out[i] = in[offset of i].
template <typename T>
__global__ void gatherStridedKernel(T *out, const T *in, Space<1> space,
                                    int64_t n) {
  LOOM_CUDA_FOR(i, n) {
    int64_t offset;
    space.offsets(i, &offset);
    out[i] = in[offset];
  }
}

/// out[offset of i] = in[i].
template <typename T>
__global__ void scatterStridedKernel(T *out, const T *in, Space<1> space,
                                     int64_t n) {
  LOOM_CUDA_FOR(i, n) {
    int64_t offset;
    space.offsets(i, &offset);
    out[offset] = in[i];
  }
}

/// One concat input of `outer` rows of `row` elements into the result rows
/// of `outRow` elements, from element `start` of each.
template <typename T>
__global__ void concatKernel(T *out, const T *in, int64_t outer, int64_t row,
                             int64_t outRow, int64_t start) {
  LOOM_CUDA_FOR(i, outer * row) {
    int64_t o = i / row, r = i % row;
    out[o * outRow + start + r] = in[i];
  }
}

template <typename T>
__global__ void gatherKernel(T *out, const T *in, DeviceIndex indices,
                             Space<1> space, int64_t dimStride, int64_t dimSize,
                             int64_t n) {
  LOOM_CUDA_FOR(i, n) {
    int64_t base;
    space.offsets(i, &base);
    int64_t index = indices[i];
    out[i] = index < 0 || index >= dimSize ? undefinedValue<T>()
                                           : in[base + index * dimStride];
  }
}

template <typename T>
__global__ void iotaKernel(T *out, const int64_t *offset, int64_t size,
                           int64_t inner, int64_t n) {
  // As the host kernel: the offset read as a double, each value converted
  // from double as nn.cast converts f64.
  int64_t start =
      offset ? static_cast<int64_t>(static_cast<double>(*offset)) : 0;
  LOOM_CUDA_FOR(i, n) {
    int64_t s = (i / inner) % size;
    double value = static_cast<double>(s + start);
    if constexpr (std::is_floating_point_v<T>)
      out[i] = static_cast<T>(value);
    else
      out[i] = math::floatToInt<T>(value);
  }
}

template <typename T>
__global__ void embeddingKernel(T *out, const T *table, int64_t vocab,
                                int64_t width, DeviceIndex ids,
                                const int64_t *offset, int64_t n) {
  int64_t shift = offset ? *offset : 0;
  LOOM_CUDA_FOR(i, n) {
    int64_t token = i / width, j = i % width;
    int64_t id = ids[token] - shift;
    if (id < 0 || id >= vocab)
      out[i] = offset ? T(0) : undefinedValue<T>();
    else
      out[i] = table[id * width + j];
  }
}

/// Operand 0 of `columns`: the column's first grad (and index) element;
/// operand 1: its first result element.
template <typename T>
__global__ void gatherGradKernel(T *result, const T *grad, DeviceIndex indices,
                                 const int64_t *offset, Space<2> columns,
                                 int64_t count, int64_t gradStride,
                                 int64_t resultStride, int64_t dimSize,
                                 int64_t n) {
  int64_t shift = offset ? *offset : 0;
  LOOM_CUDA_FOR(c, n) {
    int64_t bases[2];
    columns.offsets(c, bases);
    for (int64_t t = 0; t < count; ++t) {
      int64_t g = bases[0] + t * gradStride;
      int64_t index = indices[g] - shift;
      if (index >= 0 && index < dimSize)
        result[bases[1] + index * resultStride] += grad[g];
    }
  }
}

//===----------------------------------------------------------------------===//
// Implementations
//===----------------------------------------------------------------------===//

/// out[i] = in[base + sum_d i_d * strides[d]] over the row-major `outShape`.
template <typename T>
void copyStrided(const char *kernel, T *out, const Shape &outShape, const T *in,
                 const int64_t *strides, int64_t base) {
  Space<1> space(outShape);
  for (int d = 0; d < space.rank; ++d)
    space.strides[0][d] = strides[d];
  space.bases[0] = base;
  space.coalesce();
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  gatherStridedKernel<<<gridFor(n), kThreads, 0, stream()>>>(out, in, space, n);
  checkLaunch(kernel);
}

template <typename T>
void reshapeImpl(T *result, const Shape &resultShape, const T *input,
                 const Shape &inputShape) {
  checkSameCount("reshape", resultShape, inputShape);
  if (int64_t count = resultShape.numElements()) {
    checkCuda(cudaMemcpyAsync(result, input,
                              static_cast<size_t>(count) * sizeof(T),
                              cudaMemcpyDeviceToDevice, stream()),
              "reshape", "cudaMemcpyAsync");
    recordKernel("reshape");
  }
}

template <typename T>
void broadcastImpl(T *result, const Shape &resultShape, const T *input,
                   const Shape &inputShape, const Shape &broadcastDims) {
  const char *kernel = "broadcast";
  checkValid(kernel, "the result", resultShape);
  checkValid(kernel, "the input", inputShape);
  int64_t rank = resultShape.rank, inRank = inputShape.rank;
  LOOM_CUDA_CHECK(inRank <= rank, kernel,
                  "the input of shape %s has more dimensions than the result "
                  "of shape %s",
                  formatShape(inputShape, 0), formatShape(resultShape, 1));
  int64_t mapping[kMaxRank];
  if (!broadcastDims.isAbsent()) {
    LOOM_CUDA_CHECK(broadcastDims.rank == inRank, kernel,
                    "broadcast_dims %s has no entry per input dimension of "
                    "shape %s",
                    formatShape(broadcastDims, 0), formatShape(inputShape, 1));
    for (int64_t d = 0; d < inRank; ++d) {
      LOOM_CUDA_CHECK(broadcastDims[d] >= 0 && broadcastDims[d] < rank, kernel,
                      "broadcast dimension %lld is not in [0, %lld)",
                      static_cast<long long>(broadcastDims[d]),
                      static_cast<long long>(rank));
      mapping[d] = broadcastDims[d];
    }
  } else {
    for (int64_t d = 0; d < inRank; ++d)
      mapping[d] = rank - inRank + d;
  }
  int64_t inStrides[kMaxRank], strides[kMaxRank] = {};
  getRowMajorStrides(inputShape, inStrides);
  for (int64_t d = 0; d < inRank; ++d) {
    int64_t size = inputShape[d], target = resultShape[mapping[d]];
    LOOM_CUDA_CHECK(size == 1 || size == target, kernel,
                    "input dimension %lld of size %lld cannot broadcast to "
                    "result dimension %lld of size %lld",
                    static_cast<long long>(d), static_cast<long long>(size),
                    static_cast<long long>(mapping[d]),
                    static_cast<long long>(target));
    if (size != 1)
      strides[mapping[d]] = inStrides[d];
  }
  copyStrided(kernel, result, resultShape, input, strides, 0);
}

template <typename T>
void transposeImpl(T *result, const Shape &resultShape, const T *input,
                   const Shape &inputShape, const Shape &permutation) {
  const char *kernel = "transpose";
  checkValid(kernel, "the input", inputShape);
  int64_t rank = inputShape.rank;
  LOOM_CUDA_CHECK(permutation.rank == rank, kernel,
                  "permutation %s has no entry per dimension of the input "
                  "of shape %s",
                  formatShape(permutation, 0), formatShape(inputShape, 1));
  int64_t inStrides[kMaxRank], strides[kMaxRank];
  getRowMajorStrides(inputShape, inStrides);
  Shape expected;
  expected.rank = rank;
  bool seen[kMaxRank] = {};
  for (int64_t d = 0; d < rank; ++d) {
    int64_t p = permutation[d];
    LOOM_CUDA_CHECK(p >= 0 && p < rank && !seen[p], kernel,
                    "permutation %s is not a permutation of [0, %lld)",
                    formatShape(permutation), static_cast<long long>(rank));
    seen[p] = true;
    expected.dims[d] = inputShape[p];
    strides[d] = inStrides[p];
  }
  checkShape(kernel, "the result", resultShape, expected);
  copyStrided(kernel, result, resultShape, input, strides, 0);
}

/// Checks a slice of `sizes` out of `full` with `offsets` and `steps`;
/// computes its element strides and base offset into `full`.
void sliceGeometry(const char *kernel, const Shape &full, const Shape &sizes,
                   const Shape &offsets, const Shape &steps, int64_t *strides,
                   int64_t &base) {
  int64_t rank = full.rank;
  LOOM_CUDA_CHECK(
      offsets.rank == rank && steps.rank == rank && sizes.rank == rank, kernel,
      "needs one offset, size and stride per dimension of shape "
      "%s",
      formatShape(full));
  int64_t fullStrides[kMaxRank];
  getRowMajorStrides(full, fullStrides);
  base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = sizes[d], dimSize = full[d];
    LOOM_CUDA_CHECK(
        offsets[d] >= 0 && steps[d] > 0 && size >= 0 &&
            (size == 0 ||
             (offsets[d] < dimSize &&
              (size - 1) <= (dimSize - 1 - offsets[d]) / steps[d])),
        kernel,
        "dimension %lld with offset %lld, size %lld and stride "
        "%lld does not fit in size %lld",
        static_cast<long long>(d), static_cast<long long>(offsets[d]),
        static_cast<long long>(size), static_cast<long long>(steps[d]),
        static_cast<long long>(dimSize));
    base += offsets[d] * fullStrides[d];
    strides[d] = fullStrides[d] * steps[d];
  }
}

template <typename T>
void sliceImpl(T *result, const Shape &resultShape, const T *input,
               const Shape &inputShape, const Shape &offsets,
               const Shape &sizes, const Shape &steps) {
  const char *kernel = "slice";
  checkValid(kernel, "the input", inputShape);
  checkShape(kernel, "the result", resultShape, sizes);
  int64_t strides[kMaxRank], base = 0;
  sliceGeometry(kernel, inputShape, sizes, offsets, steps, strides, base);
  copyStrided(kernel, result, resultShape, input, strides, base);
}

template <typename T>
void concatImpl(T *result, const Shape &resultShape, int64_t count,
                const T *const *inputs, const Shape *shapes, int64_t dim) {
  const char *kernel = "concat";
  checkValid(kernel, "the result", resultShape);
  LOOM_CUDA_CHECK(count >= 1, kernel, "needs at least one input");
  int64_t rank = resultShape.rank;
  LOOM_CUDA_CHECK(dim >= 0 && dim < rank, kernel,
                  "dim %lld is not in [0, %lld)", static_cast<long long>(dim),
                  static_cast<long long>(rank));
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const Shape &shape = shapes[i];
    bool fits = shape.rank == rank;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == dim || shape[d] == resultShape[d];
    LOOM_CUDA_CHECK(fits, kernel,
                    "input #%lld of shape %s does not fit the result of shape "
                    "%s outside dimension %lld",
                    static_cast<long long>(i), formatShape(shape, 0),
                    formatShape(resultShape, 1), static_cast<long long>(dim));
    total += shape[dim];
  }
  LOOM_CUDA_CHECK(total == resultShape[dim], kernel,
                  "the inputs have %lld elements along dimension %lld, the "
                  "result of shape %s",
                  static_cast<long long>(total), static_cast<long long>(dim),
                  formatShape(resultShape));
  AxisSplit outSplit = splitAt(resultShape, dim);
  int64_t outRow = outSplit.size * outSplit.inner;
  int64_t start = 0;
  for (int64_t i = 0; i < count; ++i) {
    AxisSplit split = splitAt(shapes[i], dim);
    int64_t row = split.size * split.inner, n = split.outer * row;
    if (n > 0) {
      concatKernel<<<gridFor(n), kThreads, 0, stream()>>>(
          result, inputs[i], split.outer, row, outRow, start * split.inner);
      checkLaunch(kernel);
    }
    start += split.size;
  }
}

template <typename T>
void gatherImpl(T *result, const Shape &resultShape, const T *input,
                const Shape &inputShape, IndexPtr indices,
                const Shape &indicesShape, int64_t dim) {
  const char *kernel = "gather";
  checkValid(kernel, "the input", inputShape);
  checkValid(kernel, "the indices", indicesShape);
  checkShape(kernel, "the result", resultShape, indicesShape);
  int64_t rank = inputShape.rank;
  LOOM_CUDA_CHECK(indicesShape.rank == rank && dim >= 0 && dim < rank, kernel,
                  "indices of shape %s and dim %lld do not fit the input of "
                  "shape %s",
                  formatShape(indicesShape, 0), static_cast<long long>(dim),
                  formatShape(inputShape, 1));
  for (int64_t d = 0; d < rank; ++d)
    LOOM_CUDA_CHECK(d == dim || indicesShape[d] == inputShape[d], kernel,
                    "indices of shape %s differ from the input of shape %s "
                    "in dimension %lld",
                    formatShape(indicesShape, 0), formatShape(inputShape, 1),
                    static_cast<long long>(d));
  Space<1> space(indicesShape);
  getRowMajorStrides(inputShape, space.strides[0]);
  int64_t dimStride = space.strides[0][dim], dimSize = inputShape[dim];
  space.strides[0][dim] = 0;
  space.coalesce();
  int64_t n = indicesShape.numElements();
  if (n == 0)
    return;
  gatherKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      result, input, DeviceIndex(indices), space, dimStride, dimSize, n);
  checkLaunch(kernel);
}

template <typename T>
void iotaImpl(T *result, const Shape &resultShape, const int64_t *offset,
              int64_t dim) {
  const char *kernel = "iota";
  checkValid(kernel, "the result", resultShape);
  LOOM_CUDA_CHECK(dim >= 0 && dim < resultShape.rank, kernel,
                  "dim %lld is not in [0, %lld)", static_cast<long long>(dim),
                  static_cast<long long>(resultShape.rank));
  AxisSplit split = splitAt(resultShape, dim);
  int64_t n = resultShape.numElements();
  if (n == 0)
    return;
  iotaKernel<<<gridFor(n), kThreads, 0, stream()>>>(result, offset, split.size,
                                                    split.inner, n);
  checkLaunch(kernel);
}

template <typename T>
void sliceGradImpl(T *result, const Shape &resultShape, const T *grad,
                   const Shape &gradShape, const Shape &offsets,
                   const Shape &steps) {
  const char *kernel = "slice_grad";
  checkValid(kernel, "the result", resultShape);
  checkValid(kernel, "grad", gradShape);
  LOOM_CUDA_CHECK(gradShape.rank == resultShape.rank, kernel,
                  "grad of shape %s does not have the rank of the result of "
                  "shape %s",
                  formatShape(gradShape, 0), formatShape(resultShape, 1));
  int64_t strides[kMaxRank], base = 0;
  sliceGeometry(kernel, resultShape, gradShape, offsets, steps, strides, base);
  zero(kernel, result, resultShape.numElements());
  int64_t n = gradShape.numElements();
  if (n == 0)
    return;
  // Distinct grad elements land on distinct result elements (the steps are
  // positive).
  Space<1> space(gradShape);
  for (int d = 0; d < space.rank; ++d)
    space.strides[0][d] = strides[d];
  space.bases[0] = base;
  space.coalesce();
  scatterStridedKernel<<<gridFor(n), kThreads, 0, stream()>>>(result, grad,
                                                              space, n);
  checkLaunch(kernel);
}

template <typename T>
void embeddingImpl(T *result, const Shape &resultShape, const T *table,
                   const Shape &tableShape, IndexPtr ids, const Shape &idsShape,
                   const int64_t *offset) {
  const char *kernel = "embedding";
  checkValid(kernel, "the table", tableShape);
  checkValid(kernel, "the ids", idsShape);
  LOOM_CUDA_CHECK(tableShape.rank >= 2 &&
                      idsShape.rank + tableShape.rank - 1 <= kMaxRank,
                  kernel,
                  "needs a table of rank 2 or more, got %s, and ids whose "
                  "rank with the table's is at most %d, got %s",
                  formatShape(tableShape, 0), kMaxRank + 1,
                  formatShape(idsShape, 1));
  // A row is everything after the first dimension, copied as a whole.
  int64_t vocab = tableShape[0], width = 1;
  Shape expected = idsShape;
  for (int i = 1; i < tableShape.rank; ++i) {
    width *= tableShape[i];
    expected.dims[expected.rank++] = tableShape[i];
  }
  checkShape(kernel, "the result", resultShape, expected);
  int64_t n = resultShape.numElements();
  if (n == 0)
    return;
  embeddingKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      result, table, vocab, width, DeviceIndex(ids), offset, n);
  checkLaunch(kernel);
}

template <typename T>
void gatherGradImpl(T *result, const Shape &resultShape, const T *grad,
                    const Shape &gradShape, IndexPtr indices,
                    const Shape &indicesShape, const int64_t *offset,
                    int64_t dim) {
  const char *kernel = "gather_grad";
  checkValid(kernel, "the result", resultShape);
  checkValid(kernel, "grad", gradShape);
  checkShape(kernel, "indices", indicesShape, gradShape);
  int64_t rank = gradShape.rank;
  LOOM_CUDA_CHECK(resultShape.rank == rank && dim >= 0 && dim < rank, kernel,
                  "the result of shape %s and dim %lld do not fit grad of "
                  "shape %s",
                  formatShape(resultShape, 0), static_cast<long long>(dim),
                  formatShape(gradShape, 1));
  for (int64_t d = 0; d < rank; ++d)
    LOOM_CUDA_CHECK(d == dim || resultShape[d] == gradShape[d], kernel,
                    "grad of shape %s differs from the result of shape %s in "
                    "dimension %lld",
                    formatShape(gradShape, 0), formatShape(resultShape, 1),
                    static_cast<long long>(d));
  zero(kernel, result, resultShape.numElements());
  // The columns: grad's shape with `dim` collapsed to one element.
  Shape columnShape = gradShape;
  columnShape.dims[dim] = 1;
  int64_t n = columnShape.numElements(), count = gradShape[dim];
  if (n == 0 || count == 0)
    return;
  Space<2> columns(columnShape);
  getRowMajorStrides(gradShape, columns.strides[0]);
  getRowMajorStrides(resultShape, columns.strides[1]);
  int64_t gradStride = columns.strides[0][dim];
  int64_t resultStride = columns.strides[1][dim];
  columns.coalesce();
  gatherGradKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      result, grad, DeviceIndex(indices), offset, columns, count, gradStride,
      resultStride, resultShape[dim], n);
  checkLaunch(kernel);
}

} // namespace

#define DEFINE_DATA_MOVEMENT(T)                                                \
  void loom::cuda::reshape(T *result, Shape resultShape, const T *input,       \
                           Shape inputShape) {                                 \
    reshapeImpl(result, resultShape, input, inputShape);                       \
  }                                                                            \
  void loom::cuda::broadcast(T *result, Shape resultShape, const T *input,     \
                             Shape inputShape, Shape broadcastDims) {          \
    broadcastImpl(result, resultShape, input, inputShape, broadcastDims);      \
  }                                                                            \
  void loom::cuda::transpose(T *result, Shape resultShape, const T *input,     \
                             Shape inputShape, Shape permutation) {            \
    transposeImpl(result, resultShape, input, inputShape, permutation);        \
  }                                                                            \
  void loom::cuda::slice(T *result, Shape resultShape, const T *input,         \
                         Shape inputShape, Shape offsets, Shape sizes,         \
                         Shape strides) {                                      \
    sliceImpl(result, resultShape, input, inputShape, offsets, sizes,          \
              strides);                                                        \
  }                                                                            \
  void loom::cuda::concat(                                                     \
      T *result, Shape resultShape, std::initializer_list<const T *> inputs,   \
      std::initializer_list<Shape> inputShapes, int64_t dim) {                 \
    LOOM_CUDA_CHECK(inputs.size() == inputShapes.size(), "concat",             \
                    "%zu inputs but %zu shapes", inputs.size(),                \
                    inputShapes.size());                                       \
    concatImpl(result, resultShape, static_cast<int64_t>(inputs.size()),       \
               inputs.begin(), inputShapes.begin(), dim);                      \
  }                                                                            \
  void loom::cuda::concat(T *result, Shape resultShape, int64_t count,         \
                          const T *const *inputs, const Shape *inputShapes,    \
                          int64_t dim) {                                       \
    concatImpl(result, resultShape, count, inputs, inputShapes, dim);          \
  }                                                                            \
  void loom::cuda::gather(T *result, Shape resultShape, const T *input,        \
                          Shape inputShape, IndexPtr indices,                  \
                          Shape indicesShape, int64_t dim) {                   \
    gatherImpl(result, resultShape, input, inputShape, indices, indicesShape,  \
               dim);                                                           \
  }
DEFINE_DATA_MOVEMENT(float)
DEFINE_DATA_MOVEMENT(double)
DEFINE_DATA_MOVEMENT(int32_t)
DEFINE_DATA_MOVEMENT(int64_t)
DEFINE_DATA_MOVEMENT(bool)
#undef DEFINE_DATA_MOVEMENT

#define DEFINE_IOTA(T)                                                         \
  void loom::cuda::iota(T *result, Shape resultShape, const int64_t *offset,   \
                        Shape offsetShape, int64_t dim) {                      \
    iotaImpl(result, resultShape, offset, dim);                                \
  }
DEFINE_IOTA(float)
DEFINE_IOTA(double)
DEFINE_IOTA(int32_t)
DEFINE_IOTA(int64_t)
#undef DEFINE_IOTA

#define DEFINE_FLOAT_MOVEMENT(T)                                               \
  void loom::cuda::slice_grad(T *result, Shape resultShape, const T *grad,     \
                              Shape gradShape, Shape offsets, Shape strides) { \
    sliceGradImpl(result, resultShape, grad, gradShape, offsets, strides);     \
  }                                                                            \
  void loom::cuda::embedding(T *result, Shape resultShape, const T *table,     \
                             Shape tableShape, IndexPtr ids, Shape idsShape,   \
                             const int64_t *offset, Shape offsetShape) {       \
    embeddingImpl(result, resultShape, table, tableShape, ids, idsShape,       \
                  offset);                                                     \
  }                                                                            \
  void loom::cuda::gather_grad(T *result, Shape resultShape, const T *grad,    \
                               Shape gradShape, IndexPtr indices,              \
                               Shape indicesShape, const int64_t *offset,      \
                               Shape offsetShape, int64_t dim) {               \
    gatherGradImpl(result, resultShape, grad, gradShape, indices,              \
                   indicesShape, offset, dim);                                 \
  }
DEFINE_FLOAT_MOVEMENT(float)
DEFINE_FLOAT_MOVEMENT(double)
#undef DEFINE_FLOAT_MOVEMENT
