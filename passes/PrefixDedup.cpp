//===- PrefixDedup.cpp - A padded-batch step over the batch's prefix trie -===//
//
// nn-prefix-dedup: rewrites a function over a padded batch of token
// sequences, `[batch, seq]`, into the same function over the batch's prefix
// trie packed in depth-first order, `[bins, capacity]`, so that a prefix
// shared by several samples is computed once. See the pass description in
// Passes.td; the user-facing account is docs/prefix-dedup.md.
//
// Every value of the body falls in one of three classes:
//
//   node-valued    derived from the tokens: one value per trie node, shape
//                  [bins, capacity, ...] after the rewrite (from [batch,
//                  seq, ...] before);
//   dual           an iota along the sequence (positions): a node form
//                  (the nodes' original positions, an argument) and its
//                  original per-sample form, both valid;
//   per-sample     everything else: parameters, constants, the targets,
//                  weights, advantages and old log-probabilities, and what
//                  is computed from them. Unchanged.
//
// Ops are visited in order. An op that reads a node-valued operand is
//
//   * attention with a causal mask: the tree mask over the packing;
//   * a cross-entropy or a take-along gather over the classes, with labels
//     that are a function argument: a log-softmax per node, then one
//     scalar per (sample, token) gathered from it (`trie_index_<labels>`
//     holds node * vocab + label), so the objective that follows is the
//     per-sample one, with the un-deduplicated normalisers;
//   * token-wise (its factor rule maps the batch and sequence dimensions of
//     every tensor that has them to parallel factors of the results): the
//     same op on the node forms;
//   * anything else: it reads the per-sample form of its operands,
//     gathered from the nodes by `trie_nodes` (exact, not deduplicated).
//
// Dropout (rate > 0) is an error: its mask depends on the sample's index.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Interfaces/LayoutRuleOpInterface.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <numeric>

namespace loom {
#define GEN_PASS_DEF_PREFIXDEDUPPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::nn;

namespace {

/// Whether `attrs` marks a data argument.
bool isData(func::FuncOp func, unsigned index) {
  return static_cast<bool>(
      func.getArgAttr(index, NNDialect::getDataAttrName()));
}

std::string getArgName(func::FuncOp func, unsigned index) {
  if (auto name = func.getArgAttrOfType<StringAttr>(
          index, NNDialect::getNameAttrName()))
    return name.getValue().str();
  return "arg" + std::to_string(index);
}

class Deduplicator {
public:
  Deduplicator(func::FuncOp func, int64_t bins, int64_t capacity)
      : func(func), builder(func.getContext()), bins(bins),
        capacity(capacity) {}

  /// Rewrites the function; false after a diagnostic.
  bool run();

private:
  bool findTokens();
  Value addArgument(RankedTensorType type, StringRef name);
  bool visit(Operation *op);

  bool isNodeValued(Value v) const { return nodeForms.count(v); }
  /// `[batch, seq, rest...]` -> `[bins, capacity, rest...]`.
  RankedTensorType toNodeType(Type type) const {
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] = bins;
    shape[1] = capacity;
    return RankedTensorType::get(shape, tensor.getElementType());
  }
  bool hasTokenShape(Type type) const {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape() && tensor.getRank() >= 2 &&
           tensor.getDimSize(0) == batch && tensor.getDimSize(1) == seq;
  }
  /// The node form of a constant with the token dimensions (a fill, an
  /// iota along a later dimension), created on demand; null otherwise.
  Value getConstantNodeForm(Value v);
  /// The per-sample form of node-valued `v`, gathered from the nodes.
  Value expand(Value v, Location loc);
  Value getNodes(Location loc);
  /// The argument holding node * vocab + label for labels argument `arg`.
  Value getLabelIndex(BlockArgument labels, int64_t vocab, Location loc);
  /// `input` (node-valued, `[bins, capacity, vocab]`) gathered at the label
  /// index of every (sample, token, k): `[bins, batch / bins * seq * k]`.
  Value gatherLabels(Value input, BlockArgument labels, Location loc);
  /// The labels' argument when `v` is one, through reshapes; null otherwise.
  BlockArgument traceToArgument(Value v);

  bool isTokenWise(Operation *op);
  /// The op on the node forms; false (nothing changed) where the clone
  /// does not verify (an attribute that spells the token dimensions).
  bool cloneOnNodes(Operation *op);
  bool rewriteAttention(AttentionOp op);
  bool rewriteCrossEntropy(CrossEntropyOp op);
  bool rewriteGather(GatherOp op);
  void expandOperands(Operation *op);

  func::FuncOp func;
  OpBuilder builder;
  int64_t bins, capacity, batch = 0, seq = 0;
  BlockArgument tokens;
  Value positions, subtreeEnd, nodes;
  DenseMap<Value, Value> nodeForms;
  DenseSet<Value> duals;
  DenseMap<Value, Value> expansions;
  llvm::MapVector<BlockArgument, Value> labelIndices;
  std::optional<int64_t> vocab;
  /// Original ops whose results only exist as node forms now.
  SmallVector<Operation *> stale;
  /// Set after a diagnostic in a helper that cannot return failure.
  bool hadError = false;
};

/// The candidates for the token argument of `func`: nn.data [batch, seq]
/// integer tensors read as nn.embedding ids.
SmallVector<BlockArgument> getTokenCandidates(func::FuncOp func) {
  SmallVector<BlockArgument> candidates;
  if (func.isExternal())
    return candidates;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!isData(func, arg.getArgNumber()) || !type || type.getRank() != 2 ||
        !type.hasStaticShape() || !isa<IntegerType>(type.getElementType()))
      continue;
    if (llvm::any_of(arg.getUsers(), [&](Operation *user) {
          auto lookup = dyn_cast<EmbeddingOp>(user);
          return lookup && lookup.getIds() == arg;
        }))
      candidates.push_back(arg);
  }
  return candidates;
}

bool hasTokenArgument(func::FuncOp func) {
  return !getTokenCandidates(func).empty();
}

bool Deduplicator::findTokens() {
  SmallVector<BlockArgument> candidates = getTokenCandidates(func);
  if (candidates.size() != 1) {
    func.emitError() << "prefix deduplication needs exactly one token "
                        "argument (an nn.data [batch, seq] integer tensor "
                        "read as nn.embedding ids), found "
                     << candidates.size();
    return false;
  }
  tokens = candidates.front();
  auto type = cast<RankedTensorType>(tokens.getType());
  batch = type.getDimSize(0);
  seq = type.getDimSize(1);
  if (batch % bins != 0) {
    func.emitError() << "bins = " << bins << " does not divide the batch of "
                     << batch << " samples (each bin holds batch / bins "
                     << "sample slots)";
    return false;
  }
  return true;
}

Value Deduplicator::addArgument(RankedTensorType type, StringRef name) {
  unsigned index = func.getNumArguments();
  Builder b(func.getContext());
  NamedAttribute attrs[] = {
      b.getNamedAttr(NNDialect::getDataAttrName(), b.getUnitAttr()),
      b.getNamedAttr(NNDialect::getNameAttrName(), b.getStringAttr(name))};
  if (failed(func.insertArgument(index, type, b.getDictionaryAttr(attrs),
                                 func.getLoc()))) {
    func.emitError() << "cannot add argument '" << name << "'";
    hadError = true;
    return {};
  }
  return func.getArgument(index);
}

Value Deduplicator::getConstantNodeForm(Value v) {
  if (auto it = nodeForms.find(v); it != nodeForms.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  if (!def || !hasTokenShape(v.getType()))
    return {};
  auto iota = dyn_cast<IotaOp>(def);
  if (!isa<FillOp>(def) && !(iota && iota.getDim() >= 2 && !iota.getOffset()))
    return {};
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfter(def);
  Operation *clone = builder.clone(*def);
  clone->getResult(0).setType(toNodeType(v.getType()));
  nodeForms[v] = clone->getResult(0);
  duals.insert(v);
  return clone->getResult(0);
}

Value Deduplicator::getNodes(Location loc) {
  if (!nodes)
    nodes = addArgument(
        RankedTensorType::get({batch, seq}, builder.getI64Type()),
        "trie_nodes");
  (void)loc;
  return nodes;
}

Value Deduplicator::expand(Value v, Location loc) {
  if (auto it = expansions.find(v); it != expansions.end())
    return it->second;
  Value nodeValue = nodeForms.lookup(v);
  auto type = cast<RankedTensorType>(v.getType());
  int64_t width = 1;
  for (int64_t d : type.getShape().drop_front(2))
    width *= d;
  int64_t slots = batch / bins * seq;
  Value index = getNodes(loc);
  if (!index)
    return nodeValue; // (hadError is set: the caller stops)
  Type element = type.getElementType();
  auto reshape = [&](RankedTensorType to, Value from) -> Value {
    if (from.getType() == to)
      return from;
    return ReshapeOp::create(builder, loc, to, from);
  };
  Value rows = reshape(
      RankedTensorType::get({bins, capacity, width}, element), nodeValue);
  Value column = ReshapeOp::create(
      builder, loc,
      RankedTensorType::get({bins, slots, 1}, builder.getI64Type()), index);
  if (width != 1)
    column = BroadcastOp::create(
        builder, loc,
        RankedTensorType::get({bins, slots, width}, builder.getI64Type()),
        column, DenseI64ArrayAttr());
  Value picked = GatherOp::create(builder, loc, rows, column, 1);
  Value result = reshape(type, picked);
  expansions[v] = result;
  return result;
}

Value Deduplicator::getLabelIndex(BlockArgument labels, int64_t classes,
                                  Location loc) {
  vocab = classes;
  if (Value existing = labelIndices.lookup(labels))
    return existing;
  auto type = cast<RankedTensorType>(labels.getType());
  Value arg = addArgument(
      RankedTensorType::get(type.getShape(), builder.getI64Type()),
      "trie_index_" + getArgName(func, labels.getArgNumber()));
  if (arg)
    labelIndices[labels] = arg;
  return arg;
}

BlockArgument Deduplicator::traceToArgument(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front() ||
      !isData(func, arg.getArgNumber()) || isNodeValued(arg))
    return {};
  return arg;
}

Value Deduplicator::gatherLabels(Value input, BlockArgument labels,
                                 Location loc) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t classes = type.getDimSize(2);
  Value index = getLabelIndex(labels, classes, loc);
  if (!index)
    return {};
  int64_t count = cast<RankedTensorType>(labels.getType()).getNumElements();
  Value flat = ReshapeOp::create(
      builder, loc,
      RankedTensorType::get({bins, capacity * classes},
                            type.getElementType()),
      input);
  Value rows = ReshapeOp::create(
      builder, loc,
      RankedTensorType::get({bins, count / bins}, builder.getI64Type()),
      index);
  return GatherOp::create(builder, loc, flat, rows, 1);
}

bool Deduplicator::isTokenWise(Operation *op) {
  auto ruleOp = dyn_cast<LayoutRuleOpInterface>(op);
  if (!ruleOp)
    return false;
  FactorRule rule = ruleOp.getFactorRule();
  auto single = [&](const TensorFactors &dims, unsigned d) -> int64_t {
    if (dims.size() <= d || dims[d].size() != 1)
      return -1;
    int64_t f = dims[d].front();
    return rule.getFactor(f).kind == FactorKind::Parallel ? f : -1;
  };
  int64_t batchFactor = -1, seqFactor = -1;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isNodeValued(operand))
      continue;
    const TensorFactors &dims = rule.getOperands()[i];
    int64_t b = single(dims, 0), s = single(dims, 1);
    if (b < 0 || s < 0 || (batchFactor >= 0 && b != batchFactor) ||
        (seqFactor >= 0 && s != seqFactor))
      return false;
    batchFactor = b;
    seqFactor = s;
  }
  auto atFront = [&](const TensorFactors &dims) {
    return single(dims, 0) == batchFactor && single(dims, 1) == seqFactor;
  };
  auto mentions = [&](const TensorFactors &dims) {
    for (const DimFactors &dim : dims)
      if (llvm::is_contained(dim, batchFactor) ||
          llvm::is_contained(dim, seqFactor))
        return true;
    return false;
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    const TensorFactors &dims = rule.getOperands()[i];
    if (isNodeValued(operand) || !mentions(dims))
      continue;
    if (!atFront(dims) || !getConstantNodeForm(operand))
      return false;
  }
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (!atFront(rule.getResults()[i]) || !hasTokenShape(result.getType()))
      return false;
  return true;
}

bool Deduplicator::cloneOnNodes(Operation *op) {
  IRMapping mapping;
  bool allDual = true;
  for (Value operand : op->getOperands()) {
    if (Value node = nodeForms.lookup(operand)) {
      mapping.map(operand, node);
      allDual &= duals.contains(operand);
    }
  }
  builder.setInsertionPoint(op);
  Operation *clone = builder.clone(*op, mapping);
  for (auto [result, cloned] :
       llvm::zip(op->getResults(), clone->getResults()))
    cloned.setType(toNodeType(result.getType()));
  // A slice taking the token dimensions whole takes them whole on nodes.
  if (auto slice = dyn_cast<SliceOp>(clone)) {
    SmallVector<int64_t> sizes(slice.getSizes());
    sizes[0] = bins;
    sizes[1] = capacity;
    slice.setSizes(sizes);
  }
  bool valid;
  {
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    valid = succeeded(mlir::verify(clone));
  }
  if (!valid) {
    clone->erase();
    return false;
  }
  for (auto [result, cloned] :
       llvm::zip(op->getResults(), clone->getResults())) {
    nodeForms[result] = cloned;
    if (allDual)
      duals.insert(result);
  }
  if (!allDual)
    stale.push_back(op);
  return true;
}

void Deduplicator::expandOperands(Operation *op) {
  builder.setInsertionPoint(op);
  for (OpOperand &use : op->getOpOperands()) {
    Value v = use.get();
    if (isNodeValued(v) && !duals.contains(v))
      use.set(expand(v, op->getLoc()));
  }
}

bool Deduplicator::rewriteAttention(AttentionOp op) {
  Value q = nodeForms.lookup(op.getQuery()), k = nodeForms.lookup(op.getKey()),
        v = nodeForms.lookup(op.getValue());
  if (!q || !k || !v) {
    op.emitError() << "attends between token-derived and per-sample tensors; "
                      "prefix deduplication needs the query, key and value "
                      "all computed from the tokens";
    return false;
  }
  if (op.getMask() != MaskKind::Causal) {
    op.emitError() << "has mask = " << stringifyMaskKind(op.getMask())
                   << "; prefix deduplication needs causal attention (a "
                      "token that sees later tokens depends on the sample, "
                      "not only on its prefix)";
    return false;
  }
  if (op.getPositions()) {
    op.emitError() << "has a positions operand; prefix deduplication needs "
                      "attention over whole sequences (query i at key i)";
    return false;
  }
  builder.setInsertionPoint(op);
  auto packed = AttentionOp::create(builder, op.getLoc(), q, k, v, subtreeEnd,
                                    Value(), MaskKind::Tree,
                                    op.getScaleAttr());
  nodeForms[op.getResult()] = packed.getResult();
  stale.push_back(op);
  return true;
}

bool Deduplicator::rewriteCrossEntropy(CrossEntropyOp op) {
  Location loc = op.getLoc();
  if (!op.getWeights()) {
    op.emitError() << "has no weights; prefix deduplication keeps the loss "
                      "at every real token, but the padding positions of "
                      "the batch, which an unweighted loss counts, read "
                      "other values (a padding slot is no trie node): "
                      "give weights, 0 on padding";
    return false;
  }
  builder.setInsertionPoint(op);
  Value logits = nodeForms.lookup(op.getLogits());
  auto logitsType = cast<RankedTensorType>(logits.getType());
  Type element = logitsType.getElementType();
  Value logProbs = LogSoftmaxOp::create(builder, loc, logits, 2);
  Value picked = gatherLabels(logProbs, traceToArgument(op.getLabels()), loc);
  if (!picked)
    return false;
  auto tokenType = RankedTensorType::get({batch, seq}, element);
  Value tokenLoss = NegOp::create(
      builder, loc, ReshapeOp::create(builder, loc, tokenType, picked));
  auto scalar = [&](double value) -> Value {
    return FillOp::create(builder, loc, RankedTensorType::get({}, element),
                          builder.getF64FloatAttr(value));
  };
  if (Value weights = op.getWeights()) {
    // A zero weight contributes an exact zero, whatever the token's
    // log-probability (as in the fused op).
    if (isNodeValued(weights) && !duals.contains(weights))
      weights = expand(weights, loc);
    Value zero = scalar(0.0);
    Value ignored =
        CompareOp::create(builder, loc, ComparePredicate::EQ, weights, zero);
    Value weighted = MulOp::create(builder, loc, tokenLoss, weights);
    tokenLoss = SelectOp::create(builder, loc, ignored, zero, weighted);
  }
  Value total = ReduceOp::create(
      builder, loc, ReduceKindAttr::get(builder.getContext(), ReduceKind::Sum),
      tokenLoss, builder.getDenseI64ArrayAttr({0, 1}), UnitAttr());
  Value normalizer = op.getNormalizerValue();
  if (!normalizer)
    normalizer = scalar(op.getNormalizerAttr()
                            ? op.getNormalizerAttr().getValueAsDouble()
                            : 1.0);
  Value loss = DivOp::create(builder, loc, total, normalizer);
  op.getResult().replaceAllUsesWith(loss);
  op.erase();
  return true;
}

bool Deduplicator::rewriteGather(GatherOp op) {
  Location loc = op.getLoc();
  builder.setInsertionPoint(op);
  Value picked = gatherLabels(nodeForms.lookup(op.getInput()),
                              traceToArgument(op.getIndices()), loc);
  if (!picked)
    return false;
  Value result = ReshapeOp::create(builder, loc, op.getType(), picked);
  op.getResult().replaceAllUsesWith(result);
  op.erase();
  return true;
}

/// Whether `op` takes the classes of a `[batch, seq, vocab]` node-valued
/// tensor at labels held in a data argument (per sample).
bool Deduplicator::visit(Operation *op) {
  if (hadError)
    return false;
  if (llvm::none_of(op->getOperands(),
                    [&](Value v) { return isNodeValued(v); }))
    return true;
  if (auto dropout = dyn_cast<DropoutOp>(op);
      dropout && dropout.getRate().convertToDouble() > 0) {
    op->emitError() << "drops token-derived activations at random; prefix "
                       "deduplication cannot keep that exact (the mask "
                       "depends on the sample's index, so samples sharing a "
                       "prefix would need different values): set rate = 0 "
                       "in RL update steps";
    return false;
  }
  if (auto attention = dyn_cast<AttentionOp>(op))
    return rewriteAttention(attention);
  auto overClasses = [&](Value input, Value labels) {
    auto type = cast<RankedTensorType>(input.getType());
    return isNodeValued(input) && !duals.contains(input) &&
           type.getRank() == 3 && hasTokenShape(type) &&
           (!vocab || *vocab == type.getDimSize(2)) &&
           traceToArgument(labels);
  };
  if (auto loss = dyn_cast<CrossEntropyOp>(op);
      loss && overClasses(loss.getLogits(), loss.getLabels()))
    return rewriteCrossEntropy(loss);
  if (auto gather = dyn_cast<GatherOp>(op);
      gather && gather.getDim() == 2 &&
      overClasses(gather.getInput(), gather.getIndices()) &&
      !isNodeValued(gather.getIndices()))
    return rewriteGather(gather);
  if (isTokenWise(op) && cloneOnNodes(op))
    return true;
  expandOperands(op);
  return !hadError;
}

bool Deduplicator::run() {
  if (!func.getBody().hasOneBlock()) {
    func.emitError() << "has several blocks; prefix deduplication rewrites "
                        "one block";
    return false;
  }
  if (!findTokens())
    return false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (StringRef(getArgName(func, i)).starts_with("trie_")) {
      func.emitError() << "argument #" << i << " is named '"
                       << getArgName(func, i)
                       << "'; prefix deduplication adds the arguments "
                          "named trie_*";
      return false;
    }
  if (capacity > batch / bins * seq) {
    func.emitError() << "capacity = " << capacity << " exceeds the "
                     << batch / bins * seq
                     << " tokens of a bin (batch / bins * seq): a bin's "
                        "trie never has more nodes";
    return false;
  }
  if (auto module = func->getParentOfType<ModuleOp>();
      module && !SymbolTable::symbolKnownUseEmpty(func, module)) {
    func.emitError() << "is called; prefix deduplication changes its "
                        "arguments: inline the calls first";
    return false;
  }
  for (Operation &op : func.getBody().front())
    if (op.getNumRegions()) {
      op.emitError() << "has regions; prefix deduplication rewrites "
                        "straight-line bodies";
      return false;
    }
  auto tokenType = cast<RankedTensorType>(tokens.getType());
  auto packedType = RankedTensorType::get({bins, capacity},
                                          tokenType.getElementType());
  auto indexType = RankedTensorType::get({bins, capacity},
                                         builder.getI64Type());
  Value packed = addArgument(packedType, "trie_tokens");
  positions = packed ? addArgument(indexType, "trie_positions") : Value();
  subtreeEnd = positions ? addArgument(indexType, "trie_subtree_end") : Value();
  if (!subtreeEnd)
    return false;
  nodeForms[tokens] = packed;

  Block &body = func.getBody().front();
  // Positions along the sequence: per node, its position in every sample
  // through it.
  for (auto iota : body.getOps<IotaOp>()) {
    auto type = cast<RankedTensorType>(iota.getType());
    if (iota.getDim() != 1 || iota.getOffset() || type.getRank() != 2 ||
        !hasTokenShape(type))
      continue;
    Value form = positions;
    if (type.getElementType() != builder.getI64Type()) {
      builder.setInsertionPointAfter(iota);
      form = CastOp::create(builder, iota.getLoc(), toNodeType(type), form);
    }
    nodeForms[iota.getResult()] = form;
    duals.insert(iota.getResult());
  }

  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (!visit(op))
      return false;

  for (Operation *op : llvm::reverse(stale)) {
    if (!op->use_empty()) {
      op->emitError() << "internal error: prefix deduplication left a use "
                         "of the per-sample form of this op";
      return false;
    }
    op->erase();
  }
  // Per-sample forms of duals that nothing reads any more (the positions'
  // iota, a position embedding of it) go, last first.
  // So do ops nothing reads (a reshape of labels now read through their
  // trie index).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  // The padded tokens, and labels now read through their trie index, go.
  llvm::BitVector unused(func.getNumArguments());
  unused.set(tokens.getArgNumber());
  for (auto &entry : labelIndices)
    if (entry.first.use_empty())
      unused.set(entry.first.getArgNumber());
  if (!tokens.use_empty()) {
    func.emitError() << "internal error: the padded tokens are still read";
    return false;
  }
  if (failed(func.eraseArguments(unused)))
    return false;

  Builder b(func.getContext());
  SmallVector<NamedAttribute> info = {
      b.getNamedAttr("batch", b.getI64IntegerAttr(batch)),
      b.getNamedAttr("bins", b.getI64IntegerAttr(bins)),
      b.getNamedAttr("capacity", b.getI64IntegerAttr(capacity)),
      b.getNamedAttr("seq", b.getI64IntegerAttr(seq))};
  if (vocab)
    info.push_back(b.getNamedAttr("vocab", b.getI64IntegerAttr(*vocab)));
  func->setAttr(NNDialect::getPrefixDedupAttrName(),
                b.getDictionaryAttr(info));
  if (failed(mlir::verify(func))) {
    func.emitError() << "internal error: the deduplicated function does not "
                        "verify";
    return false;
  }
  return true;
}

struct PrefixDedupPass
    : loom::impl::PrefixDedupPassBase<PrefixDedupPass> {
  using PrefixDedupPassBase::PrefixDedupPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t numBins = bins, numNodes = capacity;
    SmallVector<int64_t> capacities(buckets.begin(), buckets.end());
    if (!capacities.empty() && numNodes != 0) {
      module.emitError() << "nn-prefix-dedup takes capacity or buckets, not "
                            "both";
      return signalPassFailure();
    }
    llvm::sort(capacities);
    for (auto [i, c] : llvm::enumerate(capacities))
      if (c <= 0 || (i > 0 && capacities[i - 1] == c)) {
        module.emitError() << "nn-prefix-dedup: bucket " << c
                           << (c <= 0 ? " is not positive" : " is given twice");
        return signalPassFailure();
      }
    if (capacities.empty())
      capacities.push_back(numNodes);
    if (capacities.front() <= 0 || numBins <= 0) {
      module.emitError() << "nn-prefix-dedup needs capacity > 0 (or buckets) "
                            "and bins > 0 (got capacity = "
                         << numNodes << ", bins = " << numBins << ")";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || f->hasAttr(NNDialect::getPrefixDedupAttrName()))
        continue;
      if (func.empty() ? hasTokenArgument(f) : f.getSymName() == func)
        funcs.push_back(f);
    }
    if (!func.empty() && funcs.empty()) {
      module.emitError() << "nn-prefix-dedup: no function named '"
                         << std::string(func) << "'";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    for (func::FuncOp f : funcs) {
      if (buckets.empty()) {
        if (!Deduplicator(f, numBins, numNodes).run())
          return signalPassFailure();
        ++numFunctions;
        continue;
      }
      // One variant per bucket, after the original, which goes (so its
      // callers would be left dangling: refused as the rewrite refuses
      // them).
      if (!SymbolTable::symbolKnownUseEmpty(f, module)) {
        f.emitError() << "is called; prefix deduplication changes its "
                         "arguments: inline the calls first";
        return signalPassFailure();
      }
      Operation *after = f;
      for (int64_t c : capacities) {
        std::string name = (f.getSymName() + "_c" + llvm::Twine(c)).str();
        if (symbols.lookup(name)) {
          f.emitError() << "nn-prefix-dedup: the variant name @" << name
                        << " is already taken";
          return signalPassFailure();
        }
        func::FuncOp variant = f.clone();
        variant.setSymName(name);
        symbols.insert(variant, std::next(Block::iterator(after)));
        after = variant;
        if (!Deduplicator(variant, numBins, c).run())
          return signalPassFailure();
        ++numFunctions;
      }
      symbols.erase(f);
    }
  }
};

} // namespace
