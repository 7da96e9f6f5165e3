//===- LocalView.h - Where a local part sits in the global tensors -*- C++ -*-===//
//
// The position of a local part of an op's tensors, as the partitioning
// passes know it, for LocalViewOpInterface::localize. A pass derives one
// class from LocalView that builds block starts its way (specialisation:
// from the device's coordinates on the mesh axes that split a dimension;
// partitioning across groups: the group's constant offset); the ops build
// their local form from it without knowing which pass asks.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_INTERFACES_LOCALVIEW_H
#define LOOM_DIALECTS_INTERFACES_LOCALVIEW_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>
#include <utility>

namespace loom {

class LocalView {
public:
  /// `global` is the op before localisation (its types are the global
  /// ones), `local` its clone with the local types.
  LocalView(mlir::Operation *global, mlir::Operation *local)
      : global(global), local(local),
        replacements(global->getNumResults(), mlir::Value()) {}
  virtual ~LocalView();

  mlir::Operation *getGlobalOp() const { return global; }
  mlir::Operation *getLocalOp() const { return local; }

  /// Whether the local op holds a block of dimension `dim` of its operand
  /// (result) `index` (isSplit).
  bool isOperandSplit(unsigned index, int64_t dim) const {
    return isSplit(/*isResult=*/false, index, dim);
  }
  bool isResultSplit(unsigned index, int64_t dim) const {
    return isSplit(/*isResult=*/true, index, dim);
  }
  /// Whether any dimension of operand (result) `index` is split.
  bool isOperandSplit(unsigned index) const;
  bool isResultSplit(unsigned index) const;

  /// The global start of the block the local op holds along `dim` of its
  /// operand (result) `index`, plus `offset` (a 0-d `i64` value of the
  /// op's that already counts in a larger tensor, or null), as a 0-d `i64`
  /// value built before the local op. Where `dim` is not split: `offset`
  /// itself (null when null). Fails after a diagnostic where the start
  /// cannot be added to `offset` (one computed at run time).
  mlir::FailureOr<mlir::Value> getOperandStart(mlir::OpBuilder &builder,
                                               unsigned index, int64_t dim,
                                               mlir::Value offset = {});
  mlir::FailureOr<mlir::Value> getResultStart(mlir::OpBuilder &builder,
                                              unsigned index, int64_t dim,
                                              mlir::Value offset = {});

  /// The share of the global elements along `dims` of operand `index` that
  /// the local op holds: the product over the split ones of getShare's
  /// part / whole, as one division (1 when none is split).
  double getOperandShare(unsigned index, llvm::ArrayRef<int64_t> dims) const;

  /// Makes `value` stand for the global op's result `index` from now on
  /// (instead of the local op's result).
  void replaceResult(unsigned index, mlir::Value value) {
    replacements[index] = value;
  }
  /// The value standing for result `index`: a replacement, or the local
  /// op's result.
  mlir::Value getResult(unsigned index) const {
    return replacements[index] ? replacements[index]
                               : local->getResult(index);
  }

  /// Records that the local op stopped using `value` (an offset folded
  /// into a block start): the pass erases its producer if nothing else
  /// uses it once the whole function is built.
  void noteReplaced(mlir::Value value) {
    if (value)
      replaced.push_back(value);
  }
  llvm::ArrayRef<mlir::Value> getReplacedValues() const { return replaced; }

  /// An error at the global op, naming it: "'<op>' op cannot be localised
  /// for its layouts <layouts>: <why>".
  mlir::InFlightDiagnostic emitError(const llvm::Twine &why) const;

protected:
  /// Whether dimension `dim` of the tensor (`isResult`, `index`) is split.
  /// By default: its local size is static and smaller than the global one,
  /// also static; a pass that knows the layout says so from the layout.
  virtual bool isSplit(bool isResult, unsigned index, int64_t dim) const;
  /// The part of the global extent along a split `dim` that the local op
  /// holds, as (part, whole); by default the two static sizes.
  virtual std::pair<int64_t, int64_t> getShare(bool isResult, unsigned index,
                                               int64_t dim) const;
  /// The block start along `dim` of the tensor (`isResult`, `index`) of
  /// the local op, plus `base`, built at the builder's insertion point.
  /// Called only for a split dimension whose local size is static.
  virtual mlir::Value createStart(mlir::OpBuilder &builder, bool isResult,
                                  unsigned index, int64_t dim,
                                  int64_t base) = 0;
  /// The layouts of the op's tensors as the pass knows them, for
  /// diagnostics.
  virtual std::string describeLayouts() const = 0;

private:
  mlir::FailureOr<mlir::Value> getStart(mlir::OpBuilder &builder,
                                        bool isResult, unsigned index,
                                        int64_t dim, mlir::Value offset);

  mlir::Operation *global;
  mlir::Operation *local;
  llvm::SmallVector<mlir::Value> replacements;
  llvm::SmallVector<mlir::Value> replaced;
};

/// Localises `local`, the clone of `global` with local types, through
/// LocalViewOpInterface when it implements it (a no-op otherwise); the
/// builder's insertion point ends after everything built.
mlir::LogicalResult localizeOp(mlir::OpBuilder &builder, LocalView &view);

} // namespace loom

#include "dialects/Interfaces/LocalViewOpInterface.h.inc"

#endif // LOOM_DIALECTS_INTERFACES_LOCALVIEW_H
