//===- Tensor.cpp - Dense host tensors of the reference interpreter -------===//

#include "runtime/interpreter/Tensor.h"
#include "runtime/layout/Collectives.h"
#include "runtime/interpreter/Convert.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace loom::interp;

size_t loom::interp::getElementSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::BF16:
    return 2;
  case ElementKind::I1:
    return 1;
  }
  llvm_unreachable("unknown element kind");
}

llvm::StringRef loom::interp::getElementKindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::I1:
    return "i1";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  }
  llvm_unreachable("unknown element kind");
}

std::optional<ElementKind> loom::interp::getElementKind(mlir::Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isSignlessInteger(1))
    return ElementKind::I1;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  if (type.isSignlessInteger(64))
    return ElementKind::I64;
  return std::nullopt;
}

mlir::Type loom::interp::getElementType(mlir::MLIRContext *context,
                                        ElementKind kind) {
  mlir::Builder builder(context);
  switch (kind) {
  case ElementKind::F32:
    return builder.getF32Type();
  case ElementKind::F64:
    return builder.getF64Type();
  case ElementKind::BF16:
    return builder.getBF16Type();
  case ElementKind::I1:
    return builder.getI1Type();
  case ElementKind::I32:
    return builder.getI32Type();
  case ElementKind::I64:
    return builder.getI64Type();
  }
  llvm_unreachable("unknown element kind");
}

// One bf16 rounding for the interpreter, the simulator and the layout
// core's reductions (runtime/layout/Collectives.h).
float loom::interp::bf16ToFloat(uint16_t bits) {
  return layout::bf16ToFloat(bits);
}

uint16_t loom::interp::floatToBf16(float value) {
  return layout::floatToBf16(value);
}

uint16_t loom::interp::doubleToBf16(double value) {
  if (std::isnan(value))
    return floatToBf16(static_cast<float>(value));
  // Round to float with round-to-odd, then to bf16 with round-to-nearest-
  // even: float keeps more than two extra bits over bf16 in every range, so
  // the result is the correctly rounded one.
  float rounded = static_cast<float>(value);
  if (static_cast<double>(rounded) != value) {
    if (std::fabs(static_cast<double>(rounded)) > std::fabs(value))
      rounded = std::nextafter(rounded, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &rounded, sizeof(bits));
    bits |= 1u;
    std::memcpy(&rounded, &bits, sizeof(bits));
  }
  return floatToBf16(rounded);
}

llvm::SmallVector<int64_t>
loom::interp::getRowMajorStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

std::optional<int64_t>
loom::interp::getCheckedNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0)
      return std::nullopt;
    if (size != 0 && count > INT64_MAX / size)
      return std::nullopt;
    count *= size;
  }
  return count;
}

std::string loom::interp::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return text;
}

Tensor::Tensor(ElementKind kind, llvm::ArrayRef<int64_t> shape)
    : kind(kind), shape(shape.begin(), shape.end()) {
  numElements = getCheckedNumElements(shape).value_or(0);
  storage.assign(static_cast<size_t>(numElements) * getElementSize(kind),
                 std::byte{0});
}

Tensor Tensor::fromDoubles(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<double> values) {
  Tensor result(kind, shape);
  int64_t count = std::min<int64_t>(result.numElements,
                                    static_cast<int64_t>(values.size()));
  for (int64_t i = 0; i < count; ++i)
    result.setDouble(i, values[i]);
  return result;
}

void Tensor::checkKind(ElementKind expected) const {
  if (expected != kind)
    llvm::report_fatal_error(llvm::Twine("interpreter: accessing a ") +
                             getElementKindName(kind) + " tensor as " +
                             getElementKindName(expected));
}

double Tensor::getDouble(int64_t index) const {
  switch (kind) {
  case ElementKind::F32:
    return data<float>()[index];
  case ElementKind::F64:
    return data<double>()[index];
  case ElementKind::BF16:
    return bf16ToFloat(data<uint16_t>()[index]);
  case ElementKind::I1:
    return data<uint8_t>()[index] ? 1.0 : 0.0;
  case ElementKind::I32:
    return data<int32_t>()[index];
  case ElementKind::I64:
    return static_cast<double>(data<int64_t>()[index]);
  }
  llvm_unreachable("unknown element kind");
}

void Tensor::setDouble(int64_t index, double value) {
  switch (kind) {
  case ElementKind::F32:
    data<float>()[index] = static_cast<float>(value);
    return;
  case ElementKind::F64:
    data<double>()[index] = value;
    return;
  case ElementKind::BF16:
    data<uint16_t>()[index] = doubleToBf16(value);
    return;
  case ElementKind::I1:
    data<uint8_t>()[index] = value != 0.0;
    return;
  case ElementKind::I32:
    data<int32_t>()[index] = floatToInt<int32_t>(value);
    return;
  case ElementKind::I64:
    data<int64_t>()[index] = floatToInt<int64_t>(value);
    return;
  }
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> result(static_cast<size_t>(numElements));
  for (int64_t i = 0; i < numElements; ++i)
    result[i] = getDouble(i);
  return result;
}

Tensor Tensor::reshaped(llvm::ArrayRef<int64_t> newShape) const {
  Tensor result = *this;
  result.shape.assign(newShape.begin(), newShape.end());
  if (getCheckedNumElements(newShape) != numElements)
    llvm::report_fatal_error("interpreter: reshape changes the element count");
  return result;
}

std::string Tensor::getTypeString() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "tensor<";
  for (int64_t size : shape)
    os << size << 'x';
  os << getElementKindName(kind) << '>';
  return text;
}

bool Tensor::matchesType(mlir::RankedTensorType type) const {
  if (getElementKind(type.getElementType()) != kind)
    return false;
  if (type.getRank() != getRank())
    return false;
  for (auto [expected, actual] : llvm::zip_equal(type.getShape(), shape))
    if (!mlir::ShapedType::isDynamic(expected) && expected != actual)
      return false;
  return true;
}

bool Tensor::bitwiseEqual(const Tensor &other) const {
  return kind == other.kind && shape == other.shape &&
         storage == other.storage;
}
