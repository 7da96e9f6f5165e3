//===- NNBackwardOps.cpp - Shape checks of the nn backward ops ------------===//
//
// Shape inference and verifiers of the ops in NNBackwardOps.td, and of
// nn.fill. A backward op accepts exactly the operands its forward op
// accepts (the checks are shared, see NNShapeUtils.h), plus the incoming
// gradient, which must have the forward result's type.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/NNShapeUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace loom::nn;
using namespace loom::nn::shapes;

/// Checks that the incoming gradient `grad` has `expected`, the type of the
/// forward result it is the gradient of.
static LogicalResult checkGradType(Value grad, Type expected,
                                   StringRef forwardResult,
                                   const ShapeDiag &diag) {
  if (grad.getType() == expected)
    return success();
  return diag("grad has type ", grad.getType(), " but ", forwardResult,
              " has type ", expected);
}

//===----------------------------------------------------------------------===//
// nn.fill
//===----------------------------------------------------------------------===//

LogicalResult FillOp::verify() {
  auto type = cast<RankedTensorType>(getResult().getType());
  if (!type.hasStaticShape())
    return emitOpError("result must have a static shape, got ") << type;
  if (std::isnan(getValueAttr().getValueAsDouble()))
    return emitOpError("value must not be NaN");
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::inferShape(Adaptor adaptor,
                                          SmallVectorImpl<Type> &resultTypes,
                                          const ShapeDiag &diag) {
  DictionaryAttr attrs = adaptor.getAttributes();
  if (failed(inferNorm(
          adaptor.getInput(), {{adaptor.getScale(), "scale"}},
          lookupAttr(adaptor.getNormalizedDimsAttr(), attrs, "normalized_dims"),
          lookupAttr(adaptor.getEpsilonAttr(), attrs, "epsilon"), resultTypes,
          diag)))
    return failure();
  return checkGradType(adaptor.getGrad(), resultTypes.front(),
                       "the layer_norm result", diag);
}

LogicalResult RmsNormGradOp::inferShape(Adaptor adaptor,
                                        SmallVectorImpl<Type> &resultTypes,
                                        const ShapeDiag &diag) {
  DictionaryAttr attrs = adaptor.getAttributes();
  if (failed(inferNorm(
          adaptor.getInput(), {{adaptor.getScale(), "scale"}},
          lookupAttr(adaptor.getNormalizedDimsAttr(), attrs, "normalized_dims"),
          lookupAttr(adaptor.getEpsilonAttr(), attrs, "epsilon"), resultTypes,
          diag)))
    return failure();
  return checkGradType(adaptor.getGrad(), resultTypes.front(),
                       "the rms_norm result", diag);
}

//===----------------------------------------------------------------------===//
// Loss and attention
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyGradOp::inferShape(
    Adaptor adaptor, SmallVectorImpl<Type> &resultTypes,
    const ShapeDiag &diag) {
  SmallVector<Type> lossTypes;
  if (failed(inferCrossEntropy(
          adaptor.getLogits(), adaptor.getLabels(), adaptor.getWeights(),
          adaptor.getNormalizerValue(),
          lookupAttr(adaptor.getNormalizerAttr(), adaptor.getAttributes(),
                     "normalizer"),
          lossTypes, diag)) ||
      failed(checkGradType(adaptor.getGrad(), lossTypes.front(),
                           "the cross_entropy result", diag)))
    return failure();
  resultTypes.push_back(adaptor.getLogits().getType());
  return success();
}

LogicalResult AttentionGradOp::inferShape(Adaptor adaptor,
                                          SmallVectorImpl<Type> &resultTypes,
                                          const ShapeDiag &diag) {
  DictionaryAttr attrs = adaptor.getAttributes();
  SmallVector<Type> outTypes;
  if (failed(inferAttention(
          adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
          adaptor.getSubtreeEnd(), adaptor.getPositions(),
          lookupAttr(adaptor.getMaskAttr(), attrs, "mask"),
          lookupAttr(adaptor.getScaleAttr(), attrs, "scale"), outTypes,
          diag)) ||
      failed(checkGradType(adaptor.getGrad(), outTypes.front(),
                           "the attention result", diag)))
    return failure();
  resultTypes.push_back(adaptor.getQuery().getType());
  resultTypes.push_back(adaptor.getKey().getType());
  resultTypes.push_back(adaptor.getValue().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult GatherGradOp::verify() {
  ShapeDiag diag(getOperation());
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(checkSameElementType(grad, "grad", result, "result", diag)) ||
      failed(checkShapeMatches(grad.getShape(), "grad", indices.getShape(),
                               "the shape of the indices", diag)))
    return failure();
  int64_t rank = grad.getRank();
  if (result.getRank() != rank)
    return emitOpError("result has rank ")
           << result.getRank() << " but grad has rank " << rank
           << "; they must be equal";
  int64_t dim = getDimAttr().getInt();
  if (failed(checkDimInRange(dim, rank, "dim", diag)))
    return failure();
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim || compatibleSizes(result.getDimSize(d), grad.getDimSize(d)))
      continue;
    return emitOpError("result dimension ")
           << d << " of size " << formatSize(result.getDimSize(d))
           << " does not match dimension " << d << " of size "
           << formatSize(grad.getDimSize(d))
           << " of grad (only the gather dimension " << dim << " may differ)";
  }
  return success();
}

LogicalResult SliceGradOp::verify() {
  ShapeDiag diag(getOperation());
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(checkSameElementType(grad, "grad", result, "result", diag)))
    return failure();
  if (!grad.hasStaticShape())
    return emitOpError("grad must have a static shape (it gives the slice "
                       "sizes), got ")
           << grad;
  if (result.getRank() != grad.getRank())
    return emitOpError("result has rank ")
           << result.getRank() << " but grad has rank " << grad.getRank()
           << "; they must be equal";
  // The slice of the result that these offsets and strides describe must be
  // valid and have grad's shape.
  SmallVector<Type> sliceTypes;
  return inferSlice(result, getOffsets(), grad.getShape(), getStrides(),
                    sliceTypes, diag);
}
