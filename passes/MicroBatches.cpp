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
//    values is its value for the whole batch;
//  * micro: a value of one micro-batch's MoE routing, which holds no row
//    and differs from the whole batch's (a route's counts, a placement
//    planned from the micro-batch's forecast, the expert-ordered buffer
//    and what the grouped matmuls make of it): each micro-batch has its
//    own, and only the MoE ops bring it back to the rows (a combine, a
//    slot dot product). Each token's result does not depend on where its
//    rows are in the buffer, so the micro-batches' rows are the batch's.
//    Anything else that reads such a value (a load-balancing loss from the
//    counts) is refused.
//
// The loss must be summed; then the step's loss and gradients are the sums
// of the micro-batches', exactly (up to the order of the additions).
//
//===----------------------------------------------------------------------===//

#include "passes/MicroBatches.h"

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

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

enum class Kind { Whole, Batch, Summed, Micro };

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

  /// The kinds of an MoE op's results, or of an op that reads a micro
  /// value (see the file comment); std::nullopt for any other op.
  std::optional<LogicalResult> classifyMoe(Operation &op) {
    bool anyBatch = false, anyMicro = false, anySummed = false, params = false;
    for (Value operand : op.getOperands()) {
      const Info &info = infos[operand];
      anyBatch |= info.kind == Kind::Batch;
      anyMicro |= info.kind == Kind::Micro;
      anySummed |= info.kind == Kind::Summed;
      params |= info.params;
    }
    auto set = [&](ArrayRef<Kind> kinds) {
      for (auto [result, kind] : llvm::zip(op.getResults(), kinds))
        infos[result] = {kind, params};
      return success();
    };
    if (auto route = dyn_cast<nn::MoeRouteOp>(op); route && anyBatch) {
      // (With a capacity, which entries an expert drops depends on the
      // whole batch's order: a micro-batch would drop others.)
      if (route.getCapacity())
        return fail(op, "a route with a capacity drops entries by their "
                        "order in the whole batch, which a micro-batch "
                        "does not have");
      return set({Kind::Batch, Kind::Micro});
    }
    if (isa<nn::MoePlanOp>(op) && anyBatch)
      return set({Kind::Micro, Kind::Micro});
    if (isa<nn::MoeDispatchOp>(op) && anyBatch)
      return set({Kind::Micro});
    if (!anyMicro)
      return std::nullopt;
    if (isa<nn::MoeCombineOp, nn::MoeSlotDotOp>(op))
      return set({Kind::Batch});
    bool elementwise =
        op.hasTrait<OpTrait::SameOperandsAndResultType>() ||
        isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp, nn::MinimumOp,
            nn::MaximumOp, nn::CastOp>(op);
    if (!anyBatch && !anySummed &&
        (elementwise ||
         isa<nn::GroupedMatmulOp, nn::EmbeddingOp, nn::ReshapeOp,
             hspmd::AnnotateOp>(op)))
      return set({Kind::Micro});
    return fail(op, "it reads a value of one micro-batch's MoE routing (an "
                    "expert-ordered buffer, counts or a placement), which "
                    "differs from the whole batch's; only the MoE ops, "
                    "grouped matmuls, element-wise ops, reshapes and "
                    "lookups may (a load-balancing loss from the counts "
                    "is not a sum of the micro-batches' losses)");
  }

  LogicalResult classify(Operation &op) {
    if (op.getNumRegions())
      return fail(op, "an op with regions");
    if (op.getNumResults() == 0 ||
        llvm::any_of(op.getResultTypes(), [](Type type) {
          return !isa<RankedTensorType>(type);
        }))
      return fail(op, "an op without ranked tensor results");
    if (std::optional<LogicalResult> moe = classifyMoe(op))
      return *moe;
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

RankedTensorType withShape(RankedTensorType type, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

/// How the forward's values change for one micro-batch: `rows` of its
/// `batch` rows, of length `length` instead of `seq` (both 0 without a
/// sequence dimension).
struct Retype {
  int64_t batch, rows, seq, length;

  /// A tensor created in the function shaped like the batch (rows alike):
  /// [batch, seq, ...] becomes [rows, length, ...].
  SmallVector<int64_t> created(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> result(shape);
    result[0] = rows;
    if (seq != length && result.size() >= 2 && result[1] == seq)
      result[1] = length;
    return result;
  }

  /// Whether `after` is what a micro-batch makes of `before` (a value
  /// holding rows): the rows stay in the leading dimension, as [rows, ...],
  /// [rows, length, ...] or, flattened, [rows * length, ...]; every other
  /// dimension stays.
  bool accepts(RankedTensorType before, RankedTensorType after) const {
    ArrayRef<int64_t> x = before.getShape(), y = after.getShape();
    if (x.size() != y.size() || x.empty() ||
        before.getElementType() != after.getElementType() ||
        before.getEncoding() != after.getEncoding())
      return false;
    if (x.size() >= 2 && x.drop_front(2) != y.drop_front(2))
      return false;
    bool tail = x.size() < 2 || x[1] == y[1];
    if (y[0] * batch == x[0] * rows &&
        (tail || (x[1] == seq && y[1] == length)))
      return true;
    // Flattened rows and positions.
    return seq != length && tail && y[0] * batch * seq == x[0] * rows * length;
  }

  /// The result shape of a reshape of `input` (a micro-batch's `newInput`)
  /// that gave `result` for the whole batch, or failure: the shapes are cut
  /// into the smallest groups of dimensions with equal products; a group
  /// whose input changed becomes its new product where it makes one
  /// dimension, or, where one dimension splits into several, the rows and
  /// the sequence among them take the micro-batch's.
  FailureOr<SmallVector<int64_t>> reshape(ArrayRef<int64_t> input,
                                          ArrayRef<int64_t> newInput,
                                          ArrayRef<int64_t> result) const {
    SmallVector<int64_t> out;
    size_t i = 0, j = 0;
    while (i < input.size() || j < result.size()) {
      if (i == input.size() || j == result.size()) {
        // Trailing dimensions of 1 on one side.
        for (; j < result.size(); ++j) {
          if (result[j] != 1)
            return failure();
          out.push_back(1);
        }
        for (; i < input.size(); ++i)
          if (input[i] != 1 || newInput[i] != 1)
            return failure();
        break;
      }
      size_t i0 = i, j0 = j;
      int64_t p = input[i++], q = result[j++];
      while (p != q) {
        if (p < q) {
          if (i == input.size())
            return failure();
          p *= input[i++];
        } else {
          if (j == result.size())
            return failure();
          q *= result[j++];
        }
      }
      ArrayRef<int64_t> oldPart = input.slice(i0, i - i0),
                        newPart = newInput.slice(i0, i - i0),
                        resultPart = result.slice(j0, j - j0);
      // (The leading group of a batch value holds the rows; where it is the
      // flattened rows and positions, a micro-batch of as many tokens in
      // another shape leaves it alone, but its unflattening changes.)
      bool unflattens = i0 == 0 && oldPart.size() == 1 &&
                        resultPart.size() > 1 &&
                        (rows != batch || seq != length);
      if (oldPart == newPart && !unflattens) {
        llvm::append_range(out, resultPart);
        continue;
      }
      int64_t product = 1;
      for (int64_t d : newPart)
        product *= d;
      if (resultPart.size() == 1) {
        out.push_back(product);
        continue;
      }
      if (oldPart.size() != 1)
        return failure();
      SmallVector<int64_t> split(resultPart);
      bool rowsDone = rows == batch, seqDone = seq == length;
      for (int64_t &d : split) {
        if (!rowsDone && d == batch) {
          d = rows;
          rowsDone = true;
        } else if (rowsDone && !seqDone && d == seq) {
          d = length;
          seqDone = true;
        }
      }
      int64_t splitProduct = 1;
      for (int64_t d : split)
        splitProduct *= d;
      if (splitProduct != product)
        return failure();
      llvm::append_range(out, split);
    }
    return out;
  }
};

/// Argument `i` of `forward` in a diagnostic: its name, or its number.
std::string argNameOf(func::FuncOp forward, unsigned i) {
  if (auto name = forward.getArgAttrOfType<StringAttr>(
          i, NNDialect::getNameAttrName()))
    return ("'" + name.getValue() + "'").str();
  return "#" + std::to_string(i);
}

/// The split data arguments of `forward` (every data argument of rank >=
/// 1, all with the same leading dimension) and their rows; reports a
/// mismatch and fails.
FailureOr<std::pair<SmallVector<unsigned>, int64_t>>
splitArgsOf(func::FuncOp forward, const Twine &what) {
  SmallVector<unsigned> args;
  int64_t batch = 0;
  std::optional<unsigned> first;
  auto nameOf = [&](unsigned i) { return argNameOf(forward, i); };
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, NNDialect::getDataAttrName()))
      continue;
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    if (!type || type.getRank() == 0)
      continue;
    int64_t rows = type.getDimSize(0);
    if (!first) {
      first = i;
      batch = rows;
    } else if (rows != batch) {
      return emitError(forward.getArgument(i).getLoc())
             << "micro-batches split every nn.data argument of rank >= 1 "
                "along its leading dimension, but argument "
             << nameOf(*first) << " of @" << forward.getSymName() << " has "
             << batch << " rows and argument " << nameOf(i) << " has "
             << rows;
    }
    args.push_back(i);
  }
  if (!first)
    return emitError(forward.getLoc())
           << what << ": @" << forward.getSymName()
           << " has no nn.data argument of rank >= 1 to split";
  if (ShapedType::isDynamic(batch))
    return emitError(forward.getArgument(*first).getLoc())
           << what << ": argument " << nameOf(*first) << " of @"
           << forward.getSymName() << " has a dynamic batch";
  return std::make_pair(args, batch);
}

/// Retypes `op`, a micro value's op (Kind::Micro) in a micro-batch
/// function whose operands are retyped: a dispatch takes the blocks of its
/// route's (retyped) rows, ops that infer their types infer them, and the
/// others (reshapes of the replicas' weights, annotations, element-wise
/// ops) keep their types where their operands did, else follow their first
/// operand's.
LogicalResult retypeMicro(Operation &whole, Operation &op) {
  if (auto dispatch = dyn_cast<nn::MoeDispatchOp>(op)) {
    auto route = dispatch.getSlots().getDefiningOp<nn::MoeRouteOp>();
    if (!route || ShapedType::isDynamic(route.getBlockRows()))
      return failure();
    dispatch.setRowsAttr(Builder(op.getContext())
                             .getI64IntegerAttr(static_cast<int64_t>(
                                 route.getBlocks()) * route.getBlockRows()));
  }
  SmallVector<Type> types;
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    if (failed(infer.inferReturnTypes(
            op.getContext(), op.getLoc(), op.getOperands(),
            op.getAttrDictionary(), op.getPropertiesStorage(),
            op.getRegions(), types)))
      return failure();
  } else if (op.getNumResults() == 1 && op.getNumOperands() >= 1) {
    // (The whole batch's op tells whether the result has its first
    // operand's shape; the copy's operand is already retyped.)
    auto result = cast<RankedTensorType>(whole.getResult(0).getType());
    auto before = cast<RankedTensorType>(whole.getOperand(0).getType());
    auto first = cast<RankedTensorType>(op.getOperand(0).getType());
    if (result.getShape() == before.getShape())
      types.push_back(withShape(result, first.getShape()));
    else if (first == before)
      // An operand the micro-batch did not resize (the replicas' weights
      // reshaped) keeps its result.
      types.push_back(result);
    else
      return failure();
  } else {
    return failure();
  }
  for (auto [result, type] : llvm::zip(op.getResults(), types))
    result.setType(type);
  return success();
}

/// The micro-batch function of `split` (its batch, count, rows, length and
/// split arguments set): a copy of `forward`, retyped op by op; fills
/// `split.func` and `split.wholeBatch`.
LogicalResult buildMicroBatchFunction(func::FuncOp forward,
                                      MicroBatchForward &split,
                                      int64_t forwardBatch, int64_t seq) {
  Classifier classifier(forward, forwardBatch);
  if (failed(classifier.run(split.splitArgs)))
    return failure();
  split.wholeBatch = classifier.wholeBatch;
  Retype retype{forwardBatch, split.rows, seq, split.length};
  std::string shapeText = std::to_string(split.rows) + " rows";
  if (seq != split.length)
    shapeText += " of length " + std::to_string(split.length);

  auto micro = cast<func::FuncOp>(forward->clone());
  Block &original = forward.getBody().front();
  Block &body = micro.getBody().front();
  MLIRContext *context = forward.getContext();
  auto fail = [&](Location loc) {
    micro.erase();
    return emitError(loc) << "@" << forward.getSymName()
                          << " cannot run as micro-batches: ";
  };
  for (unsigned i : split.splitArgs) {
    auto type = cast<RankedTensorType>(body.getArgument(i).getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = split.rows;
    if (shape.size() >= 2 && seq != 0)
      shape[1] = split.length;
    body.getArgument(i).setType(withShape(type, shape));
  }
  auto shapeOf = [](Value value) {
    return cast<RankedTensorType>(value.getType()).getShape();
  };
  for (auto [op, copy] : llvm::zip(original.without_terminator(),
                                   body.without_terminator())) {
    Value firstResult = op.getNumResults() ? op.getResult(0) : Value();
    if (!firstResult)
      continue;
    Kind firstKind = classifier.get(firstResult).kind;
    if (firstKind == Kind::Micro) {
      if (failed(retypeMicro(op, copy))) {
        fail(copy.getLoc()) << "this op of an MoE layer does not take a "
                            << "micro-batch of " << shapeText;
        return failure();
      }
      continue;
    }
    if (firstKind != Kind::Batch)
      continue;
    SmallVector<Type> types;
    // A slice takes the dimensions that change whole (the rows, and the
    // sequence of a micro-batch of another length).
    if (auto slice = dyn_cast<nn::SliceOp>(copy)) {
      ArrayRef<int64_t> before = shapeOf(cast<nn::SliceOp>(op).getInput());
      ArrayRef<int64_t> after = shapeOf(slice.getInput());
      SmallVector<int64_t> sizes(slice.getSizes());
      for (size_t d = 0; d < before.size(); ++d) {
        if (before[d] == after[d])
          continue;
        if (slice.getOffsets()[d] != 0 || slice.getStrides()[d] != 1 ||
            sizes[d] != before[d]) {
          fail(copy.getLoc())
              << "a slice of part of dimension " << d << " (of " << before[d]
              << ") does not take a micro-batch of " << shapeText;
          return failure();
        }
        sizes[d] = after[d];
      }
      slice.setSizes(sizes);
    }
    Operation *whole = &op;
    auto resultType = [&](unsigned r) {
      return cast<RankedTensorType>(whole->getResult(r).getType());
    };
    if (auto infer = dyn_cast<InferTypeOpInterface>(copy)) {
      if (failed(infer.inferReturnTypes(
              context, copy.getLoc(), copy.getOperands(),
              copy.getAttrDictionary(), copy.getPropertiesStorage(),
              copy.getRegions(), types))) {
        fail(copy.getLoc()) << "this op does not take a micro-batch of "
                            << shapeText;
        return failure();
      }
    } else if (auto reshape = dyn_cast<nn::ReshapeOp>(copy);
               reshape && seq == split.length) {
      // Only the rows change: the result's leading dimension, a multiple
      // of the rows, takes the micro-batch's share.
      RankedTensorType type = resultType(0);
      if (type.getRank() == 0 ||
          (type.getDimSize(0) * split.rows) % forwardBatch != 0) {
        fail(copy.getLoc()) << "the leading dimension of its result (" << type
                            << ") is not a multiple of the micro-batch's "
                            << shapeText;
        return failure();
      }
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = shape[0] * split.rows / forwardBatch;
      types.push_back(withShape(type, shape));
    } else if (reshape) {
      FailureOr<SmallVector<int64_t>> shape = retype.reshape(
          shapeOf(cast<nn::ReshapeOp>(op).getInput()),
          shapeOf(reshape.getInput()), resultType(0).getShape());
      if (failed(shape)) {
        fail(copy.getLoc()) << "this reshape does not take a micro-batch of "
                            << shapeText;
        return failure();
      }
      types.push_back(withShape(resultType(0), *shape));
    } else if (auto broadcast = dyn_cast<nn::BroadcastOp>(copy)) {
      // Dimensions from the input follow it; created rows (an input of the
      // whole batch) are the micro-batch's.
      ArrayRef<int64_t> before = shapeOf(cast<nn::BroadcastOp>(op).getInput());
      ArrayRef<int64_t> after = shapeOf(broadcast.getInput());
      SmallVector<int64_t> shape(resultType(0).getShape());
      if (before == after)
        shape = retype.created(shape);
      int64_t lead = shape.size() - before.size();
      std::optional<ArrayRef<int64_t>> dims = broadcast.getBroadcastDims();
      for (size_t d = 0; d < before.size(); ++d)
        if (before[d] != after[d])
          shape[dims ? (*dims)[d] : lead + d] = after[d];
      types.push_back(withShape(resultType(0), shape));
    } else if (isa<nn::FillOp, nn::IotaOp>(copy)) {
      types.push_back(
          withShape(resultType(0), retype.created(resultType(0).getShape())));
    } else {
      // Ops whose results are shaped like their first operand follow it.
      for (unsigned r = 0; r < op.getNumResults(); ++r) {
        RankedTensorType type = resultType(r);
        if (copy.getNumOperands() == 0 ||
            !isa<RankedTensorType>(op.getOperand(0).getType()) ||
            shapeOf(op.getOperand(0)) != type.getShape()) {
          fail(copy.getLoc()) << "the micro-batch's type of its result ("
                              << type << ") is unknown: the op infers no "
                                         "result type and its result is not "
                                         "shaped like its first operand";
          return failure();
        }
        types.push_back(withShape(type, shapeOf(copy.getOperand(0))));
      }
    }
    for (auto [result, copyResult, type] :
         llvm::zip(op.getResults(), copy.getResults(), types)) {
      auto before = cast<RankedTensorType>(result.getType());
      auto after = cast<RankedTensorType>(type);
      // (A route's counts are the micro-batch's own.)
      if (classifier.get(result).kind == Kind::Micro) {
        copyResult.setType(type);
        continue;
      }
      if (!retype.accepts(before, after)) {
        InFlightDiagnostic diag = fail(copy.getLoc());
        diag << "it moves the batch out of the leading dimension (" << before
             << " becomes " << after << " for a micro-batch)";
        return failure();
      }
      copyResult.setType(type);
    }
  }
  // Positions past a table: a learned position embedding looked up at the
  // positions (an iota) of a micro-batch longer than the table.
  for (Operation &op : body.without_terminator()) {
    auto embedding = dyn_cast<nn::EmbeddingOp>(op);
    if (!embedding || seq == split.length)
      continue;
    auto iota = embedding.getIds().getDefiningOp<nn::IotaOp>();
    if (!iota || iota.getOffset())
      continue;
    int64_t positions = shapeOf(iota.getResult())[iota.getDim()];
    int64_t table = shapeOf(embedding.getTable())[0];
    if (positions > table) {
      fail(embedding.getLoc())
          << "a micro-batch of length " << split.length
          << " reads position " << positions - 1 << " of a table of "
          << table << " positions";
      return failure();
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
    fail(forward.getLoc()) << "its micro-batch function of " << shapeText
                           << " is invalid (see the errors above)";
    return failure();
  }
  split.func = micro;
  return success();
}

} // namespace

FailureOr<int64_t> loom::sequenceLengthOf(func::FuncOp forward) {
  std::optional<unsigned> first;
  int64_t length = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    if (!forward.getArgAttr(i, NNDialect::getDataAttrName()) || !type ||
        type.getRank() < 2)
      continue;
    if (forward.getArgAttr(i, "nn.moe_forecast"))
      return emitError(forward.getArgument(i).getLoc())
             << "micro-batches of their own shape are not supported with an "
                "expert placement forecast (argument "
             << argNameOf(forward, i) << " of @" << forward.getSymName()
             << " is split by rows only); use micro-batches=K";
    if (!first) {
      first = i;
      length = type.getDimSize(1);
    } else if (type.getDimSize(1) != length) {
      return emitError(forward.getArgument(i).getLoc())
             << "micro-batches of their own shape change dimension 1 (the "
                "sequence) of every nn.data argument of rank >= 2, but "
                "argument "
             << argNameOf(forward, *first) << " of @" << forward.getSymName()
             << " has " << length << " positions and argument "
             << argNameOf(forward, i) << " has "
             << type.getDimSize(1);
    }
  }
  if (ShapedType::isDynamic(length))
    return emitError(forward.getLoc())
           << "@" << forward.getSymName() << " has a dynamic sequence length";
  return length;
}

FailureOr<MicroBatchForward> loom::splitIntoMicroBatches(func::FuncOp forward,
                                                         int64_t count) {
  MicroBatchForward split;
  split.count = count;
  auto args = splitArgsOf(forward, "micro-batches = " + Twine(count));
  if (failed(args))
    return failure();
  std::tie(split.splitArgs, split.batch) = *args;
  if (split.batch % count != 0)
    return emitError(forward.getArgument(split.splitArgs.front()).getLoc())
           << "micro-batches = " << count << " does not divide the batch of "
           << split.batch << " rows of argument "
           << argNameOf(forward, split.splitArgs.front()) << " of @"
           << forward.getSymName();
  split.rows = split.batch / count;
  if (failed(buildMicroBatchFunction(forward, split, split.batch, 0)))
    return failure();
  return split;
}

FailureOr<MicroBatchForward>
loom::retypeForMicroBatches(func::FuncOp forward, MicroBatchShape shape) {
  MicroBatchForward split;
  split.count = shape.count;
  split.rows = shape.rows;
  auto args = splitArgsOf(forward, "micro-batch-shapes");
  if (failed(args))
    return failure();
  int64_t forwardBatch;
  std::tie(split.splitArgs, forwardBatch) = *args;
  split.batch = shape.rows * shape.count;
  FailureOr<int64_t> seq = sequenceLengthOf(forward);
  if (failed(seq))
    return failure();
  split.length = *seq ? shape.length : 0;
  if (failed(buildMicroBatchFunction(forward, split, forwardBatch, *seq)))
    return failure();
  if (!split.wholeBatch.empty()) {
    Value value = split.wholeBatch.front();
    split.func.erase();
    return emitError(value.getLoc())
           << "@" << forward.getSymName()
           << " cannot run as micro-batches of their own shapes: this value "
              "is computed from the data of the whole batch (a normaliser "
              "such as a token count), which micro-batches of several shapes "
              "do not make; give the normaliser as an attribute (the "
              "micro-batches together hold the forward's tokens)";
  }
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
