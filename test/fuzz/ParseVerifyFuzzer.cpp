//===- ParseVerifyFuzzer.cpp - libFuzzer target over parse + verify -------===//
//
// Feeds arbitrary text to the parser with every dialect loom-opt registers.
// Whatever parses must verify (the parser verifies), print, parse back and
// print the same text again. Then autodiff (nn-autodiff), the training
// step (nn-training-step), the cross-entropy decomposition
// (nn-decompose-cross-entropy), prefix deduplication
// (nn-prefix-dedup), share selection (hspmd-select-shares), layout
// propagation (hspmd-propagate-layouts, across device groups too),
// reshard lowering (hspmd-lower-reshards), the whole partitioning chain
// (propagation, reshard insertion and lowering, specialisation, bucketing)
// and specialisation + bucketing alone run on copies: they may fail, but
// must not crash, and what they produce
// when they succeed must verify. Every op's factor rule must pass
// FactorRule::verify (nn-print-factor-rules succeeds on any valid module).
// A crash, a sanitizer report, a round trip that changes the text, a pass
// that produces invalid IR or an invalid factor rule is a finding;
// diagnostics are expected and ignored.
//
//===----------------------------------------------------------------------===//

#include "dialects/InitAllDialects.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mlir;

static std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Runs `pass` on a copy of `module`. Failure is fine; success must leave
/// valid IR.
static void runPassesOnCopy(ModuleOp module,
                            std::vector<std::unique_ptr<Pass>> passes,
                            llvm::StringRef name) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(module.getContext());
  // Verify ourselves, to tell a failing pass from one that breaks the IR.
  pm.enableVerifier(false);
  for (std::unique_ptr<Pass> &pass : passes)
    pm.addPass(std::move(pass));
  if (failed(pm.run(*copy)))
    return;
  if (failed(verify(*copy))) {
    llvm::errs() << name << " produced invalid IR from:\n"
                 << print(module) << '\n';
    std::abort();
  }
}

static void runPassOnCopy(ModuleOp module, std::unique_ptr<Pass> pass,
                          llvm::StringRef name) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::move(pass));
  runPassesOnCopy(module, std::move(passes), name);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    loom::registerAllDialects(*r);
    return r;
  }();
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });

  // MLIR's lexer relies on the buffer ending in a NUL, as files and
  // std::string buffers do; the fuzzer's bytes do not.
  std::string source(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module)
    return 0;
  if (failed(verify(*module)))
    return 0;
  std::string first = print(*module);
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(first, &context);
  if (!reparsed) {
    llvm::errs() << "printed IR does not parse back:\n" << first << '\n';
    std::abort();
  }
  std::string second = print(*reparsed);
  if (first != second) {
    llvm::errs() << "round trip changed the IR:\n" << first << "\n---\n"
                 << second << '\n';
    std::abort();
  }
  PassManager rules(&context);
  rules.addPass(loom::createPrintFactorRulesPass());
  if (failed(rules.run(*module))) {
    llvm::errs() << "an op's factor rule is invalid in:\n" << first << '\n';
    std::abort();
  }
  runPassOnCopy(*module, loom::createAutodiffPass(), "nn-autodiff");
  loom::TrainingStepPassOptions sgd;
  sgd.optimizer = loom::OptimizerKind::SGD;
  sgd.momentum = 0.9;
  runPassOnCopy(*module, loom::createTrainingStepPass(sgd),
                "nn-training-step");
  runPassOnCopy(*module, loom::createDecomposeCrossEntropyPass(),
                "nn-decompose-cross-entropy");
  loom::PrefixDedupPassOptions dedup;
  dedup.capacity = 32;
  dedup.bins = 2;
  runPassOnCopy(*module, loom::createPrefixDedupPass(dedup),
                "nn-prefix-dedup");
  runPassOnCopy(*module, loom::createLayoutPropagationPass(),
                "hspmd-propagate-layouts");
  runPassOnCopy(*module, loom::createReshardLoweringPass(),
                "hspmd-lower-reshards");
  loom::SelectSharesPassOptions shares;
  shares.alignment = 2;
  runPassOnCopy(*module, loom::createSelectSharesPass(shares),
                "hspmd-select-shares");
  std::vector<std::unique_ptr<Pass>> pipeline;
  pipeline.push_back(loom::createLayoutPropagationPass());
  pipeline.push_back(loom::createReshardInsertionPass());
  pipeline.push_back(loom::createReshardLoweringPass());
  pipeline.push_back(loom::createSpecializationPass());
  pipeline.push_back(loom::createGradientBucketingPass());
  runPassesOnCopy(*module, std::move(pipeline),
                  "hspmd-propagate-layouts,hspmd-insert-reshards,"
                  "hspmd-lower-reshards,hspmd-specialize,"
                  "hspmd-bucket-gradients");
  // Specialisation and bucketing alone, on whatever layouts the input has.
  std::vector<std::unique_ptr<Pass>> local;
  local.push_back(loom::createSpecializationPass());
  local.push_back(loom::createGradientBucketingPass());
  runPassesOnCopy(*module, std::move(local),
                  "hspmd-specialize,hspmd-bucket-gradients");
  return 0;
}
