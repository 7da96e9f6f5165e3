//===- FactorRule.cpp - How layouts flow through an op --------------------===//

#include "dialects/Interfaces/FactorRule.h"
#include "dialects/Interfaces/LayoutRuleOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
using namespace loom;

int64_t FactorRule::addFactor(int64_t size, FactorKind kind,
                              PartialKind partial) {
  factors.push_back({size, kind, partial});
  return static_cast<int64_t>(factors.size()) - 1;
}

//===----------------------------------------------------------------------===//
// Spelling
//===----------------------------------------------------------------------===//

/// i, j, ..., v for the first 14 factors, then f14, f15, ...
static void printFactorName(llvm::raw_ostream &os, int64_t index) {
  constexpr int64_t kLetters = 'v' - 'i' + 1;
  if (index >= 0 && index < kLetters)
    os << static_cast<char>('i' + index);
  else
    os << 'f' << index;
}

static void printSize(llvm::raw_ostream &os, int64_t size) {
  if (ShapedType::isDynamic(size))
    os << '?';
  else
    os << size;
}

static void printTensors(llvm::raw_ostream &os,
                         ArrayRef<TensorFactors> tensors) {
  os << '(';
  llvm::interleaveComma(tensors, os, [&](const TensorFactors &tensor) {
    os << '[';
    llvm::interleaveComma(tensor, os, [&](const DimFactors &dim) {
      if (dim.empty()) {
        os << '1';
        return;
      }
      llvm::interleave(
          dim, os, [&](int64_t index) { printFactorName(os, index); }, "*");
    });
    os << ']';
  });
  os << ')';
}

static StringRef partialName(PartialKind kind) {
  switch (kind) {
  case PartialKind::Sum:
    return "sum";
  case PartialKind::Max:
    return "max";
  case PartialKind::Min:
    return "min";
  }
  return "unknown";
}

std::string FactorRule::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  printTensors(os, operands);
  os << " -> ";
  printTensors(os, results);
  os << " {";
  for (auto [index, factor] : llvm::enumerate(factors)) {
    if (index > 0)
      os << ", ";
    printFactorName(os, static_cast<int64_t>(index));
    os << " = ";
    printSize(os, factor.size);
    if (factor.kind == FactorKind::Reduction)
      os << " reduction(" << partialName(factor.partial) << ')';
    else if (factor.kind == FactorKind::Replicated)
      os << " replicated";
  }
  os << '}';
  for (const SmallVector<unsigned, 2> &group : linearGroups) {
    os << " linear [";
    llvm::interleaveComma(group, os);
    os << ']';
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

namespace {
/// Checks the tensors on one side (operands or results) of a rule.
struct SideChecker {
  const FactorRule &rule;
  Operation *op;
  /// Factors seen in some tensor, over both sides.
  llvm::SmallBitVector &used;

  LogicalResult check(StringRef side, ArrayRef<TensorFactors> tensors,
                      TypeRange types, bool isResult) {
    if (tensors.size() != types.size())
      return op->emitOpError("factor rule describes ")
             << tensors.size() << ' ' << side << "s but the op has "
             << types.size();
    for (auto [index, entry] : llvm::enumerate(llvm::zip(tensors, types))) {
      auto [tensor, type] = entry;
      if (failed(checkTensor(side, index, tensor, type, isResult)))
        return failure();
    }
    return success();
  }

  LogicalResult checkTensor(StringRef side, size_t index,
                            const TensorFactors &tensor, Type type,
                            bool isResult) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    int64_t rank = ranked ? ranked.getRank() : 0;
    if (static_cast<int64_t>(tensor.size()) != rank)
      return op->emitOpError("factor rule gives ")
             << side << " #" << index << " " << tensor.size()
             << " dimensions but it has " << rank;
    int64_t numFactors = static_cast<int64_t>(rule.getFactors().size());
    llvm::SmallBitVector inTensor(numFactors);
    for (auto [dim, factorsOfDim] : llvm::enumerate(tensor)) {
      std::optional<int64_t> product = 1;
      for (int64_t index2 : factorsOfDim) {
        if (index2 < 0 || index2 >= numFactors)
          return op->emitOpError("factor rule: ")
                 << side << " #" << index << " dimension " << dim
                 << " names factor " << index2 << " but the rule has "
                 << numFactors << " factors";
        if (inTensor.test(index2))
          return op->emitOpError("factor rule: factor ")
                 << index2 << " appears twice in " << side << " #" << index;
        inTensor.set(index2);
        used.set(index2);
        const Factor &factor = rule.getFactor(index2);
        int64_t result = 0;
        if (product && !ShapedType::isDynamic(factor.size) &&
            !llvm::MulOverflow(*product, factor.size, result))
          product = result;
        else
          product = std::nullopt;
      }
      int64_t size = ranked.getDimSize(dim);
      if (ShapedType::isDynamic(size) || !product || *product == size)
        continue;
      return op->emitOpError("factor rule: ")
             << side << " #" << index << " dimension " << dim << " of size "
             << size << " is made of factors of total size " << *product;
    }
    return success();
  }
};
} // namespace

LogicalResult FactorRule::verify(Operation *op) const {
  for (auto [index, factor] : llvm::enumerate(factors))
    if (factor.size < 0 && !ShapedType::isDynamic(factor.size))
      return op->emitOpError("factor rule: factor ")
             << index << " has negative size " << factor.size;
  llvm::SmallBitVector used(factors.size());
  SideChecker checker{*this, op, used};
  if (failed(checker.check("operand", operands, op->getOperandTypes(),
                           /*isResult=*/false)) ||
      failed(checker.check("result", results, op->getResultTypes(),
                           /*isResult=*/true)))
    return failure();
  for (const SmallVector<unsigned, 2> &group : linearGroups)
    for (unsigned operand : group)
      if (operand >= op->getNumOperands() ||
          !isa<RankedTensorType>(op->getOperand(operand).getType()))
        return op->emitOpError("factor rule: linear group names operand #")
               << operand << ", which is not a ranked tensor operand";
  // A reduction factor in every result would leave nothing partial: it is
  // a parallel one.
  for (auto [index, factor] : llvm::enumerate(factors)) {
    if (factor.kind != FactorKind::Reduction)
      continue;
    bool everywhere = !results.empty();
    int64_t reduced = static_cast<int64_t>(index);
    for (const TensorFactors &result : results)
      everywhere &= llvm::any_of(result, [&](const DimFactors &dim) {
        return llvm::is_contained(dim, reduced);
      });
    if (everywhere)
      return op->emitOpError("factor rule: reduction factor ")
             << index << " appears in every result";
  }
  for (size_t index = 0; index < factors.size(); ++index)
    if (!used.test(index))
      return op->emitOpError("factor rule: factor ")
             << index << " is used by no operand or result";
  return success();
}

#include "dialects/Interfaces/LayoutRuleOpInterface.cpp.inc"
