//===- MicroBatches.cpp - A forward function split into micro-batches -----===//
//
// Every value of the forward function is classified by how it relates to
// the batch (the leading dimension of the data arguments):
//
//  * batch: its leading dimension holds the batch's rows (a data argument,
//    anything computed from one row by row, and tensors created in the
//    function whose leading dimension is the batch size, such as position
//    ids); in the micro-batch function it has a K-th of the rows;
//  * whole: it holds no row (parameters, constants, and values reduced over
//    the rows from the data alone, such as a token count): the same in
//    every micro-batch, so reductions over the rows are computed once from
//    the whole batch and passed in;
//  * summed: a parameter-dependent sum over the rows, and what is linear in
//    such sums (sums, differences, negations, products with and quotients
//    by whole values): the sum over the micro-batches of its micro-batch
//    values is its value for the whole batch.
//
// The loss must be summed; then the step's loss and gradients are the sums
// of the micro-batches', exactly (up to the order of the additions).
//
//===----------------------------------------------------------------------===//

#include "passes/MicroBatches.h"

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace loom;
using nn::NNDialect;

namespace {

enum class Kind { Whole, Batch, Summed };

struct Info {
  Kind kind = Kind::Whole;
  /// Whether the value depends on a parameter.
  bool params = false;
};

/// The classification of one forward function.
class Classifier {
public:
  Classifier(func::FuncOp forward, int64_t batch)
      : forward(forward), batch(batch) {}

  LogicalResult run(ArrayRef<unsigned> splitArgs) {
    Block &body = forward.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      Info info;
      info.params = static_cast<bool>(
          forward.getArgAttr(arg.getArgNumber(), NNDialect::getParamAttrName()));
      if (llvm::is_contained(splitArgs, arg.getArgNumber()))
        info.kind = Kind::Batch;
      infos[arg] = info;
    }
    for (Operation &op : body.without_terminator())
      if (failed(classify(op)))
        return failure();
    Value loss = body.getTerminator()->getOperand(0);
    if (infos[loss].kind != Kind::Summed)
      return emitError(loss.getLoc())
             << "@" << forward.getSymName()
             << " cannot run as micro-batches: its loss is not a sum over "
                "the rows of the batch of parameter-dependent values";
    return success();
  }

  const Info &get(Value value) { return infos[value]; }

  /// The whole values computed from batch values: reductions of the data
  /// over its rows, which the micro-batch function takes as arguments.
  SmallVector<Value> wholeBatch;

private:
  InFlightDiagnostic fail(Operation &op, const Twine &why) {
    return op.emitError() << "@" << forward.getSymName()
                          << " cannot run as micro-batches: " << why;
  }

  static bool reducesRows(Operation &op) {
    if (auto reduce = dyn_cast<nn::ReduceOp>(op))
      return llvm::is_contained(reduce.getDims(), 0);
    return isa<nn::CrossEntropyOp>(op);
  }

  /// Why `op`, which has a batch operand, computes across rows (and so
  /// differs on a micro-batch), or null when it works row by row.
  const char *mixesRows(Operation &op) {
    auto isBatch = [&](Value value) {
      return infos[value].kind == Kind::Batch;
    };
    auto rankOf = [](Value value) {
      return cast<RankedTensorType>(value.getType()).getRank();
    };
    if (auto softmax = dyn_cast<nn::SoftmaxOp>(op))
      return softmax.getDim() == 0 ? "a softmax over the rows" : nullptr;
    if (auto softmax = dyn_cast<nn::LogSoftmaxOp>(op))
      return softmax.getDim() == 0 ? "a softmax over the rows" : nullptr;
    if (auto norm = dyn_cast<nn::LayerNormOp>(op))
      return norm.getNormalizedDims() >= rankOf(norm.getInput())
                 ? "a norm over the rows"
                 : nullptr;
    if (auto norm = dyn_cast<nn::RmsNormOp>(op))
      return norm.getNormalizedDims() >= rankOf(norm.getInput())
                 ? "a norm over the rows"
                 : nullptr;
    if (auto gather = dyn_cast<nn::GatherOp>(op))
      return gather.getDim() == 0 ? "a gather along the rows" : nullptr;
    if (auto concat = dyn_cast<nn::ConcatOp>(op))
      return concat.getDim() == 0 ? "a concatenation along the rows"
                                  : nullptr;
    if (auto transpose = dyn_cast<nn::TransposeOp>(op))
      return transpose.getPermutation()[0] != 0
                 ? "a transpose that moves the rows"
                 : nullptr;
    if (auto matmul = dyn_cast<nn::MatmulOp>(op)) {
      // A matrix operand (rank <= 2) holding rows contracts them or makes
      // them columns; batched products keep dimension 0 as their batch.
      if ((isBatch(matmul.getRhs()) && rankOf(matmul.getRhs()) <= 2) ||
          (isBatch(matmul.getLhs()) && rankOf(matmul.getLhs()) <= 2 &&
           matmul.getTransposeLhs()))
        return "a matrix product over the rows";
      return nullptr;
    }
    if (auto slice = dyn_cast<nn::SliceOp>(op)) {
      auto input = cast<RankedTensorType>(slice.getInput().getType());
      bool whole = slice.getOffsets()[0] == 0 && slice.getStrides()[0] == 1 &&
                   slice.getSizes()[0] == input.getDimSize(0);
      return whole ? nullptr : "a slice of the rows";
    }
    if (auto broadcast = dyn_cast<nn::BroadcastOp>(op)) {
      // The input's rows must stay the result's.
      auto input = cast<RankedTensorType>(broadcast.getInput().getType());
      int64_t lead = rankOf(broadcast.getResult()) - input.getRank();
      std::optional<ArrayRef<int64_t>> dims = broadcast.getBroadcastDims();
      int64_t to = dims ? (*dims)[0] : lead;
      return input.getRank() == 0 || to != 0 ? "a broadcast that moves the rows"
                                             : nullptr;
    }
    return nullptr;
  }

  LogicalResult classify(Operation &op) {
    if (op.getNumRegions())
      return fail(op, "an op with regions");
    if (op.getNumResults() == 0 ||
        llvm::any_of(op.getResultTypes(), [](Type type) {
          return !isa<RankedTensorType>(type);
        }))
      return fail(op, "an op without ranked tensor results");
    bool anyBatch = false, anySummed = false, params = false;
    for (Value operand : op.getOperands()) {
      const Info &info = infos[operand];
      anyBatch |= info.kind == Kind::Batch;
      anySummed |= info.kind == Kind::Summed;
      params |= info.params;
    }
    auto set = [&](Kind kind) {
      for (Value result : op.getResults())
        infos[result] = {kind, params};
      return success();
    };
    if (auto loss = dyn_cast<nn::CrossEntropyOp>(op)) {
      Value normalizer = loss.getNormalizerValue();
      if (normalizer && infos[normalizer].kind != Kind::Whole)
        return fail(op, "its normaliser must be a value of the whole batch "
                        "(an attribute, or computed from the data alone)");
    }
    if (anySummed) {
      if (anyBatch)
        return fail(op, "it combines a sum over the rows with the rows "
                        "themselves");
      auto kindOf = [&](unsigned i) { return infos[op.getOperand(i)].kind; };
      bool linear =
          isa<nn::NegOp, nn::CastOp>(op) ||
          (isa<nn::AddOp, nn::SubOp>(op) && kindOf(0) == Kind::Summed &&
           kindOf(1) == Kind::Summed) ||
          (isa<nn::MulOp>(op) &&
           (kindOf(0) == Kind::Whole || kindOf(1) == Kind::Whole)) ||
          (isa<nn::DivOp>(op) && kindOf(1) == Kind::Whole);
      if (!linear)
        return fail(op, "the loss must be linear in its sums over the rows "
                        "(sums, differences, negations, and products with "
                        "or quotients by values of the whole batch), but "
                        "this op is not");
      return set(Kind::Summed);
    }
    if (!anyBatch) {
      // Tensors created with the batch's leading dimension whose rows are
      // all alike (a constant, position ids along another dimension, a
      // broadcast along the rows) are shaped like the batch.
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      bool rowsAlike = isa<nn::FillOp>(op);
      if (auto iota = dyn_cast<nn::IotaOp>(op))
        rowsAlike = iota.getDim() != 0;
      if (auto broadcast = dyn_cast<nn::BroadcastOp>(op)) {
        auto input = cast<RankedTensorType>(broadcast.getInput().getType());
        int64_t lead = type.getRank() - input.getRank();
        std::optional<ArrayRef<int64_t>> dims = broadcast.getBroadcastDims();
        // Result dimension 0 comes from no input dimension (or one of 1).
        bool fromInput = false;
        for (int64_t d = 0; d < input.getRank(); ++d) {
          int64_t to = dims ? (*dims)[d] : lead + d;
          fromInput |= to == 0 && input.getDimSize(d) != 1;
        }
        rowsAlike = !fromInput;
      }
      if (rowsAlike && type.getRank() >= 1 && type.getDimSize(0) == batch)
        return set(Kind::Batch);
      return set(Kind::Whole);
    }
    if (isa<nn::DropoutOp>(op))
      return fail(op, "nn.dropout draws its mask from each element's index "
                      "in the whole batch, which a micro-batch does not "
                      "have");
    if (!reducesRows(op)) {
      if (const char *why = mixesRows(op))
        return fail(op, Twine(why) + " computes across the rows, which a "
                                     "micro-batch does not all have");
      // Every value holding rows keeps each row's elements together in
      // its leading dimension (a multiple of the rows: [B * S, ...] after
      // a flatten).
      for (Value result : op.getResults()) {
        auto type = cast<RankedTensorType>(result.getType());
        if (type.getRank() == 0 || ShapedType::isDynamic(type.getDimSize(0)) ||
            type.getDimSize(0) % batch != 0)
        {
          std::string text;
          llvm::raw_string_ostream(text) << type;
          return fail(op, "its result (" + text +
                              ") does not keep the rows in its leading "
                              "dimension (a multiple of the " +
                              std::to_string(batch) + " rows)");
        }
      }
      return set(Kind::Batch);
    }
    if (!params) {
      // Reduced from the data alone: computed once, over the whole batch.
      (void)set(Kind::Whole);
      wholeBatch.push_back(op.getResult(0));
      return success();
    }
    if (auto reduce = dyn_cast<nn::ReduceOp>(op);
        reduce && reduce.getKind() != nn::ReduceKind::Sum)
      return fail(op, Twine("a ") + nn::stringifyReduceKind(reduce.getKind()) +
                          " over the rows of a parameter-dependent value is "
                          "not the sum of its micro-batches' (write it as a "
                          "sum divided by a count of the whole batch)");
    return set(Kind::Summed);
  }

  func::FuncOp forward;
  int64_t batch;
  llvm::DenseMap<Value, Info> infos;
};

/// `type` with a `count`-th of its leading dimension.
RankedTensorType shrink(RankedTensorType type, int64_t count) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] /= count;
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

} // namespace

FailureOr<MicroBatchForward> loom::splitIntoMicroBatches(func::FuncOp forward,
                                                         int64_t count) {
  MicroBatchForward split;
  split.count = count;
  // The split arguments: every data argument of rank >= 1, all with the
  // same leading dimension.
  std::optional<unsigned> first;
  auto nameOf = [&](unsigned i) {
    if (auto name = forward.getArgAttrOfType<StringAttr>(
            i, NNDialect::getNameAttrName()))
      return ("'" + name.getValue() + "'").str();
    return "#" + std::to_string(i);
  };
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, NNDialect::getDataAttrName()))
      continue;
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    if (!type || type.getRank() == 0)
      continue;
    int64_t rows = type.getDimSize(0);
    if (!first) {
      first = i;
      split.batch = rows;
    } else if (rows != split.batch) {
      return emitError(forward.getArgument(i).getLoc())
             << "micro-batches split every nn.data argument of rank >= 1 "
                "along its leading dimension, but argument "
             << nameOf(*first) << " of @" << forward.getSymName() << " has "
             << split.batch << " rows and argument " << nameOf(i) << " has "
             << rows;
    }
    split.splitArgs.push_back(i);
  }
  if (!first)
    return emitError(forward.getLoc())
           << "micro-batches = " << count << ": @" << forward.getSymName()
           << " has no nn.data argument of rank >= 1 to split";
  if (ShapedType::isDynamic(split.batch) || split.batch % count != 0)
    return emitError(forward.getArgument(*first).getLoc())
           << "micro-batches = " << count << " does not divide the batch of "
           << split.batch << " rows of argument " << nameOf(*first) << " of @"
           << forward.getSymName();

  Classifier classifier(forward, split.batch);
  if (failed(classifier.run(split.splitArgs)))
    return failure();
  split.wholeBatch = classifier.wholeBatch;

  // The micro-batch function: a copy, retyped op by op.
  auto micro = cast<func::FuncOp>(forward->clone());
  Block &original = forward.getBody().front();
  Block &body = micro.getBody().front();
  MLIRContext *context = forward.getContext();
  auto fail = [&](Location loc) {
    micro.erase();
    return emitError(loc) << "@" << forward.getSymName()
                          << " cannot run as micro-batches: ";
  };
  for (unsigned i : split.splitArgs)
    body.getArgument(i).setType(
        shrink(cast<RankedTensorType>(body.getArgument(i).getType()), count));
  for (auto [op, copy] : llvm::zip(original.without_terminator(),
                                   body.without_terminator())) {
    Value firstResult = op.getNumResults() ? op.getResult(0) : Value();
    if (!firstResult || classifier.get(firstResult).kind != Kind::Batch)
      continue;
    SmallVector<Type> types;
    // A slice taking the rows whole takes the micro-batch's.
    if (auto slice = dyn_cast<nn::SliceOp>(copy)) {
      SmallVector<int64_t> sizes(slice.getSizes());
      sizes[0] /= count;
      slice.setSizes(sizes);
    }
    if (auto infer = dyn_cast<InferTypeOpInterface>(copy)) {
      if (failed(infer.inferReturnTypes(
              context, copy.getLoc(), copy.getOperands(),
              copy.getAttrDictionary(), copy.getPropertiesStorage(),
              copy.getRegions(), types))) {
        InFlightDiagnostic diag = fail(copy.getLoc());
        diag << "this op does not take a micro-batch of " << split.batch / count
             << " rows";
        return failure();
      }
    } else {
      for (Type type : op.getResultTypes()) {
        auto tensor = cast<RankedTensorType>(type);
        if (tensor.getRank() == 0 || tensor.getDimSize(0) % count != 0) {
          InFlightDiagnostic diag = fail(copy.getLoc());
          diag << "the leading dimension of its result (" << type
               << ") is not a multiple of " << count
               << "; the batch must stay the leading dimension";
          return failure();
        }
        types.push_back(shrink(tensor, count));
      }
    }
    for (auto [result, copyResult, type] :
         llvm::zip(op.getResults(), copy.getResults(), types)) {
      auto before = cast<RankedTensorType>(result.getType());
      auto after = cast<RankedTensorType>(type);
      if (after != shrink(before, count)) {
        InFlightDiagnostic diag = fail(copy.getLoc());
        diag << "it moves the batch out of the leading dimension (" << before
             << " becomes " << after << " for a micro-batch)";
        return failure();
      }
      copyResult.setType(type);
    }
  }
  // Whole-batch values become arguments.
  DenseMap<Value, Value> copies;
  for (auto [op, copy] : llvm::zip(original.without_terminator(),
                                   body.without_terminator()))
    for (auto [result, copyResult] :
         llvm::zip(op.getResults(), copy.getResults()))
      copies[result] = copyResult;
  for (Value value : split.wholeBatch) {
    unsigned index = micro.getNumArguments();
    if (failed(micro.insertArgument(index, value.getType(),
                                    DictionaryAttr::get(context),
                                    value.getLoc()))) {
      micro.erase();
      return failure();
    }
    copies[value].replaceAllUsesWith(micro.getArgument(index));
  }
  // (Types changed in place: the signature follows the block.)
  micro.setFunctionType(FunctionType::get(
      context, body.getArgumentTypes(),
      micro.getFunctionType().getResults()));
  if (failed(verify(micro))) {
    fail(forward.getLoc()) << "its micro-batch function of "
                           << split.batch / count
                           << " rows is invalid (see the errors above)";
    return failure();
  }
  split.func = micro;
  return split;
}

Value loom::microBatchOf(OpBuilder &builder, Location loc, Value value,
                         const MicroBatchForward &split, int64_t index) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rows = split.batch / split.count;
  SmallVector<int64_t> folded{rows, split.count};
  llvm::append_range(folded, type.getShape().drop_front());
  Value reshaped = nn::ReshapeOp::create(
      builder, loc,
      RankedTensorType::get(folded, type.getElementType(), type.getEncoding()),
      value);
  SmallVector<int64_t> offsets(folded.size(), 0), sizes(folded),
      strides(folded.size(), 1);
  offsets[1] = index;
  sizes[1] = 1;
  Value sliced =
      nn::SliceOp::create(builder, loc,
                          RankedTensorType::get(sizes, type.getElementType(),
                                                type.getEncoding()),
                          reshaped, offsets, sizes, strides);
  return nn::ReshapeOp::create(builder, loc, shrink(type, split.count),
                               sliced);
}

SmallVector<Value> loom::cloneWholeBatchValues(OpBuilder &builder,
                                               const MicroBatchForward &split,
                                               ValueRange args) {
  if (split.wholeBatch.empty())
    return {};
  Value first = split.wholeBatch.front();
  Block *block = first.getParentBlock();
  // The ops the whole-batch values need, in block order.
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> work(split.wholeBatch);
  while (!work.empty()) {
    Value value = work.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || !needed.insert(def))
      continue;
    llvm::append_range(work, def->getOperands());
  }
  IRMapping mapping;
  for (auto [arg, value] : llvm::zip(block->getArguments(), args))
    mapping.map(arg, value);
  for (Operation &op : *block)
    if (needed.contains(&op))
      builder.clone(op, mapping);
  return llvm::map_to_vector(split.wholeBatch,
                             [&](Value v) { return mapping.lookup(v); });
}
