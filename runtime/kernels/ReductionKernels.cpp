//===- ReductionKernels.cpp - nn.reduce on the host -----------------------===//
//
// As the interpreter: every result element accumulates its inputs in
// row-major order of the input, in the element type, starting from 0 (sum,
// mean) or -inf (max); mean divides by the count afterwards. The walk goes
// over rows of the coalesced input space: a reduced inner dimension is a
// sequential scalar sum, a kept one a vector update of a result row, and
// either way each result element sees its inputs in the same order.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

#include <limits>

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

template <typename T>
void reduceImpl(T *result, const Shape &resultShape, const T *input,
                const Shape &inputShape, const Shape &dims, bool keepDims,
                const char *kindKeyword) {
  const char *kernel = "reduce";
  ReduceKind kind = parseReduceKind(kernel, kindKeyword);
  checkValid(kernel, "the input", inputShape);
  checkValid(kernel, "the result", resultShape);
  int64_t rank = inputShape.rank;
  bool reduced[kMaxRank] = {};
  LOOM_HOST_CHECK(dims.rank >= 0, kernel, "needs dims");
  for (int64_t i = 0; i < dims.rank; ++i) {
    int64_t dim = dims[i];
    LOOM_HOST_CHECK(dim >= 0 && dim < rank, kernel,
                    "reduced dimension %lld is not in [0, %lld)",
                    static_cast<long long>(dim), static_cast<long long>(rank));
    reduced[dim] = true;
  }
  Shape kept, expected;
  kept.rank = rank;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    kept.dims[d] = reduced[d] ? 1 : inputShape[d];
    if (reduced[d])
      count *= inputShape[d];
    else
      expected.dims[expected.rank++] = inputShape[d];
  }
  checkShape(kernel, "the result", resultShape, keepDims ? kept : expected);

  int64_t total = resultShape.numElements();
  const T initial =
      kind == ReduceKind::Max ? -std::numeric_limits<T>::infinity() : T(0);
  for (int64_t i = 0; i < total; ++i)
    result[i] = initial;

  // Operand 0: the input (row-major); operand 1: its result element.
  StridedSpace<2> space(inputShape);
  getRowMajorStrides(inputShape, space.strides[0]);
  getRowMajorStrides(kept, space.strides[1]);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      space.strides[1][d] = 0;
  space.coalesce();
  int64_t n = space.inner();
  bool innerReduced = space.innerStride(1) == 0;
  if (kind == ReduceKind::Max) {
    space.forEachRow([&](int64_t, const int64_t *offsets) {
      const T *x = input + offsets[0];
      T *acc = result + offsets[1];
      if (innerReduced) {
        T slot = *acc;
        for (int64_t j = 0; j < n; ++j)
          slot = math::reduceMax(slot, x[j]);
        *acc = slot;
      } else {
        for (int64_t j = 0; j < n; ++j)
          acc[j] = math::reduceMax(acc[j], x[j]);
      }
    });
    return;
  }
  space.forEachRow([&](int64_t, const int64_t *offsets) {
    const T *x = input + offsets[0];
    T *acc = result + offsets[1];
    if (innerReduced) {
      T sum = *acc;
      for (int64_t j = 0; j < n; ++j)
        sum += x[j];
      *acc = sum;
    } else {
      for (int64_t j = 0; j < n; ++j)
        acc[j] += x[j];
    }
  });
  if (kind == ReduceKind::Mean) {
    const T divisor = static_cast<T>(count);
    for (int64_t i = 0; i < total; ++i)
      result[i] /= divisor;
  }
}

} // namespace

void loom::host::reduce(float *result, Shape resultShape, const float *input,
                        Shape inputShape, Shape dims, bool keepDims,
                        const char *kind) {
  reduceImpl(result, resultShape, input, inputShape, dims, keepDims, kind);
}
void loom::host::reduce(double *result, Shape resultShape, const double *input,
                        Shape inputShape, Shape dims, bool keepDims,
                        const char *kind) {
  reduceImpl(result, resultShape, input, inputShape, dims, keepDims, kind);
}
