//===- CostModel.cpp - How layout propagation scores choices --------------===//

#include "passes/Partitioning/CostModel.h"

#include "dialects/nn/IR/NNDialect.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

PropagationCostModel::~PropagationCostModel() = default;

const PropagationCostModel &PropagationCostModel::getDefault() {
  static const PropagationCostModel model;
  return model;
}

PropagationPriority
PropagationCostModel::getArgumentFloor(func::FuncOp func,
                                       unsigned index) const {
  if (func.getArgAttr(index, nn::NNDialect::getParamAttrName()))
    return PropagationPriority::Param;
  if (func.getArgAttr(index, nn::NNDialect::getDataAttrName()))
    return PropagationPriority::Data;
  return PropagationPriority::None;
}

double PropagationCostModel::getTensorBytes(Type type) const {
  auto tensor = cast<RankedTensorType>(type);
  double elements = 1;
  for (int64_t size : tensor.getShape())
    elements *= ShapedType::isDynamic(size) ? 1 : size;
  Type element = tensor.getElementType();
  double bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return elements * std::max(bits, 8.0) / 8;
}

double PropagationCostModel::getReshardBytes(const MeshRole &from,
                                             const MeshRole &to, int64_t size,
                                             double block) const {
  if (from == to || from.isDuplicate())
    return 0;
  double m = static_cast<double>(size);
  double gather = block * (m - 1) / m;
  if (from.isSplit()) {
    if (to.isDuplicate())
      return gather;
    if (to.isSplit())
      return gather / m;
    return 0;
  }
  // From a partial.
  if (to.isSplit())
    return gather;
  return 2 * gather;
}

double PropagationCostModel::getOwedBytes(const MeshRole &role, int64_t size,
                                          double block) const {
  return getReshardBytes(role, MeshRole::duplicate(), size, block);
}

bool PropagationCostModel::isBetter(const CandidateScore &lhs,
                                    const CandidateScore &rhs) const {
  for (size_t level = kNumPropagationPriorities; level-- > 1;)
    if (lhs.cost[level] != rhs.cost[level])
      return lhs.cost[level] < rhs.cost[level];
  if (lhs.disagreements != rhs.disagreements)
    return lhs.disagreements < rhs.disagreements;
  return lhs.factor < rhs.factor;
}
