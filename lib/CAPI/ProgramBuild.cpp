//===- ProgramBuild.cpp - Compiling generated programs --------------------===//

#include "lib/CAPI/ProgramBuild.h"

#include "tools/loom-run/HostToolchain.h"
#ifdef LOOM_HAVE_CUDA_TOOLCHAIN
#include "tools/loom-run/CudaToolchain.h"
#endif

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Program.h"

using namespace loom::capi;

namespace {

void appendWords(std::vector<std::string> &command, llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> words;
  text.split(words, ' ', -1, /*KeepEmpty=*/false);
  command.insert(command.end(), words.begin(), words.end());
}

} // namespace

BuildKind loom::capi::getBuildKind(llvm::StringRef source, bool library) {
  BuildKind kind;
  kind.cuda = source.contains("#include \"runtime/cuda/Program.h\"");
  kind.ascend = source.contains("#include \"runtime/ascend/Program.h\"");
  kind.library = library;
  return kind;
}

bool loom::capi::haveCudaToolchain() {
#ifdef LOOM_CUDA_LIBS
  return true;
#else
  return false;
#endif
}

std::vector<std::string>
loom::capi::getCompileCommand(const std::string &source,
                              const std::string &output,
                              const BuildKind &kind) {
  std::vector<std::string> command = {LOOM_HOST_CXX};
  if (kind.library)
    appendWords(command, LOOM_HOST_LIBRARY_FLAGS);
#ifdef LOOM_CUDA_INCLUDES
  if (kind.cuda)
    appendWords(command, LOOM_CUDA_INCLUDES);
#endif
  appendWords(command, LOOM_HOST_FLAGS);
  appendWords(command, LOOM_HOST_INCLUDES);
  command.push_back(source);
  command.push_back("-o");
  command.push_back(output);
#ifdef LOOM_CUDA_LIBS
  if (kind.cuda)
    appendWords(command, LOOM_CUDA_LIBS);
#endif
  if (kind.ascend)
    appendWords(command, LOOM_ASCEND_LIBS);
  appendWords(command, LOOM_HOST_LIBS);
  return command;
}

std::string loom::capi::runCommand(llvm::ArrayRef<std::string> command,
                                   const std::string &what) {
  llvm::ErrorOr<std::string> program =
      llvm::sys::findProgramByName(command.front());
  if (!program)
    return what + ": cannot find '" + command.front() + "'";
  llvm::SmallVector<llvm::StringRef> args(command.begin(), command.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0,
                                         0, &message);
  if (status == 0)
    return "";
  return (what + " failed (exit status " + llvm::Twine(status) + ")" +
          (message.empty() ? "" : ": " + message) + ": " +
          llvm::join(command, " "))
      .str();
}
