//===- OptimizerKernels.cpp - nn.sgd_update and nn.adamw_update -----------===//
//
// The formulas of the op docs element by element (Math.h), with the scalar
// coefficients computed as the interpreter computes them. Each result may
// alias the operand it updates: every element reads its inputs before it
// writes its outputs, and no element reads another's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/KernelSupport.h"

using namespace loom::host;
using namespace loom::host::detail;
namespace math = loom::math;

namespace {

template <typename T>
void sgdImpl(T *newParam, const Shape &newParamShape, T *newBuffer,
             const Shape &newBufferShape, const T *param,
             const Shape &paramShape, const T *grad, const Shape &gradShape,
             const T *buffer, const Shape &bufferShape, const int64_t *step,
             const Shape &stepShape, const math::LrSchedule &schedule,
             double lr, double momentum, bool nesterov, double weightDecay) {
  const char *kernel = "sgd_update";
  checkValid(kernel, "param", paramShape);
  checkShape(kernel, "grad", gradShape, paramShape);
  checkShape(kernel, "momentum_buffer", bufferShape, paramShape);
  checkShape(kernel, "new_param", newParamShape, paramShape);
  checkShape(kernel, "new_momentum_buffer", newBufferShape, paramShape);
  bool scheduled = schedule.warmupSteps != 0 ||
                   schedule.decay != math::LrDecay::Constant;
  LOOM_HOST_CHECK(!scheduled || step != nullptr, kernel,
                  "needs the step for its learning-rate schedule");
  if (step)
    checkShape(kernel, "step", stepShape, Shape{});
  math::SgdCoefficients<T> c;
  c.lr = static_cast<T>(scheduled ? math::scheduledLr(lr, schedule, *step)
                                  : lr);
  c.momentum = static_cast<T>(orDefault(momentum, 0.0));
  c.weightDecay = static_cast<T>(orDefault(weightDecay, 0.0));
  c.nesterov = nesterov;
  for (int64_t i = 0, e = paramShape.numElements(); i < e; ++i) {
    T p, m;
    math::sgdStep(c, param[i], grad[i], buffer[i], p, m);
    newParam[i] = p;
    newBuffer[i] = m;
  }
}

template <typename T>
void adamwImpl(T *newParam, const Shape &newParamShape, T *newM,
               const Shape &newMShape, T *newV, const Shape &newVShape,
               const T *param, const Shape &paramShape, const T *grad,
               const Shape &gradShape, const T *m, const Shape &mShape,
               const T *v, const Shape &vShape, const int64_t *step,
               const Shape &stepShape, double beta1, double beta2,
               double epsilon, const math::LrSchedule &schedule, double lr,
               double weightDecay) {
  const char *kernel = "adamw_update";
  checkValid(kernel, "param", paramShape);
  checkShape(kernel, "grad", gradShape, paramShape);
  checkShape(kernel, "m", mShape, paramShape);
  checkShape(kernel, "v", vShape, paramShape);
  checkShape(kernel, "new_param", newParamShape, paramShape);
  checkShape(kernel, "new_m", newMShape, paramShape);
  checkShape(kernel, "new_v", newVShape, paramShape);
  checkShape(kernel, "step", stepShape, Shape{});
  LOOM_HOST_CHECK(step != nullptr, kernel, "needs the step");
  const math::AdamWCoefficients<T> c = math::makeAdamWCoefficients<T>(
      lr, orDefault(beta1, 0.9), orDefault(beta2, 0.999),
      orDefault(epsilon, 1.0e-8), orDefault(weightDecay, 0.01), *step,
      schedule);
  for (int64_t i = 0, e = paramShape.numElements(); i < e; ++i) {
    T p, mi, vi;
    math::adamwStep(c, param[i], grad[i], m[i], v[i], p, mi, vi);
    newParam[i] = p;
    newM[i] = mi;
    newV[i] = vi;
  }
}

} // namespace

#define DEFINE_OPTIMIZERS(T)                                                   \
  void loom::host::sgd_update(                                                 \
      T *newParam, Shape newParamShape, T *newMomentumBuffer,                  \
      Shape newMomentumBufferShape, const T *param, Shape paramShape,          \
      const T *grad, Shape gradShape, const T *momentumBuffer,                 \
      Shape momentumBufferShape, const int64_t *step, Shape stepShape,         \
      const char *decay, int64_t decaySteps, double lr, double minLr,          \
      double momentum, bool nesterov, int64_t warmupSteps,                     \
      double weightDecay) {                                                    \
    sgdImpl(newParam, newParamShape, newMomentumBuffer,                        \
            newMomentumBufferShape, param, paramShape, grad, gradShape,        \
            momentumBuffer, momentumBufferShape, step, stepShape,              \
            math::makeLrSchedule(decay, decaySteps, minLr,                     \
                                 warmupSteps),                                 \
            lr,                                                                \
            momentum, nesterov, weightDecay);                                  \
  }                                                                            \
  void loom::host::adamw_update(                                               \
      T *newParam, Shape newParamShape, T *newM, Shape newMShape, T *newV,     \
      Shape newVShape, const T *param, Shape paramShape, const T *grad,        \
      Shape gradShape, const T *m, Shape mShape, const T *v, Shape vShape,     \
      const int64_t *step, Shape stepShape, double beta1, double beta2,        \
      const char *decay, int64_t decaySteps, double epsilon, double lr,        \
      double minLr, int64_t warmupSteps, double weightDecay) {                 \
    adamwImpl(newParam, newParamShape, newM, newMShape, newV, newVShape,       \
              param, paramShape, grad, gradShape, m, mShape, v, vShape, step,  \
              stepShape, beta1, beta2, epsilon,                                \
              math::makeLrSchedule(decay, decaySteps, minLr,                   \
                                   warmupSteps),                               \
              lr,                                                              \
              weightDecay);                                                    \
  }
DEFINE_OPTIMIZERS(float)
DEFINE_OPTIMIZERS(double)
#undef DEFINE_OPTIMIZERS
