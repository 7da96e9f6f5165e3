//===- Loader.h - CANN entry points resolved at run time --------*- C++ -*-===//
//
// Loom's Ascend runtime calls CANN only through these pointers, filled from
// libascendcl.so, libnnopbase.so, libopapi.so, libhccl.so and Loom's
// operator package libloom_opapi.so by dlopen/dlsym (found on the library
// path, as CANN's set_env.sh sets it), so Loom builds without the SDK. The
// pointers' types are the prototypes of AscendApi.h and LoomOps.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ASCEND_LOADER_H
#define LOOM_RUNTIME_ASCEND_LOADER_H

#include "runtime/ascend/LoomOps.h"

#include <string>

namespace loom::ascend {

struct Api {
#define LOOM_API_FIELD(NAME) decltype(&::NAME) NAME = nullptr;
#define LOOM_API_FIELD2(OP)                                                    \
  LOOM_API_FIELD(OP##GetWorkspaceSize) LOOM_API_FIELD(OP)
  LOOM_ASCEND_ACL_FUNCTIONS(LOOM_API_FIELD)
  LOOM_ASCEND_NNOPBASE_FUNCTIONS(LOOM_API_FIELD)
  LOOM_ASCEND_OPAPI_OPERATORS(LOOM_API_FIELD2)
  LOOM_ASCEND_HCCL_FUNCTIONS(LOOM_API_FIELD)
  LOOM_ASCEND_LOOM_OPERATORS(LOOM_API_FIELD2)
  /// Optional (older CANN lacks it): null when absent.
  LOOM_API_FIELD(HcclGetErrorString)
#undef LOOM_API_FIELD
#undef LOOM_API_FIELD2
};

/// Loads every library and resolves every entry point; on failure returns
/// false and says which library or symbol is missing in `error`.
bool loadApi(Api &api, std::string &error);

/// The entry points, loaded on first use (the rank ends with the loader's
/// message if they cannot be).
const Api &api();

} // namespace loom::ascend

#endif // LOOM_RUNTIME_ASCEND_LOADER_H
