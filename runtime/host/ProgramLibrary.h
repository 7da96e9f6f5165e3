//===- ProgramLibrary.h - A compiled program as a shared library -*- C++ -*-===//
//
// Generated code defines the C ABI of include/loom-c/Program.h: the
// generated file ends in
// LOOM_PROGRAM_LIBRARY_ABI(<target>::createProgram<Programs...>(...)), which
// defines the functions. Built with -DLOOM_PROGRAM_LIBRARY (loom-run
// --emit-library) it is a shared library exporting them, everything else
// hidden, so that two program libraries in one process keep their own
// runtimes; built without, it is a program executable whose `main` runs
// the driver (runtime/driver/Driver.h) over the same functions.
//
// The program classes describe their interface in tables the compiler
// writes (codegen/Common/LowerToCalls.cpp):
//   arg_names[i]    the source name of argument i ("" when none)
//   arg_roles[i]    0 other, 1 nn.param, 2 nn.state, 3 nn.data, 4 nn.step
//   arg_dtypes[i]   the layout core's DType (runtime/layout/Collectives.h)
//   arg_layouts     per argument: global rank R, global shape[R], the
//                   length L of its layout's table, then the table
//                   (layout::encodeLayout)
//   result_dtypes, result_layouts  the same for the results
// and the library cuts global arrays into the rank's shard and puts results
// back together with the layout core (runtime/layout/Shards.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_HOST_PROGRAMLIBRARY_H
#define LOOM_RUNTIME_HOST_PROGRAMLIBRARY_H

#include "include/loom-c/Program.h"
#include "runtime/host/Program.h"

#include <memory>
#include <vector>

namespace loom::host {

/// One program class, type-erased: its object, its driver view and its
/// interface tables.
struct ProgramHandle {
  std::unique_ptr<void, void (*)(void *)> object{nullptr, nullptr};
  ProgramView view;
  const char *const *argNames = nullptr;
  const int64_t *argRoles = nullptr, *argDtypes = nullptr,
                *argLayouts = nullptr, *resultDtypes = nullptr,
                *resultLayouts = nullptr;
  int64_t argLayoutsSize = 0, resultLayoutsSize = 0;
};

template <typename Program> ProgramHandle makeProgramHandle() {
  auto *program = new Program();
  ProgramHandle handle;
  handle.object = std::unique_ptr<void, void (*)(void *)>(
      program, [](void *p) { delete static_cast<Program *>(p); });
  handle.view = makeProgramView(*program);
  handle.argNames = program->arg_names;
  handle.argRoles = program->arg_roles;
  handle.argDtypes = program->arg_dtypes;
  handle.argLayouts = program->arg_layouts;
  handle.argLayoutsSize = sizeof(program->arg_layouts) / sizeof(int64_t);
  handle.resultDtypes = program->result_dtypes;
  handle.resultLayouts = program->result_layouts;
  handle.resultLayoutsSize = sizeof(program->result_layouts) / sizeof(int64_t);
  return handle;
}

using ProgramFactory = ProgramHandle (*)();

namespace device {
struct Target;
} // namespace device

/// loom_program_create for programs `factories[i]` on the ranks
/// `devices[i]`, after opening `groups`. `targets` holds the device target
/// of every program, or one for all, or none (the host target); a null
/// target is the host's. The first program of the library on a rank starts
/// the rank's device, the last one destroyed finishes it.
loom_status *createProgramFrom(const void *mpiComm, loom_program **out,
                               std::initializer_list<Ints> devices,
                               std::initializer_list<Ints> groups,
                               std::vector<ProgramFactory> factories,
                               std::vector<const device::Target *> targets);

template <typename... Programs>
loom_status *
createProgram(const void *mpiComm, loom_program **out,
              std::initializer_list<Ints> devices,
              std::initializer_list<Ints> groups,
              std::initializer_list<const device::Target *> targets = {}) {
  return createProgramFrom(mpiComm, out, devices, groups,
                           {&makeProgramHandle<Programs>...}, targets);
}

/// The rest of the C ABI, which the exported functions forward to.
namespace library {
int64_t getDevice(const loom_program *program);
int64_t getNumDevices(const loom_program *program);
int64_t getNumArgs(const loom_program *program);
loom_status *getArgInfo(const loom_program *program, int64_t index,
                        loom_arg_info *info);
int64_t findArg(const loom_program *program, const char *name);
loom_status *setArg(loom_program *program, int64_t index, loom_form form,
                    loom_dtype dtype, int64_t rank, const int64_t *shape,
                    const void *data);
loom_status *getArg(loom_program *program, int64_t index, loom_form form,
                    loom_dtype dtype, int64_t rank, const int64_t *shape,
                    void *data);
int64_t getNumResults(const loom_program *program);
loom_status *getResultInfo(const loom_program *program, int64_t index,
                           loom_arg_info *info);
loom_status *getResult(loom_program *program, int64_t index, loom_form form,
                       loom_dtype dtype, int64_t rank, const int64_t *shape,
                       void *data);
loom_status *step(loom_program *program, double *loss);
int32_t hasLoss(const loom_program *program);
int32_t hasGradNorm(const loom_program *program);
loom_status *getGradNorm(const loom_program *program, double *norm);
loom_status *setStepsDone(loom_program *program, int64_t steps);
void setRecording(loom_program *program, int32_t records);
int64_t getNumTraffic(const loom_program *program);
loom_status *getTraffic(const loom_program *program, int64_t index,
                        loom_traffic *traffic);
int64_t getNumLibraryCalls(const loom_program *program);
loom_status *getLibraryCall(const loom_program *program, int64_t index,
                            loom_library_call *call);
loom_status *writeTrace(const loom_program *program, const char *path);
void destroy(loom_program *program);
loom_status_code getCode(const loom_status *status);
const char *getMessage(const loom_status *status);
void destroyStatus(loom_status *status);
} // namespace library

} // namespace loom::host

#define LOOM_PROGRAM_EXPORT extern "C" __attribute__((visibility("default")))

/// Defines the exported C ABI; `CREATE` is the expression that creates the
/// program from `mpi_comm` into `program` (generated).
#define LOOM_PROGRAM_LIBRARY_ABI(CREATE)                                           \
  LOOM_PROGRAM_EXPORT int32_t loom_program_abi_version(void) {                 \
    return LOOM_PROGRAM_ABI_VERSION;                                           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_create(                        \
      const void *mpi_comm, loom_program **program) {                          \
    return CREATE;                                                             \
  }                                                                            \
  LOOM_PROGRAM_EXPORT void loom_program_destroy(loom_program *program) {       \
    loom::host::library::destroy(program);                                     \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_get_device(                         \
      const loom_program *program) {                                           \
    return loom::host::library::getDevice(program);                            \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_get_num_devices(                    \
      const loom_program *program) {                                           \
    return loom::host::library::getNumDevices(program);                        \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_get_num_args(                       \
      const loom_program *program) {                                           \
    return loom::host::library::getNumArgs(program);                           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_arg_info(                  \
      const loom_program *program, int64_t index, loom_arg_info *info) {       \
    return loom::host::library::getArgInfo(program, index, info);              \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_find_arg(                           \
      const loom_program *program, const char *name) {                         \
    return loom::host::library::findArg(program, name);                        \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_set_arg(                       \
      loom_program *program, int64_t index, loom_form form, loom_dtype dtype,  \
      int64_t rank, const int64_t *shape, const void *data) {                  \
    return loom::host::library::setArg(program, index, form, dtype, rank,      \
                                       shape, data);                           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_arg(                       \
      loom_program *program, int64_t index, loom_form form, loom_dtype dtype,  \
      int64_t rank, const int64_t *shape, void *data) {                        \
    return loom::host::library::getArg(program, index, form, dtype, rank,      \
                                       shape, data);                           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_step(loom_program *program,    \
                                                     double *loss) {           \
    return loom::host::library::step(program, loss);                           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status_code loom_status_get_code(                   \
      const loom_status *status) {                                             \
    return loom::host::library::getCode(status);                               \
  }                                                                            \
  LOOM_PROGRAM_EXPORT const char *loom_status_get_message(                     \
      const loom_status *status) {                                             \
    return loom::host::library::getMessage(status);                            \
  }                                                                            \
  LOOM_PROGRAM_EXPORT void loom_status_destroy(loom_status *status) {          \
    loom::host::library::destroyStatus(status);                                \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int32_t loom_program_has_loss(                           \
      const loom_program *program) {                                           \
    return loom::host::library::hasLoss(program);                              \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int32_t loom_program_has_grad_norm(                      \
      const loom_program *program) {                                           \
    return loom::host::library::hasGradNorm(program);                          \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_grad_norm(                 \
      const loom_program *program, double *norm) {                             \
    return loom::host::library::getGradNorm(program, norm);                    \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_set_steps_done(                \
      loom_program *program, int64_t steps) {                                  \
    return loom::host::library::setStepsDone(program, steps);                  \
  }                                                                            \
  LOOM_PROGRAM_EXPORT void loom_program_set_recording(loom_program *program,   \
                                                      int32_t records) {       \
    loom::host::library::setRecording(program, records);                       \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_get_num_traffic(                    \
      const loom_program *program) {                                           \
    return loom::host::library::getNumTraffic(program);                        \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_traffic(                   \
      const loom_program *program, int64_t index, loom_traffic *traffic) {     \
    return loom::host::library::getTraffic(program, index, traffic);           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_get_num_library_calls(              \
      const loom_program *program) {                                           \
    return loom::host::library::getNumLibraryCalls(program);                   \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_library_call(              \
      const loom_program *program, int64_t index, loom_library_call *call) {   \
    return loom::host::library::getLibraryCall(program, index, call);          \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_write_trace(                   \
      const loom_program *program, const char *path) {                         \
    return loom::host::library::writeTrace(program, path);                     \
  }                                                                            \
  LOOM_PROGRAM_EXPORT int64_t loom_program_get_num_results(                    \
      const loom_program *program) {                                           \
    return loom::host::library::getNumResults(program);                        \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_result_info(               \
      const loom_program *program, int64_t index, loom_arg_info *info) {       \
    return loom::host::library::getResultInfo(program, index, info);           \
  }                                                                            \
  LOOM_PROGRAM_EXPORT loom_status *loom_program_get_result(                    \
      loom_program *program, int64_t index, loom_form form, loom_dtype dtype,  \
      int64_t rank, const int64_t *shape, void *data) {                        \
    return loom::host::library::getResult(program, index, form, dtype, rank,   \
                                          shape, data);                        \
  }

#ifndef LOOM_PROGRAM_LIBRARY
#include "runtime/driver/Driver.h"

namespace loom::host {
/// The `main` of a program executable: the driver over the C ABI this
/// translation unit defines (LOOM_PROGRAM_LIBRARY_ABI).
inline int runProgramExecutable(int argc, char **argv) {
  loom_program_api api = {};
  api.abi_version = &loom_program_abi_version;
  api.create = &loom_program_create;
  api.destroy = &loom_program_destroy;
  api.get_device = &loom_program_get_device;
  api.get_num_devices = &loom_program_get_num_devices;
  api.get_num_args = &loom_program_get_num_args;
  api.get_arg_info = &loom_program_get_arg_info;
  api.find_arg = &loom_program_find_arg;
  api.set_arg = &loom_program_set_arg;
  api.get_arg = &loom_program_get_arg;
  api.step = &loom_program_step;
  api.status_get_code = &loom_status_get_code;
  api.status_get_message = &loom_status_get_message;
  api.status_destroy = &loom_status_destroy;
  api.has_loss = &loom_program_has_loss;
  api.has_grad_norm = &loom_program_has_grad_norm;
  api.get_grad_norm = &loom_program_get_grad_norm;
  api.set_steps_done = &loom_program_set_steps_done;
  api.set_recording = &loom_program_set_recording;
  api.get_num_traffic = &loom_program_get_num_traffic;
  api.get_traffic = &loom_program_get_traffic;
  api.get_num_library_calls = &loom_program_get_num_library_calls;
  api.get_library_call = &loom_program_get_library_call;
  api.write_trace = &loom_program_write_trace;
  api.get_num_results = &loom_program_get_num_results;
  api.get_result_info = &loom_program_get_result_info;
  api.get_result = &loom_program_get_result;
  return loom::driver::runDriver(argc, argv, 1, api);
}
} // namespace loom::host
#endif

#endif // LOOM_RUNTIME_HOST_PROGRAMLIBRARY_H
