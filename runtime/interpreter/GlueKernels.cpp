//===- GlueKernels.cpp - func, arith, tensor and hspmd glue ---------------===//
//
// The non-nn ops an nn program is built with: calls, tensor constants,
// empty tensors, and hspmd annotations and reshards, which change how a
// value is laid out across devices but not the value itself, so on the one
// device the interpreter models they are the identity.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace loom::interp;

namespace {

LogicalResult callKernel(func::CallOp op, KernelCall &call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, op.getCalleeAttr());
  if (!callee)
    return call.emitError() << "calls '@" << op.getCallee()
                            << "', which is not a func.func";
  std::vector<Tensor> args;
  for (unsigned i = 0; i < call.getNumOperands(); ++i)
    args.push_back(call.operand(i));
  if (failed(Interpreter::checkArguments(callee, args)))
    return failure();
  FailureOr<std::vector<Tensor>> results =
      call.getInterpreter().callFunction(callee, args);
  if (failed(results))
    return call.emitError() << "the call to '@" << op.getCallee()
                            << "' failed";
  for (Tensor &result : *results)
    call.addResult(std::move(result));
  return success();
}

template <typename T, typename Stored = T>
void fillFromAttr(DenseElementsAttr attr, Tensor &out) {
  Stored *data = out.data<Stored>();
  int64_t i = 0;
  for (T value : attr.getValues<T>())
    data[i++] = static_cast<Stored>(value);
}

LogicalResult constantKernel(arith::ConstantOp op, KernelCall &call) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!attr || !type)
    return call.emitError() << "the interpreter evaluates dense tensor "
                               "constants only, got "
                            << op.getValue();
  if (!type.hasStaticShape())
    return call.emitError() << "has dynamic type " << type;
  ElementKind kind = *getElementKind(type.getElementType());
  Tensor *out = call.addResult(kind, type.getShape());
  if (!out)
    return failure();
  switch (kind) {
  case ElementKind::F32:
    fillFromAttr<float>(attr, *out);
    break;
  case ElementKind::F64:
    fillFromAttr<double>(attr, *out);
    break;
  case ElementKind::BF16: {
    uint16_t *data = out->data<uint16_t>();
    int64_t i = 0;
    for (const APFloat &value : attr.getValues<APFloat>())
      data[i++] =
          static_cast<uint16_t>(value.bitcastToAPInt().getZExtValue());
    break;
  }
  case ElementKind::I1:
    fillFromAttr<bool, uint8_t>(attr, *out);
    break;
  case ElementKind::I32:
    fillFromAttr<int32_t>(attr, *out);
    break;
  case ElementKind::I64:
    fillFromAttr<int64_t>(attr, *out);
    break;
  }
  return success();
}

LogicalResult emptyKernel(tensor::EmptyOp op, KernelCall &call) {
  RankedTensorType type = op.getType();
  if (!type.hasStaticShape())
    return call.emitError() << "the interpreter evaluates tensor.empty with "
                               "static shapes only, got "
                            << type;
  // The contents of tensor.empty are unspecified; the interpreter gives
  // zeros, so that programs that (wrongly) read them stay deterministic.
  return success(call.addResult(*getElementKind(type.getElementType()),
                                type.getShape()) != nullptr);
}

LogicalResult identityKernel(KernelCall &call) {
  call.addResult(call.operand(0));
  return success();
}

/// A collective in the global view (with `from` and `to` layouts) only
/// moves pieces of a value between devices: on one device it is the
/// identity. In the local view it needs the other ranks.
LogicalResult globalCollectiveKernel(KernelCall &call) {
  Operation *op = call.getOp();
  if (!loom::hspmd::isGlobalViewCollective(op))
    return call.emitError()
           << "works on one device's buffer (the local view, after "
              "specialisation) and needs the other ranks: run it on the "
              "simulator";
  return identityKernel(call);
}

/// An exchange between layouts of a whole tensor (before specialisation,
/// in a function on one group) only moves its pieces: on one device it is
/// the identity. On one group's part, or one device's blocks, it needs the
/// other ranks.
LogicalResult exchangeKernel(loom::hspmd::ExchangeOp op, KernelCall &call) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (type.getShape() != op.getShape() ||
      op.getResult().getType() != op.getInput().getType())
    return call.emitError() << "moves one group's part or one device's "
                               "blocks and needs the other ranks: run it on "
                               "the simulator";
  return identityKernel(call);
}

/// On one device there is no rank to read.
LogicalResult axisIndexKernel(loom::hspmd::AxisIndexOp, KernelCall &call) {
  return call.emitError() << "reads the running device's rank; run the "
                             "program on the simulator";
}

} // namespace

void loom::interp::registerGlueKernels(KernelRegistry &registry) {
  registry.add(callKernel);
  registry.add(constantKernel);
  registry.add(emptyKernel);
  registry.add(hspmd::AnnotateOp::getOperationName(), identityKernel);
  registry.add(hspmd::ReshardOp::getOperationName(), identityKernel);
  for (StringRef name :
       {hspmd::AllReduceOp::getOperationName(),
        hspmd::AllGatherOp::getOperationName(),
        hspmd::ReduceScatterOp::getOperationName(),
        hspmd::AllToAllOp::getOperationName(),
        hspmd::PermuteOp::getOperationName(),
        hspmd::LocalSliceOp::getOperationName(),
        hspmd::MakePartialOp::getOperationName(),
        hspmd::SparseReduceScatterOp::getOperationName(),
        hspmd::SparseAllGatherOp::getOperationName(),
        hspmd::SparseAllGatherStartOp::getOperationName(),
        hspmd::SparseExchangeOp::getOperationName()})
    registry.add(name, globalCollectiveKernel);
  registry.add(exchangeKernel);
  registry.add(axisIndexKernel);
  // A started collective's buffer, complete (the simulator ran the
  // collective at its start).
  registry.add(hspmd::WaitOp::getOperationName(), identityKernel);
}
