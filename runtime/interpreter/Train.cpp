//===- Train.cpp - loom-run --train ---------------------------------------===//
//
// The training loop of `loom-run --interpret FILE --train`. The step
// function is found by its role attributes (docs/rationale/autodiff.md):
//
//   arguments  nn.param    initialised once (below), then fed back
//              nn.state    optimizer state, zeros at the start
//              nn.step     the step counter, 1 at the first step, +1 each step
//              nn.data     drawn afresh every step by the data task (below)
//   results    nn.loss     a scalar, printed every step
//              nn.updates = i   becomes argument i of the next step
//
// Parameter initialisation (a fixed rule; names are not knowable): a
// parameter of rank >= 2 is uniform in [-a, a) with a = 1/sqrt(fan_in),
// fan_in = shape[rank - 2] (the input dimension of an [in, out] matmul
// weight, the vocabulary of an embedding table); parameters of rank 0 or 1
// (biases and norm scales) are ones. `--init-npy DIR` loads
// DIR/param_<k>.npy for the k-th nn.param argument instead.
//
// Data tasks, one batch per step, a pure function of (seed, step):
//   tokens  the first integer data argument is uniform in [0, V) (V from
//           --vocab), the second integer data argument (same shape) is
//           target = (7 * token + 3) mod V at the same position;
//   affine  the first float data argument x, viewed as rows of its last
//           dimension In, is uniform in [-1, 1); the second float data
//           argument t, rows of Out, is t = x A + c with A (In x Out) and c
//           (Out) uniform in [-1, 1) / sqrt(In), fixed by the seed; both must
//           have the same number of rows;
//   classes the first float data argument x, rows of In as for affine; the
//           first integer data argument holds one class per row: the
//           largest of the V scores x A + c (A: In x V, c: V, drawn as for
//           affine; the first on ties), a task a classifier can learn;
//   auto    tokens if the first data argument is an integer tensor, else
//           classes if there is an integer data argument, else affine.
// Any other data argument is uniform: floats in [-1, 1), integers in [0, V).
//
// Everything except the tokens/s figure is bitwise reproducible for a seed.
//
//===----------------------------------------------------------------------===//

#include "runtime/interpreter/Train.h"
#include "runtime/interpreter/Npy.h"
#include "runtime/interpreter/Random.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace mlir;
using namespace loom::interp;

namespace {

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "loom-run") << message << "\n";
  return 1;
}

/// Independent random keys: one per purpose and index.
uint64_t streamKey(uint64_t seed, uint64_t purpose, uint64_t index) {
  return splitmix64(splitmix64(seed, purpose), index);
}

constexpr uint64_t kInitStream = 1, kDataStream = 2, kAffineStream = 3;

/// Uniform in [-scale, scale).
double uniform(uint64_t key, uint64_t index, double scale) {
  return (2.0 * toUnitInterval(splitmix64(key, index)) - 1.0) * scale;
}

/// The training steps of `module`: `requested`, else every function with
/// an nn.loss result (empty after a diagnostic when there is none).
llvm::SmallVector<func::FuncOp>
findTrainSteps(ModuleOp module, Interpreter &interpreter,
               llvm::StringRef requested) {
  if (!requested.empty()) {
    func::FuncOp func = interpreter.lookupFunction(requested);
    if (!func)
      return {};
    return {func};
  }
  llvm::SmallVector<func::FuncOp> found;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    // Specialisations and parts of a partitioned step are not steps of
    // their own.
    if (func.isExternal() ||
        func->hasAttr(loom::hspmd::HSPMDDialect::getSpecializesAttrName()) ||
        func->hasAttr(loom::hspmd::HSPMDDialect::getPartOfAttrName()))
      continue;
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      if (func.getResultAttr(i, loom::nn::NNDialect::getLossAttrName())) {
        found.push_back(func);
        break;
      }
  }
  if (found.empty())
    emitError(module.getLoc())
        << "--train needs a training step: no function has a result marked "
           "nn.loss (build one with loom-opt --loom-training-pipeline)";
  return found;
}

/// `dict` without its layout where `dropLayout`.
DictionaryAttr withoutLayout(DictionaryAttr dict, bool dropLayout) {
  if (!dropLayout || !dict)
    return dict;
  NamedAttrList list(dict);
  list.erase(loom::hspmd::HSPMDDialect::getLayoutAttrName());
  return list.getDictionary(dict.getContext());
}

/// The attributes of argument `i` of `func`, without its layout where
/// `dropLayout`.
DictionaryAttr argAttrs(func::FuncOp func, unsigned i, bool dropLayout) {
  return withoutLayout(func.getArgAttrDict(i), dropLayout);
}

/// The strategy `func` was specialised to (hspmd-specialize-strategies),
/// or empty.
llvm::StringRef strategyOf(func::FuncOp func) {
  auto name = func->getAttrOfType<StringAttr>(
      loom::hspmd::HSPMDDialect::getStrategyAttrName());
  return name ? name.getValue() : llvm::StringRef();
}

/// Why `other` is not a variant of `func` (the same arguments, roles,
/// names and results, data arguments of the same element type and rank
/// but any shape; the functions of two strategies may lay out their
/// arguments differently), or empty.
std::string variantMismatch(func::FuncOp func, func::FuncOp other) {
  FunctionType a = func.getFunctionType(), b = other.getFunctionType();
  bool strategies = !strategyOf(func).empty() && !strategyOf(other).empty();
  if (a.getNumInputs() != b.getNumInputs() ||
      a.getNumResults() != b.getNumResults())
    return "they have different numbers of arguments or results";
  llvm::StringRef roles[] = {loom::nn::NNDialect::getParamAttrName(),
                             loom::nn::NNDialect::getStateAttrName(),
                             loom::nn::NNDialect::getStepAttrName(),
                             loom::nn::NNDialect::getDataAttrName()};
  for (unsigned i = 0; i < a.getNumInputs(); ++i) {
    std::string where = "argument #" + std::to_string(i);
    for (llvm::StringRef role : roles)
      if (bool(func.getArgAttr(i, role)) != bool(other.getArgAttr(i, role)))
        return where + " has another role";
    if (func.getArgAttr(i, loom::nn::NNDialect::getNameAttrName()) !=
        other.getArgAttr(i, loom::nn::NNDialect::getNameAttrName()))
      return where + " has another name";
    if (!func.getArgAttr(i, loom::nn::NNDialect::getDataAttrName())) {
      if (a.getInput(i) != b.getInput(i))
        return where + " has another type";
      if (argAttrs(func, i, strategies) != argAttrs(other, i, strategies))
        return where + " has other attributes (its layout?)";
      continue;
    }
    auto x = dyn_cast<RankedTensorType>(a.getInput(i)),
         y = dyn_cast<RankedTensorType>(b.getInput(i));
    if (!x || !y || x.getElementType() != y.getElementType() ||
        x.getRank() != y.getRank())
      return where + " (data) has another element type or rank";
  }
  for (unsigned r = 0; r < a.getNumResults(); ++r)
    if (withoutLayout(func.getResultAttrDict(r), strategies) !=
            withoutLayout(other.getResultAttrDict(r), strategies) ||
        (!func.getResultAttr(r, loom::nn::NNDialect::getLossAttrName()) &&
         a.getResult(r) != b.getResult(r)))
      return "result #" + std::to_string(r) + " differs";
  return "";
}

} // namespace

int loom::interp::prepareTraining(ModuleOp module, Interpreter &interpreter,
                                  const TrainOptions &options,
                                  TrainingSetup &setup) {
  if (options.steps < 1)
    return fail("--steps must be at least 1");
  if (options.vocab < 1 || options.vocab > (int64_t{1} << 31))
    return fail("--vocab must be in [1, 2^31]");
  if (options.dataTask != "auto" && options.dataTask != "tokens" &&
      options.dataTask != "affine" && options.dataTask != "classes")
    return fail("--data-task must be auto, tokens, affine or classes, got '" +
                options.dataTask + "'");

  llvm::SmallVector<func::FuncOp> found =
      findTrainSteps(module, interpreter, options.entry);
  if (found.empty())
    return 1;
  func::FuncOp func = found.front();
  bool stepFolders = false;
  if (!options.dataDir.empty()) {
    llvm::SmallString<128> first(options.dataDir);
    llvm::sys::path::append(first, "step1");
    stepFolders = llvm::sys::fs::is_directory(first);
  }
  bool strategySteps = llvm::any_of(
      found, [](func::FuncOp f) { return !strategyOf(f).empty(); });
  if (!options.strategies.empty() && !strategySteps)
    return fail("--strategies needs a step specialised to strategies "
                "(hspmd-specialize-strategies); @" +
                found.front().getSymName() + " is not");
  if (found.size() > 1) {
    // Several steps: variants of one, for data whose shapes change from
    // step to step, or the strategies of a switching run.
    std::string names;
    for (func::FuncOp f : found)
      names += (names.empty() ? "@" : ", @") + f.getSymName().str();
    if (!stepFolders && options.strategies.empty())
      return fail(llvm::Twine(found.size()) +
                  " functions have a result marked nn.loss (" + names +
                  "); choose one with --entry, or give per-step data "
                  "folders (--data DIR with DIR/step<n>) to run each step "
                  "on the one its shapes fit, or the strategy of each step "
                  "(--strategies) where they are a step's strategies");
    for (func::FuncOp other : llvm::drop_begin(found))
      if (std::string why = variantMismatch(func, other); !why.empty())
        return fail("@" + other.getSymName() + " is not a variant of @" +
                    func.getSymName() + " (" + why +
                    "): choose one step with --entry");
  }
  setup.variants.assign(found.begin(), found.end());
  setup.options = options;
  // Each entry of the strategy schedule: its step (the first of that
  // strategy; with per-step folders, chosen per folder below).
  for (const std::string &strategy : options.strategies) {
    auto it = llvm::find_if(found, [&](func::FuncOp f) {
      return strategyOf(f) == strategy;
    });
    if (it == found.end()) {
      std::string names;
      for (func::FuncOp f : found)
        if (!strategyOf(f).empty())
          names += (names.empty() ? "\"" : ", \"") + strategyOf(f).str() +
                   "\"";
      return fail("--strategies names \"" + strategy +
                  "\", which no step has (they have " + names + ")");
    }
    setup.scheduleVariants.push_back(
        static_cast<unsigned>(std::distance(found.begin(), it)));
  }
  setup.func = func;
  FunctionType type = func.getFunctionType();
  llvm::StringRef name = func.getSymName();
  unsigned numArgs = type.getNumInputs();

  // Roles of the arguments and static types.
  std::vector<RankedTensorType> &argTypes = setup.argTypes;
  std::vector<ElementKind> &argKinds = setup.argKinds;
  argTypes.resize(numArgs);
  argKinds.resize(numArgs);
  std::vector<unsigned> &params = setup.params, &states = setup.states,
                        &steps = setup.steps, &data = setup.data;
  for (unsigned i = 0; i < numArgs; ++i) {
    auto ranked = dyn_cast<RankedTensorType>(type.getInput(i));
    std::optional<ElementKind> kind =
        ranked ? getElementKind(ranked.getElementType()) : std::nullopt;
    if (!kind || !ranked.hasStaticShape())
      return fail("argument #" + llvm::Twine(i) + " of @" + name +
                  " must be a static tensor of f32, f64, bf16, i1, i32 or "
                  "i64 to be trained");
    std::optional<int64_t> count = getCheckedNumElements(ranked.getShape());
    if (!count || static_cast<uint64_t>(*count) * getElementSize(*kind) >
                      interpreter.getOptions().maxTensorBytes)
      return fail("argument #" + llvm::Twine(i) + " of @" + name +
                  " is too large");
    argTypes[i] = ranked;
    argKinds[i] = *kind;
    if (func.getArgAttr(i, nn::NNDialect::getParamAttrName())) {
      params.push_back(i);
    } else if (func.getArgAttr(i, nn::NNDialect::getStateAttrName())) {
      states.push_back(i);
    } else if (func.getArgAttr(i, nn::NNDialect::getStepAttrName())) {
      steps.push_back(i);
    } else if (func.getArgAttr(i, nn::NNDialect::getDataAttrName())) {
      data.push_back(i);
    } else {
      return fail("argument #" + llvm::Twine(i) + " of @" + name +
                  " has no role attribute (nn.param, nn.state, nn.step or "
                  "nn.data); --train does not know how to fill it");
    }
  }
  if (params.empty())
    return fail("@" + name + " has no nn.param argument to train");

  // Results: the loss and the feedback map.
  std::optional<unsigned> &lossIndex = setup.lossIndex;
  std::vector<std::pair<unsigned, unsigned>> &feedback = setup.feedback;
  std::vector<bool> fed(numArgs, false);
  for (unsigned r = 0, e = type.getNumResults(); r < e; ++r) {
    if (func.getResultAttr(r, nn::NNDialect::getLossAttrName())) {
      if (lossIndex)
        return fail("@" + name + " has more than one nn.loss result");
      auto ranked = dyn_cast<RankedTensorType>(type.getResult(r));
      if (!ranked || ranked.getRank() != 0 ||
          !isa<FloatType>(ranked.getElementType()))
        return fail("the nn.loss result of @" + name +
                    " must be a 0-d float tensor");
      lossIndex = r;
    }
    if (func.getResultAttr(r, nn::NNDialect::getGradNormAttrName()))
      setup.gradNormIndex = r;
    if (auto updates = func.getResultAttrOfType<IntegerAttr>(
            r, nn::NNDialect::getUpdatesAttrName())) {
      int64_t target = updates.getInt();
      if (target < 0 || target >= numArgs)
        return fail("result #" + llvm::Twine(r) + " of @" + name +
                    " updates argument #" + llvm::Twine(target) +
                    ", which does not exist");
      if (type.getResult(r) != type.getInput(target))
        return fail("result #" + llvm::Twine(r) + " of @" + name +
                    " updates argument #" + llvm::Twine(target) +
                    " but their types differ");
      if (fed[target])
        return fail("argument #" + llvm::Twine(target) + " of @" + name +
                    " is updated by two results");
      fed[target] = true;
      feedback.push_back({r, static_cast<unsigned>(target)});
    }
  }
  if (!lossIndex)
    return fail("@" + name +
                " has no nn.loss result; --train runs a "
                "training step, built by loom-opt --loom-training-pipeline");

  // Initial arguments.
  std::vector<Tensor> &args = setup.args;
  args.resize(numArgs);
  for (auto [k, i] : llvm::enumerate(params)) {
    llvm::ArrayRef<int64_t> shape = argTypes[i].getShape();
    if (!isFloatKind(argKinds[i]))
      return fail("parameter argument #" + llvm::Twine(i) + " of @" + name +
                  " is not a float tensor");
    if (!options.initDir.empty()) {
      llvm::SmallString<128> path(options.initDir);
      llvm::sys::path::append(path, "param_" + llvm::Twine(k) + ".npy");
      llvm::Expected<Tensor> tensor =
          readNpyFile(path, interpreter.getOptions().maxTensorBytes);
      if (!tensor)
        return fail("--init-npy: " + llvm::toString(tensor.takeError()));
      if (!tensor->matchesType(argTypes[i]))
        return fail("--init-npy: '" + path + "' holds a " +
                    tensor->getTypeString() + " but argument #" +
                    llvm::Twine(i) + " of @" + name + " is a " +
                    Tensor(argKinds[i], shape).getTypeString());
      args[i] = std::move(*tensor);
      continue;
    }
    Tensor tensor(argKinds[i], shape);
    if (shape.size() >= 2) {
      int64_t fanIn = std::max<int64_t>(shape[shape.size() - 2], 1);
      double scale = 1.0 / std::sqrt(static_cast<double>(fanIn));
      uint64_t key = streamKey(options.seed, kInitStream, k);
      for (int64_t e = 0, n = tensor.getNumElements(); e < n; ++e)
        tensor.setDouble(e, uniform(key, e, scale));
    } else {
      for (int64_t e = 0, n = tensor.getNumElements(); e < n; ++e)
        tensor.setDouble(e, 1.0);
    }
    args[i] = std::move(tensor);
  }
  for (unsigned i : states)
    args[i] = Tensor(argKinds[i], argTypes[i].getShape());
  for (unsigned i : steps)
    args[i] = Tensor(argKinds[i], argTypes[i].getShape());

  // The data task.
  std::string &task = setup.task;
  task = options.dataTask;
  if (!data.empty() && task == "auto") {
    bool anyInteger = llvm::any_of(data, [&](unsigned i) {
      return isIntegerKind(argKinds[i]) && argKinds[i] != ElementKind::I1;
    });
    task = !isFloatKind(argKinds[data[0]]) ? "tokens"
           : anyInteger                    ? "classes"
                                           : "affine";
  }
  // The two data arguments the task fills, if any.
  std::optional<unsigned> &inputArg = setup.inputArg,
                          &targetArg = setup.targetArg;
  auto nthOf = [&](bool wantFloat, unsigned n) -> std::optional<unsigned> {
    for (unsigned i : data)
      if (isFloatKind(argKinds[i]) == wantFloat &&
          argKinds[i] != ElementKind::I1 && n-- == 0)
        return i;
    return std::nullopt;
  };
  int64_t &affineIn = setup.affineIn, &affineOut = setup.affineOut,
          &rows = setup.rows;
  std::vector<double> &affineA = setup.affineA, &affineC = setup.affineC;
  // (With --data the files fill every data argument: no task.)
  if (!data.empty() && options.dataDir.empty()) {
    bool classes = task == "classes";
    bool wantFloat = task == "affine" || classes;
    inputArg = nthOf(wantFloat, 0);
    targetArg = classes ? nthOf(false, 0) : nthOf(wantFloat, 1);
    if (!inputArg)
      return fail("--data-task " + task + " needs " +
                  (wantFloat ? "a float" : "an integer") +
                  " nn.data argument in @" + name);
    if (targetArg) {
      llvm::ArrayRef<int64_t> in = argTypes[*inputArg].getShape();
      llvm::ArrayRef<int64_t> out = argTypes[*targetArg].getShape();
      if (!wantFloat && !classes && in != out)
        return fail("--data-task tokens: the targets (argument #" +
                    llvm::Twine(*targetArg) +
                    ") must have the shape of the "
                    "tokens (argument #" +
                    llvm::Twine(*inputArg) + ")");
      if (wantFloat) {
        affineIn = in.empty() ? 1 : in.back();
        affineOut = classes ? options.vocab : out.empty() ? 1 : out.back();
        int64_t inRows = affineIn ? *getCheckedNumElements(in) / affineIn : 0;
        int64_t outRows = classes     ? *getCheckedNumElements(out)
                          : affineOut ? *getCheckedNumElements(out) / affineOut
                                      : 0;
        if (classes && (affineIn == 0 || inRows != outRows))
          return fail("--data-task classes: the inputs (argument #" +
                      llvm::Twine(*inputArg) + ", rows of " +
                      llvm::Twine(affineIn) + ") and the classes (argument #" +
                      llvm::Twine(*targetArg) +
                      ") must have one class per non-empty row");
        if (affineIn == 0 || affineOut == 0 || inRows != outRows)
          return fail("--data-task affine: the inputs (argument #" +
                      llvm::Twine(*inputArg) + ", rows of " +
                      llvm::Twine(affineIn) + ") and the targets (argument #" +
                      llvm::Twine(*targetArg) + ", rows of " +
                      llvm::Twine(affineOut) +
                      ") must have the same number of non-empty rows");
        rows = inRows;
        uint64_t key = streamKey(options.seed, kAffineStream, 0);
        double scale = 1.0 / std::sqrt(static_cast<double>(affineIn));
        affineA.resize(affineIn * affineOut);
        affineC.resize(affineOut);
        for (size_t e = 0; e < affineA.size(); ++e)
          affineA[e] = uniform(key, e, scale);
        for (size_t e = 0; e < affineC.size(); ++e)
          affineC[e] = uniform(key, affineA.size() + e, scale);
      }
    }
  }
  // Integer data is drawn from [0, vocab): it must index whatever it
  // directly feeds (an embedding table's rows, cross-entropy's classes).
  if (options.dataDir.empty() && failed(checkVocabulary(func, options.vocab)))
    return 1;

  // The name data argument `i` is read by (its file's), or null after a
  // diagnostic.
  auto dataName = [&](unsigned i) -> StringAttr {
    auto argName =
        func.getArgAttrOfType<StringAttr>(i, nn::NNDialect::getNameAttrName());
    if (!argName)
      fail("--data DIR reads DIR/<name>.npy (or DIR/step<n>/<name>.npy) for "
           "each nn.data argument, but argument #" +
           llvm::Twine(i) + " of @" + name +
           " has no name (nn.name; loom-run records the source's names when "
           "it parses a file)");
    return argName;
  };
  // Data from per-step folders: each step's batches, and the variant
  // they fit.
  if (stepFolders) {
    // (Variants of micro-batch compositions say their tokens.)
    bool composed = llvm::any_of(setup.variants, [](func::FuncOp variant) {
      return bool(variant->getAttr(loom::nn::NNDialect::getTokensAttrName()));
    });
    for (int64_t n = 1;; ++n) {
      llvm::SmallString<128> folder(options.dataDir);
      llvm::sys::path::append(folder, "step" + llvm::Twine(n));
      if (!llvm::sys::fs::is_directory(folder))
        break;
      if (n > options.steps)
        break; // (Folders past the last step are not read.)
      TrainingSetup::StepData stepData;
      std::string shapes;
      llvm::SmallVector<unsigned> absent;
      for (unsigned i : data) {
        StringAttr argName = dataName(i);
        if (!argName)
          return 1;
        llvm::SmallString<128> stacked(options.dataDir);
        llvm::sys::path::append(stacked, argName.getValue() + ".npy");
        if (n == 1 && llvm::sys::fs::exists(stacked))
          return fail("'" + options.dataDir +
                      "' holds per-step folders (step1, ...) and stacked "
                      "arrays ('" + stacked +
                      "'): which to read is unclear; pack into a folder of "
                      "one layout");
        llvm::SmallString<128> path(folder);
        llvm::sys::path::append(path, argName.getValue() + ".npy");
        // (No file: no micro-batch of this shape in this step, which fits
        // a variant whose argument has no elements.)
        if (!llvm::sys::fs::exists(path) &&
            llvm::any_of(setup.variants, [&](func::FuncOp variant) {
              return cast<RankedTensorType>(variant.getArgumentTypes()[i])
                         .getNumElements() == 0;
            })) {
          absent.push_back(i);
          shapes += (shapes.empty() ? "" : ", ") +
                    argName.getValue().str() + " (no file)";
          continue;
        }
        llvm::Expected<Tensor> tensor =
            readNpyFile(path, interpreter.getOptions().maxTensorBytes);
        if (!tensor)
          return fail("data for argument '" + argName.getValue() +
                      "': " + llvm::toString(tensor.takeError()));
        shapes += (shapes.empty() ? "" : ", ") + argName.getValue().str() +
                  " " + tensor->getTypeString();
        stepData.batches.emplace(i, std::move(*tensor));
      }
      if (stepData.batches.empty())
        return fail("step " + llvm::Twine(n) + ": '" + folder +
                    "' holds no data argument's array");
      if (composed) {
        // (An array of a micro-batch shape, NAME_ROWSxLENGTH, that no
        // argument reads: a shape no composition was compiled for, an
        // error rather than data left unread.)
        std::error_code error;
        for (llvm::sys::fs::directory_iterator entry(folder, error), end;
             !error && entry != end; entry.increment(error)) {
          llvm::StringRef file = llvm::sys::path::filename(entry->path());
          if (!file.consume_back(".npy"))
            continue;
          auto [base, shape] = file.rsplit('_');
          auto [rowsText, lengthText] = shape.split('x');
          unsigned rows = 0, length = 0;
          if (base.empty() || rowsText.getAsInteger(10, rows) ||
              lengthText.getAsInteger(10, length) ||
              llvm::none_of(data, [&](unsigned i) {
                return dataName(i).getValue().starts_with(base.str() + "_");
              }) ||
              llvm::any_of(data, [&](unsigned i) {
                return dataName(i).getValue() == file;
              }))
            continue;
          std::string names;
          for (unsigned i : data)
            names += (names.empty() ? "" : ", ") + dataName(i).getValue().str();
          return fail("step " + llvm::Twine(n) + ": '" + entry->path() +
                      "' is the array of a micro-batch shape no variant of @" +
                      name + " was compiled for (they read " + names + ")");
        }
        if (error)
          return fail("cannot list '" + folder + "': " + error.message());
      }
      // The step's strategy (DIR/step<n>/strategy, one name), where the
      // variants are strategies of a switching run (docs/switching.md).
      std::string strategy;
      llvm::SmallString<128> strategyFile(folder);
      llvm::sys::path::append(strategyFile, "strategy");
      bool switching = llvm::any_of(setup.variants, [](func::FuncOp v) {
        return !strategyOf(v).empty();
      });
      if (llvm::sys::fs::exists(strategyFile)) {
        auto buffer = llvm::MemoryBuffer::getFile(strategyFile);
        if (!buffer)
          return fail("cannot read '" + strategyFile + "'");
        strategy = (*buffer)->getBuffer().trim().str();
        if (strategy.empty())
          return fail("step " + llvm::Twine(n) + ": '" + strategyFile +
                      "' is empty; it names the step's strategy");
        std::string names;
        for (func::FuncOp v : setup.variants)
          if (!strategyOf(v).empty() &&
              names.find("\"" + strategyOf(v).str() + "\"") ==
                  std::string::npos)
            names += (names.empty() ? "\"" : ", \"") + strategyOf(v).str() +
                     "\"";
        if (!switching)
          return fail("step " + llvm::Twine(n) + ": '" + strategyFile +
                      "' names a strategy but no step of this program was "
                      "specialised to strategies (hspmd-specialize-"
                      "strategies)");
        if (llvm::none_of(setup.variants, [&](func::FuncOp v) {
              return strategyOf(v) == strategy;
            }))
          return fail("step " + llvm::Twine(n) + ": '" + strategyFile +
                      "' names the strategy \"" + strategy +
                      "\", which no step has (they have " + names + ")");
      }
      if (strategy.empty() && !options.strategies.empty())
        strategy = options.strategies[(n - 1) % options.strategies.size()];
      std::optional<unsigned> fits;
      for (auto [v, variant] : llvm::enumerate(setup.variants)) {
        if (!strategy.empty() && strategyOf(variant) != strategy)
          continue;
        bool all = true;
        for (auto &[i, tensor] : stepData.batches)
          all &= tensor.matchesType(
              cast<RankedTensorType>(variant.getArgumentTypes()[i]));
        for (unsigned i : absent)
          all &= cast<RankedTensorType>(variant.getArgumentTypes()[i])
                     .getNumElements() == 0;
        if (all) {
          fits = v;
          break;
        }
      }
      if (!fits) {
        std::string takes;
        for (func::FuncOp variant : setup.variants) {
          takes += (takes.empty() ? "" : "; ") + ("@" + variant.getSymName())
                                                      .str() + " takes";
          for (unsigned i : data)
            takes += " " + Tensor(argKinds[i],
                                  cast<RankedTensorType>(
                                      variant.getArgumentTypes()[i])
                                      .getShape())
                               .getTypeString();
        }
        return fail("step " + llvm::Twine(n) + " ('" + folder + "': " +
                    shapes + ")" +
                    (strategy.empty() ? ""
                                      : " under the strategy \"" + strategy +
                                            "\"") +
                    " fits no compiled variant: " + takes);
      }
      stepData.variant = *fits;
      for (unsigned i : absent)
        stepData.batches.emplace(
            i, Tensor(argKinds[i],
                      cast<RankedTensorType>(
                          setup.variants[*fits].getArgumentTypes()[i])
                          .getShape()));
      setup.stepData.push_back(std::move(stepData));
    }
  } else if (!options.dataDir.empty()) {
    // Data from files: every data argument's batches, stacked.
    for (unsigned i : data) {
      StringAttr argName = dataName(i);
      if (!argName)
        return 1;
      llvm::SmallString<128> path(options.dataDir);
      llvm::sys::path::append(path, argName.getValue() + ".npy");
      llvm::Expected<Tensor> tensor =
          readNpyFile(path, interpreter.getOptions().maxTensorBytes);
      if (!tensor)
        return fail("data for argument '" + argName.getValue() +
                    "': " + llvm::toString(tensor.takeError()));
      llvm::ArrayRef<int64_t> shape = tensor->getShape();
      llvm::ArrayRef<int64_t> want = argTypes[i].getShape();
      if (tensor->getKind() != argKinds[i] || shape.size() != want.size() + 1 ||
          shape.drop_front() != want || shape.front() < 1)
        return fail("'" + path + "' holds a " + tensor->getTypeString() +
                    " but argument '" + argName.getValue() + "' of @" + name +
                    " needs batches of " +
                    Tensor(argKinds[i], want).getTypeString() +
                    " stacked along a leading dimension");
      setup.dataFiles.emplace(i, std::move(*tensor));
    }
  }

  // Tokens per step, for the throughput figure.
  int64_t &tokensPerStep = setup.tokensPerStep;
  for (unsigned i : data)
    if (isIntegerKind(argKinds[i])) {
      tokensPerStep = *getCheckedNumElements(argTypes[i].getShape());
      break;
    }
  if (!tokensPerStep && inputArg) {
    llvm::ArrayRef<int64_t> shape = argTypes[*inputArg].getShape();
    tokensPerStep = shape.empty() ? 1 : shape.front();
  }
  // (A step whose data arguments do not show its tokens says them.)
  auto tokensAttr = [](func::FuncOp f) {
    return f->getAttrOfType<IntegerAttr>(
        loom::nn::NNDialect::getTokensAttrName());
  };
  if (IntegerAttr said = tokensAttr(func))
    tokensPerStep = said.getValue().getSExtValue();
  // (Each variant's: the same argument, its shape.)
  for (func::FuncOp variant : setup.variants) {
    if (IntegerAttr said = tokensAttr(variant)) {
      setup.variantTokens.push_back(said.getValue().getSExtValue());
      setup.variantFlops.push_back(nn::countModelFlops(variant));
      continue;
    }
    int64_t tokens = tokensPerStep;
    for (unsigned i : data)
      if (isIntegerKind(argKinds[i])) {
        tokens = *getCheckedNumElements(
            cast<RankedTensorType>(variant.getArgumentTypes()[i]).getShape());
        break;
      }
    setup.variantTokens.push_back(tokens);
    setup.variantFlops.push_back(nn::countModelFlops(variant));
  }

  return 0;
}

void loom::interp::fillStepArguments(TrainingSetup &setup, int64_t step) {
  const TrainOptions &options = setup.options;
  std::vector<Tensor> &args = setup.args;
  const std::vector<RankedTensorType> &argTypes = setup.argTypes;
  const std::vector<ElementKind> &argKinds = setup.argKinds;
  const std::optional<unsigned> &inputArg = setup.inputArg,
                                &targetArg = setup.targetArg;
  const std::string &task = setup.task;
  int64_t rows = setup.rows, affineIn = setup.affineIn,
          affineOut = setup.affineOut;
  const std::vector<double> &affineA = setup.affineA, &affineC = setup.affineC;
  unsigned numArgs = setup.func.getNumArguments();
  {
    for (unsigned i : setup.steps)
      args[i].setDouble(0, static_cast<double>(step));
    setup.current =
        setup.scheduleVariants.empty()
            ? 0
            : setup.scheduleVariants[(step - 1) %
                                     setup.scheduleVariants.size()];
    if (!setup.stepData.empty()) {
      const TrainingSetup::StepData &data =
          setup.stepData[(step - 1) % setup.stepData.size()];
      for (auto &[i, batch] : data.batches)
        args[i] = batch;
      setup.current = data.variant;
      return;
    }
    if (!setup.dataFiles.empty()) {
      for (auto &[i, batches] : setup.dataFiles) {
        int64_t count = batches.getShape().front();
        Tensor batch(argKinds[i], argTypes[i].getShape());
        size_t bytes = static_cast<size_t>(batch.getByteSize());
        std::memcpy(batch.rawData(),
                    batches.rawData() + ((step - 1) % count) * bytes, bytes);
        args[i] = std::move(batch);
      }
      return;
    }
    for (unsigned i : setup.data) {
      if (targetArg && i == *targetArg)
        continue;
      Tensor tensor(argKinds[i], argTypes[i].getShape());
      uint64_t key = streamKey(options.seed, kDataStream,
                               static_cast<uint64_t>(step) * numArgs + i);
      for (int64_t e = 0, n = tensor.getNumElements(); e < n; ++e) {
        uint64_t bits = splitmix64(key, e);
        if (isFloatKind(argKinds[i]))
          tensor.setDouble(e, 2.0 * toUnitInterval(bits) - 1.0);
        else if (argKinds[i] == ElementKind::I1)
          tensor.setDouble(e, static_cast<double>(bits >> 63));
        else
          tensor.setDouble(e, static_cast<double>(
                                  bits % static_cast<uint64_t>(options.vocab)));
      }
      args[i] = std::move(tensor);
    }
    if (targetArg) {
      const Tensor &input = args[*inputArg];
      Tensor target(argKinds[*targetArg], argTypes[*targetArg].getShape());
      if (task == "tokens") {
        for (int64_t e = 0, n = target.getNumElements(); e < n; ++e) {
          int64_t token = static_cast<int64_t>(input.getDouble(e));
          target.setDouble(
              e, static_cast<double>((7 * token + 3) % options.vocab));
        }
      } else {
        bool classes = task == "classes";
        for (int64_t r = 0; r < rows; ++r) {
          int64_t best = 0;
          double bestScore = 0;
          for (int64_t o = 0; o < affineOut; ++o) {
            double sum = affineC[o];
            for (int64_t k = 0; k < affineIn; ++k)
              sum += input.getDouble(r * affineIn + k) *
                     affineA[k * affineOut + o];
            if (!classes)
              target.setDouble(r * affineOut + o, sum);
            else if (o == 0 || sum > bestScore) {
              best = o;
              bestScore = sum;
            }
          }
          if (classes)
            target.setDouble(r, static_cast<double>(best));
        }
      }
      args[*targetArg] = std::move(target);
    }
  }
}

int loom::interp::runTraining(ModuleOp module, Interpreter &interpreter,
                              const TrainOptions &options) {
  TrainingSetup setup;
  if (int code = prepareTraining(module, interpreter, options, setup))
    return code;
  std::vector<Tensor> &args = setup.args;
  const std::optional<unsigned> &lossIndex = setup.lossIndex;
  llvm::raw_ostream &os = llvm::outs();
  for (int64_t step = 1; step <= options.steps; ++step) {
    fillStepArguments(setup, step);
    llvm::StringRef variant = setup.variants[setup.current].getSymName();
    auto start = std::chrono::steady_clock::now();
    FailureOr<std::vector<Tensor>> results = interpreter.call(variant, args);
    auto stop = std::chrono::steady_clock::now();
    if (failed(results))
      return 1;
    double seconds = std::chrono::duration<double>(stop - start).count();
    double tokensPerSecond =
        seconds > 0
            ? static_cast<double>(setup.variantTokens[setup.current]) / seconds
            : 0.0;
    double flopsPerSecond =
        seconds > 0 ? setup.variantFlops[setup.current] / seconds : 0.0;
    const Tensor &lossTensor = (*results)[*lossIndex];
    double loss = lossTensor.getDouble(0);
    if (!std::isfinite(loss))
      return fail("the loss is not finite at step " + llvm::Twine(step) +
                  "; lower the learning rate or check the model");
    const char *lossFormat =
        lossTensor.getKind() == ElementKind::F64 ? "%.17g" : "%.9g";
    bool several = setup.variants.size() > 1;
    auto formatNorm = [&](double value) {
      char text[32];
      std::snprintf(text, sizeof(text),
                    (*results)[*setup.gradNormIndex].getKind() ==
                            ElementKind::F64
                        ? "%.17g"
                        : "%.9g",
                    value);
      return std::string(text);
    };
    std::optional<double> norm;
    if (setup.gradNormIndex) {
      norm = (*results)[*setup.gradNormIndex].getDouble(0);
      if (!std::isfinite(*norm))
        return fail("the gradient norm is not finite at step " +
                    llvm::Twine(step) +
                    "; lower the learning rate or check the model");
    }
    if (options.json)
      os << "{\"step\":" << step
         << ",\"loss\":" << llvm::format(lossFormat, loss)
         << (norm ? ",\"grad_norm\":" +
                        formatNorm(*norm)
                  : std::string())
         << ",\"tokens\":" << setup.variantTokens[setup.current]
         << ",\"tokens_per_s\":" << llvm::format("%.1f", tokensPerSecond)
         << ",\"flops_per_s\":" << llvm::format("%.4g", flopsPerSecond)
         << (several ? ",\"variant\":\"" + variant.str() + "\"" : "")
         << "}\n";
    else
      os << "step " << step << " loss " << llvm::format(lossFormat, loss)
         << (norm ? " grad_norm " +
                        formatNorm(*norm)
                  : std::string())
         << " tokens/s " << llvm::format("%.1f", tokensPerSecond)
         << " flop/s " << llvm::format("%.4g", flopsPerSecond)
         << (several ? " variant @" + variant.str() : "") << "\n";
    os.flush();
    for (auto [r, i] : setup.feedback)
      args[i] = std::move((*results)[r]);
  }

  if (!options.outputDir.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::create_directories(options.outputDir))
      return fail("cannot create '" + options.outputDir + "': " + ec.message());
    for (auto [k, i] : llvm::enumerate(setup.params)) {
      llvm::SmallString<128> path(options.outputDir);
      llvm::sys::path::append(path, "param_" + llvm::Twine(k) + ".npy");
      if (llvm::Error err = writeNpyFile(path, args[i]))
        return fail(llvm::toString(std::move(err)));
    }
  }
  return 0;
}

LogicalResult loom::interp::checkVocabulary(func::FuncOp func, int64_t vocab) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!func.getArgAttr(i, nn::NNDialect::getDataAttrName()) || !type ||
        !type.getElementType().isInteger() ||
        type.getElementType().isInteger(1))
      continue;
    for (OpOperand &use : func.getArgument(i).getUses()) {
      Operation *user = use.getOwner();
      int64_t limit = ShapedType::kDynamic;
      llvm::StringRef what;
      if (auto embedding = dyn_cast<loom::nn::EmbeddingOp>(user);
          embedding && use.get() == embedding.getIds()) {
        limit = embedding.getTable().getType().getDimSize(0);
        what = "rows in the embedding table";
      } else if (auto loss = dyn_cast<loom::nn::CrossEntropyOp>(user);
                 loss && use.get() == loss.getLabels()) {
        auto logits = cast<RankedTensorType>(loss.getLogits().getType());
        limit = logits.getRank() ? logits.getDimSize(logits.getRank() - 1)
                                 : ShapedType::kDynamic;
        what = "classes in the cross-entropy logits";
      }
      if (ShapedType::isDynamic(limit) || vocab <= limit)
        continue;
      user->emitError() << "--vocab " << vocab << " draws ids up to "
                        << vocab - 1 << " for nn.data argument #" << i
                        << " of @" << func.getSymName()
                        << ", but it feeds this op, which has " << limit << " "
                        << what << "; pass --vocab " << limit << " or less";
      return failure();
    }
  }
  return success();
}
