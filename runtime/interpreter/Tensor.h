//===- Tensor.h - Dense host tensors of the reference interpreter -*- C++ -*-===//
//
// A Tensor is a dense, row-major (C order) array on the host with an element
// kind and a shape. It owns its storage and has value semantics: copying a
// Tensor copies its elements. Elements are stored as
//
//   f32 -> float      f64 -> double    bf16 -> uint16_t (the bit pattern)
//   i1  -> uint8_t (0 or 1)            i32  -> int32_t  i64 -> int64_t
//
// bf16 values are converted to and from float with round-to-nearest-even.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_TENSOR_H
#define LOOM_RUNTIME_INTERPRETER_TENSOR_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class RankedTensorType;
} // namespace mlir

namespace loom::interp {

/// The element types the interpreter stores.
enum class ElementKind : uint8_t { F32, F64, BF16, I1, I32, I64 };

/// Size in bytes of one stored element.
size_t getElementSize(ElementKind kind);
/// The MLIR spelling of the element type: `f32`, `bf16`, `i1`, ...
llvm::StringRef getElementKindName(ElementKind kind);
inline bool isFloatKind(ElementKind kind) {
  return kind == ElementKind::F32 || kind == ElementKind::F64 ||
         kind == ElementKind::BF16;
}
inline bool isIntegerKind(ElementKind kind) {
  return kind == ElementKind::I32 || kind == ElementKind::I64;
}
/// The element kind of an MLIR element type, if the interpreter stores it.
std::optional<ElementKind> getElementKind(mlir::Type type);
/// The MLIR element type of `kind`.
mlir::Type getElementType(mlir::MLIRContext *context, ElementKind kind);

/// The C++ type that stores elements of each kind.
template <typename T> struct ElementTraits;
template <> struct ElementTraits<float> {
  static constexpr ElementKind kind = ElementKind::F32;
};
template <> struct ElementTraits<double> {
  static constexpr ElementKind kind = ElementKind::F64;
};
template <> struct ElementTraits<uint16_t> {
  static constexpr ElementKind kind = ElementKind::BF16;
};
template <> struct ElementTraits<uint8_t> {
  static constexpr ElementKind kind = ElementKind::I1;
};
template <> struct ElementTraits<int32_t> {
  static constexpr ElementKind kind = ElementKind::I32;
};
template <> struct ElementTraits<int64_t> {
  static constexpr ElementKind kind = ElementKind::I64;
};

/// bf16 <-> float. The conversion to bf16 rounds to nearest even; NaNs stay
/// (quiet) NaNs with their sign.
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);
/// double -> bf16 rounded once, to nearest even (no double rounding through
/// float).
uint16_t doubleToBf16(double value);

/// Row-major strides of `shape`, in elements.
llvm::SmallVector<int64_t> getRowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// The number of elements of `shape`, or nothing when a dimension is
/// negative or the product does not fit in int64_t.
std::optional<int64_t> getCheckedNumElements(llvm::ArrayRef<int64_t> shape);

/// `[4, 8]` for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

class Tensor {
public:
  /// A 0-d f32 zero.
  Tensor() : Tensor(ElementKind::F32, {}) {}
  /// A zero-filled tensor. `shape` must be valid (non-negative sizes whose
  /// product fits); callers that get shapes from outside check them first.
  Tensor(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  /// A tensor of `kind` whose elements are `values` converted with
  /// `setDouble`. `values` has one entry per element.
  static Tensor fromDoubles(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<double> values);
  /// A tensor of `kind` (the kind of T) with the given elements.
  template <typename T>
  static Tensor fromValues(llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<T> values) {
    Tensor result(ElementTraits<T>::kind, shape);
    if (!values.empty())
      std::memcpy(result.storage.data(), values.data(),
                  values.size() * sizeof(T));
    return result;
  }

  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t getNumElements() const { return numElements; }
  size_t getByteSize() const { return storage.size(); }

  /// Typed access; T must be the storage type of the tensor's kind.
  template <typename T> T *data() {
    checkKind(ElementTraits<T>::kind);
    return reinterpret_cast<T *>(storage.data());
  }
  template <typename T> const T *data() const {
    checkKind(ElementTraits<T>::kind);
    return reinterpret_cast<const T *>(storage.data());
  }
  template <typename T> llvm::MutableArrayRef<T> values() {
    return {data<T>(), static_cast<size_t>(numElements)};
  }
  template <typename T> llvm::ArrayRef<T> values() const {
    return {data<T>(), static_cast<size_t>(numElements)};
  }
  std::byte *rawData() { return storage.data(); }
  const std::byte *rawData() const { return storage.data(); }

  /// Element `index` (row-major) as a double: floats exactly, integers by
  /// conversion, i1 as 0 or 1.
  double getDouble(int64_t index) const;
  /// Stores `value` at `index`, converted as `nn.cast` converts f64 to the
  /// element kind (round to nearest even; to integers truncating toward
  /// zero and saturating, NaN to 0; to i1, non-zero to 1).
  void setDouble(int64_t index, double value);
  /// All elements as doubles.
  std::vector<double> toDoubles() const;

  /// The same elements with another shape of the same element count.
  Tensor reshaped(llvm::ArrayRef<int64_t> newShape) const;

  /// `tensor<4x8xf32>`.
  std::string getTypeString() const;
  /// Whether this tensor's kind and static dimensions fit `type` (dynamic
  /// dimensions match any size).
  bool matchesType(mlir::RankedTensorType type) const;

  /// Same kind, shape and bytes.
  bool bitwiseEqual(const Tensor &other) const;

private:
  void checkKind(ElementKind expected) const;

  ElementKind kind;
  llvm::SmallVector<int64_t, 4> shape;
  int64_t numElements = 0;
  std::vector<std::byte> storage;
};

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_TENSOR_H
