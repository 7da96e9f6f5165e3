//===- NNShapeInference.cpp - Shape checks and result types of nn ops -----===//
//
// `inferShape` of every op whose result type follows from its operands and
// attributes (the ops built on NN_InferredOp), and the shape helpers that
// the other verifiers share. Each `inferShape` must cope with operands of
// any type: while parsing, it runs before the op verifier has checked the
// operand types.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/NNShapeUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace loom::nn;
using namespace loom::nn::shapes;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string shapes::formatSize(int64_t size) {
  return ShapedType::isDynamic(size) ? std::string("?") : std::to_string(size);
}

std::string shapes::formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(shape, os,
                        [&](int64_t size) { os << formatSize(size); });
  os << ']';
  return text;
}

std::string shapes::formatList(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return text;
}

std::string shapes::formatDouble(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%g", value);
  return text;
}

RankedTensorType shapes::getRankedTensor(Type type, StringRef name,
                                         const ShapeDiag &diag) {
  auto ranked = dyn_cast_or_null<RankedTensorType>(type);
  if (!ranked && type)
    (void)diag(name, " must be a ranked tensor, got ", type);
  return ranked;
}

LogicalResult shapes::checkSameElementType(RankedTensorType ref,
                                           StringRef refName,
                                           RankedTensorType other,
                                           StringRef otherName,
                                           const ShapeDiag &diag) {
  if (ref.getElementType() == other.getElementType())
    return success();
  return diag(otherName, " element type ", other.getElementType(),
              " does not match ", refName, " element type ",
              ref.getElementType());
}

LogicalResult shapes::checkShapeMatches(ArrayRef<int64_t> shape, StringRef name,
                                        ArrayRef<int64_t> expected,
                                        StringRef expectedName,
                                        const ShapeDiag &diag) {
  if (shape.size() == expected.size() &&
      llvm::all_of(llvm::zip_equal(shape, expected), [](auto pair) {
        return compatibleSizes(std::get<0>(pair), std::get<1>(pair));
      }))
    return success();
  return diag(name, " has shape ", formatShape(shape), " but ", expectedName,
              " is ", formatShape(expected));
}

LogicalResult shapes::checkDimInRange(int64_t dim, int64_t rank,
                                      StringRef attrName,
                                      const ShapeDiag &diag) {
  if (dim >= 0 && dim < rank)
    return success();
  return diag(attrName, " ", dim, " is out of range [0, ", rank,
              ") for an operand of rank ", rank);
}

LogicalResult shapes::checkRange(double value, StringRef name, double lower,
                                 bool lowerOpen, std::optional<double> upper,
                                 bool upperClosed, const ShapeDiag &diag) {
  bool inRange = lowerOpen ? value > lower : value >= lower;
  if (upper)
    inRange = inRange && (upperClosed ? value <= *upper : value < *upper);
  if (inRange)
    return success();
  if (!upper)
    return diag(name, " must be ",
                lowerOpen ? "> " : ">= ", formatDouble(lower), ", got ",
                formatDouble(value));
  return diag(name, " must be in ", lowerOpen ? "(" : "[", formatDouble(lower),
              ", ", formatDouble(*upper), upperClosed ? "]" : ")", ", got ",
              formatDouble(value));
}

LogicalResult shapes::broadcastShapes(ArrayRef<NamedShape> shapes,
                                      SmallVectorImpl<int64_t> &result,
                                      const ShapeDiag &diag) {
  size_t rank = 0;
  for (const NamedShape &shape : shapes)
    rank = std::max(rank, shape.shape.size());
  result.assign(rank, 1);
  // For each result dimension, the operand and dimension that set its size
  // (to something other than 1), to name both sides of a conflict.
  SmallVector<std::pair<size_t, size_t>> origin(rank, {0, 0});
  for (auto [index, shape] : llvm::enumerate(shapes)) {
    size_t lead = rank - shape.shape.size();
    for (auto [dim, size] : llvm::enumerate(shape.shape)) {
      int64_t &out = result[lead + dim];
      if (size == 1 || (ShapedType::isDynamic(size) && out != 1))
        continue;
      if (out == 1 || ShapedType::isDynamic(out)) {
        out = size;
        origin[lead + dim] = {index, dim};
        continue;
      }
      if (out == size)
        continue;
      auto [otherIndex, otherDim] = origin[lead + dim];
      return diag(shape.name, " dimension ", dim, " of size ", size,
                  " is not broadcast-compatible with dimension ", otherDim,
                  " of size ", out, " of ", shapes[otherIndex].name,
                  " (sizes must be equal or 1)");
    }
  }
  return success();
}

/// Appends the ranked tensor types of `values` to `types`; fails, after
/// reporting it as `operand #i`, on the first value that has another type.
static LogicalResult getRankedOperands(ArrayRef<Value> values,
                                       SmallVectorImpl<RankedTensorType> &types,
                                       const ShapeDiag &diag) {
  for (auto [index, value] : llvm::enumerate(values)) {
    std::string name = ("operand #" + Twine(index)).str();
    RankedTensorType type = getRankedTensor(value.getType(), name, diag);
    if (!type)
      return failure();
    types.push_back(type);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferShape(Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes,
                                   const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(
          getRankedOperands({adaptor.getLhs(), adaptor.getRhs()}, types, diag)))
    return failure();
  RankedTensorType lhs = types[0], rhs = types[1];
  for (auto [index, type] : llvm::enumerate(types))
    if (type.getRank() < 2)
      return diag("operand #", index,
                  " must have rank at least 2 (a matrix or a batch of "
                  "matrices), got rank ",
                  type.getRank());
  if (failed(checkSameElementType(lhs, "operand #0", rhs, "operand #1", diag)))
    return failure();

  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t lRank = lhs.getRank(), rRank = rhs.getRank();
  bool transposeLhs = static_cast<bool>(lookupAttr(
      adaptor.getTransposeLhsAttr(), adaptor.getAttributes(), "transpose_lhs"));
  bool transposeRhs = static_cast<bool>(lookupAttr(
      adaptor.getTransposeRhsAttr(), adaptor.getAttributes(), "transpose_rhs"));
  int64_t lhsM = transposeLhs ? lRank - 1 : lRank - 2;
  int64_t lhsK = transposeLhs ? lRank - 2 : lRank - 1;
  int64_t rhsK = transposeRhs ? rRank - 1 : rRank - 2;
  int64_t rhsN = transposeRhs ? rRank - 2 : rRank - 1;
  if (!compatibleSizes(l[lhsK], r[rhsK]))
    return diag("operand #1 dimension ", rhsK, " of size ", formatSize(r[rhsK]),
                " does not match dimension ", lhsK, " of size ",
                formatSize(l[lhsK]),
                " of operand #0 (the contracting dimensions)");

  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(
          {{"operand #0", l.drop_back(2)}, {"operand #1", r.drop_back(2)}},
          shape, diag)))
    return failure();
  shape.push_back(l[lhsM]);
  shape.push_back(r[rhsN]);
  resultTypes.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise ops with broadcasting
//===----------------------------------------------------------------------===//

/// Checks two operands of one element type with broadcast-compatible shapes;
/// the result has the broadcast shape and `resultElementType`, or the
/// operands' element type when it is null.
static LogicalResult inferBroadcastBinary(Value lhsValue, Value rhsValue,
                                          Type resultElementType,
                                          SmallVectorImpl<Type> &resultTypes,
                                          const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({lhsValue, rhsValue}, types, diag)) ||
      failed(checkSameElementType(types[0], "operand #0", types[1],
                                  "operand #1", diag)))
    return failure();
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes({{"operand #0", types[0].getShape()},
                              {"operand #1", types[1].getShape()}},
                             shape, diag)))
    return failure();
  if (!resultElementType)
    resultElementType = types[0].getElementType();
  resultTypes.push_back(RankedTensorType::get(shape, resultElementType));
  return success();
}

#define NN_BROADCAST_BINARY_INFER(OpClass)                                     \
  LogicalResult OpClass::inferShape(Adaptor adaptor,                           \
                                    SmallVectorImpl<Type> &resultTypes,        \
                                    const ShapeDiag &diag) {                   \
    return inferBroadcastBinary(adaptor.getLhs(), adaptor.getRhs(), Type(),    \
                                resultTypes, diag);                            \
  }

NN_BROADCAST_BINARY_INFER(AddOp)
NN_BROADCAST_BINARY_INFER(SubOp)
NN_BROADCAST_BINARY_INFER(MulOp)
NN_BROADCAST_BINARY_INFER(DivOp)
NN_BROADCAST_BINARY_INFER(MinimumOp)
NN_BROADCAST_BINARY_INFER(MaximumOp)

#undef NN_BROADCAST_BINARY_INFER

LogicalResult CompareOp::inferShape(Adaptor adaptor,
                                    SmallVectorImpl<Type> &resultTypes,
                                    const ShapeDiag &diag) {
  Type i1 = IntegerType::get(adaptor.getLhs().getContext(), 1);
  return inferBroadcastBinary(adaptor.getLhs(), adaptor.getRhs(), i1,
                              resultTypes, diag);
}

LogicalResult SelectOp::inferShape(Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes,
                                   const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getCondition(), adaptor.getTrueValue(),
                                adaptor.getFalseValue()},
                               types, diag)) ||
      failed(checkSameElementType(types[1], "operand #1", types[2],
                                  "operand #2", diag)))
    return failure();
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes({{"operand #0", types[0].getShape()},
                              {"operand #1", types[1].getShape()},
                              {"operand #2", types[2].getShape()}},
                             shape, diag)))
    return failure();
  resultTypes.push_back(
      RankedTensorType::get(shape, types[1].getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferShape(Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes,
                                   const ShapeDiag &diag) {
  RankedTensorType input =
      getRankedTensor(adaptor.getInput().getType(), "operand #0", diag);
  if (!input)
    return failure();
  DenseI64ArrayAttr dimsAttr =
      lookupAttr(adaptor.getDimsAttr(), adaptor.getAttributes(), "dims");
  if (!dimsAttr)
    return diag("requires a 'dims' attribute");
  ArrayRef<int64_t> dims = dimsAttr.asArrayRef();
  if (dims.empty())
    return diag("dims must name at least one dimension");
  int64_t rank = input.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t dim : dims) {
    if (dim < 0 || dim >= rank)
      return diag("dims entry ", dim, " is out of range [0, ", rank,
                  ") for an operand of rank ", rank);
    if (reduced[dim])
      return diag("dims ", formatList(dims), " name dimension ", dim,
                  " more than once");
    reduced[dim] = true;
  }
  bool keepDims = static_cast<bool>(lookupAttr(
      adaptor.getKeepDimsAttr(), adaptor.getAttributes(), "keep_dims"));
  SmallVector<int64_t> shape;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (!reduced[dim])
      shape.push_back(input.getDimSize(dim));
    else if (keepDims)
      shape.push_back(1);
  }
  resultTypes.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferShape(Adaptor adaptor,
                                      SmallVectorImpl<Type> &resultTypes,
                                      const ShapeDiag &diag) {
  RankedTensorType input =
      getRankedTensor(adaptor.getInput().getType(), "operand #0", diag);
  if (!input)
    return failure();
  DenseI64ArrayAttr permutationAttr = lookupAttr(
      adaptor.getPermutationAttr(), adaptor.getAttributes(), "permutation");
  if (!permutationAttr)
    return diag("requires a 'permutation' attribute");
  ArrayRef<int64_t> permutation = permutationAttr.asArrayRef();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return diag("permutation ", formatList(permutation), " has ",
                permutation.size(), " entries but the operand has rank ", rank);
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t dim : permutation) {
    if (dim < 0 || dim >= rank)
      return diag("permutation ", formatList(permutation),
                  " is not a permutation of [0, ", rank, "): entry ", dim,
                  " is out of range");
    if (seen[dim])
      return diag("permutation ", formatList(permutation),
                  " is not a permutation of [0, ", rank, "): dimension ", dim,
                  " appears more than once");
    seen[dim] = true;
    shape.push_back(input.getDimSize(dim));
  }
  resultTypes.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult SliceOp::inferShape(Adaptor adaptor,
                                  SmallVectorImpl<Type> &resultTypes,
                                  const ShapeDiag &diag) {
  RankedTensorType input =
      getRankedTensor(adaptor.getInput().getType(), "operand #0", diag);
  if (!input)
    return failure();
  DictionaryAttr attrs = adaptor.getAttributes();
  DenseI64ArrayAttr offsetsAttr =
      lookupAttr(adaptor.getOffsetsAttr(), attrs, "offsets");
  DenseI64ArrayAttr sizesAttr =
      lookupAttr(adaptor.getSizesAttr(), attrs, "sizes");
  DenseI64ArrayAttr stridesAttr =
      lookupAttr(adaptor.getStridesAttr(), attrs, "strides");
  if (!offsetsAttr || !sizesAttr || !stridesAttr)
    return diag("requires 'offsets', 'sizes' and 'strides' attributes");
  return inferSlice(input, offsetsAttr.asArrayRef(), sizesAttr.asArrayRef(),
                    stridesAttr.asArrayRef(), resultTypes, diag);
}

LogicalResult shapes::inferSlice(RankedTensorType input,
                                 ArrayRef<int64_t> offsets,
                                 ArrayRef<int64_t> sizes,
                                 ArrayRef<int64_t> strides,
                                 SmallVectorImpl<Type> &resultTypes,
                                 const ShapeDiag &diag) {
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(sizes.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return diag("expected ", rank,
                " offsets, sizes and strides (one per operand dimension), got ",
                offsets.size(), ", ", sizes.size(), " and ", strides.size());
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t offset = offsets[dim], size = sizes[dim], stride = strides[dim];
    if (offset < 0)
      return diag("offset ", offset, " of dimension ", dim, " is negative");
    if (size < 0)
      return diag("size ", size, " of dimension ", dim, " is negative");
    if (stride < 1)
      return diag("stride ", stride, " of dimension ", dim,
                  " must be positive");
    int64_t dimSize = input.getDimSize(dim);
    if (ShapedType::isDynamic(dimSize))
      continue;
    if (size == 0) {
      if (offset > dimSize)
        return diag("offset ", offset, " of dimension ", dim,
                    " is past the end of the dimension of size ", dimSize);
      continue;
    }
    // The last index read is offset + (size - 1) * stride; compare without
    // overflowing.
    if (offset < dimSize && (size - 1) <= (dimSize - 1 - offset) / stride)
      continue;
    std::optional<int64_t> last = llvm::checkedMulAdd(size - 1, stride, offset);
    return diag("slice of dimension ", dim, " (offset ", offset, ", size ",
                size, ", stride ", stride, ") reads index ",
                last ? std::to_string(*last) : std::string("beyond 2^63"),
                " but the dimension has size ", dimSize);
  }
  resultTypes.push_back(RankedTensorType::get(sizes, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferShape(Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes,
                                   const ShapeDiag &diag) {
  SmallVector<Value> inputs(adaptor.getInputs().begin(),
                            adaptor.getInputs().end());
  if (inputs.empty())
    return diag("requires at least one input");
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands(inputs, types, diag)))
    return failure();
  IntegerAttr dimAttr =
      lookupAttr(adaptor.getDimAttr(), adaptor.getAttributes(), "dim");
  if (!dimAttr)
    return diag("requires a 'dim' attribute");
  int64_t dim = dimAttr.getInt();
  int64_t rank = types[0].getRank();
  if (failed(checkDimInRange(dim, rank, "dim", diag)))
    return failure();

  SmallVector<int64_t> shape(types[0].getShape());
  // The operand that set each (static) size, to name it in a mismatch.
  SmallVector<size_t> origin(rank, 0);
  for (auto [index, type] : llvm::enumerate(types)) {
    if (index == 0)
      continue;
    if (type.getRank() != rank)
      return diag("operand #", index, " has rank ", type.getRank(),
                  " but operand #0 has rank ", rank);
    if (failed(checkSameElementType(types[0], "operand #0", type,
                                    ("operand #" + Twine(index)).str(), diag)))
      return failure();
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(d);
      if (d == dim) {
        if (ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(size)) {
          shape[d] = ShapedType::kDynamic;
          continue;
        }
        std::optional<int64_t> sum = llvm::checkedAdd(shape[d], size);
        if (!sum)
          return diag("concatenated dimension ", dim,
                      " has more than 2^63 - 1 elements");
        shape[d] = *sum;
        continue;
      }
      if (!compatibleSizes(shape[d], size))
        return diag("operand #", index, " dimension ", d, " of size ", size,
                    " does not match dimension ", d, " of size ", shape[d],
                    " of operand #", origin[d],
                    " (only the concatenated dimension ", dim, " may differ)");
      if (ShapedType::isDynamic(shape[d])) {
        shape[d] = size;
        origin[d] = index;
      }
    }
  }
  resultTypes.push_back(
      RankedTensorType::get(shape, types[0].getElementType()));
  return success();
}

LogicalResult GatherOp::inferShape(Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes,
                                   const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getInput(), adaptor.getIndices()},
                               types, diag)))
    return failure();
  IntegerAttr dimAttr =
      lookupAttr(adaptor.getDimAttr(), adaptor.getAttributes(), "dim");
  if (!dimAttr)
    return diag("requires a 'dim' attribute");
  return inferGather(types[0], types[1], dimAttr.getInt(), resultTypes, diag);
}

LogicalResult shapes::inferGather(RankedTensorType input,
                                  RankedTensorType indices, int64_t dim,
                                  SmallVectorImpl<Type> &resultTypes,
                                  const ShapeDiag &diag) {
  int64_t rank = input.getRank();
  if (indices.getRank() != rank)
    return diag("operand #1 (indices) has rank ", indices.getRank(),
                " but operand #0 has rank ", rank, "; they must be equal");
  if (failed(checkDimInRange(dim, rank, "dim", diag)))
    return failure();
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim || compatibleSizes(input.getDimSize(d), indices.getDimSize(d)))
      continue;
    return diag("operand #1 dimension ", d, " of size ",
                formatSize(indices.getDimSize(d)), " does not match dimension ",
                d, " of size ", formatSize(input.getDimSize(d)),
                " of operand #0 (only the gather dimension ", dim,
                " may differ)");
  }
  resultTypes.push_back(
      RankedTensorType::get(indices.getShape(), input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult
shapes::inferNorm(Value inputValue,
                  ArrayRef<std::pair<Value, StringRef>> scaleAndBias,
                  IntegerAttr normalizedDimsAttr, FloatAttr epsilonAttr,
                  SmallVectorImpl<Type> &resultTypes, const ShapeDiag &diag) {
  RankedTensorType input =
      getRankedTensor(inputValue.getType(), "operand #0", diag);
  if (!input)
    return failure();
  int64_t rank = input.getRank();
  // An absent attribute (while parsing) has its default value, 1.
  int64_t normalizedDims = normalizedDimsAttr ? normalizedDimsAttr.getInt() : 1;
  if (normalizedDims < 1 || normalizedDims > rank)
    return diag("normalized_dims ", normalizedDims, " is out of range [1, ",
                rank, "] for an input of rank ", rank);
  ArrayRef<int64_t> trailing = input.getShape().take_back(normalizedDims);
  for (auto [value, name] : scaleAndBias) {
    if (!value)
      continue;
    RankedTensorType type = getRankedTensor(value.getType(), name, diag);
    if (!type ||
        failed(checkSameElementType(input, "input", type, name, diag)) ||
        failed(checkShapeMatches(
            type.getShape(), name, trailing,
            "the normalized trailing dimensions of the input", diag)))
      return failure();
  }
  if (epsilonAttr &&
      failed(checkRange(epsilonAttr.getValueAsDouble(), "epsilon", 0.0,
                        /*lowerOpen=*/true, std::nullopt, false, diag)))
    return failure();
  resultTypes.push_back(input);
  return success();
}

LogicalResult LayerNormOp::inferShape(Adaptor adaptor,
                                      SmallVectorImpl<Type> &resultTypes,
                                      const ShapeDiag &diag) {
  return inferNorm(
      adaptor.getInput(),
      {{adaptor.getScale(), "scale"}, {adaptor.getBias(), "bias"}},
      lookupAttr(adaptor.getNormalizedDimsAttr(), adaptor.getAttributes(),
                 "normalized_dims"),
      lookupAttr(adaptor.getEpsilonAttr(), adaptor.getAttributes(), "epsilon"),
      resultTypes, diag);
}

LogicalResult RmsNormOp::inferShape(Adaptor adaptor,
                                    SmallVectorImpl<Type> &resultTypes,
                                    const ShapeDiag &diag) {
  return inferNorm(
      adaptor.getInput(), {{adaptor.getScale(), "scale"}},
      lookupAttr(adaptor.getNormalizedDimsAttr(), adaptor.getAttributes(),
                 "normalized_dims"),
      lookupAttr(adaptor.getEpsilonAttr(), adaptor.getAttributes(), "epsilon"),
      resultTypes, diag);
}

//===----------------------------------------------------------------------===//
// Transformer building blocks
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferShape(Adaptor adaptor,
                                      SmallVectorImpl<Type> &resultTypes,
                                      const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getTable(), adaptor.getIds()}, types,
                               diag)))
    return failure();
  RankedTensorType table = types[0], ids = types[1];
  if (table.getRank() < 2)
    return diag("operand #0 (table) must have rank 2 or more ([vocab, "
                "row...]), got rank ",
                table.getRank());
  SmallVector<int64_t> shape(ids.getShape());
  llvm::append_range(shape, table.getShape().drop_front());
  resultTypes.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

LogicalResult AttentionOp::inferShape(Adaptor adaptor,
                                      SmallVectorImpl<Type> &resultTypes,
                                      const ShapeDiag &diag) {
  DictionaryAttr attrs = adaptor.getAttributes();
  return inferAttention(
      adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
      adaptor.getSubtreeEnd(), adaptor.getPositions(),
      lookupAttr(adaptor.getMaskAttr(), attrs, "mask"),
      lookupAttr(adaptor.getScaleAttr(), attrs, "scale"), resultTypes, diag);
}

LogicalResult shapes::inferAttention(Value queryValue, Value keyValue,
                                     Value valueValue, Value subtreeEnd,
                                     Value positions, MaskKindAttr maskAttr,
                                     FloatAttr scale,
                                     SmallVectorImpl<Type> &resultTypes,
                                     const ShapeDiag &diag) {
  RankedTensorType query =
      getRankedTensor(queryValue.getType(), "query", diag);
  if (!query)
    return failure();
  RankedTensorType key = getRankedTensor(keyValue.getType(), "key", diag);
  if (!key)
    return failure();
  RankedTensorType value =
      getRankedTensor(valueValue.getType(), "value", diag);
  if (!value)
    return failure();
  for (auto [type, name] : {std::pair(query, "query"), std::pair(key, "key"),
                            std::pair(value, "value")})
    if (type.getRank() != 4)
      return diag(
          name, " must have rank 4 ([batch, seq, heads, head_dim]), got rank ",
          type.getRank());
  if (failed(checkSameElementType(query, "query", key, "key", diag)) ||
      failed(checkSameElementType(query, "query", value, "value", diag)))
    return failure();

  ArrayRef<int64_t> q = query.getShape(), k = key.getShape(),
                    v = value.getShape();
  // Compares dimension `dim` of two of the operands.
  auto checkDim = [&](ArrayRef<int64_t> a, StringRef aName, ArrayRef<int64_t> b,
                      StringRef bName, int64_t dim,
                      StringRef what) -> LogicalResult {
    if (compatibleSizes(a[dim], b[dim]))
      return success();
    return diag(aName, " ", what, " (dimension ", dim, ") of size ",
                formatSize(a[dim]), " does not match ", bName, " ", what,
                " of size ", formatSize(b[dim]));
  };
  if (failed(checkDim(k, "key", q, "query", 0, "batch")) ||
      failed(checkDim(v, "value", q, "query", 0, "batch")) ||
      failed(checkDim(v, "value", k, "key", 1, "sequence length")) ||
      failed(checkDim(v, "value", k, "key", 2, "heads")) ||
      failed(checkDim(k, "key", q, "query", 3, "head_dim")))
    return failure();
  int64_t heads = q[2], kvHeads = k[2];
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 ? heads != 0 : heads % kvHeads != 0))
    return diag("query heads ", heads,
                " are not a multiple of the key/value heads ", kvHeads);

  if (!maskAttr)
    return diag("requires a 'mask' attribute");
  MaskKind mask = maskAttr.getValue();
  if (mask == MaskKind::Tree && !subtreeEnd)
    return diag("mask kind 'tree' requires a subtree_end operand");
  if (mask != MaskKind::Tree && subtreeEnd)
    return diag("subtree_end is only valid with mask kind 'tree', got '",
                stringifyMaskKind(mask), "'");
  if (subtreeEnd) {
    RankedTensorType type =
        getRankedTensor(subtreeEnd.getType(), "subtree_end", diag);
    if (!type ||
        failed(checkShapeMatches(type.getShape(), "subtree_end", {q[0], k[1]},
                                 "[batch, key sequence length]", diag)))
      return failure();
  }
  if (positions) {
    if (mask == MaskKind::None)
      return diag("positions need a causal or tree mask, got mask kind "
                  "'none'");
    RankedTensorType type =
        getRankedTensor(positions.getType(), "positions", diag);
    if (!type ||
        failed(checkShapeMatches(type.getShape(), "positions", {q[0], q[1]},
                                 "[batch, query sequence length]", diag)))
      return failure();
  } else if (mask != MaskKind::None && !compatibleSizes(q[1], k[1])) {
    return diag("mask kind '", stringifyMaskKind(mask),
                "' without positions needs equal query and key sequence "
                "lengths, got ",
                q[1], " and ", k[1]);
  }
  if (scale)
    if (failed(checkRange(scale.getValueAsDouble(), "scale", 0.0,
                          /*lowerOpen=*/true, std::nullopt, false, diag)))
      return failure();

  resultTypes.push_back(
      RankedTensorType::get({q[0], q[1], q[2], v[3]}, query.getElementType()));
  return success();
}

LogicalResult CrossEntropyOp::inferShape(Adaptor adaptor,
                                         SmallVectorImpl<Type> &resultTypes,
                                         const ShapeDiag &diag) {
  return inferCrossEntropy(
      adaptor.getLogits(), adaptor.getLabels(), adaptor.getWeights(),
      adaptor.getNormalizerValue(),
      lookupAttr(adaptor.getNormalizerAttr(), adaptor.getAttributes(),
                 "normalizer"),
      resultTypes, diag);
}

LogicalResult shapes::inferCrossEntropy(Value logitsValue, Value labelsValue,
                                        Value weightsValue,
                                        Value normalizerValue,
                                        FloatAttr normalizerAttr,
                                        SmallVectorImpl<Type> &resultTypes,
                                        const ShapeDiag &diag) {
  RankedTensorType logits =
      getRankedTensor(logitsValue.getType(), "logits", diag);
  if (!logits)
    return failure();
  RankedTensorType labels =
      getRankedTensor(labelsValue.getType(), "labels", diag);
  if (!labels)
    return failure();
  if (logits.getRank() < 1)
    return diag("logits must have rank at least 1 ([..., vocab]), got rank 0");
  ArrayRef<int64_t> tokens = logits.getShape().drop_back();
  if (failed(checkShapeMatches(labels.getShape(), "labels", tokens,
                               "the logits shape without the vocabulary "
                               "dimension",
                               diag)))
    return failure();
  if (weightsValue) {
    RankedTensorType weights =
        getRankedTensor(weightsValue.getType(), "weights", diag);
    if (!weights ||
        failed(
            checkSameElementType(logits, "logits", weights, "weights", diag)) ||
        failed(checkShapeMatches(weights.getShape(), "weights", tokens,
                                 "the logits shape without the vocabulary "
                                 "dimension",
                                 diag)))
      return failure();
  }
  if (normalizerAttr && normalizerValue)
    return diag("takes the normalizer either as the 'normalizer' attribute or "
                "as an operand, not both");
  if (!normalizerAttr && !normalizerValue)
    return diag("requires a normalizer: the 'normalizer' attribute or a "
                "normalizer operand");
  if (normalizerAttr &&
      failed(checkRange(normalizerAttr.getValueAsDouble(), "normalizer", 0.0,
                        /*lowerOpen=*/true, std::nullopt, false, diag)))
    return failure();
  if (normalizerValue) {
    RankedTensorType type =
        getRankedTensor(normalizerValue.getType(), "normalizer", diag);
    if (!type)
      return failure();
    if (type.getRank() != 0)
      return diag("normalizer operand must be a 0-d tensor, got ",
                  normalizerValue.getType());
    if (failed(
            checkSameElementType(logits, "logits", type, "normalizer", diag)))
      return failure();
  }
  resultTypes.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult TopkOp::inferShape(Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes,
                                 const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getInput()}, types, diag)))
    return failure();
  RankedTensorType input = types[0];
  IntegerAttr kAttr = lookupAttr(adaptor.getKAttr(), adaptor.getAttributes(),
                                 "k");
  if (!kAttr)
    return diag("requires a 'k' attribute");
  if (input.getRank() < 1)
    return diag("needs an input of rank at least 1 (top k along its last "
                "dimension), got ",
                Type(input));
  int64_t k = kAttr.getInt(), size = input.getShape().back();
  if (k < 1 || (!ShapedType::isDynamic(size) && k > size))
    return diag("k = ", k, " must be in [1, ", formatSize(size),
                "] (the size of the last dimension)");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = k;
  resultTypes.push_back(RankedTensorType::get(
      shape, IntegerType::get(input.getContext(), 64)));
  return success();
}

/// The `blocks` of an MoE op (1 when absent): positive, dividing the
/// experts and, where given, the buffer rows (both when static).
static FailureOr<int64_t> checkBlocks(IntegerAttr attr, int64_t experts,
                                      int64_t rows, const ShapeDiag &diag,
                                      StringRef groups = "experts") {
  int64_t blocks = attr ? attr.getInt() : 1;
  if (blocks < 1) {
    (void)diag("blocks = ", blocks, " must be positive");
    return failure();
  }
  if (!ShapedType::isDynamic(experts) && experts % blocks != 0) {
    (void)diag("blocks = ", blocks, " does not divide the ", experts, " ",
               groups);
    return failure();
  }
  if (!ShapedType::isDynamic(rows) && rows % blocks != 0) {
    (void)diag("blocks = ", blocks, " does not divide the ", rows,
               " buffer rows");
    return failure();
  }
  return blocks;
}

LogicalResult MoeRouteOp::inferShape(Adaptor adaptor,
                                     SmallVectorImpl<Type> &resultTypes,
                                     const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getExperts()}, types, diag)))
    return failure();
  RankedTensorType experts = types[0];
  IntegerAttr numAttr = lookupAttr(adaptor.getNumExpertsAttr(),
                                   adaptor.getAttributes(), "num_experts");
  IntegerAttr capacityAttr = lookupAttr(
      adaptor.getCapacityAttr(), adaptor.getAttributes(), "capacity");
  if (!numAttr)
    return diag("requires a 'num_experts' attribute");
  if (experts.getRank() != 2)
    return diag("needs experts of rank 2 (tokens x choices), got ",
                Type(experts));
  if (numAttr.getInt() < 1)
    return diag("num_experts = ", numAttr.getInt(), " must be positive");
  if (capacityAttr && capacityAttr.getInt() < 1)
    return diag("capacity = ", capacityAttr.getInt(),
                " must be positive (leave it out for no capacity)");
  // With hosts the blocks are devices of replicas, one count each.
  int64_t groups = numAttr.getInt();
  if (Value hosts = adaptor.getHosts()) {
    SmallVector<RankedTensorType> hostTypes;
    if (failed(getRankedOperands({hosts}, hostTypes, diag)))
      return failure();
    if (hostTypes[0].getRank() != 1)
      return diag("needs hosts of rank 1 (devices x replica slots), got ",
                  Type(hostTypes[0]));
    groups = hostTypes[0].getDimSize(0);
  }
  if (failed(checkBlocks(lookupAttr(adaptor.getBlocksAttr(),
                                    adaptor.getAttributes(), "blocks"),
                         groups, ShapedType::kDynamic, diag,
                         adaptor.getHosts() ? "replica slots" : "experts")))
    return failure();
  // One share of a batch routed as one: the table of every share's counts.
  if (static_cast<bool>(adaptor.getShares()) !=
      static_cast<bool>(adaptor.getMember()))
    return diag("needs shares and a member together");
  if (Value shares = adaptor.getShares()) {
    SmallVector<RankedTensorType> shareTypes;
    if (failed(getRankedOperands({shares}, shareTypes, diag)))
      return failure();
    RankedTensorType table = shareTypes[0];
    int64_t members = table.getRank() == 2 ? table.getDimSize(0) : 0;
    if (table.getRank() != 2 || table.getDimSize(1) != numAttr.getInt() ||
        (!ShapedType::isDynamic(members) && members < 1))
      return diag("needs shares of shape [members, ", numAttr.getInt(),
                  "] (each share's entries per expert), got ", Type(table));
    if (!ShapedType::isDynamic(members) && experts.hasStaticShape() &&
        experts.getNumElements() > INT64_MAX / members)
      return diag("routes ", members, " shares of ", Type(experts),
                  ": too many entries");
  }
  Type i64 = IntegerType::get(experts.getContext(), 64);
  resultTypes.push_back(RankedTensorType::get(experts.getShape(), i64));
  resultTypes.push_back(RankedTensorType::get({groups}, i64));
  return success();
}

LogicalResult MoePlanOp::inferShape(Adaptor adaptor,
                                    SmallVectorImpl<Type> &resultTypes,
                                    const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getForecast()}, types, diag)))
    return failure();
  RankedTensorType forecast = types[0];
  if (forecast.getRank() != 3)
    return diag("needs a forecast of rank 3 (rows x layers x experts), got ",
                Type(forecast));
  int64_t layers = forecast.getDimSize(1), experts = forecast.getDimSize(2);
  if (ShapedType::isDynamic(experts))
    return diag("needs a static number of experts, got ", Type(forecast));
  auto attr = [&](IntegerAttr given, StringRef name) {
    return lookupAttr(given, adaptor.getAttributes(), name);
  };
  IntegerAttr layer = attr(adaptor.getLayerAttr(), "layer"),
              devices = attr(adaptor.getDevicesAttr(), "devices"),
              slots = attr(adaptor.getSlotsAttr(), "slots"),
              nodes = attr(adaptor.getNodesAttr(), "nodes"),
              bytes = attr(adaptor.getExpertBytesAttr(), "expert_bytes");
  if (!layer || !devices || !slots)
    return diag("requires 'layer', 'devices' and 'slots' attributes");
  int64_t d = devices.getInt(), r = slots.getInt(),
          n = nodes ? nodes.getInt() : 1;
  if (layer.getInt() < 0 ||
      (!ShapedType::isDynamic(layers) && layer.getInt() >= layers))
    return diag("layer = ", layer.getInt(), " is not one of the forecast's ",
                layers, " layers");
  if (experts < 1)
    return diag("needs at least one expert, got ", Type(forecast));
  if (d < 1 || r < 1 || n < 1)
    return diag("devices = ", d, ", slots = ", r, " and nodes = ", n,
                " must be positive");
  // (More slots than experts would only hold copies of one expert.)
  if (r > experts)
    return diag("slots = ", r, " is more than the ", experts, " experts");
  if (d % n != 0)
    return diag("nodes = ", n, " does not divide the ", d, " devices");
  if (experts % d != 0)
    return diag("devices = ", d, " does not divide the ", experts,
                " experts (each device is the home of as many)");
  if (d * r < experts)
    return diag(d, " devices of ", r, " slots cannot hold the ", experts,
                " experts");
  if (bytes && bytes.getInt() < 0)
    return diag("expert_bytes = ", bytes.getInt(), " must be non-negative");
  if (Value previous = adaptor.getPrevious()) {
    auto type = dyn_cast<RankedTensorType>(previous.getType());
    if (!type || type.getRank() != 1 ||
        (!type.isDynamicDim(0) && type.getDimSize(0) != d * r))
      return diag("needs a previous lookup of shape [", d * r,
                  "] (devices x slots), got ", previous.getType());
  }
  auto hosts =
      RankedTensorType::get({d * r}, IntegerType::get(forecast.getContext(), 64));
  resultTypes.push_back(hosts);
  resultTypes.push_back(hosts);
  return success();
}

/// Checks that `type` (operand `name`) is a matrix; `what` names its
/// dimensions in the diagnostic.
static LogicalResult checkMatrix(RankedTensorType type, StringRef name,
                                 StringRef what, const ShapeDiag &diag) {
  if (type.getRank() == 2)
    return success();
  return diag(name, " must have rank 2 (", what, "), got ", Type(type));
}

/// Checks the routing operands of the dispatch and combine: `slots` is
/// `[T, k]` with T = `tokens` (when given), and `weights`, when present,
/// has the slots' shape and `elementType`.
static LogicalResult checkRouting(RankedTensorType slots, int64_t tokens,
                                  Value weightsValue, Type elementType,
                                  const ShapeDiag &diag) {
  if (failed(checkMatrix(slots, "slots", "tokens x choices", diag)))
    return failure();
  if (!compatibleSizes(slots.getDimSize(0), tokens))
    return diag("slots have ", formatSize(slots.getDimSize(0)),
                " tokens but the tokens' operand has ", formatSize(tokens));
  if (!weightsValue)
    return success();
  RankedTensorType weights =
      getRankedTensor(weightsValue.getType(), "weights", diag);
  if (!weights)
    return failure();
  if (weights.getElementType() != elementType)
    return diag("weights element type ", weights.getElementType(),
                " does not match the input's ", elementType);
  return checkShapeMatches(weights.getShape(), "weights", slots.getShape(),
                           "the slots' shape", diag);
}

/// Checks the counts of a grouped matmul: a vector of `experts` entries.
static LogicalResult checkCounts(RankedTensorType counts, int64_t experts,
                                 const ShapeDiag &diag) {
  if (counts.getRank() != 1)
    return diag("counts must have rank 1 (one per expert), got ",
                Type(counts));
  if (!compatibleSizes(counts.getDimSize(0), experts))
    return diag("counts have ", formatSize(counts.getDimSize(0)),
                " entries but there are ", formatSize(experts), " experts");
  return success();
}


LogicalResult MoeDispatchOp::inferShape(Adaptor adaptor,
                                        SmallVectorImpl<Type> &resultTypes,
                                        const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getInput(), adaptor.getSlots()}, types,
                               diag)))
    return failure();
  RankedTensorType input = types[0], slots = types[1];
  IntegerAttr rowsAttr =
      lookupAttr(adaptor.getRowsAttr(), adaptor.getAttributes(), "rows");
  if (!rowsAttr)
    return diag("requires a 'rows' attribute");
  if (failed(checkMatrix(input, "input", "tokens x width", diag)) ||
      failed(checkRouting(slots, input.getDimSize(0), adaptor.getWeights(),
                          input.getElementType(), diag)))
    return failure();
  if (rowsAttr.getInt() < 0)
    return diag("rows = ", rowsAttr.getInt(), " must be non-negative");
  resultTypes.push_back(RankedTensorType::get(
      {rowsAttr.getInt(), input.getDimSize(1)}, input.getElementType()));
  return success();
}

LogicalResult MoeCombineOp::inferShape(Adaptor adaptor,
                                       SmallVectorImpl<Type> &resultTypes,
                                       const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands({adaptor.getInput(), adaptor.getSlots()}, types,
                               diag)))
    return failure();
  RankedTensorType input = types[0], slots = types[1];
  if (failed(checkMatrix(input, "input", "buffer rows x width", diag)) ||
      failed(checkRouting(slots, ShapedType::kDynamic, adaptor.getWeights(),
                          input.getElementType(), diag)))
    return failure();
  resultTypes.push_back(RankedTensorType::get(
      {slots.getDimSize(0), input.getDimSize(1)}, input.getElementType()));
  return success();
}

LogicalResult MoeSlotDotOp::inferShape(Adaptor adaptor,
                                       SmallVectorImpl<Type> &resultTypes,
                                       const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands(
          {adaptor.getBuffer(), adaptor.getTokens(), adaptor.getSlots()}, types,
          diag)))
    return failure();
  RankedTensorType buffer = types[0], tokens = types[1], slots = types[2];
  if (failed(checkMatrix(buffer, "buffer", "buffer rows x width", diag)) ||
      failed(checkMatrix(tokens, "tokens", "tokens x width", diag)) ||
      failed(checkSameElementType(buffer, "buffer", tokens, "tokens", diag)))
    return failure();
  if (!compatibleSizes(buffer.getDimSize(1), tokens.getDimSize(1)))
    return diag("tokens have width ", formatSize(tokens.getDimSize(1)),
                " but the buffer has width ",
                formatSize(buffer.getDimSize(1)));
  if (failed(checkRouting(slots, tokens.getDimSize(0), Value(),
                          buffer.getElementType(), diag)))
    return failure();
  resultTypes.push_back(
      RankedTensorType::get(slots.getShape(), buffer.getElementType()));
  return success();
}

LogicalResult GroupedMatmulOp::inferShape(Adaptor adaptor,
                                          SmallVectorImpl<Type> &resultTypes,
                                          const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands(
          {adaptor.getInput(), adaptor.getWeight(), adaptor.getCounts()}, types,
          diag)))
    return failure();
  RankedTensorType input = types[0], weight = types[1], counts = types[2];
  bool transposed = static_cast<bool>(lookupAttr(
      adaptor.getTransposeRhsAttr(), adaptor.getAttributes(), "transpose_rhs"));
  if (failed(checkMatrix(input, "input", "buffer rows x K", diag)) ||
      failed(checkSameElementType(input, "input", weight, "weight", diag)))
    return failure();
  if (weight.getRank() != 3)
    return diag("weight must have rank 3 (", transposed ? "experts x F x K"
                                                       : "experts x K x F",
                "), got ", Type(weight));
  int64_t k = weight.getDimSize(transposed ? 2 : 1);
  int64_t f = weight.getDimSize(transposed ? 1 : 2);
  if (!compatibleSizes(input.getDimSize(1), k))
    return diag("weight dimension ", transposed ? 2 : 1, " of size ",
                formatSize(k), " does not match the input's width ",
                formatSize(input.getDimSize(1)),
                " (the contracting dimensions)");
  if (failed(checkCounts(counts, weight.getDimSize(0), diag)) ||
      failed(checkBlocks(lookupAttr(adaptor.getBlocksAttr(),
                                    adaptor.getAttributes(), "blocks"),
                         knownSize(weight.getDimSize(0), counts.getDimSize(0)),
                         input.getDimSize(0), diag)))
    return failure();
  resultTypes.push_back(RankedTensorType::get({input.getDimSize(0), f},
                                              input.getElementType()));
  return success();
}

LogicalResult GroupedMatmulGradOp::inferShape(
    Adaptor adaptor, SmallVectorImpl<Type> &resultTypes,
    const ShapeDiag &diag) {
  SmallVector<RankedTensorType> types;
  if (failed(getRankedOperands(
          {adaptor.getLhs(), adaptor.getRhs(), adaptor.getCounts()}, types,
          diag)))
    return failure();
  RankedTensorType lhs = types[0], rhs = types[1], counts = types[2];
  if (failed(checkMatrix(lhs, "lhs", "buffer rows x A", diag)) ||
      failed(checkMatrix(rhs, "rhs", "buffer rows x B", diag)) ||
      failed(checkSameElementType(lhs, "lhs", rhs, "rhs", diag)))
    return failure();
  if (!compatibleSizes(lhs.getDimSize(0), rhs.getDimSize(0)))
    return diag("lhs has ", formatSize(lhs.getDimSize(0)), " rows but rhs has ",
                formatSize(rhs.getDimSize(0)));
  if (failed(checkCounts(counts, ShapedType::kDynamic, diag)) ||
      failed(checkBlocks(lookupAttr(adaptor.getBlocksAttr(),
                                    adaptor.getAttributes(), "blocks"),
                         counts.getDimSize(0),
                         knownSize(lhs.getDimSize(0), rhs.getDimSize(0)),
                         diag)))
    return failure();
  resultTypes.push_back(RankedTensorType::get(
      {counts.getDimSize(0), lhs.getDimSize(1), rhs.getDimSize(1)},
      lhs.getElementType()));
  return success();
}
