//===- TensorIO.cpp - Random tensors and printing -------------------------===//

#include "runtime/interpreter/TensorIO.h"
#include "runtime/interpreter/Random.h"

#include "llvm/Support/Format.h"

using namespace loom::interp;

Tensor loom::interp::makeRandomTensor(ElementKind kind,
                                      llvm::ArrayRef<int64_t> shape,
                                      const RandomSpec &spec,
                                      uint64_t stream) {
  Tensor tensor(kind, shape);
  uint64_t key = splitmix64(spec.seed, stream);
  uint64_t range = static_cast<uint64_t>(spec.intHigh) -
                   static_cast<uint64_t>(spec.intLow);
  for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i) {
    uint64_t bits = splitmix64(key, static_cast<uint64_t>(i));
    switch (kind) {
    case ElementKind::F32:
    case ElementKind::F64:
    case ElementKind::BF16:
      tensor.setDouble(i, 2.0 * toUnitInterval(bits) - 1.0);
      break;
    case ElementKind::I1:
      tensor.data<uint8_t>()[i] = bits >> 63;
      break;
    case ElementKind::I32:
    case ElementKind::I64: {
      uint64_t value =
          static_cast<uint64_t>(spec.intLow) + (range ? bits % range : 0);
      if (kind == ElementKind::I32)
        tensor.data<int32_t>()[i] =
            static_cast<int32_t>(static_cast<uint32_t>(value));
      else
        tensor.data<int64_t>()[i] = static_cast<int64_t>(value);
      break;
    }
    }
  }
  return tensor;
}

namespace {

void printElement(llvm::raw_ostream &os, const Tensor &tensor, int64_t i) {
  switch (tensor.getKind()) {
  case ElementKind::F32:
    os << llvm::format("%.9g", static_cast<double>(tensor.data<float>()[i]));
    return;
  case ElementKind::BF16:
    os << llvm::format("%.9g", tensor.getDouble(i));
    return;
  case ElementKind::F64:
    os << llvm::format("%.17g", tensor.data<double>()[i]);
    return;
  case ElementKind::I1:
    os << (tensor.data<uint8_t>()[i] ? "true" : "false");
    return;
  case ElementKind::I32:
    os << tensor.data<int32_t>()[i];
    return;
  case ElementKind::I64:
    os << tensor.data<int64_t>()[i];
    return;
  }
}

void printLevel(llvm::raw_ostream &os, const Tensor &tensor, size_t dim,
                int64_t &next) {
  llvm::ArrayRef<int64_t> shape = tensor.getShape();
  if (dim == shape.size()) {
    printElement(os, tensor, next++);
    return;
  }
  os << '[';
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i)
      os << ", ";
    printLevel(os, tensor, dim + 1, next);
  }
  os << ']';
}

} // namespace

void loom::interp::printTensorValues(llvm::raw_ostream &os,
                                     const Tensor &tensor) {
  int64_t next = 0;
  printLevel(os, tensor, 0, next);
}
