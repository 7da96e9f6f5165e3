//===- Loader.cpp - CANN entry points resolved at run time ----------------===//

#include "runtime/ascend/Loader.h"
#include "runtime/host/Collectives.h"

#include <dlfcn.h>

#include <vector>

using namespace loom;
using namespace loom::ascend;

namespace {

/// Opens `library` from the library path; null with `error` set when it
/// cannot be found.
void *open(const char *library, std::string &error) {
  void *handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    error = std::string("cannot load ") + library + " (" +
            (why ? why : "not found") +
            "): install the CANN toolkit and source its set_env.sh, or run "
            "on Loom's CPU test double (loom-run --ascend-double)";
  }
  return handle;
}

/// `name` from the first of `handles` that has it.
template <typename Pointer>
bool resolve(const std::vector<void *> &handles, const char *library,
             const char *name, Pointer &pointer, std::string &error) {
  void *symbol = nullptr;
  for (void *handle : handles)
    if (!symbol)
      symbol = ::dlsym(handle, name);
  if (!symbol) {
    error = std::string(library) + " has no symbol " + name +
            " (a CANN version Loom does not know?)";
    return false;
  }
  pointer = reinterpret_cast<Pointer>(symbol);
  return true;
}

} // namespace

bool loom::ascend::loadApi(Api &api, std::string &error) {
  // Every library but the operators' must be there.
  void *acl = open("libascendcl.so", error);
  void *base = acl ? open("libnnopbase.so", error) : nullptr;
  void *hccl = base ? open("libhccl.so", error) : nullptr;
  void *loomOps = hccl ? open("libloom_opapi.so", error) : nullptr;
  if (!loomOps)
    return false;
  // CANN 8.x has one operator library; later releases split it by domain
  // (the grouped matmul is in the transformer package's).
  std::vector<void *> opapi;
  std::string firstError;
  for (const char *name : {"libopapi.so", "libopapi_math.so", "libopapi_nn.so",
                           "libopapi_transformer.so"}) {
    std::string why;
    if (void *handle = open(name, why))
      opapi.push_back(handle);
    else if (firstError.empty())
      firstError = why;
  }
  if (opapi.empty()) {
    error = firstError;
    return false;
  }
  bool ok = true;
#define LOOM_RESOLVE_IN(HANDLES, LIBRARY, NAME)                                \
  ok = ok && resolve(HANDLES, LIBRARY, #NAME, api.NAME, error);
#define LOOM_RESOLVE_ACL(NAME) LOOM_RESOLVE_IN({acl}, "libascendcl.so", NAME)
#define LOOM_RESOLVE_BASE(NAME) LOOM_RESOLVE_IN({base}, "libnnopbase.so", NAME)
#define LOOM_RESOLVE_HCCL(NAME) LOOM_RESOLVE_IN({hccl}, "libhccl.so", NAME)
  // An operator missing from the installed packages fails only a program
  // that calls it (internal::launch reports it, naming the operator).
  std::string missing;
#define LOOM_RESOLVE_OPAPI(OP)                                                 \
  if (!resolve(opapi, "libopapi", #OP "GetWorkspaceSize",                     \
               api.OP##GetWorkspaceSize, missing) ||                           \
      !resolve(opapi, "libopapi", #OP, api.OP, missing)) {                     \
    api.OP##GetWorkspaceSize = nullptr;                                        \
    api.OP = nullptr;                                                          \
  }
#define LOOM_RESOLVE_LOOM(OP)                                                  \
  LOOM_RESOLVE_IN({loomOps}, "libloom_opapi.so", OP##GetWorkspaceSize)         \
  LOOM_RESOLVE_IN({loomOps}, "libloom_opapi.so", OP)
  LOOM_ASCEND_ACL_FUNCTIONS(LOOM_RESOLVE_ACL)
  LOOM_ASCEND_NNOPBASE_FUNCTIONS(LOOM_RESOLVE_BASE)
  LOOM_ASCEND_OPAPI_OPERATORS(LOOM_RESOLVE_OPAPI)
  LOOM_ASCEND_HCCL_FUNCTIONS(LOOM_RESOLVE_HCCL)
  LOOM_ASCEND_LOOM_OPERATORS(LOOM_RESOLVE_LOOM)
#undef LOOM_RESOLVE_IN
#undef LOOM_RESOLVE_ACL
#undef LOOM_RESOLVE_BASE
#undef LOOM_RESOLVE_HCCL
#undef LOOM_RESOLVE_OPAPI
#undef LOOM_RESOLVE_LOOM
  std::string ignored;
  if (!resolve({hccl}, "libhccl.so", "HcclGetErrorString",
               api.HcclGetErrorString, ignored))
    api.HcclGetErrorString = nullptr;
  return ok;
}

const Api &loom::ascend::api() {
  static Api loaded;
  static bool done = false;
  if (!done) {
    std::string error;
    if (!loadApi(loaded, error))
      rt::Runtime::get().fail(error);
    done = true;
  }
  return loaded;
}
