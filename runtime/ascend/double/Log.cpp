//===- Log.cpp - Error messages and the call log of the test double -------===//
//
// Part of the CPU test double of CANN (see Double.h). A failing call sets
// the calling thread's recent error message, which aclGetRecentErrMsg
// returns and clears, as CANN's does; the double prints nothing itself.
// With LOOM_ASCEND_DOUBLE_LOG=<prefix>, every entry point appends one line
// to `<prefix>.<rank>`, so tests can check the sequence of calls a program
// makes.
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <mpi.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

std::string vformat(const char *format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (length <= 0)
    return {};
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, args);
  text.resize(static_cast<size_t>(length));
  return text;
}

/// The calling thread's message not yet fetched, and the one
/// aclGetRecentErrMsg last returned (valid until its next call).
thread_local std::string pendingMessage;
thread_local std::string returnedMessage;

//===----------------------------------------------------------------------===//
// The log file
//===----------------------------------------------------------------------===//

const char *logPrefix() {
  static const char *prefix = [] {
    const char *value = std::getenv("LOOM_ASCEND_DOUBLE_LOG");
    return value && *value ? value : nullptr;
  }();
  return prefix;
}

/// MPI_COMM_WORLD's rank when MPI is running, else the launcher's rank
/// variable (Open MPI, then PMIx and PMI), else 0.
int logRank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return 0;
}

std::mutex logMutex;
FILE *logFile = nullptr;
bool logFailed = false;

void writeLine(const std::string &line) {
  std::lock_guard<std::mutex> lock(logMutex);
  if (!logFile && !logFailed) {
    std::string path = format("%s.%d", logPrefix(), logRank());
    logFile = std::fopen(path.c_str(), "a");
    logFailed = logFile == nullptr;
  }
  if (!logFile)
    return;
  std::fputs(line.c_str(), logFile);
  std::fputc('\n', logFile);
  std::fflush(logFile);
}

} // namespace

int testdouble::fail(int code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  pendingMessage = vformat(format, args);
  va_end(args);
  return code;
}

std::string testdouble::format(const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::string text = vformat(format, args);
  va_end(args);
  return text;
}

CallLog::CallLog(const char *function) : on(logPrefix() != nullptr) {
  if (on)
    line = function;
}

CallLog::~CallLog() {
  if (on)
    writeLine(line);
}

void CallLog::add(const char *format, ...) {
  if (!on)
    return;
  va_list args;
  va_start(args, format);
  line += ' ';
  line += vformat(format, args);
  va_end(args);
}

//===----------------------------------------------------------------------===//
// aclGetRecentErrMsg
//===----------------------------------------------------------------------===//

const char *aclGetRecentErrMsg() {
  CallLog call("aclGetRecentErrMsg");
  // As CANN's: the message is fetched and cleared; null when there is none.
  if (pendingMessage.empty()) {
    call.add("-> none");
    return nullptr;
  }
  returnedMessage = std::move(pendingMessage);
  pendingMessage.clear();
  return returnedMessage.c_str();
}
