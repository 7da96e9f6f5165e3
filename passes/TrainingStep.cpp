//===- TrainingStep.cpp - Forward, backward and optimizer update ----------===//
//
// nn-training-step: for a forward function returning a scalar loss, creates
// a function that computes the loss and its gradients (differentiateInPlace,
// the code nn-autodiff runs) and updates every parameter with SGD or AdamW,
// returning the loss, the new parameters and the new optimizer state. The
// roles of arguments and results are attributes of the nn dialect (nn.param,
// nn.state, nn.step, nn.data; nn.loss, nn.updates), so that a driver knows
// which result feeds which argument of the next step.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff.h"
#include "passes/MicroBatches.h"
#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"

#define DEBUG_TYPE "nn-training-step"

namespace loom {
#define GEN_PASS_DEF_TRAININGSTEPPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using nn::NNDialect;

namespace {

/// One argument of the training step: its type, attributes, location and,
/// for arguments of the forward function, the forward argument it replaces.
struct StepArg {
  Type type;
  DictionaryAttr attrs;
  Location loc;
  std::optional<unsigned> forwardIndex;
  /// With micro-batches of their own shapes: the shape whose micro-batches
  /// this data argument holds (an index into the step's parts).
  std::optional<unsigned> part;
  /// With several compositions: a shape of another composition, of which
  /// this one has no micro-batch (an argument of no rows that no op reads).
  bool absent = false;
};

/// The hyper-parameters of one parameter's update.
struct Hyper {
  double lr, momentum, beta1, beta2, eps, weightDecay, minLr;
};

/// One parameter group of the `param-groups` option: the names it matches
/// and what it sets.
struct ParamGroup {
  std::string text;
  /// Globs (checked by llvm::GlobPattern, which keeps a reference to its
  /// text: compiled where they are matched).
  SmallVector<std::string> patterns;
  SmallVector<std::pair<std::string, double>> settings;
  bool used = false;
};

struct TrainingStepPass : loom::impl::TrainingStepPassBase<TrainingStepPass> {
  using TrainingStepPassBase::TrainingStepPassBase;

  void runOnOperation() override {
    if (failed(checkOptions()))
      return signalPassFailure();
    if (failed(forEachForwardFunction(
            getOperation(), func,
            [&](func::FuncOp forward, SymbolTable &symbols) {
              return createTrainingStep(forward, symbols);
            })))
      signalPassFailure();
  }

  /// The number of optimizer state tensors per parameter.
  unsigned numStates() const {
    return optimizer == OptimizerKind::SGD ? 1 : 2;
  }

  nn::LrDecay decayKind = nn::LrDecay::Constant;
  SmallVector<ParamGroup> groups;
  /// The micro-batch-shapes option: its compositions (`;`-separated), each
  /// one entry per shape in order of first appearance, with its count; the
  /// shapes of all of them (the buckets, counts unused) in the same order;
  /// and the composition whose step is being built.
  SmallVector<SmallVector<MicroBatchShape>> compositions;
  SmallVector<MicroBatchShape> buckets;
  ArrayRef<MicroBatchShape> shapes;
  unsigned current = 0;

  bool hasSchedule() const {
    return warmupSteps != 0 || decayKind != nn::LrDecay::Constant;
  }

  /// Checks the options that no op verifier checks, and parses the groups.
  LogicalResult checkOptions() {
    Location loc = getOperation().getLoc();
    // (Options are copied before they are streamed.)
    std::string decayName = decay;
    std::optional<nn::LrDecay> kind = nn::symbolizeLrDecay(decayName);
    if (!kind)
      return emitError(loc) << "nn-training-step: decay must be constant, "
                               "linear or cosine, got '"
                            << decayName << "'";
    decayKind = *kind;
    groups.clear();
    int64_t steps = decaySteps;
    double floor = minLr;
    if (decayKind == nn::LrDecay::Constant && (steps != 0 || floor != 0.0))
      return emitError(loc) << "nn-training-step: decay-steps and min-lr "
                               "need decay=linear or decay=cosine (decay is "
                               "constant)";
    int64_t count = microBatches;
    if (count < 1)
      return emitError(loc) << "nn-training-step: micro-batches must be "
                               "positive, got "
                            << count;
    if (failed(parseShapes(loc)))
      return failure();
    if (count > 1 && !compositions.empty())
      return emitError(loc) << "nn-training-step: micro-batches and "
                               "micro-batch-shapes are exclusive (the shapes "
                               "give the micro-batches)";
    double clip = clipNorm;
    if (!(clip >= 0.0) || std::isinf(clip))
      return emitError(loc) << "nn-training-step: clip-norm must be a "
                               "positive, finite norm (0: no clipping), got "
                            << clip;
    std::string text = paramGroups;
    SmallVector<StringRef> parts;
    StringRef(text).split(parts, ';', -1, /*KeepEmpty=*/false);
    static constexpr StringLiteral kKeys[] = {
        "lr", "weight-decay", "momentum", "beta1", "beta2", "eps", "min-lr"};
    for (StringRef part : parts) {
      part = part.trim();
      if (part.empty())
        continue;
      ParamGroup group;
      group.text = part.str();
      auto [patterns, settings] = part.split(':');
      if (patterns.trim().empty() || !part.contains(':'))
        return emitError(loc)
               << "nn-training-step: parameter group '" << part
               << "' must be PATTERN[,PATTERN...]:KEY=VALUE[ KEY=VALUE...]";
      SmallVector<StringRef> globs;
      patterns.split(globs, ',', -1, false);
      for (StringRef glob : globs) {
        llvm::Expected<llvm::GlobPattern> pattern =
            llvm::GlobPattern::create(glob.trim());
        if (!pattern)
          return emitError(loc) << "nn-training-step: parameter group '"
                                << part << "': bad pattern '" << glob.trim()
                                << "': "
                                << llvm::toString(pattern.takeError());
        group.patterns.push_back(glob.trim().str());
      }
      SmallVector<StringRef> pairs;
      settings.split(pairs, ' ', -1, false);
      for (StringRef pair : pairs) {
        auto [key, value] = pair.split('=');
        double number = 0;
        if (!llvm::is_contained(kKeys, key))
          return emitError(loc)
                 << "nn-training-step: parameter group '" << part
                 << "': unknown setting '" << key
                 << "' (lr, weight-decay, momentum, beta1, beta2, eps, "
                    "min-lr)";
        if (value.trim().getAsDouble(number))
          return emitError(loc) << "nn-training-step: parameter group '"
                                << part << "': '" << key
                                << "' needs a number, got '" << value << "'";
        // Settings the step would not use are errors, not silently lost.
        bool sgd = optimizer == OptimizerKind::SGD;
        if ((sgd && (key == "beta1" || key == "beta2" || key == "eps")) ||
            (!sgd && key == "momentum") ||
            (key == "min-lr" && decayKind == nn::LrDecay::Constant))
          return emitError(loc)
                 << "nn-training-step: parameter group '" << part << "': '"
                 << key << "' does not apply to "
                 << (key == "min-lr" ? "a constant learning rate"
                     : sgd           ? "SGD"
                                     : "AdamW");
        group.settings.push_back({key.str(), number});
      }
      if (group.settings.empty())
        return emitError(loc) << "nn-training-step: parameter group '" << part
                              << "' sets nothing";
      groups.push_back(std::move(group));
    }
    return success();
  }

  /// Parses `micro-batch-shapes` (ROWSxLENGTH[*COUNT],...[;...]) into
  /// `compositions` and `buckets`.
  LogicalResult parseShapes(Location loc) {
    compositions.clear();
    buckets.clear();
    shapes = {};
    std::string text = microBatchShapes;
    SmallVector<StringRef> lists;
    StringRef(text).split(lists, ';', -1, /*KeepEmpty=*/true);
    if (StringRef(text).trim().empty())
      lists.clear();
    for (StringRef list : lists) {
      if (list.trim().empty())
        return emitError(loc)
               << "nn-training-step: micro-batch-shapes: composition "
               << compositions.size() + 1 << " of " << lists.size()
               << " is empty (compositions are separated by ';', their "
                  "shapes by ',')";
      if (failed(parseComposition(loc, list, compositions.emplace_back())))
        return failure();
      // (Two compositions of the same micro-batches would be variants that
      // the same data fits.)
      auto sameAs = [](ArrayRef<MicroBatchShape> a,
                       ArrayRef<MicroBatchShape> b) {
        auto in = [](const MicroBatchShape &x, ArrayRef<MicroBatchShape> in) {
          return llvm::any_of(in, [&](const MicroBatchShape &y) {
            return x.rows == y.rows && x.length == y.length &&
                   x.count == y.count;
          });
        };
        return a.size() == b.size() &&
               llvm::all_of(a, [&](const auto &x) { return in(x, b); });
      };
      for (auto [k, earlier] : llvm::enumerate(
               ArrayRef(compositions).drop_back()))
        if (sameAs(earlier, compositions.back()))
          return emitError(loc)
                 << "nn-training-step: micro-batch-shapes: compositions "
                 << k + 1 << " and " << compositions.size()
                 << " hold the same micro-batches ('" << list.trim()
                 << "')";
      for (const MicroBatchShape &shape : compositions.back())
        if (llvm::none_of(buckets, [&](const MicroBatchShape &other) {
              return other.rows == shape.rows && other.length == shape.length;
            }))
          buckets.push_back({shape.rows, shape.length, 0});
    }
    // A bound on the variants (each a copy of forward and backward per
    // shape it holds).
    if (compositions.size() > 64)
      return emitError(loc) << "nn-training-step: micro-batch-shapes gives "
                            << compositions.size()
                            << " compositions; at most 64 are compiled";
    return success();
  }

  /// Parses one composition of `micro-batch-shapes` into `out`.
  LogicalResult parseComposition(Location loc, StringRef list,
                                 SmallVector<MicroBatchShape> &shapes) {
    SmallVector<StringRef> entries;
    list.split(entries, ',', -1, /*KeepEmpty=*/false);
    for (StringRef entry : entries) {
      entry = entry.trim();
      auto [shape, countText] = entry.split('*');
      auto [rowsText, lengthText] = shape.split('x');
      int64_t rows = 0, length = 0, count = 1;
      if (rowsText.trim().getAsInteger(10, rows) ||
          lengthText.trim().getAsInteger(10, length) ||
          (entry.contains('*') && countText.trim().getAsInteger(10, count)) ||
          rows < 1 || length < 1 || count < 1 || rows > (1 << 20) ||
          length > (1 << 20) || count > (1 << 20))
        return emitError(loc)
               << "nn-training-step: micro-batch shape '" << entry
               << "' must be ROWSxLENGTH or ROWSxLENGTH*COUNT (positive "
                  "integers)";
      // (Each at most 2^20, and counts summed below stay in range.)
      auto same = llvm::find_if(shapes, [&](const MicroBatchShape &other) {
        return other.rows == rows && other.length == length;
      });
      if (same != shapes.end())
        same->count += count;
      else
        shapes.push_back({rows, length, count});
    }
    if (shapes.empty())
      return emitError(loc) << "nn-training-step: micro-batch-shapes: the "
                               "composition '"
                            << list.trim()
                            << "' names no shape (compositions are "
                               "separated by ';', their shapes by ',')";
    return success();
  }

  /// The micro-batch functions of `forward` for `shapes`, differentiated,
  /// after checking that they hold the forward's tokens.
  LogicalResult buildShapeParts(func::FuncOp forward,
                                SmallVectorImpl<MicroBatchForward> &splits,
                                SmallVectorImpl<DifferentiatedCopy> &grads) {
    auto cleanup = [&] {
      for (MicroBatchForward &split : splits)
        split.func.erase();
      splits.clear();
      grads.clear();
      return failure();
    };
    FailureOr<int64_t> seq = sequenceLengthOf(forward);
    if (failed(seq))
      return failure();
    if (*seq == 0)
      return forward.emitError("micro-batch-shapes change the rows and the "
                               "sequence length (dimension 1) of the data, "
                               "but no nn.data argument of @")
             << forward.getSymName()
             << " has rank >= 2 (give micro-batches=K)";
    int64_t rows = 0, tokens = 0;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
          type && type.getRank() >= 2 &&
          forward.getArgAttr(i, NNDialect::getDataAttrName())) {
        rows = type.getDimSize(0);
        break;
      }
    std::string list;
    for (const MicroBatchShape &shape : shapes) {
      tokens += shape.rows * shape.length * shape.count;
      list += (list.empty() ? "" : ", ") + std::to_string(shape.count) +
              " x " + std::to_string(shape.rows) + "x" +
              std::to_string(shape.length);
    }
    if (tokens != rows * *seq)
      return forward.emitError("micro-batch-shapes (")
             << list
             << (compositions.size() > 1
                     ? ", composition " + std::to_string(current + 1) +
                           " of " + std::to_string(compositions.size())
                     : std::string())
             << ") hold " << tokens << " tokens, but @"
             << forward.getSymName() << "'s batch holds " << rows << "x"
             << *seq << " = " << rows * *seq
             << ": the micro-batches of a step must hold the forward's "
                "tokens, so that its normalisers are the whole step's";
    for (const MicroBatchShape &shape : shapes) {
      FailureOr<MicroBatchForward> micro =
          retypeForMicroBatches(forward, shape);
      if (failed(micro))
        return cleanup();
      splits.push_back(std::move(*micro));
      FailureOr<Gradients> gradients = differentiateInPlace(splits.back().func);
      if (failed(gradients))
        return cleanup();
      grads.push_back(DifferentiatedCopy{splits.back().func,
                                         std::move(*gradients)});
    }
    return success();
  }

  /// The hyper-parameters of the parameter at forward argument `index`:
  /// the options, overridden by the first group whose pattern matches the
  /// parameter's name. A group's lr scales min-lr where it sets no min-lr.
  Hyper hyperOf(func::FuncOp forward, unsigned index) {
    Hyper hyper{lr, momentum, beta1, beta2, eps, weightDecay, minLr};
    auto name = forward.getArgAttrOfType<StringAttr>(
        index, NNDialect::getNameAttrName());
    if (!name)
      return hyper;
    // Every group that matches counts as used; the first one applies.
    ParamGroup *first = nullptr;
    for (ParamGroup &group : groups) {
      if (llvm::none_of(group.patterns, [&](const std::string &glob) {
            llvm::Expected<llvm::GlobPattern> pattern =
                llvm::GlobPattern::create(glob);
            return pattern && pattern->match(name.getValue());
          }))
        continue;
      group.used = true;
      if (!first)
        first = &group;
    }
    if (first) {
      ParamGroup &group = *first;
      bool setsMinLr = false;
      for (auto &[key, value] : group.settings) {
        if (key == "lr")
          hyper.lr = value;
        else if (key == "weight-decay")
          hyper.weightDecay = value;
        else if (key == "momentum")
          hyper.momentum = value;
        else if (key == "beta1")
          hyper.beta1 = value;
        else if (key == "beta2")
          hyper.beta2 = value;
        else if (key == "eps")
          hyper.eps = value;
        else if (key == "min-lr") {
          hyper.minLr = value;
          setsMinLr = true;
        }
      }
      if (!setsMinLr && lr > 0)
        hyper.minLr = minLr * hyper.lr / lr;
    }
    return hyper;
  }

  /// The training step of `forward`: one function, or with several
  /// compositions of micro-batch shapes one per composition (variants of
  /// one step: `NAME_train_step`, then `NAME_train_step_v1`, ...).
  LogicalResult createTrainingStep(func::FuncOp forward, SymbolTable &symbols) {
    std::string base = (forward.getSymName() + "_train_step").str();
    if (compositions.size() <= 1) {
      shapes = compositions.empty() ? ArrayRef<MicroBatchShape>()
                                    : ArrayRef(compositions.front());
      return createStepFunction(forward, symbols, base, nullptr);
    }
    Operation *after = forward;
    for (auto [c, composition] : llvm::enumerate(compositions)) {
      shapes = composition;
      current = c;
      std::string name = c ? base + "_v" + std::to_string(c) : base;
      if (failed(createStepFunction(forward, symbols, name, &after)))
        return failure();
    }
    return success();
  }

  /// Creates the step `name` of `forward` for the composition in `shapes`
  /// (if any), inserted after `forward` or, given `after`, after it
  /// (which becomes the new step).
  LogicalResult createStepFunction(func::FuncOp forward, SymbolTable &symbols,
                                   const std::string &name,
                                   Operation **after) {
    if (symbols.lookup(name))
      return forward.emitError("cannot create @")
             << name << ": the module already has a symbol of that name";
    for (ParamGroup &group : groups)
      group.used = false;
    // The differentiated functions: the forward's, or one per micro-batch
    // shape (`splits`, in the same order).
    SmallVector<MicroBatchForward> splits;
    SmallVector<DifferentiatedCopy> grads;
    if (!shapes.empty()) {
      if (failed(buildShapeParts(forward, splits, grads)))
        return failure();
    } else if (microBatches > 1) {
      FailureOr<MicroBatchForward> micro =
          splitIntoMicroBatches(forward, microBatches);
      if (failed(micro))
        return failure();
      splits.push_back(std::move(*micro));
      FailureOr<Gradients> gradients = differentiateInPlace(splits[0].func);
      if (failed(gradients)) {
        splits[0].func.erase();
        return failure();
      }
      grads.push_back(
          DifferentiatedCopy{splits[0].func, std::move(*gradients)});
    } else {
      FailureOr<DifferentiatedCopy> grad =
          differentiateCopy(forward, name, symbols);
      if (failed(grad))
        return failure();
      grads.push_back(std::move(*grad));
    }
    const Gradients &gradients = grads.front().gradients;
    func::FuncOp step = buildStep(forward, grads, name, splits);
    for (DifferentiatedCopy &grad : grads)
      grad.func.erase();
    for (const ParamGroup &group : groups)
      if (!group.used) {
        step.erase();
        return forward.emitError("parameter group '")
               << group.text << "' matches no parameter of @"
               << forward.getSymName() << " (parameters match by nn.name)";
      }
    if (failed(verify(step))) {
      step.erase();
      return failure();
    }
    symbols.insert(step, std::next(Block::iterator(after ? *after : forward)));
    if (after)
      *after = step;
    ++numFunctions;
    numParams += gradients.paramArgs.size();
    return success();
  }

  /// The step's loss and gradients: the body of `grads[0]` (the
  /// differentiated forward function) moved into `entry`, or, with
  /// micro-batches (`splits`, one per shape), each shape's cloned once per
  /// micro-batch and summed.
  std::pair<Value, SmallVector<Value>>
  buildGradients(ArrayRef<DifferentiatedCopy> grads, Block *entry,
                 ArrayRef<StepArg> args, ArrayRef<MicroBatchForward> splits) {
    if (splits.empty()) {
      const Gradients &gradients = grads[0].gradients;
      func::FuncOp grad = grads[0].func;
      Block &body = grad.getBody().front();
      for (auto [index, arg] : llvm::enumerate(args))
        if (arg.forwardIndex)
          body.getArgument(*arg.forwardIndex)
              .replaceAllUsesWith(entry->getArgument(index));
      entry->getOperations().splice(entry->end(), body.getOperations());
      // The loss and gradients may be arguments themselves (a parameter
      // returned as is).
      auto remap = [&](Value value) -> Value {
        if (auto arg = dyn_cast<BlockArgument>(value))
          if (arg.getOwner() == &body)
            for (auto [index, stepArg] : llvm::enumerate(args))
              if (stepArg.forwardIndex == arg.getArgNumber())
                return entry->getArgument(index);
        return value;
      };
      Operation *ret = entry->getTerminator();
      ret->erase();
      return {remap(gradients.loss),
              llvm::map_to_vector(gradients.paramGrads, remap)};
    }
    OpBuilder builder = OpBuilder::atBlockEnd(entry);
    Value loss;
    SmallVector<Value> sums(grads[0].gradients.paramGrads.size());
    // (Sums of several micro-batches in f32 at least: a bf16 or f16
    // gradient is widened before it is added, and the sum narrowed back
    // once at the end.)
    int64_t microBatches = 0;
    for (const MicroBatchForward &split : splits)
      microBatches += split.count;
    auto accumulate = [&](Value sum, Value value) -> Value {
      auto type = cast<RankedTensorType>(value.getType());
      if (microBatches > 1 && isa<FloatType>(type.getElementType()) &&
          type.getElementType().getIntOrFloatBitWidth() < 32)
        value = nn::CastOp::create(builder, value.getLoc(),
                                   type.clone(builder.getF32Type()), value);
      if (!sum)
        return value;
      return nn::AddOp::create(builder, value.getLoc(), sum, value);
    };
    for (auto [part, split] : llvm::enumerate(splits)) {
      const Gradients &gradients = grads[part].gradients;
      func::FuncOp micro = split.func;
      Block &body = micro.getBody().front();
      // The forward's arguments, as the step has them for this shape.
      SmallVector<Value> forwardArgs(micro.getNumArguments() -
                                     split.wholeBatch.size());
      for (auto [index, arg] : llvm::enumerate(args))
        if (arg.forwardIndex && !arg.absent &&
            (!arg.part || *arg.part == part))
          forwardArgs[*arg.forwardIndex] = entry->getArgument(index);
      SmallVector<Value> whole =
          cloneWholeBatchValues(builder, split, forwardArgs);
      for (int64_t k = 0; k < split.count; ++k) {
        IRMapping mapping;
        for (auto [i, value] : llvm::enumerate(forwardArgs)) {
          Value arg = body.getArgument(i);
          mapping.map(arg, llvm::is_contained(split.splitArgs, i)
                               ? microBatchOf(builder, arg.getLoc(), value,
                                              split, k)
                               : value);
        }
        for (auto [i, value] : llvm::enumerate(whole))
          mapping.map(body.getArgument(forwardArgs.size() + i), value);
        for (Operation &op : body.without_terminator())
          builder.clone(op, mapping);
        loss = accumulate(loss, mapping.lookupOrDefault(gradients.loss));
        for (auto [j, paramGrad] : llvm::enumerate(gradients.paramGrads))
          sums[j] = accumulate(sums[j], mapping.lookupOrDefault(paramGrad));
      }
    }
    auto narrow = [&](Value sum, Value like) -> Value {
      if (sum.getType() == like.getType())
        return sum;
      return nn::CastOp::create(builder, sum.getLoc(), like.getType(), sum);
    };
    loss = narrow(loss, grads[0].gradients.loss);
    for (auto [j, paramGrad] : llvm::enumerate(grads[0].gradients.paramGrads))
      sums[j] = narrow(sums[j], paramGrad);
    return {loss, sums};
  }

  /// Global-norm clipping of `grads` (as torch.nn.utils.clip_grad_norm_):
  /// the norm is the root of the sum of every element's square, the scale
  /// min(1, clip-norm / (norm + 1e-6)); returns the norm.
  Value clipGradients(OpBuilder &builder, Location loc,
                      SmallVectorImpl<Value> &grads) {
    MLIRContext *context = builder.getContext();
    Type elementType =
        cast<RankedTensorType>(grads.front().getType()).getElementType();
    bool mixed = llvm::any_of(grads, [&](Value g) {
      return cast<RankedTensorType>(g.getType()).getElementType() !=
             elementType;
    });
    if (mixed)
      elementType = Float64Type::get(context);
    auto scalar = RankedTensorType::get({}, elementType);
    Value total;
    for (Value g : grads) {
      auto type = cast<RankedTensorType>(g.getType());
      Value squares = nn::MulOp::create(builder, loc, g, g);
      Value sum = squares;
      if (type.getRank() > 0)
        sum = nn::ReduceOp::create(
            builder, loc, nn::ReduceKind::Sum, squares,
            llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())), false);
      if (type.getElementType() != elementType)
        sum = nn::CastOp::create(builder, loc, scalar, sum);
      total = total ? Value(nn::AddOp::create(builder, loc, total, sum)) : sum;
    }
    Value norm = nn::SqrtOp::create(builder, loc, scalar, total);
    // The clipping's constants are its own: merged (CSE) with the rest of
    // the step's, such as the loss's seed gradient of 1, they would tie the
    // norm's layout to theirs and make its sums of squares gather their
    // shards instead of passing partial sums on.
    auto constant = [&](double value) {
      auto fill = nn::FillOp::create(builder, loc, scalar,
                                     builder.getF64FloatAttr(value));
      fill->setAttr("loom.clip", builder.getUnitAttr());
      return fill;
    };
    Value denominator = nn::AddOp::create(builder, loc, norm, constant(1e-6));
    Value ratio = nn::DivOp::create(builder, loc, constant(clipNorm),
                                    denominator);
    Value scale = nn::ClampOp::create(builder, loc, scalar, ratio,
                                      builder.getF64FloatAttr(0.0),
                                      builder.getF64FloatAttr(1.0));
    for (Value &g : grads) {
      auto type = cast<RankedTensorType>(g.getType());
      Value factor = scale;
      if (type.getElementType() != elementType)
        factor = nn::CastOp::create(
            builder, loc, RankedTensorType::get({}, type.getElementType()),
            scale);
      g = nn::MulOp::create(builder, loc, g, factor);
    }
    return norm;
  }

  /// A function with the training step's signature holding the body of
  /// `grads` (the differentiated forward function, or with micro-batches
  /// that of one micro-batch per shape), then clipping and the updates.
  func::FuncOp buildStep(func::FuncOp forward,
                         ArrayRef<DifferentiatedCopy> grads, StringRef name,
                         ArrayRef<MicroBatchForward> splits) {
    const Gradients &gradients = grads[0].gradients;
    func::FuncOp grad = grads[0].func;
    MLIRContext *context = &getContext();
    Builder b(context);
    Location loc = forward.getLoc();
    ArrayRef<unsigned> params = gradients.paramArgs;
    unsigned numParams = params.size();

    // Arguments: params..., state..., [step,] data...
    SmallVector<StepArg> args;
    for (unsigned index : params)
      args.push_back({forward.getArgumentTypes()[index],
                      forward.getArgAttrDict(index),
                      forward.getArgument(index).getLoc(), index, std::nullopt});
    // Optimizer state: named after its parameter where that has a name
    // (`w.momentum`; `w.m` and `w.v`, AdamW's first and second moments).
    for (unsigned kind = 0; kind < numStates(); ++kind)
      for (unsigned k = 0; k < numParams; ++k) {
        SmallVector<NamedAttribute, 2> attrs{b.getNamedAttr(
            NNDialect::getStateAttrName(), b.getI64IntegerAttr(k))};
        if (auto paramName = forward.getArgAttrOfType<StringAttr>(
                params[k], NNDialect::getNameAttrName())) {
          StringRef suffix = optimizer == OptimizerKind::SGD ? ".momentum"
                             : kind == 0                     ? ".m"
                                                             : ".v";
          attrs.push_back(
              b.getNamedAttr(NNDialect::getNameAttrName(),
                             b.getStringAttr(paramName.getValue() + suffix)));
        }
        args.push_back(
            {args[k].type, b.getDictionaryAttr(attrs), loc, std::nullopt, std::nullopt});
      }
    // The step counter: AdamW's bias correction and any schedule need it.
    std::optional<unsigned> stepIndex;
    if (optimizer == OptimizerKind::AdamW || hasSchedule()) {
      stepIndex = args.size();
      args.push_back({RankedTensorType::get({}, b.getI64Type()),
                      b.getDictionaryAttr(
                          b.getNamedAttr(NNDialect::getStepAttrName(),
                                         b.getUnitAttr())),
                      loc, std::nullopt, std::nullopt});
    }
    // With micro-batches of their own shapes, every split data argument
    // once per shape (`NAME_ROWSxLENGTH`, of count * rows rows), after the
    // rest.
    bool ownShapes = !shapes.empty();
    for (unsigned index = 0; index < forward.getNumArguments(); ++index)
      if (!llvm::is_contained(params, index) &&
          !(ownShapes && llvm::is_contained(splits[0].splitArgs, index)))
        args.push_back({forward.getArgumentTypes()[index],
                        forward.getArgAttrDict(index),
                        forward.getArgument(index).getLoc(), index, std::nullopt});
    // (With several compositions, every composition's shapes, in the same
    // order: a shape this one lacks has no rows.)
    for (const MicroBatchShape &bucket :
         ownShapes ? ArrayRef(buckets) : ArrayRef<MicroBatchShape>()) {
      const MicroBatchForward *split = nullptr;
      for (const MicroBatchForward &candidate : splits)
        if (candidate.rows == bucket.rows && candidate.length == bucket.length)
          split = &candidate;
      for (unsigned index : splits[0].splitArgs) {
        auto type = cast<RankedTensorType>(forward.getArgumentTypes()[index]);
        SmallVector<int64_t> shape(type.getShape());
        shape[0] = split ? split->batch : 0;
        if (shape.size() >= 2)
          shape[1] = bucket.length;
        auto nameAttr = forward.getArgAttrOfType<StringAttr>(
            index, NNDialect::getNameAttrName());
        std::string argName =
            (nameAttr ? nameAttr.getValue().str()
                      : "arg" + std::to_string(index)) +
            "_" + std::to_string(bucket.rows) + "x" +
            std::to_string(bucket.length);
        NamedAttrList attrs(forward.getArgAttrDict(index));
        attrs.set(NNDialect::getNameAttrName(), b.getStringAttr(argName));
        StepArg arg{RankedTensorType::get(shape, type.getElementType(),
                                          type.getEncoding()),
                    attrs.getDictionary(context),
                    forward.getArgument(index).getLoc(), index, std::nullopt};
        if (split)
          arg.part = static_cast<unsigned>(split - splits.begin());
        else
          arg.absent = true;
        args.push_back(arg);
      }
    }

    auto step = func::FuncOp::create(
        loc, name,
        FunctionType::get(context,
                          llvm::map_to_vector(args,
                                              [](const StepArg &arg) {
                                                return arg.type;
                                              }),
                          {}));
    Block *entry = new Block();
    step.getBody().push_back(entry);
    Location retLoc = grad.getBody().front().getTerminator()->getLoc();
    // Attributes set at once (one by one rebuilds the array each time).
    SmallVector<DictionaryAttr> argAttrs;
    for (const StepArg &arg : args) {
      entry->addArgument(arg.type, arg.loc);
      argAttrs.push_back(arg.attrs ? arg.attrs
                                   : DictionaryAttr::get(context, {}));
    }
    step.setAllArgAttrs(argAttrs);
    auto [loss, paramGrads] = buildGradients(grads, entry, args, splits);

    OpBuilder builder = OpBuilder::atBlockEnd(entry);
    Value norm;
    if (clipNorm > 0 && numParams > 0)
      norm = clipGradients(builder, loc, paramGrads);

    SmallVector<Value> newParams, newStates(numStates() * numParams);
    // The schedule's attributes, left out (null) at their defaults.
    bool decays = decayKind != nn::LrDecay::Constant;
    IntegerAttr warmupAttr =
        warmupSteps ? b.getI64IntegerAttr(warmupSteps) : IntegerAttr();
    nn::LrDecayAttr decayAttr =
        decays ? nn::LrDecayAttr::get(context, decayKind) : nn::LrDecayAttr();
    IntegerAttr decayStepsAttr =
        decays ? b.getI64IntegerAttr(decaySteps) : IntegerAttr();
    auto minLrAttr = [&](double value) {
      return decays ? b.getF64FloatAttr(value) : FloatAttr();
    };
    for (unsigned k = 0; k < numParams; ++k) {
      Hyper hyper = hyperOf(forward, params[k]);
      Value param = entry->getArgument(k);
      Value paramGrad = paramGrads[k];
      Value first = entry->getArgument(numParams + k);
      Value stepValue = stepIndex ? entry->getArgument(*stepIndex) : Value();
      if (optimizer == OptimizerKind::SGD) {
        auto sgd = nn::SgdUpdateOp::create(
            builder, loc, param, paramGrad, first,
            hasSchedule() ? stepValue : Value(), b.getF64FloatAttr(hyper.lr),
            b.getF64FloatAttr(hyper.momentum),
            b.getF64FloatAttr(hyper.weightDecay),
            nesterov ? b.getUnitAttr() : UnitAttr(),
            warmupAttr, decayAttr, decayStepsAttr, minLrAttr(hyper.minLr));
        newParams.push_back(sgd.getNewParam());
        newStates[k] = sgd.getNewMomentumBuffer();
      } else {
        Value second = entry->getArgument(2 * numParams + k);
        auto adamw = nn::AdamWUpdateOp::create(
            builder, loc, param, paramGrad, first, second, stepValue,
            b.getF64FloatAttr(hyper.lr), b.getF64FloatAttr(hyper.beta1),
            b.getF64FloatAttr(hyper.beta2), b.getF64FloatAttr(hyper.eps),
            b.getF64FloatAttr(hyper.weightDecay),
            warmupAttr, decayAttr, decayStepsAttr, minLrAttr(hyper.minLr));
        newParams.push_back(adamw.getNewParam());
        newStates[k] = adamw.getNewM();
        newStates[numParams + k] = adamw.getNewV();
      }
    }

    // Results: loss, [gradient norm,] new params..., new state..., each
    // saying which argument it becomes next step.
    SmallVector<Value> results{loss};
    SmallVector<DictionaryAttr> resultAttrs{b.getDictionaryAttr(
        b.getNamedAttr(NNDialect::getLossAttrName(), b.getUnitAttr()))};
    if (norm) {
      results.push_back(norm);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(NNDialect::getGradNormAttrName(), b.getUnitAttr())));
    }
    auto updates = [&](unsigned argIndex) {
      return b.getDictionaryAttr(b.getNamedAttr(
          NNDialect::getUpdatesAttrName(), b.getI64IntegerAttr(argIndex)));
    };
    for (auto [k, value] : llvm::enumerate(newParams)) {
      results.push_back(value);
      resultAttrs.push_back(updates(k));
    }
    for (auto [j, value] : llvm::enumerate(newStates)) {
      results.push_back(value);
      resultAttrs.push_back(updates(numParams + j));
    }
    func::ReturnOp::create(builder, retLoc, results);
    step.setFunctionType(FunctionType::get(
        context, step.getArgumentTypes(),
        llvm::map_to_vector(results, [](Value v) { return v.getType(); })));
    step.setAllResultAttrs(resultAttrs);
    // (The step's data arguments are per shape: they do not show its
    // tokens, which the composition holds.)
    if (ownShapes) {
      int64_t tokens = 0;
      for (const MicroBatchShape &shape : shapes)
        tokens += shape.rows * shape.length * shape.count;
      step->setAttr(NNDialect::getTokensAttrName(),
                    b.getI64IntegerAttr(tokens));
    }
    return step;
  }
};

} // namespace
