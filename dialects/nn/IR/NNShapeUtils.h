//===- NNShapeUtils.h - Shape checks shared by nn ops ----------*- C++ -*-===//
//
// Helpers for the verifiers and shape inference of the nn ops. They report
// through a ShapeDiag, so one check serves both the verifier and inference.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_NN_IR_NNSHAPEUTILS_H
#define LOOM_DIALECTS_NN_IR_NNSHAPEUTILS_H

#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace loom::nn::shapes {

/// A dimension size as users write it: the number, or `?` when dynamic.
std::string formatSize(int64_t size);

/// A shape as `[4, ?, 8]`.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// A list of integers (dimension indices, offsets) as `[0, 2, 1]`.
std::string formatList(llvm::ArrayRef<int64_t> values);

/// A double as users write it (`0.9`, `1e-08`).
std::string formatDouble(double value);

/// Whether two dimension sizes may be equal: they are, or one is dynamic.
/// The static one of two sizes of one dimension (dynamic if neither is).
inline int64_t knownSize(int64_t a, int64_t b) {
  return mlir::ShapedType::isDynamic(a) ? b : a;
}

inline bool compatibleSizes(int64_t a, int64_t b) {
  return a == b || mlir::ShapedType::isDynamic(a) ||
         mlir::ShapedType::isDynamic(b);
}

/// Returns `type` as a ranked tensor type, or reports that the operand
/// called `name` must be one and returns null.
mlir::RankedTensorType getRankedTensor(mlir::Type type, llvm::StringRef name,
                                       const ShapeDiag &diag);

/// Checks that `other` (called `otherName`) has the element type of `ref`
/// (called `refName`).
mlir::LogicalResult checkSameElementType(mlir::RankedTensorType ref,
                                         llvm::StringRef refName,
                                         mlir::RankedTensorType other,
                                         llvm::StringRef otherName,
                                         const ShapeDiag &diag);

/// Checks that `shape` (of the operand called `name`) matches `expected`
/// dimension by dimension; `expectedName` says where `expected` comes from,
/// e.g. "the trailing dimensions of operand #0".
mlir::LogicalResult checkShapeMatches(llvm::ArrayRef<int64_t> shape,
                                      llvm::StringRef name,
                                      llvm::ArrayRef<int64_t> expected,
                                      llvm::StringRef expectedName,
                                      const ShapeDiag &diag);

/// Checks that the attribute `attrName` = `dim` names a dimension of a
/// tensor of rank `rank`.
mlir::LogicalResult checkDimInRange(int64_t dim, int64_t rank,
                                    llvm::StringRef attrName,
                                    const ShapeDiag &diag);

/// Checks a hyper-parameter against its range: `value >= lower` (or `>` if
/// `lowerOpen`) and, when `upper` is given, `value < upper` (or `<=` if
/// `upperClosed`). NaN is always out of range.
mlir::LogicalResult checkRange(double value, llvm::StringRef name, double lower,
                               bool lowerOpen, std::optional<double> upper,
                               bool upperClosed, const ShapeDiag &diag);

/// A shape taking part in broadcasting, with the operand name that
/// diagnostics use.
struct NamedShape {
  llvm::StringRef name;
  llvm::ArrayRef<int64_t> shape;
};

/// Broadcasts `shapes` with numpy rules (aligned at the last dimension; each
/// pair of sizes equal or one of them 1) into `result`. A dynamic size
/// broadcasts with anything: against a static size other than 1 it takes
/// that size.
mlir::LogicalResult broadcastShapes(llvm::ArrayRef<NamedShape> shapes,
                                    llvm::SmallVectorImpl<int64_t> &result,
                                    const ShapeDiag &diag);

/// The attribute `name` of the op being inferred. While an op is parsed, the
/// attributes written in its attribute dictionary are not yet in the
/// properties the adaptor reads, so this falls back to the dictionary.
template <typename AttrT>
AttrT lookupAttr(AttrT fromProperties, mlir::DictionaryAttr attrs,
                 llvm::StringRef name) {
  if (fromProperties || !attrs)
    return fromProperties;
  return llvm::dyn_cast_or_null<AttrT>(attrs.get(name));
}

// The checks and result types of the forward ops that their backward ops
// share, so that a backward op accepts exactly what its forward op does.

/// nn.slice of `input`: the result type.
mlir::LogicalResult inferSlice(mlir::RankedTensorType input,
                               llvm::ArrayRef<int64_t> offsets,
                               llvm::ArrayRef<int64_t> sizes,
                               llvm::ArrayRef<int64_t> strides,
                               llvm::SmallVectorImpl<mlir::Type> &resultTypes,
                               const ShapeDiag &diag);

/// nn.gather of `input` with `indices` along `dim`: the result type.
mlir::LogicalResult inferGather(mlir::RankedTensorType input,
                                mlir::RankedTensorType indices, int64_t dim,
                                llvm::SmallVectorImpl<mlir::Type> &resultTypes,
                                const ShapeDiag &diag);

/// nn.layer_norm and nn.rms_norm: `scaleAndBias` are the optional operands
/// with their names (null values are absent); absent attributes take their
/// defaults.
mlir::LogicalResult
inferNorm(mlir::Value input,
          llvm::ArrayRef<std::pair<mlir::Value, llvm::StringRef>> scaleAndBias,
          mlir::IntegerAttr normalizedDims, mlir::FloatAttr epsilon,
          llvm::SmallVectorImpl<mlir::Type> &resultTypes,
          const ShapeDiag &diag);

/// nn.attention: the result type. `subtreeEnd` and `positions` may be null.
mlir::LogicalResult
inferAttention(mlir::Value query, mlir::Value key, mlir::Value value,
               mlir::Value subtreeEnd, mlir::Value positions,
               MaskKindAttr mask, mlir::FloatAttr scale,
               llvm::SmallVectorImpl<mlir::Type> &resultTypes,
               const ShapeDiag &diag);

/// nn.cross_entropy: the (0-d) result type. `weights` and `normalizerValue`
/// may be null.
mlir::LogicalResult
inferCrossEntropy(mlir::Value logits, mlir::Value labels, mlir::Value weights,
                  mlir::Value normalizerValue, mlir::FloatAttr normalizerAttr,
                  llvm::SmallVectorImpl<mlir::Type> &resultTypes,
                  const ShapeDiag &diag);

} // namespace loom::nn::shapes

#endif // LOOM_DIALECTS_NN_IR_NNSHAPEUTILS_H
