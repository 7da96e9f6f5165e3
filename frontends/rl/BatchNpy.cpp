//===- BatchNpy.cpp - RL batches as .npy arrays ---------------------------===//

#include "frontends/rl/BatchNpy.h"

#include "runtime/interpreter/Npy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace loom::rl;
using loom::interp::ElementKind;
using loom::interp::Tensor;

namespace {

std::string pathOf(llvm::StringRef dir, llvm::StringRef file) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, file);
  return path.str().str();
}

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

/// Reads `dir/file` and checks its kind and shape.
llvm::Expected<Tensor> readArray(llvm::StringRef dir, llvm::StringRef file,
                                 ElementKind kind,
                                 llvm::ArrayRef<int64_t> shape) {
  std::string path = pathOf(dir, file);
  llvm::Expected<Tensor> tensor = loom::interp::readNpyFile(path);
  if (!tensor)
    return tensor.takeError();
  if (tensor->getKind() != kind || tensor->getShape() != shape) {
    Tensor expected(kind, shape);
    return fail(path + ": " + tensor->getTypeString() + ", expected " +
                expected.getTypeString());
  }
  return tensor;
}

} // namespace

llvm::Error loom::rl::writeBatchNpy(const Batch &batch, const Trie &trie,
                                    llvm::StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create '" + dir + "': " + ec.message());
  int64_t b = static_cast<int64_t>(batch.samples.size()), s = 0;
  for (const Sample &sample : batch.samples)
    s = std::max(s, static_cast<int64_t>(sample.tokens.size()));
  bool ppo = !batch.samples.empty() && batch.samples.front().advantage;
  Tensor tokens(ElementKind::I64, {b, s}), lengths(ElementKind::I64, {b}),
      mask(ElementKind::F64, {b, s}), weights(ElementKind::F64, {b}),
      advantages(ElementKind::F64, {b}), old(ElementKind::F64, {b, s}),
      nodeOf(ElementKind::I64, {b, s});
  for (int64_t i = 0; i < b; ++i) {
    const Sample &sample = batch.samples[i];
    lengths.data<int64_t>()[i] = static_cast<int64_t>(sample.tokens.size());
    weights.data<double>()[i] = sample.weight;
    advantages.data<double>()[i] = sample.advantage.value_or(0);
    for (int64_t t = 0; t < s; ++t) {
      bool in = t < static_cast<int64_t>(sample.tokens.size());
      tokens.data<int64_t>()[i * s + t] = in ? sample.tokens[t] : 0;
      mask.data<double>()[i * s + t] = in ? sample.lossMask[t] : 0;
      old.data<double>()[i * s + t] =
          in && !sample.oldLogProbs.empty() ? sample.oldLogProbs[t] : 0;
      nodeOf.data<int64_t>()[i * s + t] = in ? trie.nodeOf[i][t] : -1;
    }
  }
  int64_t u = trie.getNumNodes();
  std::vector<std::pair<const char *, Tensor>> arrays = {
      {"tokens.npy", tokens},
      {"lengths.npy", lengths},
      {"loss_mask.npy", mask},
      {"weights.npy", weights},
      {"trie_tokens.npy", Tensor::fromValues<int64_t>({u}, trie.tokens)},
      {"trie_positions.npy", Tensor::fromValues<int64_t>({u}, trie.positions)},
      {"trie_parents.npy", Tensor::fromValues<int64_t>({u}, trie.parents)},
      {"trie_subtree_end.npy",
       Tensor::fromValues<int64_t>({u}, trie.subtreeEnd)},
      {"node_of.npy", nodeOf}};
  if (ppo) {
    arrays.push_back({"advantages.npy", advantages});
    arrays.push_back({"old_logprobs.npy", old});
  } else {
    // (A PPO batch written here before must not be read back as this one.)
    for (const char *file : {"advantages.npy", "old_logprobs.npy"})
      if (std::error_code ec = llvm::sys::fs::remove(pathOf(dir, file)))
        return fail("cannot remove '" + pathOf(dir, file) +
                    "': " + ec.message());
  }
  for (const auto &[file, tensor] : arrays)
    if (llvm::Error error = loom::interp::writeNpyFile(pathOf(dir, file), tensor))
      return error;
  return llvm::Error::success();
}

llvm::Expected<Batch> loom::rl::readBatchNpy(llvm::StringRef dir) {
  std::string lengthsPath = pathOf(dir, "lengths.npy");
  llvm::Expected<Tensor> lengths = loom::interp::readNpyFile(lengthsPath);
  if (!lengths)
    return lengths.takeError();
  if (lengths->getKind() != ElementKind::I64 || lengths->getRank() != 1)
    return fail(lengthsPath + ": " + lengths->getTypeString() +
                ", expected a 1-d i64 array");
  int64_t b = lengths->getNumElements();
  if (b == 0)
    return fail(dir + ": the batch has no sample");
  llvm::Expected<Tensor> tokens = loom::interp::readNpyFile(pathOf(dir, "tokens.npy"));
  if (!tokens)
    return tokens.takeError();
  if (tokens->getRank() != 2 || tokens->getShape()[0] != b)
    return fail(pathOf(dir, "tokens.npy") + ": " + tokens->getTypeString() +
                ", expected " + llvm::Twine(b) + " rows");
  int64_t s = tokens->getShape()[1];
  if (tokens->getKind() != ElementKind::I64)
    return fail(pathOf(dir, "tokens.npy") + ": " + tokens->getTypeString() +
                ", expected i64 elements");
  llvm::Expected<Tensor> mask =
      readArray(dir, "loss_mask.npy", ElementKind::F64, {b, s});
  if (!mask)
    return mask.takeError();
  llvm::Expected<Tensor> weights =
      readArray(dir, "weights.npy", ElementKind::F64, {b});
  if (!weights)
    return weights.takeError();
  bool ppo = llvm::sys::fs::exists(pathOf(dir, "advantages.npy"));
  if (ppo != llvm::sys::fs::exists(pathOf(dir, "old_logprobs.npy")))
    return fail(dir + ": advantages.npy and old_logprobs.npy go together");
  std::optional<Tensor> advantages, old;
  if (ppo) {
    llvm::Expected<Tensor> a =
        readArray(dir, "advantages.npy", ElementKind::F64, {b});
    if (!a)
      return a.takeError();
    llvm::Expected<Tensor> o =
        readArray(dir, "old_logprobs.npy", ElementKind::F64, {b, s});
    if (!o)
      return o.takeError();
    advantages = std::move(*a);
    old = std::move(*o);
  }
  // The samples, checked as the JSON Lines reader checks them.
  Batch batch;
  for (int64_t i = 0; i < b; ++i) {
    auto bad = [&](const llvm::Twine &what) {
      return fail(dir + ": sample " + llvm::Twine(i) + ": " + what);
    };
    int64_t length = lengths->data<int64_t>()[i];
    if (length < 1 || length > s)
      return bad("length " + llvm::Twine(length) + " is not in [1, " +
                 llvm::Twine(s) + "]");
    Sample sample;
    sample.line = i + 1;
    for (int64_t t = 0; t < length; ++t) {
      int64_t token = tokens->data<int64_t>()[i * s + t];
      double m = mask->data<double>()[i * s + t];
      if (token < 0)
        return bad("token " + llvm::Twine(t) + " is negative");
      if (!std::isfinite(m) || m < 0 || (t == 0 && m != 0))
        return bad("loss_mask " + llvm::Twine(t) +
                   (t == 0 ? " is not 0 (the first token is predicted from "
                             "nothing)"
                           : " is not a finite number >= 0"));
      sample.tokens.push_back(token);
      sample.lossMask.push_back(m);
      if (old) {
        double logp = old->data<double>()[i * s + t];
        if (!std::isfinite(logp) || (t > 0 && logp > 0))
          return bad("old_logprobs " + llvm::Twine(t) +
                     " is not a finite log-probability");
        sample.oldLogProbs.push_back(logp);
      }
    }
    sample.weight = weights->data<double>()[i];
    if (!std::isfinite(sample.weight) || sample.weight < 0)
      return bad("the weight is not a finite number >= 0");
    if (advantages) {
      double a = advantages->data<double>()[i];
      if (!std::isfinite(a))
        return bad("the advantage is not a finite number");
      sample.advantage = a;
    }
    batch.samples.push_back(std::move(sample));
  }
  return batch;
}
