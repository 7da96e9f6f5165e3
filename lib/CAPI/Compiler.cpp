//===- Compiler.cpp - Loom's compiler as a C library ----------------------===//
//
// The implementation of include/loom-c/Compiler.h over Loom's C++: one
// MLIRContext per loom_context, one module per loom_module, the named
// pipelines of passes/Pipelines.h and codegen/Pipelines.h, and the build of
// lib/CAPI/ProgramBuild.h.
//
//===----------------------------------------------------------------------===//

#include "include/loom-c/Compiler.h"
#include "runtime/driver/ProgramSwitch.h"

#include "codegen/Passes.h"
#include "codegen/Pipelines.h"
#include "dialects/InitAllDialects.h"
#include "frontends/config/Config.h"
#include "lib/CAPI/ProgramBuild.h"
#include "lib/CAPI/RunConfig.h"
#include "passes/ArgumentNames.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "runtime/driver/ProgramLoader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace mlir;
using namespace loom;

struct loom_status {
  loom_status_code code;
  std::string message;
};

struct loom_context {
  MLIRContext context;
  loom_diagnostic_callback callback = nullptr;
  void *user = nullptr;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  /// The diagnostics of the current call, for its status message.
  std::vector<std::string> errors;
};

struct loom_module {
  loom_context *context = nullptr;
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module;
  std::string configPipeline;
};

namespace {

loom_status *makeStatus(loom_status_code code, const std::string &message) {
  return new loom_status{code, message};
}

/// What a status is where even making one fails.
loom_status outOfMemory{LOOM_STATUS_INTERNAL,
                        "out of memory while reporting an error"};

/// Runs `body`; what it throws (out of memory, a C++ error) becomes a
/// status instead of leaving through the C interface.
template <typename Body> loom_status *guarded(Body &&body) {
  try {
    try {
      return body();
    } catch (const std::exception &error) {
      return makeStatus(LOOM_STATUS_INTERNAL,
                        std::string("the compiler failed: ") + error.what());
    }
  } catch (...) {
    return &outOfMemory;
  }
}

loom_status *invalid(const std::string &message) {
  return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, message);
}

/// A failure after diagnostics: the status carries the first error.
loom_status *failedWith(loom_context *context, const std::string &what) {
  std::string message = what;
  if (!context->errors.empty())
    message += ": " + context->errors.front();
  return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, message);
}

void registerEverything() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerLoomPasses();
    registerNameArgumentsFromSourcePass();
    registerLoomPipelines();
    codegen::registerLoomCodegenPasses();
    codegen::registerLoomCodegenPipelines();
    registerTransformsPasses();
  });
}

std::string locationText(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string text = locationText(inner); !text.empty())
        return text;
  if (auto named = dyn_cast<NameLoc>(loc))
    return locationText(named.getChildLoc());
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return locationText(site.getCallee());
  return "";
}

} // namespace

int32_t loom_compiler_api_version(void) { return LOOM_COMPILER_API_VERSION; }

loom_context *loom_context_create(loom_diagnostic_callback callback,
                                  void *user) {
  registerEverything();
  auto *context = new loom_context();
  DialectRegistry registry;
  registerAllDialects(registry);
  context->context.appendDialectRegistry(registry);
  context->context.loadAllAvailableDialects();
  context->context.printOpOnDiagnostic(false);
  // One thread: diagnostics come in program order and the callback needs no
  // locking (a caller wanting threads can run the tools).
  context->context.disableMultithreading();
  context->callback = callback;
  context->user = user;
  context->handler = std::make_unique<ScopedDiagnosticHandler>(
      &context->context, [context](Diagnostic &diag) {
        loom_severity severity = diag.getSeverity() == DiagnosticSeverity::Error
                                     ? LOOM_SEVERITY_ERROR
                                 : diag.getSeverity() ==
                                         DiagnosticSeverity::Warning
                                     ? LOOM_SEVERITY_WARNING
                                     : LOOM_SEVERITY_NOTE;
        std::string location = locationText(diag.getLocation());
        std::string message = diag.str();
        if (severity == LOOM_SEVERITY_ERROR)
          context->errors.push_back(
              (location.empty() ? "" : location + ": ") + message);
        if (context->callback)
          context->callback(severity, location.c_str(), message.c_str(),
                            context->user);
        else
          llvm::errs() << (location.empty() ? "" : location + ": ")
                       << (severity == LOOM_SEVERITY_ERROR     ? "error: "
                           : severity == LOOM_SEVERITY_WARNING ? "warning: "
                                                               : "note: ")
                       << message << "\n";
        for (Diagnostic &note : diag.getNotes()) {
          std::string where = locationText(note.getLocation());
          std::string text = note.str();
          if (context->callback)
            context->callback(LOOM_SEVERITY_NOTE, where.c_str(), text.c_str(),
                              context->user);
        }
        return success();
      });
  return context;
}

void loom_context_destroy(loom_context *context) { delete context; }

loom_status_code loom_compiler_status_get_code(const loom_status *status) {
  return status ? status->code : LOOM_STATUS_OK;
}

const char *loom_compiler_status_get_message(const loom_status *status) {
  return status ? status->message.c_str() : "";
}

void loom_compiler_status_destroy(loom_status *status) {
  if (status != &outOfMemory)
    delete status;
}

loom_status *loom_module_parse(loom_context *context, const char *text,
                               size_t length, const char *name,
                               loom_module **module) {
  return guarded([&]() -> loom_status * {
    if (!context || !module || (!text && length))
      return invalid("loom_module_parse: a null pointer");
    *module = nullptr;
    context->errors.clear();
    auto parsed = std::make_unique<loom_module>();
    parsed->context = context;
    parsed->sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text, length),
                                             name ? name : "<source>"),
        llvm::SMLoc());
    parsed->module = parseSourceFile<ModuleOp>(parsed->sourceMgr,
                                               ParserConfig(&context->context));
    if (!parsed->module)
      return failedWith(context, "cannot parse '" +
                                     std::string(name ? name : "<source>") + "'");
    nameArgumentsFromSource(*parsed->module, parsed->sourceMgr);
    *module = parsed.release();
    return nullptr;
  });
}

void loom_module_destroy(loom_module *module) { delete module; }

char *loom_module_print(const loom_module *module) {
  if (!module || !module->module)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  ModuleOp op = module->module.get();
  op.print(os);
  os.flush();
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

void loom_string_destroy(char *text) { std::free(text); }

loom_status *loom_module_apply_config(loom_module *module, const char *text,
                                      size_t length) {
  return guarded([&]() -> loom_status * {
    if (!module || (!text && length))
      return invalid("loom_module_apply_config: a null pointer");
    loom_context *context = module->context;
    context->errors.clear();
    std::string error;
    FailureOr<config::Config> config =
        config::parseConfig(std::string(text, length), "<config>", error);
    if (failed(config))
      return invalid(error);
    std::vector<std::string> problems;
    if (failed(config::checkConfig(*config, &context->context, problems))) {
      std::string message = std::to_string(problems.size()) +
                            " problem(s) in the configuration";
      for (const std::string &problem : problems)
        message += "; " + problem;
      return invalid(message);
    }
    FailureOr<func::FuncOp> forward =
        capi::applyRunConfig(*module->module, *config, error);
    if (failed(forward))
      return invalid(error);
    module->configPipeline = capi::getConfigPipeline(*config, *forward);
    return nullptr;
  });
}

const char *loom_module_get_config_pipeline(const loom_module *module) {
  return module ? module->configPipeline.c_str() : "";
}

loom_status *loom_module_run_pipeline(loom_module *module,
                                      const char *pipeline) {
  return guarded([&]() -> loom_status * {
    if (!module || !pipeline)
      return invalid("loom_module_run_pipeline: a null pointer");
    loom_context *context = module->context;
    context->errors.clear();
    PassManager pm(&context->context);
    std::string parseErrors;
    llvm::raw_string_ostream os(parseErrors);
    if (failed(parsePassPipeline(pipeline, pm, os))) {
      os.flush();
      return invalid("cannot parse the pipeline '" + std::string(pipeline) +
                     "': " + parseErrors);
    }
    if (failed(pm.run(*module->module)))
      return failedWith(context, "the pipeline '" + std::string(pipeline) +
                                     "' failed");
    return nullptr;
  });
}

namespace {

/// The sources for `target` and `entry` of a copy of `module`.
loom_status *emitSources(const loom_module *module, const char *target,
                         const char *entry, std::string &out) {
  std::optional<codegen::Target> parsed =
      codegen::parseTarget(target ? target : "host");
  if (!parsed)
    return invalid("unknown target '" + std::string(target) +
                   "' (host, cuda, ascend or cluster)");
  loom_context *context = module->context;
  context->errors.clear();
  ModuleOp original = module->module.get();
  OwningOpRef<ModuleOp> copy = original.clone();
  codegen::CompileOptions options;
  options.target = *parsed;
  options.entry = entry ? entry : "";
  llvm::raw_string_ostream os(out);
  if (failed(codegen::emitTargetSources(*copy, options, os)))
    return failedWith(context, "cannot emit the " +
                                   std::string(target ? target : "host") +
                                   " sources");
  os.flush();
  return nullptr;
}

} // namespace

loom_status *loom_module_emit(const loom_module *module, const char *target,
                              const char *entry, char **source) {
  return guarded([&]() -> loom_status * {
    if (!module || !source)
      return invalid("loom_module_emit: a null pointer");
    *source = nullptr;
    std::string text;
    if (loom_status *status = emitSources(module, target, entry, text))
      return status;
    *source = static_cast<char *>(std::malloc(text.size() + 1));
    std::memcpy(*source, text.c_str(), text.size() + 1);
    return nullptr;
  });
}

loom_status *loom_module_build_library(const loom_module *module,
                                       const char *target, const char *entry,
                                       const char *path) {
  return guarded([&]() -> loom_status * {
    if (!module || !target || !path)
      return invalid("loom_module_build_library: a null pointer");
    std::string text;
    if (loom_status *status = emitSources(module, target, entry, text))
      return status;
    capi::BuildKind kind = capi::getBuildKind(text, /*library=*/true);
    if (kind.cuda && !capi::haveCudaToolchain())
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        "the programs need the CUDA runtime, which this "
                        "build of Loom does not have (configure with "
                        "LOOM_ENABLE_CUDA)");
    llvm::SmallString<128> source;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "loom-program", "cpp", source))
      return makeStatus(LOOM_STATUS_INTERNAL,
                        "cannot create a temporary file: " + ec.message());
    {
      std::error_code ec;
      llvm::raw_fd_ostream file(source, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        llvm::sys::fs::remove(source);
        return makeStatus(LOOM_STATUS_INTERNAL, "cannot write '" +
                                                    source.str().str() +
                                                    "': " + ec.message());
      }
      file << text;
      file.close();
      if (file.has_error()) {
        std::string why = file.error().message();
        file.clear_error(); // (else its destructor ends the process)
        llvm::sys::fs::remove(source);
        return makeStatus(LOOM_STATUS_INTERNAL, "cannot write '" +
                                                    source.str().str() +
                                                    "': " + why);
      }
    }
    std::string problem = capi::runCommand(
        capi::getCompileCommand(source.str().str(), path, kind),
        "compiling the program library");
    llvm::sys::fs::remove(source);
    if (!problem.empty())
      return makeStatus(LOOM_STATUS_INTERNAL, problem);
    return nullptr;
  });
}

loom_status *loom_program_library_open(const char *path,
                                       loom_program_api *api) {
  return guarded([&]() -> loom_status * {
    if (!path || !api)
      return invalid("loom_program_library_open: a null pointer");
    driver::LoadError error = driver::openProgramLibrary(path, *api);
    switch (error.kind) {
    case driver::LoadError::None:
      return nullptr;
    case driver::LoadError::NotFound:
      return makeStatus(LOOM_STATUS_NOT_FOUND, error.message);
    case driver::LoadError::Incompatible:
      break;
    }
    return makeStatus(LOOM_STATUS_FAILED_PRECONDITION, error.message);
  });
}

void loom_program_library_close(loom_program_api *api) {
  if (api)
    driver::closeProgramLibrary(*api);
}

loom_status *loom_program_switch_with(const loom_program_api *from_api,
                                      loom_program *from,
                                      const loom_program_api *to_api,
                                      loom_program *to, const void *mpi_comm,
                                      int32_t flags, loom_switch_info *info) {
  return guarded([&]() -> loom_status * {
    MPI_Comm comm = mpi_comm ? *static_cast<const MPI_Comm *>(mpi_comm)
                             : MPI_COMM_WORLD;
    driver::SwitchSettings settings = driver::getSwitchSettings();
    settings.parametersOnly = (flags & LOOM_SWITCH_PARAMETERS_ONLY) != 0;
    // A refused call still takes part in the switch's agreements (failing
    // them), so that a rank whose arguments differ never leaves the others
    // waiting; the programs are not touched then.
    static const loom_program_api none = {};
    std::string refusal;
    if (!from_api || !from || !to_api || !to)
      refusal = "loom_program_switch: a null pointer";
    else if (flags & ~int32_t{LOOM_SWITCH_PARAMETERS_ONLY})
      refusal = "loom_program_switch_with: unknown flags " +
                std::to_string(flags);
    if (!refusal.empty())
      settings.invalid = refusal;
    driver::SwitchRecord record;
    std::string why = driver::switchPrograms(
        from_api ? *from_api : none, from, to_api ? *to_api : none, to, comm,
        settings, record);
    if (!refusal.empty())
      return invalid(refusal);
    if (!why.empty())
      return makeStatus(LOOM_STATUS_INTERNAL, "loom_program_switch: " + why);
    if (info)
      *info = {record.bytesSent,  record.bytesReceived,
               record.messagesSent, record.planBytes,
               record.arguments,  record.seconds,
               record.bytesSentOffNode};
    return nullptr;
  });
}

loom_status *loom_program_switch(const loom_program_api *from_api,
                                 loom_program *from,
                                 const loom_program_api *to_api,
                                 loom_program *to, const void *mpi_comm,
                                 loom_switch_info *info) {
  return loom_program_switch_with(from_api, from, to_api, to, mpi_comm, 0,
                                  info);
}
