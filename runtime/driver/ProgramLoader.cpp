//===- ProgramLoader.cpp - Opening a program library ----------------------===//

#include "runtime/driver/ProgramLoader.h"

#include <cstring>
#include <dlfcn.h>
#include <type_traits>

using namespace loom::driver;

LoadError loom::driver::openProgramLibrary(const char *path,
                                           loom_program_api &api) {
  std::memset(&api, 0, sizeof(api));
  if (!path)
    return {LoadError::NotFound, "no program library named"};
  // A bare name is a file here, not a search of the library path.
  std::string file = path;
  if (file.find('/') == std::string::npos)
    file = "./" + file;
  void *library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return {LoadError::NotFound,
            std::string("cannot load the program library: ") +
                (why ? why : path)};
  }
  std::string missing;
  auto resolve = [&](auto &slot, const char *name) {
    void *symbol = dlsym(library, name);
    if (!symbol && missing.empty())
      missing = name;
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  // The version first: a library of another ABI may lack the rest.
  resolve(api.abi_version, "loom_program_abi_version");
  if (missing.empty() && api.abi_version() != LOOM_PROGRAM_ABI_VERSION) {
    int32_t version = api.abi_version();
    dlclose(library);
    std::memset(&api, 0, sizeof(api));
    return {LoadError::Incompatible,
            "the program library '" + std::string(path) + "' has ABI version " +
                std::to_string(version) + ", this loader " +
                std::to_string(LOOM_PROGRAM_ABI_VERSION) +
                " (rebuild it with this Loom)"};
  }
  resolve(api.create, "loom_program_create");
  resolve(api.destroy, "loom_program_destroy");
  resolve(api.get_device, "loom_program_get_device");
  resolve(api.get_num_devices, "loom_program_get_num_devices");
  resolve(api.get_num_args, "loom_program_get_num_args");
  resolve(api.get_arg_info, "loom_program_get_arg_info");
  resolve(api.find_arg, "loom_program_find_arg");
  resolve(api.set_arg, "loom_program_set_arg");
  resolve(api.get_arg, "loom_program_get_arg");
  resolve(api.step, "loom_program_step");
  resolve(api.status_get_code, "loom_status_get_code");
  resolve(api.status_get_message, "loom_status_get_message");
  resolve(api.status_destroy, "loom_status_destroy");
  resolve(api.has_loss, "loom_program_has_loss");
  resolve(api.has_grad_norm, "loom_program_has_grad_norm");
  resolve(api.get_grad_norm, "loom_program_get_grad_norm");
  resolve(api.set_recording, "loom_program_set_recording");
  resolve(api.get_num_traffic, "loom_program_get_num_traffic");
  resolve(api.get_traffic, "loom_program_get_traffic");
  resolve(api.get_num_library_calls, "loom_program_get_num_library_calls");
  resolve(api.get_library_call, "loom_program_get_library_call");
  resolve(api.write_trace, "loom_program_write_trace");
  resolve(api.set_steps_done, "loom_program_set_steps_done");
  resolve(api.get_num_results, "loom_program_get_num_results");
  resolve(api.get_result_info, "loom_program_get_result_info");
  resolve(api.get_result, "loom_program_get_result");
  if (!missing.empty()) {
    dlclose(library);
    std::memset(&api, 0, sizeof(api));
    return {LoadError::Incompatible, "the program library '" +
                                         std::string(path) + "' lacks " +
                                         missing};
  }
  api.library = library;
  return {};
}

void loom::driver::closeProgramLibrary(loom_program_api &api) {
  if (api.library)
    dlclose(api.library);
  std::memset(&api, 0, sizeof(api));
}
