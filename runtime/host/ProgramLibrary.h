//===- ProgramLibrary.h - A compiled program as a shared library -*- C++ -*-===//
//
// Generated code built with -DLOOM_PROGRAM_LIBRARY (loom-run
// --emit-library) is a shared library exporting the C ABI of
// include/loom-c/Program.h instead of a `main`: the generated file ends in
// LOOM_PROGRAM_LIBRARY_ABI(loom::host::createProgram<Programs...>(...)), which
// defines the exported functions; everything else is hidden, so that two
// program libraries in one process keep their own runtimes.
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

/// loom_program_create for programs `factories[i]` on the ranks
/// `devices[i]`, after opening `groups`.
loom_status *createProgramFrom(const void *mpiComm, loom_program **out,
                               std::initializer_list<Ints> devices,
                               std::initializer_list<Ints> groups,
                               std::vector<ProgramFactory> factories);

template <typename... Programs>
loom_status *createProgram(const void *mpiComm, loom_program **out,
                           std::initializer_list<Ints> devices,
                           std::initializer_list<Ints> groups) {
  return createProgramFrom(mpiComm, out, devices, groups,
                           {&makeProgramHandle<Programs>...});
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
loom_status *step(loom_program *program, double *loss);
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
  }

#endif // LOOM_RUNTIME_HOST_PROGRAMLIBRARY_H
