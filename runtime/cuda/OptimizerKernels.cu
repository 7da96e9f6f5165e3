//===- OptimizerKernels.cu - nn.sgd_update and nn.adamw_update ------------===//
//
// One thread per element, Math.h's sgdStep / adamwStep. Each result may
// alias the operand it updates: an element reads all its inputs before it
// writes, and no element reads another's. AdamW's bias corrections and both
// updates' learning-rate schedules depend on the step, a device scalar: one
// thread per block computes the coefficients (as the host kernel, in f64
// rounded once) into shared memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaSupport.cuh"

using namespace loom::cuda;
using namespace loom::cuda::detail;
namespace math = loom::math;

namespace {

// No __restrict__: the results may alias the inputs.
template <typename T>
__global__ void sgdKernel(T *newParam, T *newBuffer, const T *param,
                          const T *grad, const T *buffer,
                          math::SgdCoefficients<T> unscheduled, double lr,
                          math::LrSchedule schedule, const int64_t *step,
                          int64_t n) {
  __shared__ math::SgdCoefficients<T> shared;
  if (threadIdx.x == 0) {
    shared = unscheduled;
    if (step)
      shared.lr = static_cast<T>(math::scheduledLr(lr, schedule, *step));
  }
  __syncthreads();
  const math::SgdCoefficients<T> c = shared;
  LOOM_CUDA_FOR(i, n) {
    T p, m;
    math::sgdStep(c, param[i], grad[i], buffer[i], p, m);
    newParam[i] = p;
    newBuffer[i] = m;
  }
}

struct AdamWAttributes {
  double lr, beta1, beta2, epsilon, weightDecay;
  math::LrSchedule schedule;
};

template <typename T>
__global__ void adamwKernel(T *newParam, T *newM, T *newV, const T *param,
                            const T *grad, const T *m, const T *v,
                            const int64_t *step, AdamWAttributes a, int64_t n) {
  __shared__ math::AdamWCoefficients<T> shared;
  if (threadIdx.x == 0)
    shared = math::makeAdamWCoefficients<T>(a.lr, a.beta1, a.beta2, a.epsilon,
                                            a.weightDecay, *step, a.schedule);
  __syncthreads();
  const math::AdamWCoefficients<T> c = shared;
  LOOM_CUDA_FOR(i, n) {
    T p, mi, vi;
    math::adamwStep(c, param[i], grad[i], m[i], v[i], p, mi, vi);
    newParam[i] = p;
    newM[i] = mi;
    newV[i] = vi;
  }
}

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
  LOOM_CUDA_CHECK(!scheduled || step != nullptr, kernel,
                  "needs the step for its learning-rate schedule");
  if (step)
    checkShape(kernel, "step", stepShape, Shape{});
  math::SgdCoefficients<T> c;
  c.lr = static_cast<T>(lr);
  c.momentum = static_cast<T>(orDefault(momentum, 0.0));
  c.weightDecay = static_cast<T>(orDefault(weightDecay, 0.0));
  c.nesterov = nesterov;
  int64_t n = paramShape.numElements();
  if (n == 0)
    return;
  sgdKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      newParam, newBuffer, param, grad, buffer, c, lr, schedule,
      scheduled ? step : nullptr, n);
  checkLaunch(kernel);
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
  LOOM_CUDA_CHECK(step != nullptr, kernel, "needs the step");
  AdamWAttributes a{lr, orDefault(beta1, 0.9), orDefault(beta2, 0.999),
                    orDefault(epsilon, 1.0e-8), orDefault(weightDecay, 0.01),
                    schedule};
  int64_t n = paramShape.numElements();
  if (n == 0)
    return;
  adamwKernel<<<gridFor(n), kThreads, 0, stream()>>>(
      newParam, newM, newV, param, grad, m, v, step, a, n);
  checkLaunch(kernel);
}

} // namespace

#define DEFINE_OPTIMIZERS(T)                                                   \
  void loom::cuda::sgd_update(                                                 \
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
  void loom::cuda::adamw_update(                                               \
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
