//===- NNOps.cpp - Operations of the nn dialect ---------------------------===//
//
// Verifiers of the ops whose result type is spelled out (casts, broadcasts,
// reshapes, iota) or equals the operand type, and of hyper-parameters. The
// ops with inferred result types verify through `inferShape`, in
// NNShapeInference.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/NNShapeUtils.h"
#include "runtime/moe/Blocks.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace loom::nn;
using namespace loom::nn::shapes;

/// Checks `value >= 0` for the hyper-parameter `name`.
static LogicalResult checkNonNegative(double value, StringRef name,
                                      const ShapeDiag &diag) {
  return checkRange(value, name, 0.0, /*lowerOpen=*/false, std::nullopt,
                    /*upperClosed=*/false, diag);
}

/// Checks `value > 0` for the hyper-parameter `name`.
static LogicalResult checkPositive(double value, StringRef name,
                                   const ShapeDiag &diag) {
  return checkRange(value, name, 0.0, /*lowerOpen=*/true, std::nullopt,
                    /*upperClosed=*/false, diag);
}

/// Checks `0 <= value < 1` for the hyper-parameter `name`.
static LogicalResult checkUnitInterval(double value, StringRef name,
                                       const ShapeDiag &diag) {
  return checkRange(value, name, 0.0, /*lowerOpen=*/false, 1.0,
                    /*upperClosed=*/false, diag);
}

/// The number of elements of a static shape, or nothing when it does not fit
/// in an int64_t.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    std::optional<int64_t> product = llvm::checkedMul(count, size);
    if (!product)
      return std::nullopt;
    count = *product;
  }
  return count;
}

//===----------------------------------------------------------------------===//
// Clamp and cast
//===----------------------------------------------------------------------===//

LogicalResult ClampOp::verify() {
  double min = getMinAttr().getValueAsDouble();
  double max = getMaxAttr().getValueAsDouble();
  if (std::isnan(min) || std::isnan(max))
    return emitOpError("bounds must not be NaN, got min = ")
           << formatDouble(min) << " and max = " << formatDouble(max);
  if (min > max)
    return emitOpError("min = ")
           << formatDouble(min)
           << " is greater than max = " << formatDouble(max);
  return success();
}

LogicalResult CastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (input.getRank() == result.getRank() &&
      llvm::all_of(
          llvm::zip_equal(input.getShape(), result.getShape()), [](auto pair) {
            return compatibleSizes(std::get<0>(pair), std::get<1>(pair));
          }))
    return success();
  return emitOpError("result shape ")
         << formatShape(result.getShape()) << " does not match operand shape "
         << formatShape(input.getShape())
         << "; a cast only changes the element type";
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  ShapeDiag diag(getOperation());
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(checkSameElementType(input, "operand", result, "result", diag)))
    return failure();
  int64_t inRank = input.getRank(), outRank = result.getRank();
  if (inRank > outRank)
    return emitOpError("operand rank ")
           << inRank << " is larger than result rank " << outRank;

  // mapping[i]: the result dimension that input dimension i becomes.
  SmallVector<int64_t> mapping;
  if (std::optional<ArrayRef<int64_t>> dims = getBroadcastDims()) {
    if (static_cast<int64_t>(dims->size()) != inRank)
      return emitOpError("broadcast_dims ")
             << formatList(*dims) << " has " << dims->size()
             << " entries but the operand has rank " << inRank;
    for (auto [index, dim] : llvm::enumerate(*dims)) {
      if (dim < 0 || dim >= outRank)
        return emitOpError("broadcast_dims entry ")
               << dim << " is out of range [0, " << outRank
               << ") for a result of rank " << outRank;
      if (index > 0 && dim <= mapping.back())
        return emitOpError("broadcast_dims ")
               << formatList(*dims) << " must be strictly increasing";
      mapping.push_back(dim);
    }
  } else {
    for (int64_t dim = 0; dim < inRank; ++dim)
      mapping.push_back(outRank - inRank + dim);
  }

  for (auto [dim, outDim] : llvm::enumerate(mapping)) {
    int64_t size = input.getDimSize(dim);
    int64_t outSize = result.getDimSize(outDim);
    if (size == 1 || compatibleSizes(size, outSize))
      continue;
    return emitOpError("operand dimension ")
           << dim << " of size " << size
           << " cannot be broadcast to result dimension " << outDim
           << " of size " << formatSize(outSize) << " (it must be 1 or equal)";
  }
  return success();
}

LogicalResult ReshapeOp::verify() {
  ShapeDiag diag(getOperation());
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(checkSameElementType(input, "operand", result, "result", diag)))
    return failure();
  if (!input.hasStaticShape() || !result.hasStaticShape())
    return success();
  std::optional<int64_t> inputCount = elementCount(input.getShape());
  std::optional<int64_t> resultCount = elementCount(result.getShape());
  if (inputCount && inputCount == resultCount)
    return success();
  auto format = [](std::optional<int64_t> count) {
    return count ? std::to_string(*count) : std::string("more than 2^63 - 1");
  };
  return emitOpError("operand shape ")
         << formatShape(input.getShape()) << " holds " << format(inputCount)
         << " elements but result shape " << formatShape(result.getShape())
         << " holds " << format(resultCount)
         << "; reshape preserves the element count";
}

LogicalResult IotaOp::verify() {
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getRank() < 1)
    return emitOpError("result must have rank at least 1, got ")
           << getResult().getType();
  return checkDimInRange(getDimAttr().getInt(), result.getRank(), "dim",
                         ShapeDiag(getOperation()));
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return checkDimInRange(getDimAttr().getInt(), getInput().getType().getRank(),
                         "dim", ShapeDiag(getOperation()));
}

LogicalResult LogSoftmaxOp::verify() {
  return checkDimInRange(getDimAttr().getInt(), getInput().getType().getRank(),
                         "dim", ShapeDiag(getOperation()));
}

//===----------------------------------------------------------------------===//
// Transformer building blocks
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  ShapeDiag diag(getOperation());
  auto input = cast<RankedTensorType>(getInput().getType());
  auto positions = cast<RankedTensorType>(getPositions().getType());
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOpError("operand #0 must have rank at least 3 ([batch..., "
                       "seq, heads, head_dim]), got rank ")
           << rank;
  int64_t headDim = input.getDimSize(rank - 1);
  if (!ShapedType::isDynamic(headDim) && headDim % 2 != 0)
    return emitOpError("head_dim (dimension ")
           << rank - 1 << ") of size " << headDim
           << " must be even to rotate feature pairs";
  if (failed(checkShapeMatches(positions.getShape(), "positions",
                               input.getShape().drop_back(2),
                               "the input shape without its last two "
                               "dimensions ([batch..., seq])",
                               diag)))
    return failure();
  return checkPositive(getThetaAttr().getValueAsDouble(), "theta", diag);
}

LogicalResult DropoutOp::verify() {
  if (failed(checkUnitInterval(getRateAttr().getValueAsDouble(), "rate",
                               ShapeDiag(getOperation()))))
    return failure();
  std::optional<ArrayRef<int64_t>> global = getGlobalShape();
  if (getStarts().empty() != !global)
    return emitOpError("takes `starts` and `global_shape` together (the "
                       "position of a block in a global tensor), got ")
           << (global ? "global_shape without starts"
                      : "starts without global_shape");
  if (!global)
    return success();
  ArrayRef<int64_t> shape = getType().getShape();
  if (getStarts().size() != shape.size() || global->size() != shape.size())
    return emitOpError("needs one start and one global size per dimension of "
                       "its rank-")
           << shape.size() << " input, got " << getStarts().size()
           << " starts and a rank-" << global->size() << " global_shape";
  for (auto [d, whole, part] : llvm::enumerate(*global, shape))
    if (whole < 0)
      return emitOpError("global_shape dimension ")
             << d << " is not a static size";
    else if (!ShapedType::isDynamic(part) && whole < part)
      return emitOpError("global_shape dimension ")
             << d << " is " << whole << ", smaller than the input's " << part;
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// The learning-rate schedule's constraints (NN_LrScheduleConstraints).
template <typename UpdateOp>
static LogicalResult verifySchedule(UpdateOp op) {
  int64_t warmup = op.getWarmupSteps(), decaySteps = op.getDecaySteps();
  double lr = op.getLr().convertToDouble();
  double minLr = op.getMinLr().convertToDouble();
  if (warmup < 0)
    return op.emitOpError("warmup_steps must be >= 0, got ") << warmup;
  if (decaySteps < 0)
    return op.emitOpError("decay_steps must be >= 0, got ") << decaySteps;
  if (op.getDecay() == LrDecay::Constant) {
    if (decaySteps != 0 || minLr != 0.0)
      return op.emitOpError("decay = constant takes no decay_steps or "
                            "min_lr (got ")
             << decaySteps << " and " << shapes::formatDouble(minLr)
             << "); give decay = linear or cosine";
    return success();
  }
  if (decaySteps == 0)
    return op.emitOpError("decay = ")
           << stringifyLrDecay(op.getDecay()) << " needs decay_steps > 0";
  if (!(minLr >= 0.0 && minLr <= lr))
    return op.emitOpError("min_lr must lie in [0, lr = ")
           << shapes::formatDouble(lr) << "], got "
           << shapes::formatDouble(minLr);
  return success();
}

/// Whether `op` has a schedule other than the default (lr at every step).
template <typename UpdateOp> static bool hasSchedule(UpdateOp op) {
  return op.getWarmupSteps() != 0 || op.getDecay() != LrDecay::Constant;
}

LogicalResult SgdUpdateOp::verify() {
  ShapeDiag diag(getOperation());
  double momentum = getMomentumAttr().getValueAsDouble();
  if (failed(checkNonNegative(getLrAttr().getValueAsDouble(), "lr", diag)) ||
      failed(checkUnitInterval(momentum, "momentum", diag)) ||
      failed(checkNonNegative(getWeightDecayAttr().getValueAsDouble(),
                              "weight_decay", diag)))
    return failure();
  if (getNesterov() && momentum == 0.0)
    return emitOpError("nesterov needs momentum > 0, got 0");
  if (failed(verifySchedule(*this)))
    return failure();
  if (hasSchedule(*this) && !getStep())
    return emitOpError("a learning-rate schedule needs the step operand "
                       "(`step %s`)");
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  ShapeDiag diag(getOperation());
  return success(
      succeeded(checkNonNegative(getLrAttr().getValueAsDouble(), "lr", diag)) &&
      succeeded(checkUnitInterval(getBeta1Attr().getValueAsDouble(), "beta1",
                                  diag)) &&
      succeeded(checkUnitInterval(getBeta2Attr().getValueAsDouble(), "beta2",
                                  diag)) &&
      succeeded(checkPositive(getEpsilonAttr().getValueAsDouble(), "epsilon",
                              diag)) &&
      succeeded(checkNonNegative(getWeightDecayAttr().getValueAsDouble(),
                                 "weight_decay", diag)) &&
      succeeded(verifySchedule(*this)));
}

/// Where `routed` (slots or counts) comes straight from an nn.moe_route
/// with expert blocks, checks that the buffer `op` reads or writes has the
/// route's B * S rows and, for the grouped matmuls (`blocks` given), the
/// route's blocks: any other size would drop or misplace rows without a
/// word. (Through other ops, or in a local program, nothing is known.)
static LogicalResult checkRouteBuffer(Operation *op, Value routed,
                                      int64_t rows,
                                      std::optional<uint64_t> blocks) {
  auto route = routed.getDefiningOp<MoeRouteOp>();
  if (!route)
    return success();
  if (blocks && *blocks != route.getBlocks())
    return op->emitOpError()
           << "has blocks = " << *blocks << " but its counts come from an "
           << "nn.moe_route with blocks = " << route.getBlocks();
  int64_t blockRows = route.getBlockRows();
  if (route.getBlocks() <= 1 || ShapedType::isDynamic(rows) ||
      ShapedType::isDynamic(blockRows))
    return success();
  int64_t want = static_cast<int64_t>(route.getBlocks()) * blockRows;
  if (rows != want)
    return op->emitOpError()
           << "has a buffer of " << rows << " rows but its nn.moe_route's "
           << route.getBlocks() << " blocks of " << blockRows << " rows need "
           << want;
  return success();
}

LogicalResult MoeDispatchOp::verify() {
  return checkRouteBuffer(*this, getSlots(),
                          static_cast<int64_t>(getRows()), std::nullopt);
}

LogicalResult MoeCombineOp::verify() {
  return checkRouteBuffer(*this, getSlots(),
                          cast<ShapedType>(getInput().getType()).getDimSize(0),
                          std::nullopt);
}

LogicalResult MoeSlotDotOp::verify() {
  return checkRouteBuffer(*this, getSlots(),
                          cast<ShapedType>(getBuffer().getType()).getDimSize(0),
                          std::nullopt);
}

LogicalResult GroupedMatmulOp::verify() {
  return checkRouteBuffer(*this, getCounts(),
                          cast<ShapedType>(getInput().getType()).getDimSize(0),
                          getBlocks());
}

LogicalResult GroupedMatmulGradOp::verify() {
  return checkRouteBuffer(*this, getCounts(),
                          cast<ShapedType>(getLhs().getType()).getDimSize(0),
                          getBlocks());
}

int64_t MoeRouteOp::getBatchEntries() {
  auto type = cast<RankedTensorType>(getExperts().getType());
  if (!type.hasStaticShape())
    return ShapedType::kDynamic;
  if (!getShares())
    return type.getNumElements();
  // (The verifier bounds the product.)
  int64_t members = cast<ShapedType>(getShares().getType()).getDimSize(0);
  return ShapedType::isDynamic(members) ? ShapedType::kDynamic
                                        : members * type.getNumElements();
}

int64_t MoeRouteOp::getBlockRows() {
  int64_t entries = getBatchEntries();
  if (ShapedType::isDynamic(entries))
    return ShapedType::kDynamic;
  std::optional<uint64_t> capacity = getCapacity();
  // (With hosts, the groups of a block are its replicas.)
  int64_t groups = cast<ShapedType>(getCounts().getType()).getDimSize(0);
  if (ShapedType::isDynamic(groups))
    return ShapedType::kDynamic;
  return moe::blockRows(entries, groups, getBlocks(),
                        capacity ? static_cast<int64_t>(*capacity) : 0);
}

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.cpp.inc"
