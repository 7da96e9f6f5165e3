//===- OptimizerKernels.cpp - nn.sgd_update and nn.adamw_update -----------===//
//
// The formulas of the op docs, element by element in the element type.
// Scalar coefficients (products of hyper-parameters, bias corrections) are
// computed in f64 and rounded to the element type once.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/KernelUtils.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace loom::interp;
namespace nn = loom::nn;

namespace {

/// Checks that operands [0, names.size()) share the kind and shape of
/// operand 0, then adds `results` results of that type.
LogicalResult prepare(KernelCall &call, llvm::ArrayRef<const char *> names,
                      unsigned results) {
  const Tensor &first = call.operand(0);
  for (unsigned i = 1; i < names.size(); ++i) {
    const Tensor &other = call.operand(i);
    if (other.getKind() != first.getKind() ||
        other.getShape() != first.getShape())
      return call.emitError() << names[i] << " of type "
                              << other.getTypeString() << " differs from "
                              << names[0] << " of type "
                              << first.getTypeString();
  }
  for (unsigned i = 0; i < results; ++i)
    if (!call.addResult(first.getKind(), first.getShape()))
      return failure();
  return success();
}

/// The learning rate of this step under the op's schedule (the op docs,
/// "Learning-rate schedule"), written from the docs apart from the host
/// kernels' copy so that each checks the other.
template <typename UpdateOp>
double scheduledLr(UpdateOp op, std::optional<int64_t> step) {
  double lr = op.getLr().convertToDouble();
  int64_t warmup = op.getWarmupSteps();
  if (!step || (warmup == 0 && op.getDecay() == nn::LrDecay::Constant))
    return lr;
  double t = static_cast<double>(*step);
  if (*step <= warmup)
    return lr * t / static_cast<double>(warmup);
  if (op.getDecay() == nn::LrDecay::Constant)
    return lr;
  double minLr = op.getMinLr().convertToDouble();
  double progress = (t - static_cast<double>(warmup)) /
                    static_cast<double>(op.getDecaySteps());
  if (progress >= 1.0)
    return minLr;
  double fraction = op.getDecay() == nn::LrDecay::Linear
                        ? 1.0 - progress
                        : (1.0 + std::cos(M_PI * progress)) / 2.0;
  return minLr + (lr - minLr) * fraction;
}

LogicalResult sgdKernel(nn::SgdUpdateOp op, KernelCall &call) {
  if (failed(prepare(call, {"param", "grad", "momentum_buffer"}, 2)))
    return failure();
  const Tensor &param = call.operand(0), &grad = call.operand(1),
               &buffer = call.operand(2);
  std::optional<int64_t> stepCount;
  if (op.getStep()) {
    const Tensor &stepTensor = call.operand(3);
    if (stepTensor.getKind() != ElementKind::I64 ||
        stepTensor.getNumElements() != 1)
      return call.emitError() << "step must be a 0-d i64 tensor";
    stepCount = stepTensor.data<int64_t>()[0];
  }
  double lr = scheduledLr(op, stepCount);
  double momentum = op.getMomentum().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  bool nesterov = op.getNesterov();
  return dispatchFloat(call, param.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>(), *m = buffer.data<T>();
    T *newParam = call.result(0).data<T>();
    T *newBuffer = call.result(1).data<T>();
    const T tlr = static_cast<T>(lr), mu = static_cast<T>(momentum),
            wd = static_cast<T>(weightDecay);
    for (int64_t i = 0, e = param.getNumElements(); i < e; ++i) {
      T decayed = g[i] + wd * p[i];
      T buf = mu * m[i] + decayed;
      T step = nesterov ? decayed + mu * buf : buf;
      newParam[i] = p[i] - tlr * step;
      newBuffer[i] = buf;
    }
    return success();
  });
}

LogicalResult adamwKernel(nn::AdamWUpdateOp op, KernelCall &call) {
  const Tensor &stepTensor = call.operand(4);
  if (stepTensor.getKind() != ElementKind::I64 ||
      stepTensor.getNumElements() != 1)
    return call.emitError() << "step must be a 0-d i64 tensor";
  if (failed(prepare(call, {"param", "grad", "m", "v"}, 3)))
    return failure();
  const Tensor &param = call.operand(0), &grad = call.operand(1),
               &mTensor = call.operand(2), &vTensor = call.operand(3);
  double step = static_cast<double>(stepTensor.data<int64_t>()[0]);
  double lr = scheduledLr(op, stepTensor.data<int64_t>()[0]);
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  double epsilon = op.getEpsilon().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  return dispatchFloat(call, param.getKind(), [&](auto tag) -> LogicalResult {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>(), *m = mTensor.data<T>(),
            *v = vTensor.data<T>();
    T *newParam = call.result(0).data<T>();
    T *newM = call.result(1).data<T>();
    T *newV = call.result(2).data<T>();
    const T decay = static_cast<T>(lr * weightDecay);
    const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    const T oneMinusB1 = static_cast<T>(1.0 - beta1);
    const T oneMinusB2 = static_cast<T>(1.0 - beta2);
    const T correction1 = static_cast<T>(1.0 - std::pow(beta1, step));
    const T correction2 = static_cast<T>(1.0 - std::pow(beta2, step));
    const T tlr = static_cast<T>(lr), eps = static_cast<T>(epsilon);
    for (int64_t i = 0, e = param.getNumElements(); i < e; ++i) {
      T decayed = p[i] - decay * p[i];
      T mi = b1 * m[i] + oneMinusB1 * g[i];
      T vi = b2 * v[i] + oneMinusB2 * g[i] * g[i];
      T mHat = mi / correction1;
      T vHat = vi / correction2;
      newParam[i] = decayed - tlr * mHat / (std::sqrt(vHat) + eps);
      newM[i] = mi;
      newV[i] = vi;
    }
    return success();
  });
}

} // namespace

void loom::interp::registerOptimizerKernels(KernelRegistry &registry) {
  constexpr bool inF32 = true;
  registry.add(sgdKernel, inF32);
  registry.add(adamwKernel, inF32);
}
