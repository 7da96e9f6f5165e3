//===- ArgumentNames.h - Source names of function arguments -----*- C++ -*-===//
//
// The names a source gives function arguments (`%tokens`) are not part of
// the IR: the parser keeps only each argument's location, the `%name`
// token's line and column. Tools that parse text (loom-opt, loom-run) record
// them as `nn.name` argument attributes, which `--data DIR`, run
// configurations and the generated code's buffer names match by, and which
// the passes that build new functions carry over (nn-training-step,
// hspmd-specialize).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_ARGUMENTNAMES_H
#define LOOM_PASSES_ARGUMENTNAMES_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>

namespace loom {

/// The source name at `loc`: the identifier of the `%identifier` token that
/// a file location into one of `sourceMgr`'s buffers points at (without the
/// `%`). None where the location is not such a point, the text there is not
/// such a token, or the token is `%0`-like or `%argN` (how the printer writes
/// arguments, which carries no name).
std::optional<llvm::StringRef>
getSourceArgumentName(mlir::Location loc, llvm::SourceMgr &sourceMgr);

/// Records the source name (getSourceArgumentName) of every argument of every
/// `func.func` under `root` as `nn.name`, leaving existing names alone.
void nameArgumentsFromSource(mlir::Operation *root, llvm::SourceMgr &sourceMgr);

/// nameArgumentsFromSource with the files the arguments' locations name, read
/// from disk (for a tool that gets the IR without its buffer, like a
/// translation of loom-translate); arguments of unreadable files (`<stdin>`)
/// stay unnamed.
void nameArgumentsFromSourceFiles(mlir::Operation *root);

/// A pass that runs nameArgumentsFromSource on the module; `sourceMgr` (the
/// buffer the module was parsed from) must outlive it. loom-opt adds it in
/// front of the command line's pipeline.
std::unique_ptr<mlir::Pass>
createNameArgumentsFromSourcePass(llvm::SourceMgr &sourceMgr);

/// Registers `--nn-name-arguments-from-source`: the pass without a source
/// manager, which reads the files the locations name
/// (nameArgumentsFromSourceFiles), so that pipelines loom-opt prints (crash
/// reproducers, --dump-pass-pipeline) parse again.
void registerNameArgumentsFromSourcePass();

} // namespace loom

#endif // LOOM_PASSES_ARGUMENTNAMES_H
