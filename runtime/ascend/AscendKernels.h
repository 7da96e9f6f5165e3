//===- AscendKernels.h - Ascend kernels generated code calls ----*- C++ -*-===//
//
// The Ascend counterparts of the host kernels (runtime/kernels/HostKernels.h)
// that the Ascend target supports: `loom::ascend::<op>` with exactly the
// parameters of `loom::host::<op>` and the same conventions, on DEVICE
// pointers (the arena is device memory). Each is one aclnn operator,
// called in two phases (aclnn<Op>GetWorkspaceSize, then aclnn<Op> on the
// rank's stream with a workspace from aclrtMalloc that is freed only after
// the stream has been synchronised):
//
//   matmul                     aclnnMatmul (transposes as strided views)
//   add sub mul div maximum minimum, exp neg log sqrt rsqrt tanh relu silu
//   sin cos                    the aclnn operator of the same name
//   reduce                     aclnnReduceSum / aclnnMean / aclnnAmax
//   copy reshape broadcast transpose slice
//                              aclnnInplaceCopy from a strided view
//   fill                       aclnnInplaceFillScalar
//   concat                     aclnnCat
//   softmax log_softmax        aclnnSoftmax, aclnnLogSoftmax
//   gelu                       aclnnGeluV2
//   layer_norm                 aclnnLayerNorm
//   gather                     aclnnGather
//   embedding                  aclnnEmbedding (Loom's with an offset)
//   compare                    aclnnEqTensor, aclnnNeTensor, ... (by predicate)
//   cast, clamp, select        aclnnCast, aclnnClamp, aclnnSWhere
//   slice_grad                 aclnnInplaceFillScalar (0), then
//                              aclnnInplaceCopy into a strided view
//   the MoE ops                aclnnTopk, aclnnIndexAdd,
//                              aclnnGroupedMatmulV4 and others, several
//                              operators each; routing and placement on
//                              the host from copies (MoeKernels.cpp)
//   the others                 Loom's own operator (LoomOps.h), the one
//                              the op's kernel contract names
//                              (`ascendLoomOperator`); the generated
//                              AscendKernels.cpp.inc calls it
//
// The declarations are generated from the ops' kernel contracts (see
// below); an op's Ascend element types are its `ascendKernelTypes` (no f64:
// Ascend hardware has none). --loom-emit-ascend reports an op or element
// type without an Ascend kernel at the op.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_ASCENDKERNELS_H
#define LOOM_RUNTIME_ASCEND_ASCENDKERNELS_H

#include "runtime/ascend/AscendApi.h"
#include "runtime/kernels/HostKernels.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace loom::ascend {

using loom::host::IndexPtr;
using loom::host::kAbsent;
using loom::host::kAbsentShape;
using loom::host::Shape;

namespace detail {

template <typename T> constexpr aclDataType dtypeOf();
template <> constexpr aclDataType dtypeOf<float>() { return ACL_FLOAT; }
template <> constexpr aclDataType dtypeOf<double>() { return ACL_DOUBLE; }
template <> constexpr aclDataType dtypeOf<int32_t>() { return ACL_INT32; }
template <> constexpr aclDataType dtypeOf<int64_t>() { return ACL_INT64; }
template <> constexpr aclDataType dtypeOf<bool>() { return ACL_BOOL; }

/// A tensor argument: device pointer (null: absent), shape, element type.
struct Arg {
  const void *data = nullptr;
  Shape shape;
  aclDataType type = ACL_DT_UNDEFINED;
};
template <typename T> Arg arg(const T *data, Shape shape) {
  return {data, shape, dtypeOf<T>()};
}
inline Arg indexArg(IndexPtr ids, Shape shape) {
  return {ids.data, shape, ids.is64 ? ACL_INT64 : ACL_INT32};
}

/// A list of tensor arguments (a variadic operand).
template <typename T>
std::vector<Arg> args(std::initializer_list<const T *> data,
                      std::initializer_list<Shape> shapes) {
  std::vector<Arg> list;
  const Shape *shape = shapes.begin();
  for (const T *pointer : data)
    list.push_back(arg(pointer, *shape++));
  return list;
}

void copy(Arg out, Arg in);

} // namespace detail

// The kernels of the nn ops, generated from their kernel contracts
// (dialects/nn/IR/NNDialect.td, docs/op-contract.md): the detail:: layer,
// one function per op on `Arg`s (defined in Kernels.cpp; those of Loom's
// own operators in the generated AscendKernels.cpp.inc), and the
// overloads generated code calls, one per element type of the op's
// `ascendKernelTypes`, that pass each tensor as an `Arg`.
#include "runtime/ascend/AscendKernels.h.inc"

template <typename T>
void copy(T *out, Shape outShape, const T *in, Shape) {
  detail::copy(detail::arg(out, outShape), detail::arg(in, outShape));
}
/// nn.concat with `count` inputs as arrays.
template <typename T>
void concat(T *result, Shape resultShape, int64_t count, const T *const *inputs,
            const Shape *inputShapes, int64_t dim) {
  std::vector<detail::Arg> args(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    args[static_cast<size_t>(i)] = detail::arg(inputs[i], inputShapes[i]);
  detail::concat(detail::arg(result, resultShape), args, dim);
}

} // namespace loom::ascend

#endif // LOOM_RUNTIME_ASCEND_ASCENDKERNELS_H
