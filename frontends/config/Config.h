//===- Config.h - The run configuration (protobuf text format) -*- C++ -*-===//
//
// Loads and checks a `loom.config.Config` written in protobuf text format
// (loom_config.proto): the cluster, device groups, layouts by argument name
// and the run. Parse errors carry the file, line and column; a config that
// parses is then checked as a whole (unique device ids, groups and layouts
// on devices of the cluster, layouts that parse as hspmd layouts, a rank
// count that matches the devices the layouts use, a known target).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_CONFIG_CONFIG_H
#define LOOM_FRONTENDS_CONFIG_CONFIG_H

#include "frontends/config/loom_config.pb.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace loom::config {

/// Parses the text-format config at `path`. Failure with `error` set to
/// `path:line:column: message` (or why the file cannot be read).
mlir::FailureOr<Config> loadConfig(const std::string &path, std::string &error);

/// Parses text-format `text`, errors named after `name`.
mlir::FailureOr<Config> parseConfig(const std::string &text,
                                    const std::string &name,
                                    std::string &error);

/// Checks `config` as a whole; every problem is one line of `errors`.
/// Layouts are parsed in `context` (which must have the hspmd dialect).
mlir::LogicalResult checkConfig(const Config &config,
                                mlir::MLIRContext *context,
                                std::vector<std::string> &errors);

/// Whether `name` matches the glob `pattern` (`*`: any run, `?`: one
/// character).
bool matchGlob(llvm::StringRef pattern, llvm::StringRef name);

/// One line: devices, nodes, groups, layouts and the run.
std::string summarize(const Config &config);

} // namespace loom::config

#endif // LOOM_FRONTENDS_CONFIG_CONFIG_H
