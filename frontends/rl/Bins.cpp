//===- Bins.cpp - Cutting a batch's trie into data-parallel bins ----------===//

#include "frontends/rl/Bins.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <limits>
#include <numeric>

using namespace loom::rl;

namespace {

/// A set of samples that goes to one rank, and the size of its trie.
struct Piece {
  std::vector<int64_t> samples;
  int64_t unique = 0, pairs = 0;
  /// The depth its samples share (they agree on tokens [0, shared)).
  int64_t shared = 0;
};

/// The unique tokens and attention pairs of the trie of `samples`.
void measure(const Batch &batch, const std::vector<int64_t> &samples,
             int64_t &unique, int64_t &pairs) {
  Batch part;
  for (int64_t s : samples)
    part.samples.push_back(batch.samples[s]);
  Trie trie = buildTrie(part);
  Statistics stats = getStatistics(part, trie);
  unique = stats.uniqueTokens;
  pairs = stats.triePairs;
}

Piece makePiece(const Batch &batch, std::vector<int64_t> samples,
                int64_t shared) {
  Piece piece;
  piece.samples = std::move(samples);
  std::sort(piece.samples.begin(), piece.samples.end());
  piece.shared = shared;
  measure(batch, piece.samples, piece.unique, piece.pairs);
  return piece;
}

double cost(const Piece &piece, const BinCosts &costs) {
  return costs.perToken * piece.unique + costs.perPair * piece.pairs;
}

/// Splits `piece` at its first branching below the depth its samples
/// share: the samples grouped by their token there (those that end before
/// it form a group of their own). None when all its samples are one.
std::vector<Piece> split(const Batch &batch, const Piece &piece) {
  if (piece.samples.size() < 2)
    return {};
  for (int64_t depth = piece.shared;; ++depth) {
    std::map<int64_t, std::vector<int64_t>> groups;
    std::vector<int64_t> ended;
    for (int64_t s : piece.samples) {
      const std::vector<int64_t> &tokens = batch.samples[s].tokens;
      if (depth < static_cast<int64_t>(tokens.size()))
        groups[tokens[depth]].push_back(s);
      else
        ended.push_back(s);
    }
    if (groups.empty()) {
      // Every sample is the same: halves, each computing it all.
      std::vector<int64_t> first(ended.begin(),
                                 ended.begin() + ended.size() / 2),
          second(ended.begin() + ended.size() / 2, ended.end());
      return {makePiece(batch, first, depth), makePiece(batch, second, depth)};
    }
    if (groups.size() == 1 && ended.empty())
      continue; // (one token and none ended: all agree further down)
    std::vector<Piece> parts;
    for (auto &[token, samples] : groups)
      parts.push_back(makePiece(batch, samples, depth + 1));
    if (!ended.empty())
      parts.push_back(makePiece(batch, ended, depth));
    return parts;
  }
}

/// Largest first to the least loaded rank with room for its samples (at
/// most `slots` per rank, 0: no limit); the rank of every piece. `maxLoad`
/// is infinite when some piece found no rank with room.
std::vector<int64_t> assign(const std::vector<Piece> &pieces, int64_t ranks,
                            const BinCosts &costs, int64_t slots,
                            double &maxLoad) {
  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    double ca = cost(pieces[a], costs), cb = cost(pieces[b], costs);
    return ca != cb ? ca > cb : a < b;
  });
  std::vector<double> loads(static_cast<size_t>(ranks), 0);
  std::vector<int64_t> counts(static_cast<size_t>(ranks), 0);
  std::vector<int64_t> rankOf(pieces.size(), 0);
  bool overflow = false;
  for (size_t p : order) {
    int64_t size = static_cast<int64_t>(pieces[p].samples.size());
    size_t least = loads.size();
    for (size_t r = 0; r < loads.size(); ++r)
      if ((!slots || counts[r] + size <= slots) &&
          (least == loads.size() || loads[r] < loads[least]))
        least = r;
    if (least == loads.size()) {
      overflow = true;
      least = std::min_element(loads.begin(), loads.end()) - loads.begin();
    }
    rankOf[p] = static_cast<int64_t>(least);
    loads[least] += cost(pieces[p], costs);
    counts[least] += size;
  }
  maxLoad = overflow       ? std::numeric_limits<double>::infinity()
            : loads.empty() ? 0
                            : *std::max_element(loads.begin(), loads.end());
  return rankOf;
}

} // namespace

BinPlan loom::rl::planBins(const Batch &batch, int64_t ranks,
                           const BinCosts &costs, int64_t slots) {
  ranks = std::max<int64_t>(ranks, 1);
  // The roots' subtrees.
  std::map<int64_t, std::vector<int64_t>> byRoot;
  for (size_t s = 0; s < batch.samples.size(); ++s)
    byRoot[batch.samples[s].tokens.front()].push_back(static_cast<int64_t>(s));
  std::vector<Piece> pieces;
  for (auto &[token, samples] : byRoot)
    pieces.push_back(makePiece(batch, samples, 1));

  double bestLoad = 0;
  std::vector<int64_t> bestRanks = assign(pieces, ranks, costs, slots, bestLoad);
  std::vector<Piece> bestPieces = pieces;
  // Splits that do not pay are tried a few times more before stopping (a
  // split may pay only with the next).
  int patience = 3;
  for (int round = 0; round < 10000 && patience > 0; ++round) {
    double load = 0;
    std::vector<int64_t> rankOf = assign(pieces, ranks, costs, slots, load);
    std::vector<double> loads(static_cast<size_t>(ranks), 0);
    for (size_t p = 0; p < pieces.size(); ++p)
      loads[rankOf[p]] += cost(pieces[p], costs);
    int64_t busiest =
        std::max_element(loads.begin(), loads.end()) - loads.begin();
    // Its largest piece that can be split; while some piece finds no rank
    // with room, the piece of most samples.
    int64_t chosen = -1;
    bool overflow = std::isinf(load);
    for (size_t p = 0; p < pieces.size(); ++p) {
      if (pieces[p].samples.size() < 2 || (!overflow && rankOf[p] != busiest))
        continue;
      if (chosen < 0 ||
          (overflow ? pieces[p].samples.size() > pieces[chosen].samples.size()
                    : cost(pieces[p], costs) > cost(pieces[chosen], costs)))
        chosen = static_cast<int64_t>(p);
    }
    if (chosen < 0)
      break;
    std::vector<Piece> parts = split(batch, pieces[chosen]);
    pieces.erase(pieces.begin() + chosen);
    pieces.insert(pieces.end(), parts.begin(), parts.end());
    double after = 0;
    std::vector<int64_t> ranksAfter = assign(pieces, ranks, costs, slots, after);
    if (after < bestLoad) {
      bestLoad = after;
      bestRanks = ranksAfter;
      bestPieces = pieces;
      patience = 3;
    } else {
      --patience;
    }
  }

  BinPlan plan;
  plan.samples.assign(static_cast<size_t>(ranks), {});
  for (size_t p = 0; p < bestPieces.size(); ++p)
    for (int64_t s : bestPieces[p].samples)
      plan.samples[bestRanks[p]].push_back(s);
  Trie whole = buildTrie(batch);
  Statistics stats = getStatistics(batch, whole);
  plan.idealUnique = stats.uniqueTokens;
  plan.totalTokens = stats.totalTokens;
  for (std::vector<int64_t> &samples : plan.samples) {
    std::sort(samples.begin(), samples.end());
    int64_t unique = 0, pairs = 0;
    if (!samples.empty())
      measure(batch, samples, unique, pairs);
    plan.uniqueTokens.push_back(unique);
    plan.pairs.push_back(pairs);
    double load = costs.perToken * unique + costs.perPair * pairs;
    plan.loads.push_back(load);
    plan.totalComputed += unique;
    plan.maxLoad = std::max(plan.maxLoad, load);
    plan.meanLoad += load / static_cast<double>(ranks);
  }
  return plan;
}

std::string loom::rl::formatBinPlan(const BinPlan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (size_t r = 0; r < plan.samples.size(); ++r) {
    os << "rank " << r << ": samples";
    for (int64_t s : plan.samples[r])
      os << " " << s;
    if (plan.samples[r].empty())
      os << " (none)";
    os << "; unique tokens " << plan.uniqueTokens[r] << ", attention pairs "
       << plan.pairs[r] << ", load " << llvm::format("%g", plan.loads[r])
       << "\n";
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  os << "reuse T/computed " << llvm::format("%.3f", ratio(plan.totalTokens, plan.totalComputed))
     << " against the ideal T/U "
     << llvm::format("%.3f", ratio(plan.totalTokens, plan.idealUnique)) << " ("
     << plan.totalComputed << " tokens computed, " << plan.idealUnique
     << " unique)\n";
  os << "load max/mean " << llvm::format("%.3f", ratio(plan.maxLoad, plan.meanLoad))
     << " (max " << llvm::format("%g", plan.maxLoad) << ", mean "
     << llvm::format("%g", plan.meanLoad) << ")\n";
  return text;
}
