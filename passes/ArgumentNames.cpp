//===- ArgumentNames.cpp - Source names of function arguments -------------===//

#include "passes/ArgumentNames.h"

#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

std::optional<llvm::StringRef>
loom::getSourceArgumentName(Location loc, llvm::SourceMgr &sourceMgr) {
  auto file = dyn_cast<FileLineColRange>(loc);
  if (!file)
    return std::nullopt;
  for (unsigned id = 1; id <= sourceMgr.getNumBuffers(); ++id) {
    const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(id);
    if (buffer->getBufferIdentifier() != file.getFilename().strref())
      continue;
    llvm::SMLoc at = sourceMgr.FindLocForLineAndColumn(id, file.getStartLine(),
                                                       file.getStartColumn());
    if (!at.isValid())
      return std::nullopt;
    llvm::StringRef text(at.getPointer(),
                         buffer->getBufferEnd() - at.getPointer());
    if (!text.consume_front("%"))
      return std::nullopt;
    // An SSA name: a suffix-id, [A-Za-z_$.-][A-Za-z0-9_$.-]* or digits.
    size_t size = 0;
    while (size < text.size() && (llvm::isAlnum(text[size]) ||
                                  llvm::StringRef("_$.-").contains(text[size])))
      ++size;
    llvm::StringRef name = text.take_front(size);
    // %0, and %argN as the printer writes unnamed arguments: no name.
    llvm::StringRef digits = name;
    if (name.empty() || llvm::isDigit(name.front()) ||
        (digits.consume_front("arg") && !digits.empty() &&
         llvm::all_of(digits, llvm::isDigit)))
      return std::nullopt;
    return name;
  }
  return std::nullopt;
}

void loom::nameArgumentsFromSource(Operation *root,
                                   llvm::SourceMgr &sourceMgr) {
  StringRef attrName = nn::NNDialect::getNameAttrName();
  root->walk([&](func::FuncOp func) {
    if (func.isExternal())
      return;
    for (BlockArgument arg : func.getArguments()) {
      unsigned index = arg.getArgNumber();
      if (func.getArgAttr(index, attrName))
        continue;
      if (std::optional<llvm::StringRef> name =
              getSourceArgumentName(arg.getLoc(), sourceMgr))
        func.setArgAttr(index, attrName,
                        StringAttr::get(func.getContext(), *name));
    }
  });
}

void loom::nameArgumentsFromSourceFiles(Operation *root) {
  llvm::SourceMgr sourceMgr;
  llvm::StringSet<> seen;
  root->walk([&](func::FuncOp func) {
    for (BlockArgument arg : func.getArguments()) {
      auto file = dyn_cast<FileLineColRange>(arg.getLoc());
      if (!file || !seen.insert(file.getFilename().strref()).second)
        continue;
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
          llvm::MemoryBuffer::getFile(file.getFilename().strref(),
                                      /*IsText=*/true);
      if (buffer)
        sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    }
  });
  nameArgumentsFromSource(root, sourceMgr);
}

namespace {

/// With a source manager, names from its buffers (loom-opt's input); without
/// one (`--nn-name-arguments-from-source` on the command line, a crash
/// reproducer), from the files the locations name.
struct NameArgumentsFromSourcePass
    : public PassWrapper<NameArgumentsFromSourcePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(NameArgumentsFromSourcePass)

  NameArgumentsFromSourcePass() = default;
  explicit NameArgumentsFromSourcePass(llvm::SourceMgr &sourceMgr)
      : sourceMgr(&sourceMgr) {}

  StringRef getArgument() const final {
    return "nn-name-arguments-from-source";
  }
  StringRef getName() const final { return "NameArgumentsFromSourcePass"; }
  StringRef getDescription() const final {
    return "Records function arguments' source names (%tokens) as nn.name";
  }
  void getDependentDialects(DialectRegistry &registry) const final {
    registry.insert<loom::nn::NNDialect>();
  }
  void runOnOperation() final {
    if (sourceMgr)
      loom::nameArgumentsFromSource(getOperation(), *sourceMgr);
    else
      loom::nameArgumentsFromSourceFiles(getOperation());
  }

  llvm::SourceMgr *sourceMgr = nullptr;
};

} // namespace

std::unique_ptr<Pass>
loom::createNameArgumentsFromSourcePass(llvm::SourceMgr &sourceMgr) {
  return std::make_unique<NameArgumentsFromSourcePass>(sourceMgr);
}

void loom::registerNameArgumentsFromSourcePass() {
  PassRegistration<NameArgumentsFromSourcePass>();
}
