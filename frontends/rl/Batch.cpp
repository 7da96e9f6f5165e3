//===- Batch.cpp - RL update batches and their prefix trie ----------------===//

#include "frontends/rl/Batch.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>

using namespace loom::rl;

namespace {

/// `value` as %g prints it.
std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// An error at `name:line`.
llvm::Error lineError(llvm::StringRef name, int64_t line,
                      const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (name + ":" + llvm::Twine(line) + ": " +
                                  message)
                                     .str());
}

/// The array `key` of `object`, or why it is not one.
llvm::Expected<const llvm::json::Array *>
arrayOf(const llvm::json::Object &object, llvm::StringRef key) {
  const llvm::json::Value *value = object.get(key);
  const llvm::json::Array *array = value ? value->getAsArray() : nullptr;
  if (!array)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'%s' is not an array", key.str().c_str());
  return array;
}

/// Reads `key` of `object` as an array of finite numbers.
llvm::Expected<std::vector<double>> numbers(const llvm::json::Object &object,
                                            llvm::StringRef key) {
  llvm::Expected<const llvm::json::Array *> array = arrayOf(object, key);
  if (!array)
    return array.takeError();
  std::vector<double> out;
  for (auto [i, element] : llvm::enumerate(**array)) {
    std::optional<double> v = element.getAsNumber();
    if (!v || !std::isfinite(*v))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "'%s'[%zu] is not a finite number", key.str().c_str(), i);
    out.push_back(*v);
  }
  return out;
}

/// Reads `key` of `object` as an array of integers (exactly, as int64).
llvm::Expected<std::vector<int64_t>>
integers(const llvm::json::Object &object, llvm::StringRef key) {
  llvm::Expected<const llvm::json::Array *> array = arrayOf(object, key);
  if (!array)
    return array.takeError();
  std::vector<int64_t> out;
  for (auto [i, element] : llvm::enumerate(**array)) {
    std::optional<int64_t> v = element.getAsInteger();
    if (!v)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "'%s'[%zu] is not an integer",
                                     key.str().c_str(), i);
    out.push_back(*v);
  }
  return out;
}

llvm::Expected<Sample> parseSample(const llvm::json::Object &object) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  for (const auto &entry : object) {
    llvm::StringRef key = entry.first;
    if (!llvm::is_contained({"tokens", "loss_mask", "weight", "advantage",
                             "old_logprobs"},
                            key))
      return fail("unknown field '" + key +
                  "' (expected tokens, loss_mask, weight, advantage, "
                  "old_logprobs)");
  }
  Sample sample;
  if (!object.get("tokens"))
    return fail("no 'tokens'");
  llvm::Expected<std::vector<int64_t>> tokens = integers(object, "tokens");
  if (!tokens)
    return tokens.takeError();
  if (tokens->empty())
    return fail("'tokens' is empty");
  for (auto [t, token] : llvm::enumerate(*tokens))
    if (token < 0)
      return fail("'tokens'[" + llvm::Twine(t) + "] is negative");
  sample.tokens = *tokens;
  size_t length = sample.tokens.size();
  if (object.get("loss_mask")) {
    llvm::Expected<std::vector<double>> mask =
        numbers(object, "loss_mask");
    if (!mask)
      return mask.takeError();
    if (mask->size() != length)
      return fail("'loss_mask' has " + llvm::Twine(mask->size()) +
                  " entries for " + llvm::Twine(length) + " tokens");
    if ((*mask)[0] != 0)
      return fail("'loss_mask'[0] is " + numberText((*mask)[0]) +
                  ": the first token is predicted from nothing");
    for (auto [t, m] : llvm::enumerate(*mask))
      if (m < 0)
        return fail("'loss_mask'[" + llvm::Twine(t) + "] is negative");
    sample.lossMask = *mask;
  } else {
    sample.lossMask.assign(length, 1.0);
    sample.lossMask[0] = 0;
  }
  if (const llvm::json::Value *weight = object.get("weight")) {
    std::optional<double> w = weight->getAsNumber();
    if (!w || !std::isfinite(*w) || *w < 0)
      return fail("'weight' is not a finite number >= 0");
    sample.weight = *w;
  }
  if (const llvm::json::Value *advantage = object.get("advantage")) {
    std::optional<double> a = advantage->getAsNumber();
    if (!a || !std::isfinite(*a))
      return fail("'advantage' is not a finite number");
    sample.advantage = *a;
  }
  if (object.get("old_logprobs")) {
    llvm::Expected<std::vector<double>> old =
        numbers(object, "old_logprobs");
    if (!old)
      return old.takeError();
    if (old->size() != length)
      return fail("'old_logprobs' has " + llvm::Twine(old->size()) +
                  " entries for " + llvm::Twine(length) + " tokens");
    for (size_t t = 1; t < length; ++t)
      if ((*old)[t] > 0)
        return fail("'old_logprobs'[" + llvm::Twine(t) + "] is " +
                    numberText((*old)[t]) +
                    ", above 0 (a log-probability)");
    sample.oldLogProbs = *old;
  }
  return sample;
}

} // namespace

llvm::Expected<Batch> loom::rl::parseBatch(llvm::StringRef text,
                                           llvm::StringRef name) {
  Batch batch;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/true);
  for (auto [index, line] : llvm::enumerate(lines)) {
    int64_t number = static_cast<int64_t>(index) + 1;
    llvm::StringRef body = line.trim();
    if (body.empty())
      continue;
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(body);
    if (!value)
      return lineError(name, number,
                       "not JSON: " + llvm::toString(value.takeError()));
    const llvm::json::Object *object = value->getAsObject();
    if (!object)
      return lineError(name, number, "not a JSON object");
    llvm::Expected<Sample> sample = parseSample(*object);
    if (!sample)
      return lineError(name, number, llvm::toString(sample.takeError()));
    sample->line = number;
    batch.samples.push_back(std::move(*sample));
  }
  if (batch.samples.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   (name + ": the batch has no sample").str());
  // Per-token old log-probabilities and advantages come together or not at
  // all: the objective is one for the whole batch.
  bool ppo = batch.samples.front().advantage.has_value();
  for (const Sample &sample : batch.samples)
    if (sample.advantage.has_value() != ppo ||
        sample.oldLogProbs.empty() == ppo)
      return lineError(name, sample.line,
                       ppo ? "every sample of a PPO/GRPO batch has "
                             "'advantage' and 'old_logprobs' (the first "
                             "sample has them)"
                           : "'advantage' and 'old_logprobs' go together, "
                             "in every sample or in none (the first sample "
                             "has neither)");
  return batch;
}

llvm::Expected<Batch> loom::rl::readBatchFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s': %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  return parseBatch((*buffer)->getBuffer(), path);
}

Trie loom::rl::buildTrie(const Batch &batch) {
  // The trie as linked nodes first (children in first-reached order), then
  // packed depth first.
  struct Node {
    int64_t token, depth;
    std::vector<int64_t> children;
    std::map<int64_t, int64_t> childOf;
  };
  std::vector<Node> nodes;
  std::vector<int64_t> roots;
  std::map<int64_t, int64_t> rootOf;
  std::vector<std::vector<int64_t>> linkedOf;
  for (const Sample &sample : batch.samples) {
    std::vector<int64_t> path;
    int64_t at = -1;
    for (auto [t, token] : llvm::enumerate(sample.tokens)) {
      std::map<int64_t, int64_t> &next = at < 0 ? rootOf : nodes[at].childOf;
      auto it = next.find(token);
      if (it == next.end()) {
        int64_t id = static_cast<int64_t>(nodes.size());
        nodes.push_back({token, static_cast<int64_t>(t), {}, {}});
        // (`next` may dangle after the push: look the parent up again.)
        if (at < 0) {
          rootOf[token] = id;
          roots.push_back(id);
        } else {
          nodes[at].childOf[token] = id;
          nodes[at].children.push_back(id);
        }
        at = id;
      } else {
        at = it->second;
      }
      path.push_back(at);
    }
    linkedOf.push_back(std::move(path));
  }
  Trie trie;
  std::vector<int64_t> packedOf(nodes.size(), -1);
  // Depth first without recursion (tries can be deep).
  struct Frame {
    int64_t node, parent;
    size_t next;
  };
  for (int64_t root : roots) {
    std::vector<Frame> stack = {{root, -1, 0}};
    while (!stack.empty()) {
      Frame &frame = stack.back();
      if (frame.next == 0) {
        int64_t packed = trie.getNumNodes();
        packedOf[frame.node] = packed;
        trie.tokens.push_back(nodes[frame.node].token);
        trie.positions.push_back(nodes[frame.node].depth);
        trie.parents.push_back(frame.parent < 0 ? -1 : packedOf[frame.parent]);
        trie.subtreeEnd.push_back(packed);
      }
      const std::vector<int64_t> &children = nodes[frame.node].children;
      if (frame.next < children.size()) {
        int64_t child = children[frame.next++];
        int64_t parent = frame.node;
        stack.push_back({child, parent, 0});
        continue;
      }
      trie.subtreeEnd[packedOf[frame.node]] = trie.getNumNodes() - 1;
      stack.pop_back();
    }
  }
  for (const std::vector<int64_t> &path : linkedOf) {
    std::vector<int64_t> packed;
    for (int64_t node : path)
      packed.push_back(packedOf[node]);
    trie.nodeOf.push_back(std::move(packed));
  }
  return trie;
}

Statistics loom::rl::getStatistics(const Batch &batch, const Trie &trie) {
  Statistics stats;
  stats.samples = static_cast<int64_t>(batch.samples.size());
  for (const Sample &sample : batch.samples) {
    int64_t length = static_cast<int64_t>(sample.tokens.size());
    stats.totalTokens += length;
    stats.plainEdges += length - 1;
    stats.plainPairs += length * (length + 1) / 2;
  }
  stats.uniqueTokens = trie.getNumNodes();
  for (int64_t node = 0; node < trie.getNumNodes(); ++node) {
    if (trie.parents[node] >= 0)
      ++stats.trieEdges;
    stats.triePairs += trie.positions[node] + 1;
  }
  return stats;
}

std::string loom::rl::formatStatistics(const Statistics &stats,
                                       llvm::StringRef name) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto ratio = [](int64_t a, int64_t b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  os << "batch " << name << ": " << stats.samples << " samples\n";
  os << "tokens T " << stats.totalTokens << ", unique U " << stats.uniqueTokens
     << ", T/U " << llvm::format("%.3f", ratio(stats.totalTokens,
                                               stats.uniqueTokens))
     << "\n";
  os << "prediction edges " << stats.plainEdges << " -> " << stats.trieEdges
     << "\n";
  os << "attention pairs " << stats.plainPairs << " -> " << stats.triePairs
     << " (" << llvm::format("%.3f", ratio(stats.plainPairs, stats.triePairs))
     << "x)\n";
  return text;
}
