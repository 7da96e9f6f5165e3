//===- PrefixDedupTest.cpp - A deduplicated step equals the plain one -----===//
//
// nn-prefix-dedup on the GPT-mini and the LLaMA-mini (examples/, in f64),
// with a weighted cross-entropy and with PPO's clipped objective (each
// sample's own old log-probabilities and advantage): on seeded random
// tries, the deduplicated step's loss, every gradient and the parameters
// after an SGD update equal the plain step's on the same batch within
// 1e-10 norm-wise, on one bin and on two. The forward log-probabilities of
// the deduplicated function equal the plain ones. The PPO sign case: a
// token shared by branches with advantages +1 and -1 and a ratio of 1.5
// outside the clip range; the per-sample objective's gradient is not that
// of the summed advantage (asserted).
//
//===----------------------------------------------------------------------===//

#include "frontends/rl/Pack.h"
#include "passes/ArgumentNames.h"
#include "passes/Passes.h"
#include "runtime/interpreter/Interpreter.h"

#include "dialects/InitAllDialects.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>

using namespace mlir;
using loom::interp::ElementKind;
using loom::interp::Tensor;

namespace {

/// PPONormalized: PPO divided by a `normalizer` data argument (the
/// un-deduplicated batch's sum of weights) instead of summing the weights:
/// what the compressed arrays keep.
enum class Objective { CrossEntropy, PPO, PPONormalized, LogProbs };

std::string readExample(const std::string &name) {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The example's forward pass in f64 with an RL objective in place of its
/// cross-entropy: `weights` (per token), and for PPO `advantages` and
/// `old_logprobs`; LogProbs returns the per-token log-probabilities.
std::string makeModel(const std::string &example, Objective objective) {
  std::string text = readExample(example);
  text = std::regex_replace(text, std::regex("f32"), "f64");
  const std::string targets = "%targets: tensor<8x16xi64> {nn.data},";
  size_t at = text.find(targets);
  EXPECT_NE(at, std::string::npos);
  text.insert(at + targets.size(),
              " %weights: tensor<8x16xf64> {nn.data},"
              " %advantages: tensor<8x16xf64> {nn.data},"
              " %old_logprobs: tensor<8x16xf64> {nn.data},");
  if (objective == Objective::PPONormalized)
    text.insert(at + targets.size(), " %normalizer: tensor<f64> {nn.data},");
  const std::string w = "tensor<8x16xf64>";
  std::string tail;
  std::string result = "tensor<f64>";
  if (objective == Objective::CrossEntropy) {
    tail = "    %n = nn.reduce sum %weights dims = [0, 1] : " + w + "\n"
           "    %loss = nn.cross_entropy %logits, %targets weights %weights "
           "normalizer %n : tensor<8x16x64xf64>, tensor<8x16xi64>, " + w +
           ", tensor<f64>\n    return %loss : tensor<f64>\n";
  } else {
    tail =
        "    %lsm = nn.log_softmax %logits dim = 2 : tensor<8x16x64xf64>\n"
        "    %lab = nn.reshape %targets : tensor<8x16xi64> to "
        "tensor<8x16x1xi64>\n"
        "    %lp1 = nn.gather %lsm, %lab dim = 2 : tensor<8x16x64xf64>, "
        "tensor<8x16x1xi64>\n"
        "    %lp = nn.reshape %lp1 : tensor<8x16x1xf64> to " + w + "\n";
    if (objective == Objective::LogProbs) {
      tail += "    return %lp : " + w + "\n";
      result = w;
    } else {
      auto bin = [&](const std::string &op, const std::string &lhs,
                     const std::string &rhs, const std::string &out) {
        return "    " + out + " = nn." + op + " " + lhs + ", " + rhs + " : " +
               w + ", " + w + "\n";
      };
      tail += bin("sub", "%lp", "%old_logprobs", "%d") +
              "    %ratio = nn.exp %d : " + w + "\n" +
              "    %clipped = nn.clamp %ratio {max = 1.2 : f64, min = 0.8 : "
              "f64} : " + w + "\n" +
              bin("mul", "%ratio", "%advantages", "%u") +
              bin("mul", "%clipped", "%advantages", "%c") +
              bin("minimum", "%u", "%c", "%obj") +
              bin("mul", "%obj", "%weights", "%wobj") +
              "    %sum = nn.reduce sum %wobj dims = [0, 1] : " + w + "\n" +
              (objective == Objective::PPONormalized
                   ? std::string()
                   : "    %n = nn.reduce sum %weights dims = [0, 1] : " + w +
                         "\n") +
              "    %neg = nn.neg %sum : tensor<f64>\n"
              "    %loss = nn.div %neg, " +
              (objective == Objective::PPONormalized ? "%normalizer" : "%n") +
              " : tensor<f64>, tensor<f64>\n"
              "    return %loss : tensor<f64>\n";
    }
  }
  size_t loss = text.find("    // Mean over the");
  if (loss == std::string::npos)
    loss = text.find("    %loss = nn.cross_entropy");
  EXPECT_NE(loss, std::string::npos);
  size_t end = text.find("  }\n}", loss);
  text = text.substr(0, loss) + tail + text.substr(end);
  text = std::regex_replace(text, std::regex("\\) -> tensor<f64> \\{"),
                            ") -> " + result + " {");
  return text;
}

/// A random batch whose samples form a trie: `depth` levels of segments
/// (1-3 tokens), each node branching into up to `branching` children, at
/// most 8 samples of at most 16 tokens. Loss masks, weights, advantages and
/// old log-probabilities are random too.
loom::rl::Batch randomBatch(std::mt19937_64 &rng, int depth, int branching) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto real = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  std::vector<std::vector<int64_t>> frontier = {{}};
  for (int level = 0; level < depth; ++level) {
    std::vector<std::vector<int64_t>> next;
    for (const auto &prefix : frontier) {
      int children = level == 0 ? uniform(1, 2) : uniform(1, branching);
      for (int c = 0; c < children; ++c) {
        std::vector<int64_t> path = prefix;
        int length = uniform(1, 3);
        for (int t = 0; t < length && path.size() < 16; ++t)
          path.push_back(uniform(0, 63));
        next.push_back(path);
      }
    }
    // At most 8 leaves: keep a random 8.
    std::shuffle(next.begin(), next.end(), rng);
    if (next.size() > 8)
      next.resize(8);
    frontier = next;
  }
  loom::rl::Batch batch;
  for (auto &tokens : frontier) {
    loom::rl::Sample sample;
    sample.tokens = tokens;
    sample.lossMask.assign(tokens.size(), 0.0);
    for (size_t t = 1; t < tokens.size(); ++t)
      sample.lossMask[t] = uniform(0, 3) > 0 ? 1.0 : 0.0;
    if (tokens.size() > 1)
      sample.lossMask.back() = 1.0;
    sample.weight = real(0.5, 1.5);
    sample.advantage = real(-1, 1);
    sample.oldLogProbs.resize(tokens.size());
    for (double &lp : sample.oldLogProbs)
      lp = real(-4.5, -3.5);
    sample.line = static_cast<int64_t>(batch.samples.size()) + 1;
    batch.samples.push_back(sample);
  }
  // At least one weighted prediction.
  if (batch.samples.front().tokens.size() < 2)
    batch.samples.front().tokens.push_back(7),
        batch.samples.front().lossMask.push_back(1.0),
        batch.samples.front().oldLogProbs.push_back(-4.0);
  return batch;
}

double relativeError(const Tensor &a, const Tensor &b) {
  double diff = 0, norm = 0;
  std::vector<double> x = a.toDoubles(), y = b.toDoubles();
  EXPECT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]))
      return INFINITY;
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    norm += y[i] * y[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
}

class PrefixDedup : public ::testing::Test {
protected:
  PrefixDedup() {
    DialectRegistry registry;
    loom::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    static bool registered = [] {
      loom::registerLoomPasses();
      return true;
    }();
    (void)registered;
  }

  /// Parses `text` (arguments named from the source) and runs `pipeline`
  /// (passes on the module, without the builtin.module wrapper).
  OwningOpRef<ModuleOp> compile(const std::string &text,
                                const std::string &pipeline) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "model.mlir"),
                                 llvm::SMLoc());
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module) {
      ADD_FAILURE() << "cannot parse the model";
      return {};
    }
    loom::nameArgumentsFromSource(*module, sourceMgr);
    PassManager pm(&context);
    if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*module))) {
      ADD_FAILURE() << "pipeline failed: " << pipeline;
      return {};
    }
    return module;
  }

  /// Runs `name` of `module` with parameters by name from `params` and data
  /// from `step`.
  std::vector<Tensor> run(ModuleOp module, const std::string &name,
                          const loom::rl::PackedStep &step) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func) {
      std::string names;
      for (auto f : module.getOps<func::FuncOp>())
        names += " " + f.getSymName().str();
      ADD_FAILURE() << "no function " << name << "; the module has" << names;
    }
    if (!func)
      return {};
    std::vector<Tensor> args;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(func.getArgument(i).getType());
      auto nameAttr = func.getArgAttrOfType<StringAttr>(i, "nn.name");
      std::string argName = nameAttr ? nameAttr.getValue().str() : "";
      if (func.getArgAttr(i, "nn.param")) {
        args.push_back(getParam(argName, type));
      } else if (func.getArgAttr(i, "nn.state")) {
        args.push_back(Tensor(ElementKind::F64, type.getShape()));
      } else if (auto it = step.ints.find(argName); it != step.ints.end()) {
        EXPECT_EQ(static_cast<int64_t>(it->second.size()),
                  type.getNumElements())
            << argName;
        args.push_back(Tensor::fromValues<int64_t>(type.getShape(),
                                                   it->second));
      } else if (auto it = step.floats.find(argName);
                 it != step.floats.end()) {
        args.push_back(Tensor::fromValues<double>(type.getShape(),
                                                  it->second));
      } else {
        ADD_FAILURE() << "no data for argument " << argName;
        return {};
      }
    }
    loom::interp::Interpreter interpreter(module);
    FailureOr<std::vector<Tensor>> results = interpreter.call(name, args);
    EXPECT_TRUE(succeeded(results)) << name;
    return succeeded(results) ? *results : std::vector<Tensor>{};
  }

  Tensor getParam(const std::string &name, RankedTensorType type) {
    std::string key = name;
    for (int64_t d : type.getShape())
      key += "x" + std::to_string(d);
    auto [it, inserted] = params.try_emplace(key);
    if (inserted) {
      std::mt19937_64 rng(std::hash<std::string>()(key) ^ paramSeed);
      std::uniform_real_distribution<double> dist(-0.4, 0.4);
      std::vector<double> values(type.getNumElements());
      for (double &v : values)
        v = dist(rng);
      it->second = Tensor::fromValues<double>(type.getShape(), values);
    }
    return it->second;
  }

  /// The plain and deduplicated step of `example` under `objective` on
  /// `batch`: loss and gradients (nn-autodiff), and the parameters after
  /// one SGD step (nn-training-step), within `bound` norm-wise. With
  /// `buckets`: the deduplicated module holds one variant per bucket
  /// (`buckets=...`), and each variant whose capacity holds the batch's
  /// bins runs the batch packed at that capacity.
  void expectEqual(const std::string &example, Objective objective,
                   const loom::rl::Batch &batch, int64_t bins,
                   double bound = 1e-10, std::vector<int64_t> buckets = {},
                   bool compress = false) {
    std::string text = makeModel(example, objective);
    if (const char *dump = std::getenv("LOOM_DUMP_MODEL"))
      std::ofstream(dump) << text;
    std::string fn = example.substr(0, example.find('.'));
    bool variants = !buckets.empty();
    if (!variants)
      buckets.push_back(128 / bins);
    std::string dedup = "nn-prefix-dedup{";
    if (variants) {
      dedup += "buckets=";
      for (size_t i = 0; i < buckets.size(); ++i)
        dedup += (i ? "," : "") + std::to_string(buckets[i]);
    } else {
      dedup += "capacity=" + std::to_string(buckets[0]);
    }
    dedup += " bins=" + std::to_string(bins) + "},";
    std::string train = objective == Objective::LogProbs
                            ? ""
                            : "nn-autodiff,nn-training-step{optimizer=sgd "
                              "lr=0.5}";
    if (train.empty())
      dedup.pop_back();
    OwningOpRef<ModuleOp> plain = compile(text, train);
    OwningOpRef<ModuleOp> packed = compile(text, dedup + train);
    ASSERT_TRUE(plain && packed);
    int ran = 0;
    for (int64_t capacity : buckets) {
      loom::rl::PackShape shape{8, 16, bins, capacity, 64};
      llvm::Expected<loom::rl::PackedStep> step =
          loom::rl::packStep(batch, shape);
      if (!step && variants) {
        llvm::consumeError(step.takeError()); // a bucket too small
        continue;
      }
      ASSERT_TRUE(static_cast<bool>(step)) << llvm::toString(step.takeError());
      ++ran;
      // The deduplicated side's arrays: compressed, or the same.
      loom::rl::PackedStep packedStep = *step;
      if (compress) {
        llvm::Error err =
            loom::rl::compressStep(packedStep, batch, shape, 1e-12);
        ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
        auto entries = [](const loom::rl::PackedStep &p) {
          const auto &w = p.floats.at("weights");
          return std::count_if(w.begin(), w.end(),
                               [](double x) { return x != 0; });
        };
        EXPECT_LE(entries(packedStep), entries(*step));
        compressedEntries += entries(*step) - entries(packedStep);
      }
      std::string variant =
          variants ? fn + "_c" + std::to_string(capacity) : fn;
      int64_t total = 0, unique = 0;
      for (const auto &sample : batch.samples)
        total += static_cast<int64_t>(sample.tokens.size());
      for (int64_t n : step->binNodes)
        unique += n;
      EXPECT_LE(unique, total);
      sharedTokens += total - unique;
      ++comparisons;
      {
        // Deduplicated, not per sample: no op reads the per-sample form of
        // the model (trie_nodes), every attention is over the trie.
        auto f = packed->lookupSymbol<func::FuncOp>(variant);
        ASSERT_TRUE(f) << variant;
        for (unsigned i = 0; i < f.getNumArguments(); ++i)
          if (auto name = f.getArgAttrOfType<StringAttr>(i, "nn.name"))
            EXPECT_NE(name.getValue(), "trie_nodes") << variant;
        int tree = 0, other = 0;
        f.walk([&](loom::nn::AttentionOp op) {
          (op.getMask() == loom::nn::MaskKind::Tree ? tree : other)++;
        });
        EXPECT_EQ(tree, 2) << variant;
        EXPECT_EQ(other, 0) << variant;
      }
      for (const char *suffix : {"", "_grad", "_train_step"}) {
        if (objective == Objective::LogProbs && *suffix)
          continue;
        std::vector<Tensor> a = run(*plain, fn + suffix, *step);
        std::vector<Tensor> b = run(*packed, variant + suffix, packedStep);
        ASSERT_EQ(a.size(), b.size());
        ASSERT_FALSE(a.empty());
        if (objective == Objective::LogProbs) {
          // Only where a sample predicts a token (past its end the plain
          // forward reads padding).
          for (auto [k, sample] : llvm::enumerate(batch.samples))
            for (size_t t = 0; t + 1 < sample.tokens.size(); ++t) {
              int64_t at = static_cast<int64_t>(k) * 16 + t;
              EXPECT_NEAR(b[0].getDouble(at), a[0].getDouble(at),
                          bound * std::abs(a[0].getDouble(at)))
                  << "sample " << k << " token " << t;
              EXPECT_TRUE(std::isfinite(b[0].getDouble(at)));
            }
          continue;
        }
        for (size_t i = 0; i < a.size(); ++i) {
          double error = relativeError(b[i], a[i]);
          EXPECT_LE(error, bound) << variant << suffix << " result " << i;
          largestError = std::max(largestError, error);
        }
        if (*suffix == 0)
          lastLoss = a.front().toDoubles();
      }
    }
    EXPECT_GT(ran, 0) << "no bucket holds the batch";
  }

  MLIRContext context;
  std::map<std::string, Tensor> params;
  uint64_t paramSeed = 1;
  std::vector<double> lastLoss;
  double largestError = 0;
  int64_t sharedTokens = 0, comparisons = 0, compressedEntries = 0;
  void TearDown() override {
    std::printf("largest norm-wise difference %.3g, tokens shared %lld\n",
                largestError, static_cast<long long>(sharedTokens));
    if (comparisons > 0 && sharedTokens == 0)
      ADD_FAILURE() << "no batch of this test shared a prefix";
  }
};

TEST_F(PrefixDedup, TrieSharesNodes) {
  // The packer's arrays on the five samples: 11 nodes, the shared
  // prefix [1, 2, 3, 4] once.
  loom::rl::Batch batch;
  for (std::vector<int64_t> tokens :
       {std::vector<int64_t>{1, 2, 3, 4, 5}, {1, 2, 3, 4, 6}, {1, 2, 3, 7},
        {1, 2, 8, 9}, {10, 11}}) {
    loom::rl::Sample s;
    s.tokens = tokens;
    s.lossMask.assign(tokens.size(), 1.0);
    s.lossMask[0] = 0;
    batch.samples.push_back(s);
  }
  auto step = loom::rl::packStep(batch, {8, 16, 1, 16, 64});
  ASSERT_TRUE(static_cast<bool>(step)) << llvm::toString(step.takeError());
  EXPECT_EQ(step->binNodes, std::vector<int64_t>{11});
  const auto &packed = step->ints["trie_tokens"];
  EXPECT_EQ(std::vector<int64_t>(packed.begin(), packed.begin() + 11),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  const auto &end = step->ints["trie_subtree_end"];
  EXPECT_EQ(std::vector<int64_t>(end.begin(), end.end()),
            (std::vector<int64_t>{8, 8, 6, 5, 4, 5, 6, 8, 8, 10, 10, 11, 12,
                                  13, 14, 15}));
  // Sample 1's token 4 is node 3, shared with sample 0; its label index
  // predicts 6 from node 3.
  EXPECT_EQ(step->ints["trie_nodes"][1 * 16 + 3], 3);
  EXPECT_EQ(step->ints["trie_index_targets"][1 * 16 + 3], 3 * 64 + 6);
  EXPECT_EQ(step->floats["weights"][1 * 16 + 4], 0.0);
}

TEST_F(PrefixDedup, PackedArraysFollowTheSamples) {
  // The arrays both steps read, against the samples directly (the
  // equivalence tests feed both sides from the packer, so a shift here
  // would not show there): slot b, position s predicts token s + 1.
  std::mt19937_64 rng(15);
  for (int trial = 0; trial < 4; ++trial) {
    loom::rl::Batch batch = randomBatch(rng, 3 + trial, 3);
    auto step = loom::rl::packStep(batch, {8, 16, 1, 128, 64});
    ASSERT_TRUE(static_cast<bool>(step)) << llvm::toString(step.takeError());
    for (int64_t b = 0; b < 8; ++b)
      for (int64_t s = 0; s < 16; ++s) {
        int64_t at = b * 16 + s;
        bool sample = b < static_cast<int64_t>(batch.samples.size());
        const loom::rl::Sample *x = sample ? &batch.samples[b] : nullptr;
        int64_t length = x ? static_cast<int64_t>(x->tokens.size()) : 0;
        bool predicts = s + 1 < length;
        EXPECT_EQ(step->ints["tokens"][at], s < length ? x->tokens[s] : 0);
        EXPECT_EQ(step->ints["targets"][at], predicts ? x->tokens[s + 1] : 0);
        EXPECT_EQ(step->floats["weights"][at],
                  predicts ? x->lossMask[s + 1] * x->weight : 0.0);
        EXPECT_EQ(step->floats["advantages"][at],
                  predicts ? *x->advantage : 0.0);
        EXPECT_EQ(step->floats["old_logprobs"][at],
                  predicts ? x->oldLogProbs[s + 1] : 0.0);
        if (s < length) {
          // The node holds the token at its position.
          int64_t node = step->ints["trie_nodes"][at];
          EXPECT_EQ(step->ints["trie_tokens"][node], x->tokens[s]);
          EXPECT_EQ(step->ints["trie_positions"][node], s);
        }
        if (predicts)
          EXPECT_EQ(step->ints["trie_index_targets"][at],
                    step->ints["trie_nodes"][at] * 64 + x->tokens[s + 1]);
      }
  }
}

TEST_F(PrefixDedup, GptMiniCrossEntropyOnRandomTries) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    int depth = 1 + trial % 6, branching = 1 + (trial * 3) % 8;
    loom::rl::Batch batch = randomBatch(rng, depth, branching);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectEqual("gpt_mini.mlir", Objective::CrossEntropy, batch, 1);
  }
}

TEST_F(PrefixDedup, GptMiniPPOOnRandomTries) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 6; ++trial) {
    loom::rl::Batch batch = randomBatch(rng, 6 - trial % 6, 8 - trial);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectEqual("gpt_mini.mlir", Objective::PPO, batch, trial % 2 ? 2 : 1);
  }
}

TEST_F(PrefixDedup, LlamaMiniOnRandomTries) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 6; ++trial) {
    loom::rl::Batch batch = randomBatch(rng, 1 + (trial + 2) % 6, 2 + trial);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectEqual("llama_mini.mlir",
                trial % 2 ? Objective::PPO : Objective::CrossEntropy, batch,
                trial % 3 == 2 ? 2 : 1);
  }
}

// Shape buckets: one variant per capacity in one module, each exact
// against the plain step on the batch packed at its capacity (the
// smallest bucket that fits, with the least padding, and the larger ones);
// a bucket smaller than the batch's bins is skipped (the packer refuses
// it).
TEST_F(PrefixDedup, VariantsPerBucketAgree) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 3; ++trial) {
    loom::rl::Batch batch = randomBatch(rng, 3 + trial, 3);
    int64_t bins = trial % 2 ? 2 : 1;
    auto full = loom::rl::packStep(batch, {8, 16, bins, 128 / bins, 64});
    ASSERT_TRUE(static_cast<bool>(full)) << llvm::toString(full.takeError());
    int64_t largest = *std::max_element(full->binNodes.begin(),
                                        full->binNodes.end());
    // Exactly the largest bin (no padding in it), then two larger buckets,
    // and one that is too small.
    std::vector<int64_t> buckets = {largest, 128 / bins};
    if (largest > 1)
      buckets.push_back(largest - 1);
    if (largest + 8 < 128 / bins)
      buckets.push_back(largest + 8);
    std::sort(buckets.begin(), buckets.end());
    buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
    int64_t before = comparisons;
    expectEqual("gpt_mini.mlir", trial == 1 ? Objective::PPO
                                            : Objective::CrossEntropy,
                batch, bins, 1e-10, buckets);
    EXPECT_EQ(comparisons - before,
              static_cast<int64_t>(buckets.size()) - (largest > 1 ? 1 : 0));
  }
}

// PPO/GRPO compression (compressStep): samples through a shared edge
// share its old log-probability (as the old policy gives it), so per edge
// two entries, the sums of weight * advantage above and below 0, give the
// plain step's loss, gradients and updated parameters; the normaliser is
// the un-deduplicated batch's. Entries shrink wherever predictions are
// shared; old log-probabilities that differ on a shared edge are refused.
TEST_F(PrefixDedup, CompressedPPOAgrees) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 4; ++trial) {
    loom::rl::Batch batch = randomBatch(rng, 2 + trial, 4);
    // One old log-probability per (prefix, token).
    std::map<std::vector<int64_t>, double> oldOf;
    std::normal_distribution<double> normal(-4, 0.5);
    for (loom::rl::Sample &sample : batch.samples)
      for (size_t t = 1; t < sample.tokens.size(); ++t) {
        std::vector<int64_t> prefix(sample.tokens.begin(),
                                    sample.tokens.begin() + t + 1);
        auto [it, fresh] = oldOf.try_emplace(prefix, normal(rng));
        sample.oldLogProbs[t] = it->second;
      }
    // (A negative weight, which the batch readers refuse but the identity
    // holds for: split by the advantage's sign, not the product's.)
    if (trial == 3)
      batch.samples.front().weight = -0.5;
    int64_t before = compressedEntries;
    expectEqual("gpt_mini.mlir", Objective::PPONormalized, batch,
                trial % 2 ? 2 : 1, 1e-10, {}, /*compress=*/true);
    if (trial >= 2)
      EXPECT_GT(compressedEntries, before) << "nothing was shared";
  }
  // Different old log-probabilities on a shared edge: refused, naming
  // both samples.
  loom::rl::Batch batch;
  for (double old : {-1.0, -2.0}) {
    loom::rl::Sample s;
    s.tokens = {1, 2, 3};
    s.lossMask = {0, 1, 1};
    s.advantage = 1;
    s.oldLogProbs = {0, old, old};
    s.line = old == -1.0 ? 1 : 2;
    batch.samples.push_back(s);
  }
  loom::rl::PackShape shape{8, 16, 1, 16, 64};
  auto step = loom::rl::packStep(batch, shape);
  ASSERT_TRUE(static_cast<bool>(step));
  llvm::Error err = loom::rl::compressStep(*step, batch, shape, 1e-6);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("lines 1 and 2 predict token 2"),
            std::string::npos);
}

TEST_F(PrefixDedup, ForwardLogProbsEqualThePlainForward) {
  std::mt19937_64 rng(14);
  for (const char *example : {"gpt_mini.mlir", "llama_mini.mlir"}) {
    loom::rl::Batch batch = randomBatch(rng, 4, 4);
    expectEqual(example, Objective::LogProbs, batch, 1, 1e-12);
  }
}

TEST_F(PrefixDedup, PPOSignCaseOutsideTheClipRange) {
  // Two samples share token 7 at position 1 (predicted from 5), with
  // advantages +1 and -1 and old log-probabilities set so that the ratio
  // there is 1.5 > 1 + 0.2.
  loom::rl::Batch batch;
  for (auto [tokens, advantage] :
       {std::pair{std::vector<int64_t>{5, 7, 9}, 1.0},
        std::pair{std::vector<int64_t>{5, 7, 11}, -1.0}}) {
    loom::rl::Sample s;
    s.tokens = tokens;
    s.lossMask = {0, 1, 0};
    s.advantage = advantage;
    s.oldLogProbs = {0, 0, 0};
    batch.samples.push_back(s);
  }
  // The current log-probability of 7 after 5, from the plain forward.
  {
    std::string text = makeModel("gpt_mini.mlir", Objective::LogProbs);
    OwningOpRef<ModuleOp> module = compile(text, "");
    ASSERT_TRUE(module);
    auto step = loom::rl::packStep(batch, {8, 16, 1, 128, 64});
    ASSERT_TRUE(static_cast<bool>(step));
    std::vector<Tensor> lp = run(*module, "gpt_mini", *step);
    ASSERT_EQ(lp.size(), 1u);
    double current = lp[0].getDouble(0 * 16 + 0);
    EXPECT_EQ(current, lp[0].getDouble(1 * 16 + 0));
    for (auto &s : batch.samples)
      s.oldLogProbs[1] = current - std::log(1.5);
  }
  expectEqual("gpt_mini.mlir", Objective::PPO, batch, 1);

  // The shortcut: one sample through the shared token with the summed
  // advantage (0) gives a different gradient: the -1 branch is not
  // clipped (min(-1.5, -1.2) = -1.5), the +1 branch is.
  std::string text = makeModel("gpt_mini.mlir", Objective::PPO);
  OwningOpRef<ModuleOp> module =
      compile(text, "nn-autodiff");
  ASSERT_TRUE(module);
  auto exact = loom::rl::packStep(batch, {8, 16, 1, 128, 64});
  loom::rl::Batch merged;
  merged.samples.push_back(batch.samples[0]);
  merged.samples[0].advantage = 0.0;
  merged.samples[0].weight = 2.0; // the same normaliser
  auto shortcut = loom::rl::packStep(merged, {8, 16, 1, 128, 64});
  ASSERT_TRUE(exact && shortcut);
  std::vector<Tensor> a = run(*module, "gpt_mini_grad", *exact);
  std::vector<Tensor> b = run(*module, "gpt_mini_grad", *shortcut);
  ASSERT_EQ(a.size(), b.size());
  double largest = 0;
  for (size_t i = 1; i < a.size(); ++i)
    largest = std::max(largest, relativeError(b[i], a[i]));
  EXPECT_GT(largest, 0.5) << "the summed-advantage shortcut should differ";
}

} // namespace
