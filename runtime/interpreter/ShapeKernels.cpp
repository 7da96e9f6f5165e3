//===- ShapeKernels.cpp - broadcast, reshape, transpose, slice, concat, iota =//
//
// Data movement works on the stored bits of any element kind, so bf16 and
// integers move exactly. Dynamic result dimensions are taken from the
// operands where the op determines them.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

LogicalResult broadcastKernel(nn::BroadcastOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  RankedTensorType type = op.getType();
  int64_t rank = type.getRank(), inRank = input.getRank();
  if (inRank > rank)
    return call.emitError() << "input of shape "
                            << formatShape(input.getShape())
                            << " has more dimensions than the result " << type;
  // Which result dimension each input dimension maps to.
  llvm::SmallVector<int64_t> mapping;
  if (std::optional<llvm::ArrayRef<int64_t>> dims = op.getBroadcastDims()) {
    if (static_cast<int64_t>(dims->size()) != inRank)
      return call.emitError() << "broadcast_dims has " << dims->size()
                              << " entries for an input of rank " << inRank;
    for (int64_t dim : *dims) {
      if (failed(checkDim(call, dim, rank, "broadcast dimension")))
        return failure();
      mapping.push_back(dim);
    }
  } else {
    for (int64_t d = 0; d < inRank; ++d)
      mapping.push_back(rank - inRank + d);
  }
  llvm::SmallVector<int64_t> shape(type.getShape());
  for (int64_t d = 0; d < inRank; ++d)
    if (ShapedType::isDynamic(shape[mapping[d]]))
      shape[mapping[d]] = input.getShape()[d];
  for (int64_t size : shape)
    if (ShapedType::isDynamic(size))
      return call.emitError() << "cannot infer the dynamic dimensions of "
                              << type << " from the input";
  llvm::SmallVector<int64_t> inStrides = getRowMajorStrides(input.getShape());
  llvm::SmallVector<int64_t> strides(rank, 0);
  for (int64_t d = 0; d < inRank; ++d) {
    int64_t size = input.getShape()[d], target = shape[mapping[d]];
    if (size != 1 && size != target)
      return call.emitError()
             << "input dimension " << d << " of size " << size
             << " cannot broadcast to result dimension " << mapping[d]
             << " of size " << target;
    if (size != 1)
      strides[mapping[d]] = inStrides[d];
  }
  Tensor *out = call.addResult(input.getKind(), shape);
  if (!out)
    return failure();
  copyStrided(input, *out, strides);
  return success();
}

LogicalResult reshapeKernel(nn::ReshapeOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  RankedTensorType type = op.getType();
  llvm::SmallVector<int64_t> shape(type.getShape());
  int64_t known = 1, dynamicDim = -1;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(size)) {
      known *= size;
      continue;
    }
    if (dynamicDim >= 0)
      return call.emitError() << "cannot infer more than one dynamic "
                                 "dimension of "
                              << type;
    dynamicDim = d;
  }
  if (dynamicDim >= 0) {
    if (known == 0 || input.getNumElements() % known != 0)
      return call.emitError() << "cannot reshape " << input.getNumElements()
                              << " elements to " << type;
    shape[dynamicDim] = input.getNumElements() / known;
  }
  if (getCheckedNumElements(shape) != input.getNumElements())
    return call.emitError() << "cannot reshape "
                            << formatShape(input.getShape()) << " ("
                            << input.getNumElements() << " elements) to "
                            << type;
  call.addResult(input.reshaped(shape));
  return success();
}

LogicalResult transposeKernel(nn::TransposeOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  llvm::ArrayRef<int64_t> perm = op.getPermutation();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return call.emitError() << "permutation has " << perm.size()
                            << " entries for an input of rank " << rank;
  llvm::SmallVector<int64_t> inStrides = getRowMajorStrides(input.getShape());
  llvm::SmallVector<int64_t> shape, strides;
  llvm::SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (failed(checkDim(call, p, rank, "permutation entry")))
      return failure();
    if (seen[p])
      return call.emitError() << "permutation repeats " << p;
    seen[p] = true;
    shape.push_back(input.getShape()[p]);
    strides.push_back(inStrides[p]);
  }
  Tensor *out = call.addResult(input.getKind(), shape);
  if (!out)
    return failure();
  copyStrided(input, *out, strides);
  return success();
}

LogicalResult sliceKernel(nn::SliceOp op, KernelCall &call) {
  const Tensor &input = call.operand(0);
  llvm::ArrayRef<int64_t> offsets = op.getOffsets(), sizes = op.getSizes(),
                          steps = op.getStrides();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(sizes.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return call.emitError() << "needs one offset, size and stride per "
                               "dimension of an input of rank "
                            << rank;
  llvm::SmallVector<int64_t> inStrides = getRowMajorStrides(input.getShape());
  llvm::SmallVector<int64_t> strides;
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dimSize = input.getShape()[d];
    if (offsets[d] < 0 || sizes[d] < 0 || steps[d] <= 0)
      return call.emitError() << "dimension " << d << " has offset "
                              << offsets[d] << ", size " << sizes[d]
                              << " and stride " << steps[d];
    // The last index read, offsets + (sizes - 1) * strides, must be inside.
    if (sizes[d] > 0 &&
        (offsets[d] >= dimSize ||
         (sizes[d] - 1) > (dimSize - 1 - offsets[d]) / steps[d]))
      return call.emitError()
             << "dimension " << d << " reads from " << offsets[d] << " with "
             << sizes[d] << " elements of stride " << steps[d]
             << ", past the input size " << dimSize;
    base += offsets[d] * inStrides[d];
    strides.push_back(inStrides[d] * steps[d]);
  }
  Tensor *out = call.addResult(input.getKind(), sizes);
  if (!out)
    return failure();
  if (out->getNumElements() > 0)
    copyStrided(input, *out, strides, base);
  return success();
}

LogicalResult concatKernel(nn::ConcatOp op, KernelCall &call) {
  if (call.getNumOperands() == 0)
    return call.emitError() << "needs at least one input";
  const Tensor &first = call.operand(0);
  int64_t rank = first.getRank();
  FailureOr<int64_t> dim = checkDim(call, static_cast<int64_t>(op.getDim()),
                                    rank);
  if (failed(dim))
    return failure();
  llvm::SmallVector<int64_t> shape(first.getShape());
  shape[*dim] = 0;
  for (unsigned i = 0; i < call.getNumOperands(); ++i) {
    const Tensor &input = call.operand(i);
    if (input.getKind() != first.getKind() || input.getRank() != rank)
      return call.emitError() << "input #" << i << " of type "
                              << input.getTypeString()
                              << " does not match input #0 of type "
                              << first.getTypeString();
    for (int64_t d = 0; d < rank; ++d)
      if (d != *dim && input.getShape()[d] != first.getShape()[d])
        return call.emitError() << "input #" << i << " has shape "
                                << formatShape(input.getShape())
                                << ", which differs from input #0 of shape "
                                << formatShape(first.getShape())
                                << " outside dimension " << *dim;
    shape[*dim] += input.getShape()[*dim];
  }
  Tensor *out = call.addResult(first.getKind(), shape);
  if (!out)
    return failure();
  AxisSplit outSplit = splitAt(shape, *dim);
  size_t elementSize = getElementSize(first.getKind());
  size_t outRow = static_cast<size_t>(outSplit.size * outSplit.inner);
  int64_t start = 0;
  for (unsigned i = 0; i < call.getNumOperands(); ++i) {
    const Tensor &input = call.operand(i);
    AxisSplit split = splitAt(input.getShape(), *dim);
    size_t row = static_cast<size_t>(split.size * split.inner);
    if (row > 0)
      for (int64_t o = 0; o < split.outer; ++o)
        std::memcpy(out->rawData() +
                        (o * outRow + start * split.inner) * elementSize,
                    input.rawData() + o * row * elementSize, row * elementSize);
    start += split.size;
  }
  return success();
}

LogicalResult iotaKernel(nn::IotaOp op, KernelCall &call) {
  RankedTensorType type = op.getType();
  if (!type.hasStaticShape())
    return call.emitError() << "the interpreter evaluates nn.iota with static "
                               "shapes only, got "
                            << type;
  FailureOr<int64_t> dim =
      checkDim(call, static_cast<int64_t>(op.getDim()), type.getRank());
  if (failed(dim))
    return failure();
  Tensor *out =
      call.addResult(*getElementKind(type.getElementType()), type.getShape());
  if (!out)
    return failure();
  int64_t offset = 0;
  if (op.getOffset())
    offset = static_cast<int64_t>(call.operand(0).getDouble(0));
  AxisSplit split = splitAt(type.getShape(), *dim);
  int64_t i = 0;
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t s = 0; s < split.size; ++s)
      for (int64_t in = 0; in < split.inner; ++in)
        out->setDouble(i++, static_cast<double>(s + offset));
  return success();
}

} // namespace

void loom::interp::registerShapeKernels(KernelRegistry &registry) {
  registry.add(broadcastKernel);
  registry.add(reshapeKernel);
  registry.add(transposeKernel);
  registry.add(sliceKernel);
  registry.add(concatKernel);
  registry.add(iotaKernel);
}
