//===- Placement.cpp - Expert replicas and their devices for MoE layers ---===//

#include "runtime/moe/Placement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>

using namespace loom::moe;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string str(int64_t value) { return std::to_string(value); }

/// Whether `a` is below `b` by more than rounding (relative to `scale`).
bool clearlyBelow(double a, double b, double scale) {
  return a < b - 1e-12 * std::max(scale, 1e-300);
}

//===----------------------------------------------------------------------===//
// DeepSeek EPLB, step for step.
//
// The reference computes in single precision and breaks ties by position:
// its sorts are stable (descending by weight, then ascending index), its
// argmax and its least-loaded pack take the first of equal values. The
// comparisons here are made on floats for the same reason, so that values
// single precision rounds to equal tie as they do there.
//===----------------------------------------------------------------------===//

/// Packs items onto `packs` packs of equal item count (heaviest first onto
/// the lightest pack with room); the pack and the rank within it of each.
void balancedPacking(const std::vector<float> &weight, int64_t packs,
                     std::vector<int64_t> &pack, std::vector<int64_t> &rank) {
  int64_t n = static_cast<int64_t>(weight.size());
  int64_t perPack = n / packs;
  pack.assign(n, -1);
  rank.assign(n, -1);
  if (perPack == 1) {
    // The reference keeps items in place when each pack takes one.
    for (int64_t i = 0; i < n; ++i) {
      pack[i] = i;
      rank[i] = 0;
    }
    return;
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return weight[a] > weight[b];
  });
  std::vector<int64_t> packItems(packs, 0);
  // The packs with room in a min-heap of (weight, pack): the lightest
  // first, the first of equal ones, as the reference's scan takes it.
  using Entry = std::pair<float, int64_t>;
  std::vector<Entry> heap;
  for (int64_t p = 0; p < packs; ++p)
    heap.push_back({0.0f, p});
  std::greater<Entry> later;
  std::make_heap(heap.begin(), heap.end(), later);
  for (int64_t item : order) {
    std::pop_heap(heap.begin(), heap.end(), later);
    auto [packWeight, best] = heap.back();
    heap.pop_back();
    pack[item] = best;
    rank[item] = packItems[best]++;
    if (packItems[best] < perPack) {
      heap.push_back({packWeight + weight[item], best});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
}

/// Gives `physical - n` extra replicas, one at a time, to the expert of the
/// largest tokens per replica (the first of equal ones): the logical expert
/// of each physical one (the first n are the experts themselves, the rest
/// in the order given) and each expert's count.
void replicate(const std::vector<float> &weight, int64_t physical,
               std::vector<int64_t> &phyToLog, std::vector<int64_t> &count) {
  int64_t n = static_cast<int64_t>(weight.size());
  phyToLog.resize(physical);
  std::iota(phyToLog.begin(), phyToLog.begin() + n, 0);
  count.assign(n, 1);
  // A max-heap of (share, -expert): the largest share, the first of equal
  // ones, as the reference's argmax takes it.
  std::vector<std::pair<float, int64_t>> heap;
  for (int64_t e = 0; e < n; ++e)
    heap.push_back({weight[e], -e});
  std::make_heap(heap.begin(), heap.end());
  for (int64_t i = n; i < physical; ++i) {
    std::pop_heap(heap.begin(), heap.end());
    int64_t best = -heap.back().second;
    phyToLog[i] = best;
    ++count[best];
    heap.back() = {weight[best] / static_cast<float>(count[best]), -best};
    std::push_heap(heap.begin(), heap.end());
  }
}

/// EPLB's physical-to-logical map of one layer (groups and nodes already
/// reduced to 1 and 1 for the global policy).
std::vector<int64_t> eplbMap(const std::vector<double> &tokens, int64_t groups,
                             int64_t nodes, int64_t devices, int64_t slots) {
  int64_t experts = static_cast<int64_t>(tokens.size());
  std::vector<float> weight(tokens.begin(), tokens.end());
  int64_t groupSize = experts / groups, groupsPerNode = groups / nodes;
  int64_t physical = devices * slots;
  int64_t perNodeLogical = experts / nodes, perNodePhysical = physical / nodes;
  // Groups onto nodes: the node-major order of logical experts ("mlog") is
  // node, then the group's rank on it, then the expert within the group.
  std::vector<float> groupWeight(groups, 0.0f);
  for (int64_t e = 0; e < experts; ++e)
    groupWeight[e / groupSize] += weight[e];
  std::vector<int64_t> groupPack, groupRank;
  balancedPacking(groupWeight, nodes, groupPack, groupRank);
  std::vector<int64_t> mlogToLog(experts);
  for (int64_t e = 0; e < experts; ++e) {
    int64_t g = e / groupSize;
    int64_t mlog = (groupPack[g] * groupsPerNode + groupRank[g]) * groupSize +
                   e % groupSize;
    mlogToLog[mlog] = e;
  }
  std::vector<int64_t> map(physical, -1);
  for (int64_t node = 0; node < nodes; ++node) {
    std::vector<float> local(perNodeLogical);
    for (int64_t j = 0; j < perNodeLogical; ++j)
      local[j] = weight[mlogToLog[node * perNodeLogical + j]];
    std::vector<int64_t> phyToLocal, count;
    replicate(local, perNodePhysical, phyToLocal, count);
    std::vector<float> share(perNodePhysical);
    for (int64_t p = 0; p < perNodePhysical; ++p)
      share[p] = local[phyToLocal[p]] / static_cast<float>(count[phyToLocal[p]]);
    std::vector<int64_t> pack, rank;
    balancedPacking(share, devices / nodes, pack, rank);
    for (int64_t p = 0; p < perNodePhysical; ++p) {
      int64_t slot = pack[p] * slots + rank[p];
      map[node * perNodePhysical + slot] =
          mlogToLog[node * perNodeLogical + phyToLocal[p]];
    }
  }
  return map;
}

//===----------------------------------------------------------------------===//
// Evaluation: splits, loads, moves, modelled time.
//===----------------------------------------------------------------------===//

/// Water-fills each expert's tokens over the devices of its replicas, one
/// expert at a time against the others' current loads, sweep after sweep:
/// block coordinate descent on the sum of squared device loads, whose
/// minimum over the splits also has the least maximum. Replicas of one
/// expert on one device share that device's part evenly.
void waterFill(const std::vector<double> &tokens, const std::vector<int64_t> &map,
               int64_t slots, int64_t devices, std::vector<double> &slotTokens) {
  int64_t experts = static_cast<int64_t>(tokens.size());
  // Each expert's devices (with the slots it holds there).
  std::vector<std::vector<std::pair<int64_t, std::vector<int64_t>>>> where(experts);
  for (int64_t p = 0; p < static_cast<int64_t>(map.size()); ++p) {
    int64_t e = map[p];
    if (e < 0)
      continue;
    int64_t d = p / slots;
    auto &list = where[e];
    if (list.empty() || list.back().first != d)
      list.push_back({d, {}});
    list.back().second.push_back(p);
  }
  std::vector<double> load(devices, 0);
  for (int64_t p = 0; p < static_cast<int64_t>(map.size()); ++p)
    load[p / slots] += slotTokens[p];
  double total = std::accumulate(tokens.begin(), tokens.end(), 0.0);
  std::vector<std::pair<double, int64_t>> base;
  for (int sweep = 0; sweep < 400; ++sweep) {
    double change = 0;
    for (int64_t e = 0; e < experts; ++e) {
      auto &list = where[e];
      if (list.size() < 2)
        continue;
      base.clear();
      for (size_t k = 0; k < list.size(); ++k) {
        double mine = 0;
        for (int64_t p : list[k].second)
          mine += slotTokens[p];
        base.push_back({load[list[k].first] - mine, static_cast<int64_t>(k)});
      }
      std::sort(base.begin(), base.end());
      // The level L with sum over devices of max(0, L - base) = w_e.
      double level = 0, sum = 0;
      size_t used = 0;
      for (; used < base.size(); ++used) {
        sum += base[used].first;
        double candidate = (tokens[e] + sum) / static_cast<double>(used + 1);
        if (used + 1 == base.size() || candidate <= base[used + 1].first) {
          level = candidate;
          break;
        }
      }
      for (size_t k = 0; k < base.size(); ++k) {
        auto &entry = list[base[k].second];
        double part = k <= used ? std::max(0.0, level - base[k].first) : 0.0;
        double old = 0;
        for (int64_t p : entry.second)
          old += slotTokens[p];
        change = std::max(change, std::fabs(part - old));
        for (int64_t p : entry.second)
          slotTokens[p] = part / static_cast<double>(entry.second.size());
        load[entry.first] += part - old;
      }
    }
    if (change <= 1e-13 * std::max(total, 1.0))
      break;
  }
  // Exact sums per expert after the floating-point shuffles: the rounding
  // left over goes to the expert's largest part.
  for (int64_t e = 0; e < experts; ++e) {
    double sum = 0;
    int64_t largest = -1;
    for (auto &entry : where[e])
      for (int64_t p : entry.second) {
        sum += slotTokens[p];
        if (largest < 0 || slotTokens[p] > slotTokens[largest])
          largest = p;
      }
    if (largest >= 0)
      slotTokens[largest] += tokens[e] - sum;
  }
}

/// The placement `map` makes of a checked layer (`bound`: its lower bound
/// where the caller has it already, as the planner does for its several
/// candidates).
Placement evaluate(const Cluster &cluster, const LayerInput &layer,
                   const std::vector<int64_t> &map, bool uneven,
                   const std::vector<double> *given = nullptr,
                   std::optional<double> bound = std::nullopt) {
  const Topology &t = cluster.topology;
  int64_t experts = static_cast<int64_t>(layer.tokens.size());
  int64_t slots = t.slotsPerDevice, perNode = t.devicesPerNode();
  Placement result;
  result.physicalToLogical = map;
  result.replicaCount.assign(experts, 0);
  for (int64_t e : map)
    if (e >= 0)
      ++result.replicaCount[e];
  result.slotTokens.assign(map.size(), 0);
  for (size_t p = 0; p < map.size(); ++p)
    if (map[p] >= 0)
      result.slotTokens[p] = layer.tokens[map[p]] /
                             static_cast<double>(result.replicaCount[map[p]]);
  if (given)
    result.slotTokens = *given;
  else if (uneven)
    waterFill(layer.tokens, map, slots, t.devices, result.slotTokens);
  result.deviceLoad.assign(t.devices, 0);
  for (size_t p = 0; p < map.size(); ++p)
    result.deviceLoad[p / slots] += result.slotTokens[p];
  result.maxLoad =
      *std::max_element(result.deviceLoad.begin(), result.deviceLoad.end());
  result.lowerBound = bound ? *bound : lowerBound(layer.tokens, t);
  result.unevenLowerBound =
      std::accumulate(layer.tokens.begin(), layer.tokens.end(), 0.0) /
      static_cast<double>(t.devices);
  result.meanReached =
      !clearlyBelow(result.unevenLowerBound, result.maxLoad,
                    std::max(result.unevenLowerBound, 1.0) * 1e3);
  if (!layer.previous.empty()) {
    std::vector<char> held(t.devices * experts, 0), nodeHeld(t.nodes * experts, 0);
    for (const Holding &h : layer.previous) {
      held[h.device * experts + h.expert] = 1;
      nodeHeld[(h.device / perNode) * experts + h.expert] = 1;
    }
    std::vector<char> fetched(t.devices * experts, 0);
    for (size_t p = 0; p < map.size(); ++p) {
      int64_t e = map[p], d = static_cast<int64_t>(p) / slots;
      if (e < 0 || held[d * experts + e] || fetched[d * experts + e])
        continue;
      // A second replica of one expert on a device shares the weights.
      fetched[d * experts + e] = 1;
      ++result.replicasMoved;
      if (nodeHeld[(d / perNode) * experts + e])
        result.intraNodeBytes += cluster.cost.expertBytes;
      else
        result.interNodeBytes += cluster.cost.expertBytes;
    }
  }
  const CostParams &c = cluster.cost;
  result.modelledSeconds = result.maxLoad * c.secondsPerToken +
                           result.intraNodeBytes / c.intraNodeBandwidth +
                           result.interNodeBytes / c.interNodeBandwidth;
  return result;
}

//===----------------------------------------------------------------------===//
// The runtime planner on one flat set of devices.
//===----------------------------------------------------------------------===//

/// The largest-share greedy's sequence: starting from one replica each, the
/// expert given each further replica, while some expert below `devices`
/// replicas has tokens per replica above zero (an extra replica of an
/// expert with no tokens helps nothing and costs a move).
std::vector<int64_t> greedyIncrements(const std::vector<double> &w,
                                      int64_t budget, int64_t devices) {
  int64_t n = static_cast<int64_t>(w.size());
  std::vector<int64_t> count(n, 1), increments;
  increments.reserve(std::max<int64_t>(budget - n, 0));
  // The heap holds (share, -expert), its share computed once: the largest
  // share first, the lowest expert among equal ones.
  std::vector<std::pair<double, int64_t>> heap;
  heap.reserve(n);
  for (int64_t e = 0; e < n; ++e)
    if (devices > 1 && w[e] > 0)
      heap.push_back({w[e], -e});
  std::make_heap(heap.begin(), heap.end());
  for (int64_t k = n; k < budget && !heap.empty(); ++k) {
    std::pop_heap(heap.begin(), heap.end());
    int64_t e = -heap.back().second;
    heap.pop_back();
    increments.push_back(e);
    if (++count[e] < devices) {
      heap.push_back({w[e] / static_cast<double>(count[e]), -e});
      std::push_heap(heap.begin(), heap.end());
    }
  }
  return increments;
}

/// One flat assignment: replicas (expert, tokens each) on devices with
/// `slots` slots. Replicas of one expert may share a device (the device
/// then takes that many shares of the expert's tokens).
struct Flat {
  int64_t devices = 0, slots = 0, experts = 0;
  std::vector<int64_t> repExpert;
  std::vector<double> repSize;
  std::vector<int64_t> repDevice;
  std::vector<std::vector<int64_t>> onDevice;
  std::vector<double> load;
  /// The sizes of each device's replicas, ascending (kept by put and take
  /// for the local search's swap test).
  std::vector<std::vector<double>> sizesOn;
  /// Scratch kept from candidate to candidate so that building and
  /// improving one allocates nothing: the local search's devices by load
  /// and the busiest device's distinct experts, LPT's heap, makeReplicas'
  /// shares and order.
  std::vector<int64_t> byLoad, distinct, order;
  std::vector<std::pair<double, int64_t>> heap;
  std::vector<double> share;

  double maxLoad() const { return *std::max_element(load.begin(), load.end()); }
  bool full(int64_t d) const {
    return static_cast<int64_t>(onDevice[d].size()) >= slots;
  }
};

/// The replicas of a count vector, largest share first.
void makeReplicas(const std::vector<double> &w, const std::vector<int64_t> &count,
                  Flat &flat) {
  // Shares computed once, not in every comparison.
  std::vector<double> &share = flat.share;
  share.resize(w.size());
  for (size_t e = 0; e < w.size(); ++e)
    share[e] = w[e] / static_cast<double>(count[e]);
  std::vector<int64_t> &order = flat.order;
  order.resize(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return share[a] > share[b]; });
  flat.repExpert.clear();
  flat.repSize.clear();
  for (int64_t e : order)
    for (int64_t k = 0; k < count[e]; ++k) {
      flat.repExpert.push_back(e);
      flat.repSize.push_back(share[e]);
    }
}

void resetDevices(Flat &flat) {
  flat.repDevice.assign(flat.repExpert.size(), -1);
  // (Cleared, not reassigned: the lists keep their room from the last
  // candidate.)
  flat.onDevice.resize(flat.devices);
  for (auto &list : flat.onDevice) {
    list.clear();
    list.reserve(flat.slots);
  }
  flat.sizesOn.resize(flat.devices);
  for (auto &sizes : flat.sizesOn) {
    sizes.clear();
    sizes.reserve(flat.slots);
  }
  flat.load.assign(flat.devices, 0);
}

void put(Flat &flat, int64_t r, int64_t d) {
  flat.repDevice[r] = d;
  flat.onDevice[d].push_back(r);
  flat.load[d] += flat.repSize[r];
  // Into the device's ascending sizes.
  auto &sizes = flat.sizesOn[d];
  sizes.insert(std::upper_bound(sizes.begin(), sizes.end(), flat.repSize[r]),
               flat.repSize[r]);
}

void take(Flat &flat, int64_t r) {
  int64_t d = flat.repDevice[r];
  auto &list = flat.onDevice[d];
  *std::find(list.begin(), list.end(), r) = list.back();
  list.pop_back();
  flat.load[d] -= flat.repSize[r];
  flat.repDevice[r] = -1;
  auto &sizes = flat.sizesOn[d];
  sizes.erase(std::lower_bound(sizes.begin(), sizes.end(), flat.repSize[r]));
}

/// Largest replica first (makeReplicas' order) onto the least loaded device
/// with a free slot (a heap of the devices with room); false where the
/// replicas outnumber the slots.
bool lpt(Flat &flat) {
  resetDevices(flat);
  if (static_cast<int64_t>(flat.repExpert.size()) > flat.devices * flat.slots)
    return false;
  // A min-heap of (load, device) in a kept buffer.
  auto &heap = flat.heap;
  heap.clear();
  for (int64_t d = 0; d < flat.devices; ++d)
    heap.push_back({0.0, d});
  std::greater<std::pair<double, int64_t>> later;
  std::make_heap(heap.begin(), heap.end(), later);
  for (int64_t r = 0; r < static_cast<int64_t>(flat.repExpert.size()); ++r) {
    std::pop_heap(heap.begin(), heap.end(), later);
    int64_t d = heap.back().second;
    heap.pop_back();
    put(flat, r, d);
    if (!flat.full(d)) {
      heap.push_back({flat.load[d], d});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  return true;
}

/// Moves a replica off, or swaps one with, the busiest device while the
/// pair's larger load ends below the busiest's (the best such trade each
/// time; a move goes to the least loaded device with a free slot, the best
/// target for any replica). Each trade lowers the sorted loads
/// lexicographically; at most `limit` trades.
void localSearch(Flat &flat, double scale, int64_t limit) {
  int64_t D = flat.devices;
  // All devices by load (ties in index order, so every standard library
  // gives one plan). A trade changes two devices' loads only, so the order
  // is sorted once and those two are put back in place after each trade,
  // rather than sorting the devices again for every trade.
  auto lighter = [&](int64_t x, int64_t y) {
    return flat.load[x] != flat.load[y] ? flat.load[x] < flat.load[y] : x < y;
  };
  std::vector<int64_t> &byLoad = flat.byLoad;
  byLoad.resize(D);
  std::iota(byLoad.begin(), byLoad.end(), 0);
  std::sort(byLoad.begin(), byLoad.end(), lighter);
  std::vector<int64_t> &distinct = flat.distinct;
  for (int64_t iteration = 0; iteration < limit; ++iteration) {
    int64_t top = 0, light = -1;
    for (int64_t d = 1; d < D; ++d)
      if (flat.load[d] > flat.load[top])
        top = d;
    for (int64_t d = 0; d < D; ++d)
      if (d != top && !flat.full(d) && (light < 0 || flat.load[d] < flat.load[light]))
        light = d;
    double peak = flat.load[top], best = peak;
    int64_t moveR = -1, swapR = -1, target = -1;
    const auto &mine = flat.onDevice[top];
    if (light >= 0)
      for (int64_t r : mine) {
        double a = flat.repSize[r];
        double after = std::max(peak - a, flat.load[light] + a);
        if (clearlyBelow(after, best, scale)) {
          best = after;
          moveR = r;
          target = light;
        }
      }
    // Replicas of one expert are alike: the first on the busiest device
    // stands for them all (found once, not once a partner).
    distinct.clear();
    for (int64_t r : mine) {
      bool seen = false;
      for (int64_t s : distinct)
        seen = seen || flat.repExpert[s] == flat.repExpert[r];
      if (!seen)
        distinct.push_back(r);
    }
    // Swaps, the least loaded partners first: a swap of a for b with d
    // beats `best` only where peak - best < a - b < best - load[d], so the
    // scan stops at the first device with load[d] >= 2 best - peak.
    for (int64_t d : byLoad) {
      if (d == top)
        continue;
      if (!clearlyBelow(flat.load[d], 2 * best - peak, scale))
        break;
      const auto &theirs = flat.onDevice[d];
      if (theirs.empty())
        continue;
      // Few pairs win, so each replica a of the busiest device is first
      // tested against d's sizes, ascending: the busiest's side after a
      // swap, peak - a + b, grows with b and d's side, load[d] + a - b,
      // shrinks, so some b can win only where the largest b that keeps the
      // busiest's side below best keeps d's side below it too. (The same
      // sums as below, so rounding agrees: the test skips no winner, and
      // the pairs are still tried in their order, ties kept.)
      const std::vector<double> &sizes = flat.sizesOn[d];
      for (int64_t r : distinct) {
        double a = flat.repSize[r];
        size_t fit = 0;
        while (fit < sizes.size() && clearlyBelow(peak - a + sizes[fit], best, scale))
          ++fit;
        if (fit == 0 || !clearlyBelow(flat.load[d] + a - sizes[fit - 1], best, scale))
          continue;
        for (int64_t q : theirs) {
          double b = flat.repSize[q];
          if (!(b < a) || flat.repExpert[q] == flat.repExpert[r])
            continue;
          double after = std::max(peak - a + b, flat.load[d] + a - b);
          if (clearlyBelow(after, best, scale)) {
            best = after;
            moveR = r;
            swapR = q;
            target = d;
          }
        }
      }
    }
    if (moveR < 0)
      return;
    take(flat, moveR);
    if (swapR >= 0) {
      take(flat, swapR);
      put(flat, swapR, top);
    }
    put(flat, moveR, target);
    // The two devices whose loads changed, back into the order.
    byLoad.erase(std::remove_if(byLoad.begin(), byLoad.end(),
                                [&](int64_t d) { return d == top || d == target; }),
                 byLoad.end());
    for (int64_t d : {top, target})
      byLoad.insert(std::lower_bound(byLoad.begin(), byLoad.end(), d, lighter), d);
  }
}

/// The exact best split of the replicas of devices x and y between the two
/// (each within its slots), by a depth-first search over the replicas,
/// largest first, pruned by the best so far, at most `nodes` nodes;
/// applied where it lowers the pair's larger load. Whether it did.
bool resplit(Flat &flat, int64_t x, int64_t y, double scale, int64_t nodes) {
  std::vector<int64_t> items = flat.onDevice[x];
  items.insert(items.end(), flat.onDevice[y].begin(), flat.onDevice[y].end());
  std::sort(items.begin(), items.end(), [&](int64_t a, int64_t b) {
    return flat.repSize[a] != flat.repSize[b] ? flat.repSize[a] > flat.repSize[b]
                                              : a < b;
  });
  size_t m = items.size();
  std::vector<double> suffix(m + 1, 0);
  for (size_t i = m; i-- > 0;)
    suffix[i] = suffix[i + 1] + flat.repSize[items[i]];
  double current = std::max(flat.load[x], flat.load[y]);
  double best = current;
  std::vector<char> side(m, 0), bestSide;
  int64_t slots = flat.slots;
  // (A lambda that takes itself, not a std::function: the search calls it
  // once a node, and the indirect call and its copies showed in profiles.)
  auto visit = [&](auto &self, size_t i, double a, double b, int64_t na,
                   int64_t nb) -> void {
    if (--nodes < 0)
      return;
    double floor = std::max({a, b, (a + b + suffix[i]) / 2});
    if (!clearlyBelow(floor, best, scale))
      return;
    if (i == m) {
      best = std::max(a, b);
      bestSide = side;
      return;
    }
    double s = flat.repSize[items[i]];
    // Alike replicas in a row: a later one goes to side 1 only where
    // the one before it did (the order among them does not matter).
    bool alike = i > 0 && flat.repExpert[items[i]] == flat.repExpert[items[i - 1]];
    // The lighter side first.
    for (int pass = 0; pass < 2; ++pass) {
      int to = (a <= b) ? pass : 1 - pass;
      if (i == 0 && to == 1)
        continue; // symmetry: the first replica on side 0
      if (alike && to == 1 && side[i - 1] == 0)
        continue;
      if (to == 0 && na < slots) {
        side[i] = 0;
        self(self, i + 1, a + s, b, na + 1, nb);
      } else if (to == 1 && nb < slots) {
        side[i] = 1;
        self(self, i + 1, a, b + s, na, nb + 1);
      }
    }
  };
  visit(visit, 0, 0, 0, 0, 0);
  if (bestSide.empty() || !clearlyBelow(best, current, scale))
    return false;
  for (int64_t r : items)
    take(flat, r);
  for (size_t i = 0; i < m; ++i)
    put(flat, items[i], bestSide[i] ? y : x);
  return true;
}

/// The local search, then exact re-splits of the busiest device with the
/// `partners` least loaded others (local search again after each that
/// helps), bounded in rounds.
void improve(Flat &flat, double scale, int64_t searchLimit, int64_t partners,
             int64_t rounds, int64_t nodes) {
  localSearch(flat, scale, searchLimit);
  std::vector<int64_t> byLoad(flat.devices);
  for (int64_t round = 0; round < rounds; ++round) {
    int64_t top = std::max_element(flat.load.begin(), flat.load.end()) -
                  flat.load.begin();
    std::iota(byLoad.begin(), byLoad.end(), 0);
    int64_t k = std::min<int64_t>(partners + 1, flat.devices);
    std::partial_sort(byLoad.begin(), byLoad.begin() + k, byLoad.end(),
                      [&](int64_t a, int64_t b) {
                        return flat.load[a] != flat.load[b]
                                   ? flat.load[a] < flat.load[b]
                                   : a < b;
                      });
    bool helped = false;
    for (int64_t i = 0; i < k && !helped; ++i)
      if (byLoad[i] != top)
        helped = resplit(flat, top, byLoad[i], scale, nodes);
    if (!helped)
      return;
    localSearch(flat, scale, searchLimit);
  }
}

/// Device loads of bins (lists of experts; an expert's replicas share its
/// tokens evenly, colocated ones included).
std::vector<double> binLoads(const std::vector<double> &w,
                             const std::vector<std::vector<int64_t>> &bins,
                             std::vector<int64_t> &count) {
  count.assign(w.size(), 0);
  for (const auto &bin : bins)
    for (int64_t e : bin)
      ++count[e];
  std::vector<double> load(bins.size(), 0);
  for (size_t d = 0; d < bins.size(); ++d)
    for (int64_t e : bins[d])
      load[d] += w[e] / static_cast<double>(count[e]);
  return load;
}

/// The exact re-plan of a few devices (`subset`, two or three), the other
/// devices' contents fixed but every expert's replica count free: each
/// expert gets some number of replicas on the subset, spread over its
/// devices in every way (colocation included), at least one where it has
/// none elsewhere; the devices off the subset keep their replicas, whose
/// shares follow the new counts. A depth-first search, heaviest expert
/// first, pruned by the best maximum so far (at first the current one), by
/// the mean of what must land on the subset, by the next subset-only
/// expert's least share and by the devices off the subset (their loads with
/// every undecided expert at the most replicas it could still get, none
/// above the current maximum); devices
/// of the subset in the same state are interchangeable (counts
/// non-increasing); at most `nodes` nodes (shared among calls: decremented).
/// The search lowers the subset's maximum with no device off the subset
/// rising above the current maximum, so each step applied lowers the
/// maximum or the number of devices at it. Whether it found one.
bool replanSubset(const std::vector<double> &w,
                  std::vector<std::vector<int64_t>> &bins,
                  const std::vector<int64_t> &subset, int64_t slots,
                  double scale, int64_t &nodes) {
  int64_t n = static_cast<int64_t>(w.size());
  int64_t k = static_cast<int64_t>(subset.size());
  int64_t D = static_cast<int64_t>(bins.size());
  std::vector<int64_t> count;
  std::vector<double> load = binLoads(w, bins, count);
  std::vector<char> inS(D, 0);
  for (int64_t d : subset)
    inS[d] = 1;
  std::vector<int64_t> rout(n, 0);
  // Each expert's devices off the subset, with its replicas there.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> outside(n);
  std::vector<int64_t> outIndex(D, -1), outDevices;
  for (int64_t d = 0; d < D; ++d) {
    if (inS[d])
      continue;
    outIndex[d] = static_cast<int64_t>(outDevices.size());
    outDevices.push_back(d);
    for (int64_t e : bins[d]) {
      ++rout[e];
      auto &list = outside[e];
      if (list.empty() || list.back().first != outIndex[d])
        list.push_back({outIndex[d], 0});
      ++list.back().second;
    }
  }
  double current = *std::max_element(load.begin(), load.end());
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  if (!clearlyBelow(total / static_cast<double>(D), current, scale))
    return false;
  int64_t cap = k * slots;
  // Items: experts with tokens, and those without that only the subset
  // holds (they need a slot).
  std::vector<int64_t> items;
  for (int64_t e = 0; e < n; ++e)
    if (w[e] > 0 || rout[e] == 0)
      items.push_back(e);
  std::stable_sort(items.begin(), items.end(),
                   [&](int64_t a, int64_t b) { return w[a] > w[b]; });
  int64_t m = static_cast<int64_t>(items.size());
  std::vector<int64_t> need(m + 1, 0);
  std::vector<double> rest(m + 1, 0);
  for (int64_t i = m; i-- > 0;) {
    int64_t e = items[i];
    need[i] = need[i + 1] + (rout[e] == 0 ? 1 : 0);
    rest[i] = rest[i + 1] + (rout[e] == 0 ? w[e] : 0.0);
  }
  if (need[0] > cap)
    return false;
  // Off-subset loads, each undecided expert at its least share.
  std::vector<double> off(outDevices.size(), 0);
  auto leastShare = [&](int64_t e) {
    return w[e] / static_cast<double>(rout[e] + cap);
  };
  for (int64_t e = 0; e < n; ++e)
    for (auto [x, c] : outside[e])
      off[x] += c * (w[e] > 0 ? leastShare(e) : 0.0);
  double best = current;
  std::vector<double> lo(k, 0);
  std::vector<int64_t> used(k, 0), c(k, 0);
  std::vector<std::vector<int64_t>> cur(m, std::vector<int64_t>(k, 0)), bestAssign;
  // Per-depth copies of the subset's loads and the off-subset loads, so
  // that the search allocates nothing once started.
  std::vector<std::vector<double>> savedLo(m, std::vector<double>(k, 0)),
      savedOff(m, std::vector<double>(outDevices.size(), 0));
  bool stop = false;
  std::function<void(int64_t, double, double)> visit;
  std::function<void(int64_t, int64_t, int64_t, double, double)> choose =
      [&](int64_t i, int64_t j, int64_t r, double top, double placed) {
        if (stop)
          return;
        int64_t e = items[i];
        if (j == k) {
          if (--nodes < 0) {
            stop = true;
            return;
          }
          if (r == 0 && rout[e] == 0)
            return;
          int64_t free = 0;
          for (int64_t x = 0; x < k; ++x)
            free += slots - used[x] - c[x];
          if (free < need[i + 1])
            return;
          // Plain loops: no allocation, no memmove.
          std::vector<int64_t> &mine = cur[i];
          std::vector<double> &keptLo = savedLo[i];
          for (int64_t x = 0; x < k; ++x) {
            mine[x] = c[x];
            keptLo[x] = lo[x];
          }
          double share = w[e] / static_cast<double>(r + rout[e]);
          double newTop = top;
          for (int64_t x = 0; x < k; ++x) {
            lo[x] += mine[x] * share;
            used[x] += mine[x];
            newTop = std::max(newTop, lo[x]);
          }
          bool changedOff = w[e] > 0 && !outside[e].empty();
          bool over = false;
          std::vector<double> &keptOff = savedOff[i];
          if (changedOff) {
            for (auto [x, cnt] : outside[e])
              keptOff[x] = off[x];
            for (auto [x, cnt] : outside[e]) {
              off[x] += cnt * (share - leastShare(e));
              over = over || clearlyBelow(current, off[x], scale);
            }
          }
          if (!over && clearlyBelow(newTop, best, scale))
            visit(i + 1, newTop, placed + share * static_cast<double>(r));
          if (changedOff)
            for (auto [x, cnt] : outside[e])
              off[x] = keptOff[x];
          for (int64_t x = 0; x < k; ++x) {
            lo[x] = keptLo[x];
            used[x] -= mine[x];
            c[x] = mine[x];
          }
          return;
        }
        int64_t most = slots - used[j];
        if (w[e] <= 0)
          most = std::min<int64_t>(most, 1 - r);
        for (int64_t x = 0; x < j; ++x)
          if (used[x] == used[j] && lo[x] == lo[j])
            most = std::min(most, c[x]);
        for (int64_t x = most; x >= 0 && !stop; --x) {
          c[j] = x;
          choose(i, j + 1, r + x, top, placed);
        }
        c[j] = 0;
      };
  visit = [&](int64_t i, double top, double placed) {
    if (stop || --nodes < 0) {
      stop = true;
      return;
    }
    double floor = std::max(top, (placed + rest[i]) / static_cast<double>(k));
    if (i < m && rout[items[i]] == 0) {
      int64_t free = 0;
      for (int64_t x = 0; x < k; ++x)
        free += slots - used[x];
      int64_t spread = std::min(k, free - need[i + 1]);
      if (spread < 1)
        return;
      floor = std::max(floor, w[items[i]] / static_cast<double>(spread));
    }
    if (!clearlyBelow(floor, best, scale))
      return;
    if (i == m) {
      best = top;
      bestAssign = cur;
      // Below the largest load off the subset, lower helps little.
      double offTop = off.empty() ? 0 : *std::max_element(off.begin(), off.end());
      if (!clearlyBelow(std::max(offTop, total / static_cast<double>(D)), best, scale))
        stop = true;
      return;
    }
    choose(i, 0, 0, top, placed);
  };
  visit(0, 0, 0);
  if (bestAssign.empty())
    return false;
  for (int64_t d : subset)
    bins[d].clear();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t x = 0; x < k; ++x)
      for (int64_t t = 0; t < bestAssign[i][x]; ++t)
        bins[subset[x]].push_back(items[i]);
  return true;
}

/// Re-plans subsets of the busiest device with one or two others
/// (replanSubset), the least loaded partners first, while one helps, at
/// most `rounds` times and `nodes` search nodes in all.
void polishBins(const std::vector<double> &w,
                std::vector<std::vector<int64_t>> &bins, int64_t slots,
                double scale, int64_t rounds, int64_t &nodes, int64_t largest) {
  int64_t D = static_cast<int64_t>(bins.size());
  std::vector<int64_t> count;
  for (int64_t round = 0; round < rounds && nodes > 0; ++round) {
    std::vector<double> load = binLoads(w, bins, count);
    int64_t top = std::max_element(load.begin(), load.end()) - load.begin();
    std::vector<int64_t> others;
    for (int64_t d = 0; d < D; ++d)
      if (d != top)
        others.push_back(d);
    std::stable_sort(others.begin(), others.end(),
                     [&](int64_t a, int64_t b) { return load[a] < load[b]; });
    bool helped = false;
    for (int64_t size = 2; size <= std::min<int64_t>(largest, D) && !helped; ++size) {
      if (size == 2) {
        for (size_t a = 0; a < others.size() && !helped && nodes > 0; ++a)
          helped = replanSubset(w, bins, {top, others[a]}, slots, scale, nodes);
      } else {
        for (size_t a = 0; a < others.size() && !helped && nodes > 0; ++a)
          for (size_t b = a + 1; b < others.size() && !helped && nodes > 0; ++b)
            helped = replanSubset(w, bins, {top, others[a], others[b]}, slots,
                                  scale, nodes);
      }
    }
    if (!helped)
      return;
  }
}

/// The best flat assignment found of experts `w` on `devices` devices:
/// replica-count vectors from the greedy at the full budget and a few
/// below (every budget on small instances), the `seeds` (assignments given
/// as the expert of each device's replicas, such as EPLB's, taken as they
/// are and their counts placed afresh), split-fit against bisected
/// targets, and on small instances the count vectors one or two changes
/// away from the best; each through LPT (seeds as given) and `improve`.
/// It stops at the first best at the bound or at `enough` (a maximum the
/// caller has no use in going below). A negative `wholeSize` spends no
/// small-layer effort (PlacementOptions::exactSmallLayers). The device
/// contents as lists of local experts.
std::vector<std::vector<int64_t>>
planFlatCandidates(const std::vector<double> &w, int64_t devices, int64_t slots,
                   const std::vector<std::vector<std::vector<int64_t>>> &seeds,
                   int64_t wholeSize, double enough) {
  int64_t n = static_cast<int64_t>(w.size());
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  double scale = std::max(total, 1.0);
  bool small = wholeSize >= 0 && n * devices <= 64;
  int64_t budget = std::min(devices * slots, n * devices);
  std::vector<int64_t> increments = greedyIncrements(w, budget, devices);
  // The bound this flat set cannot beat, to stop early at it.
  std::vector<int64_t> count(n, 1);
  for (int64_t e : increments)
    ++count[e];
  double bound = total / static_cast<double>(devices);
  for (int64_t e = 0; e < n; ++e)
    bound = std::max(bound, w[e] / static_cast<double>(count[e]));
  // Effort by size: trades per local search, re-split partners and rounds,
  // nodes per re-split.
  int64_t slotsAll = devices * slots;
  int64_t searchLimit = small ? 1000 : devices / 2 + 8;
  int64_t partners = small ? devices : 1;
  int64_t rounds = small ? 16 : 2;
  int64_t nodes = small ? 20000 : 256;

  Flat flat;
  flat.devices = devices;
  flat.slots = slots;
  flat.experts = n;
  double bestLoad = kInfinity;
  int64_t bestReplicas = 0;
  std::vector<std::vector<int64_t>> best;
  std::vector<int64_t> bestCount;
  // A candidate replaces the best where it is lower, or as low with fewer
  // replicas (fewer weights to move). True once the best is at the bound
  // (or at `enough`, where a candidate is not polished either).
  // On the smallest layers (experts x devices of the whole layer, not just
  // this unit, <= 32) each candidate is also re-planned a few devices at a
  // time (polishBins), from a budget of search nodes shared by all.
  int64_t polishNodes =
      wholeSize >= 0 && wholeSize <= 32 && devices > 1 ? 200000 : 0;
  std::vector<std::vector<int64_t>> candidate(devices);
  for (auto &bin : candidate)
    bin.reserve(slots);
  std::vector<int64_t> binCount;
  auto consider = [&]() {
    improve(flat, scale, searchLimit, partners, rounds, nodes);
    double load = flat.maxLoad();
    bool polish = polishNodes > 0 && clearlyBelow(bound, load, scale) &&
                  !(load <= enough);
    // Unpolished, a candidate that cannot replace the best (its replicas
    // are all placed) is not copied out.
    int64_t placed = static_cast<int64_t>(flat.repExpert.size());
    if (!polish && !clearlyBelow(load, bestLoad, scale) &&
        !(!clearlyBelow(bestLoad, load, scale) && placed < bestReplicas))
      return !clearlyBelow(bound, bestLoad, scale) || bestLoad <= enough;
    candidate.resize(devices);
    for (int64_t d = 0; d < devices; ++d) {
      candidate[d].clear();
      for (int64_t r : flat.onDevice[d])
        candidate[d].push_back(flat.repExpert[r]);
    }
    if (polish) {
      int64_t budget = std::min<int64_t>(polishNodes, 10000), left = budget;
      polishBins(w, candidate, slots, scale, 2 * devices, left, 3);
      polishNodes -= budget - std::max<int64_t>(left, 0);
      std::vector<double> loads = binLoads(w, candidate, binCount);
      load = *std::max_element(loads.begin(), loads.end());
    }
    int64_t replicas = 0;
    for (const auto &bin : candidate)
      replicas += static_cast<int64_t>(bin.size());
    if (clearlyBelow(load, bestLoad, scale) ||
        (!clearlyBelow(bestLoad, load, scale) && replicas < bestReplicas)) {
      bestLoad = load;
      bestReplicas = replicas;
      best = candidate;
      bestCount.assign(n, 0);
      for (const auto &bin : candidate)
        for (int64_t e : bin)
          ++bestCount[e];
    }
    return !clearlyBelow(bound, bestLoad, scale) || bestLoad <= enough;
  };
  // A count vector cannot beat the best so far where its largest share
  // (over the devices it can reach) or the mean is already at it.
  auto hopeless = [&](const std::vector<int64_t> &counts) {
    double floor = total / static_cast<double>(devices);
    for (int64_t e = 0; e < n; ++e)
      floor = std::max(floor, w[e] / static_cast<double>(
                                         std::min(counts[e], devices)));
    return !clearlyBelow(floor, bestLoad, scale);
  };
  // A count vector tried before gives the same candidate again (LPT and
  // the improvement are deterministic), which cannot replace the best; the
  // seed's counts and the greedy's often agree. (Skipped only where no
  // polishing shares its budget among the candidates.)
  std::set<std::vector<int64_t>> tried;
  auto tryCounts = [&](const std::vector<int64_t> &counts) {
    if (hopeless(counts))
      return false;
    if (polishNodes == 0 && !tried.insert(counts).second)
      return false;
    makeReplicas(w, counts, flat);
    return lpt(flat) && consider();
  };
  // Seeds first: where one is at the bound already, nothing else is tried.
  for (const auto &seed : seeds) {
    std::vector<int64_t> seedCount(n, 0);
    bool valid = static_cast<int64_t>(seed.size()) == devices;
    for (size_t d = 0; valid && d < seed.size(); ++d) {
      valid = static_cast<int64_t>(seed[d].size()) <= slots;
      for (int64_t e : seed[d])
        ++seedCount[e];
    }
    for (int64_t e = 0; valid && e < n; ++e)
      valid = seedCount[e] >= 1;
    if (!valid)
      continue;
    makeReplicas(w, seedCount, flat);
    resetDevices(flat);
    // Each expert's replicas (consecutive in makeReplicas' order), handed
    // out in the seed's order.
    std::vector<int64_t> next(n, -1);
    for (int64_t r = static_cast<int64_t>(flat.repExpert.size()); r-- > 0;)
      next[flat.repExpert[r]] = r;
    for (int64_t d = 0; d < devices; ++d)
      for (int64_t e : seed[d])
        put(flat, next[e]++, d);
    if (consider())
      return best;
    if (tryCounts(seedCount))
      return best;
  }
  // Budgets from the full one down: all on small instances, two on large
  // ones.
  int64_t steps = static_cast<int64_t>(increments.size());
  int64_t tries = small ? steps + 1 : std::min<int64_t>(steps + 1, 2);
  for (int64_t k = 0; k < tries; ++k) {
    std::fill(count.begin(), count.end(), 1);
    for (int64_t i = 0; i < steps - k; ++i)
      ++count[increments[i]];
    if (tryCounts(count))
      return best;
  }
  // Split-fit against a target L: experts heaviest first, each split into
  // the fewest replicas r (from ceil(w_e / L)) whose shares w_e / r fit
  // into the r devices of most room (with a free slot), keeping a slot for
  // every expert still to come. It finds counts off the greedy's path
  // where one heavy expert is best left whole on a device of its own and a
  // lighter one is split to fill the gaps beside another's replicas. The
  // target is bisected between the bound and the best load so far (fits
  // are kept, each through the improvement).
  std::vector<int64_t> byWeight(n);
  std::iota(byWeight.begin(), byWeight.end(), 0);
  std::stable_sort(byWeight.begin(), byWeight.end(),
                   [&](int64_t a, int64_t b) { return w[a] > w[b]; });
  std::vector<int64_t> rooms(devices);
  std::vector<double> room(devices);
  std::vector<int64_t> freeSlots(devices);
  std::vector<std::vector<int64_t>> bins(devices);
  for (auto &bin : bins)
    bin.reserve(slots);
  auto splitFit = [&](double target) {
    std::fill(room.begin(), room.end(), target);
    std::fill(freeSlots.begin(), freeSlots.end(), slots);
    for (auto &bin : bins)
      bin.clear();
    // Devices by room, most first, those with a free slot ahead; kept
    // sorted by re-inserting the few devices each expert changes.
    std::iota(rooms.begin(), rooms.end(), 0);
    auto ahead = [&](int64_t a, int64_t b) {
      bool fa = freeSlots[a] > 0, fb = freeSlots[b] > 0;
      if (fa != fb)
        return fa;
      return room[a] != room[b] ? room[a] > room[b] : a < b;
    };
    int64_t slotsLeft = slotsAll;
    for (int64_t k = 0; k < n; ++k) {
      int64_t e = byWeight[k];
      int64_t later = n - k - 1;
      int64_t r = std::max<int64_t>(
          1, static_cast<int64_t>(std::ceil(w[e] / target - 1e-12)));
      bool placed = false;
      for (; r <= devices && r <= slotsLeft - later; ++r) {
        double share = w[e] / static_cast<double>(r);
        int64_t d = rooms[r - 1];
        if (freeSlots[d] > 0 && room[d] >= share - 1e-12 * scale) {
          for (int64_t i = 0; i < r; ++i) {
            room[rooms[i]] -= share;
            --freeSlots[rooms[i]];
            bins[rooms[i]].push_back(e);
          }
          slotsLeft -= r;
          // The first r changed (most often one); each, from the last,
          // moves back to its place among those after it (the order is a
          // total one, so this is the order a full sort gives).
          for (int64_t i = r; i-- > 0;) {
            auto from = rooms.begin() + i;
            auto to = std::upper_bound(from + 1, rooms.end(), *from, ahead);
            std::rotate(from, from + 1, to);
          }
          placed = true;
          break;
        }
      }
      if (!placed)
        return false;
    }
    std::vector<int64_t> counts(n, 0);
    for (const auto &bin : bins)
      for (int64_t e : bin)
        ++counts[e];
    makeReplicas(w, counts, flat);
    resetDevices(flat);
    std::vector<int64_t> next(n, -1);
    for (int64_t r = static_cast<int64_t>(flat.repExpert.size()); r-- > 0;)
      next[flat.repExpert[r]] = r;
    for (int64_t d = 0; d < devices; ++d)
      for (int64_t e : bins[d])
        put(flat, next[e]++, d);
    return true;
  };
  {
    double low = bound, high = bestLoad;
    for (int step = 0; step < (small ? 30 : 3) && clearlyBelow(low, high, scale);
         ++step) {
      double mid = step == 0 ? low : (low + high) / 2;
      if (splitFit(mid)) {
        if (consider())
          return best;
        high = std::min(mid, bestLoad);
      } else {
        low = mid;
      }
    }
  }
  // On small instances, the count vectors around the best one: one or two
  // changes of a replica more for one expert, one fewer for another, or one
  // passed between them, re-placed each time; the first vector that lowers
  // the load is taken, until none does (or the tries run out). The
  // greedy's counts minimise the largest share, not the packed maximum,
  // which counts off the greedy's path often lower.
  if (!small || bestCount.empty())
    return best;
  int64_t limit = 20000;
  auto change = [&](std::vector<int64_t> &counts, int64_t a, int64_t b) {
    if (a == b)
      return false;
    if (a >= 0 && counts[a] <= 1)
      return false;
    int64_t used = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    if (used - (a >= 0) + (b >= 0) > slotsAll)
      return false;
    if (a >= 0)
      --counts[a];
    if (b >= 0)
      ++counts[b];
    return true;
  };
  auto pass = [&](int depth, bool &done) {
    std::vector<int64_t> base = bestCount;
    double before = bestLoad;
    for (int64_t a = -1; a < n && limit > 0; ++a)
      for (int64_t b = -1; b < n && limit > 0; ++b) {
        std::vector<int64_t> once = base;
        if (!change(once, a, b))
          continue;
        if (depth == 1) {
          --limit;
          if ((done = tryCounts(once)) || clearlyBelow(bestLoad, before, scale))
            return true;
          continue;
        }
        for (int64_t c = a; c < n && limit > 0; ++c)
          for (int64_t d = -1; d < n && limit > 0; ++d) {
            std::vector<int64_t> twice = once;
            if (!change(twice, c, d))
              continue;
            --limit;
            if ((done = tryCounts(twice)) || clearlyBelow(bestLoad, before, scale))
              return true;
          }
      }
    return false;
  };
  bool done = false;
  while (limit > 0 && !done)
    if (!pass(1, done) && (done || !pass(2, done)))
      break;
  return best;
}

/// planFlatCandidates' best (stopping at `enough`), then on small layers
/// (`wholeSize`: experts x devices of the whole layer <= 64) re-planned
/// exactly a few devices at a time (polishBins: the busiest with one or two
/// others).
std::vector<std::vector<int64_t>>
planFlat(const std::vector<double> &w, int64_t devices, int64_t slots,
         const std::vector<std::vector<std::vector<int64_t>>> &seeds,
         int64_t wholeSize, double enough) {
  std::vector<std::vector<int64_t>> bins =
      planFlatCandidates(w, devices, slots, seeds, wholeSize, enough);
  if (wholeSize >= 0 && wholeSize <= 64 && devices > 1) {
    double scale = std::max(1.0, std::accumulate(w.begin(), w.end(), 0.0));
    int64_t nodes = wholeSize <= 32 ? 200000 : 50000;
    polishBins(w, bins, slots, scale, 4 * devices, nodes, 3);
  }
  return bins;
}

/// McNaughton's wrap-around for uneven splits: the experts' tokens laid end
/// to end and cut into `devices` pieces of total / devices each; the
/// experts a piece touches become replicas on its device, with the tokens
/// of the overlap. Only the experts cut at a piece's end have two or more
/// replicas, so there are at most experts + devices - 1. The order is
/// chosen piece by piece so that no piece touches more experts than a
/// device has slots: within a piece, the expert run over from the piece
/// before (the filler) comes last, after the lightest experts left that fit
/// whole, as many as leave the filler able to close the piece (or a slot
/// for a new filler); the heaviest expert left becomes the next filler.
/// Experts with no tokens take any free slot. False where some piece would
/// need more slots than a device has (map and slot tokens left unset).
bool wrapInOrder(const std::vector<double> &w, const std::vector<int64_t> &order,
                 int64_t devices, int64_t slots, std::vector<int64_t> &m,
                 std::vector<double> &tokens, std::vector<int64_t> &used);

bool fillDevices(const std::vector<double> &w, int64_t devices, int64_t slots,
                 std::vector<int64_t> &m, std::vector<double> &tokens,
                 std::vector<int64_t> &used);

bool wrapAround(const std::vector<double> &w, int64_t devices, int64_t slots,
                std::vector<int64_t> &map, std::vector<double> &slotTokens) {
  int64_t n = static_cast<int64_t>(w.size());
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  double tolerance = 1e-12 * std::max(total, 1.0);
  std::vector<int64_t> positive, zero;
  for (int64_t e = 0; e < n; ++e)
    (w[e] > 0 ? positive : zero).push_back(e);
  std::stable_sort(positive.begin(), positive.end(),
                   [&](int64_t a, int64_t b) { return w[a] < w[b]; });
  std::vector<int64_t> m(devices * slots, -1);
  std::vector<double> tokens(devices * slots, 0);
  std::vector<int64_t> used(devices, 0);
  auto greedy = [&](bool spread) {
    std::fill(m.begin(), m.end(), -1);
    std::fill(tokens.begin(), tokens.end(), 0.0);
    std::fill(used.begin(), used.end(), 0);
  size_t lo = 0, hi = positive.size(); // positive[lo, hi) are left
    int64_t carry = -1;                   // the filler
    double carryLeft = 0, done = 0;
    for (int64_t d = 0; d < devices; ++d) {
      bool last = d + 1 == devices;
      double end = last ? total
                        : total * static_cast<double>(d + 1) /
                              static_cast<double>(devices);
      double room = end - done;
      auto add = [&](int64_t e, double amount) {
        m[d * slots + used[d]] = e;
        tokens[d * slots + used[d]] = amount;
        ++used[d];
        done += amount;
        room -= amount;
      };
      // Spread: the light experts shared out evenly over the pieces left.
      size_t quota = (hi - lo + devices - d - 1) / (devices - d), taken = 0;
      while (carry >= 0 || lo < hi) {
        if (!last && room <= tolerance)
          break;
        int64_t free = slots - used[d] - (carry >= 0 ? 1 : 0);
        bool fits = lo < hi && w[positive[lo]] <= room + tolerance &&
                    (!spread || taken < quota);
        if (carry >= 0) {
          // A light expert first where the filler (or a new one, in the slot
          // left after) can still close the piece.
          if (fits && (free >= 2 || (free == 1 && (last || room - w[positive[lo]] <=
                                                                carryLeft + tolerance)))) {
            int64_t e = positive[lo++];
            add(e, w[e]);
            ++taken;
            continue;
          }
          if (free < 0)
            return false;
          double amount = last ? carryLeft : std::min(carryLeft, room);
          if (carryLeft - amount <= tolerance)
            amount = carryLeft;
          add(carry, amount);
          carryLeft -= amount;
          if (carryLeft <= 0)
            carry = -1;
          continue;
        }
        if (free <= 0)
          return false;
        if (fits && free >= 2 && hi - lo >= 2 &&
            (free > 2 || room - w[positive[lo]] <= w[positive[hi - 1]] + tolerance)) {
          int64_t e = positive[lo++];
          add(e, w[e]);
          ++taken;
          continue;
        }
        carry = positive[--hi];
        carryLeft = w[carry];
      }
    }
    return carry < 0 && lo >= hi;
  };
  if (!greedy(false) && !greedy(true)) {
    // Device by device, whole experts and one filler each, keeping the
    // pieces countable (fillDevices); then the plain wrap-around in two
    // orders: heaviest first, and heaviest and lightest in turn.
    bool found = fillDevices(w, devices, slots, m, tokens, used);
    std::vector<int64_t> order(positive.rbegin(), positive.rend());
    if (!found)
      found = wrapInOrder(w, order, devices, slots, m, tokens, used);
    if (!found) {
      order.clear();
      for (size_t i = 0, j = positive.size(); i < j;) {
        order.push_back(positive[--j]);
        if (i < j)
          order.push_back(positive[i++]);
      }
      found = wrapInOrder(w, order, devices, slots, m, tokens, used);
    }
    if (!found)
      return false;
  }
  // The rounding left over goes to the expert's largest part, as in the
  // water-filling.
  std::vector<double> sum(n, 0);
  std::vector<int64_t> largest(n, -1);
  for (size_t p = 0; p < m.size(); ++p)
    if (m[p] >= 0) {
      sum[m[p]] += tokens[p];
      if (largest[m[p]] < 0 || tokens[p] > tokens[largest[m[p]]])
        largest[m[p]] = static_cast<int64_t>(p);
    }
  for (int64_t e : positive)
    tokens[largest[e]] += w[e] - sum[e];
  std::vector<char> placed(n, 0);
  for (int64_t e : m)
    if (e >= 0)
      placed[e] = 1;
  for (int64_t e : zero) {
    if (placed[e])
      continue; // fillDevices places those without tokens too
    int64_t best = -1;
    for (int64_t d = 0; d < devices; ++d)
      if (used[d] < slots && (best < 0 || used[d] < used[best]))
        best = d;
    if (best < 0)
      return false;
    m[best * slots + used[best]++] = e;
  }
  map = std::move(m);
  slotTokens = std::move(tokens);
  return true;
}

/// The plain wrap-around in a given order of the experts with tokens: the
/// sequence cut at each multiple of total / devices, the cut expert's rest
/// first on the next device; false where a piece touches more than `slots`.
bool wrapInOrder(const std::vector<double> &w, const std::vector<int64_t> &order,
                 int64_t devices, int64_t slots, std::vector<int64_t> &m,
                 std::vector<double> &tokens, std::vector<int64_t> &used) {
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  double tolerance = 1e-12 * std::max(total, 1.0);
  m.assign(devices * slots, -1);
  tokens.assign(devices * slots, 0);
  used.assign(devices, 0);
  int64_t d = 0;
  double done = 0;
  auto endOf = [&](int64_t k) {
    return k + 1 == devices ? total
                            : total * static_cast<double>(k + 1) /
                                  static_cast<double>(devices);
  };
  for (int64_t e : order) {
    double left = w[e];
    while (left > 0) {
      if (d >= devices)
        return false;
      double room = endOf(d) - done;
      double amount = d + 1 == devices || left <= room + tolerance ? left : room;
      if (amount > 0) {
        if (used[d] >= slots)
          return false;
        m[d * slots + used[d]] = e;
        tokens[d * slots + used[d]] = amount;
        ++used[d];
        done += amount;
        left -= amount;
      }
      if (left > 0 || endOf(d) - done <= tolerance)
        ++d;
      if (left <= tolerance)
        left = 0;
    }
  }
  return true;
}

/// Uneven splits device by device. With e experts (tokens left, those
/// without tokens included) on d devices left, the pieces of a forest
/// number at most e + d - 1, so a device takes at least
/// p = e + d - 1 - (d - 1) x slots of them (and at most `slots`) for the
/// rest to keep room for theirs. Each device (its share: the cumulative
/// mean at its end less what is placed) takes a set J of experts whole,
/// lo - 1 <= |J| <= slots - 1, plus a piece of the heaviest expert left
/// (the filler, which keeps the rest), or J alone where J closes the share:
/// J starts as the lightest p - 1, then grows by the largest expert that
/// keeps it within the share, then trades its lightest for the largest such
/// one, until the filler can close the share. The last device takes all
/// that is left. False where a step finds no such J (map unset).
bool fillDevices(const std::vector<double> &w, int64_t devices, int64_t slots,
                 std::vector<int64_t> &m, std::vector<double> &tokens,
                 std::vector<int64_t> &used) {
  int64_t n = static_cast<int64_t>(w.size());
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  double tolerance = 1e-12 * std::max(total, 1.0);
  m.assign(devices * slots, -1);
  tokens.assign(devices * slots, 0);
  used.assign(devices, 0);
  std::vector<double> rest(w);
  std::vector<int64_t> alive(n);
  std::iota(alive.begin(), alive.end(), 0);
  std::vector<char> inJ(n, 0);
  double done = 0;
  auto add = [&](int64_t d, int64_t e, double amount) {
    m[d * slots + used[d]] = e;
    tokens[d * slots + used[d]] = amount;
    ++used[d];
    done += amount;
  };
  for (int64_t d = 0; d < devices; ++d) {
    int64_t left = devices - d, e = static_cast<int64_t>(alive.size());
    if (left == 1) {
      if (e > slots)
        return false;
      for (int64_t x : alive)
        add(d, x, rest[x]);
      return true;
    }
    double room = total * static_cast<double>(d + 1) / static_cast<double>(devices) - done;
    int64_t least = std::max<int64_t>(1, e + left - 1 - (left - 1) * slots);
    if (least > slots || e == 0)
      return false;
    // Lightest first; the heaviest is the filler.
    std::stable_sort(alive.begin(), alive.end(),
                     [&](int64_t a, int64_t b) { return rest[a] < rest[b]; });
    int64_t filler = alive.back();
    std::vector<int64_t> light(alive.begin(), alive.end() - 1);
    std::vector<int64_t> J;
    double sum = 0;
    for (int64_t i = 0; i + 1 < least && i < static_cast<int64_t>(light.size()); ++i) {
      J.push_back(light[i]);
      inJ[light[i]] = 1;
      sum += rest[light[i]];
    }
    if (static_cast<int64_t>(J.size()) + 1 < least || sum > room + tolerance) {
      for (int64_t x : J)
        inJ[x] = 0;
      return false;
    }
    // The largest expert outside J that keeps J within the share, above
    // `over` (where given).
    auto largestFitting = [&](double budget, double over) {
      int64_t pick = -1;
      for (int64_t i = static_cast<int64_t>(light.size()); i-- > 0;) {
        int64_t x = light[i];
        if (!inJ[x] && rest[x] <= budget + tolerance && rest[x] > over) {
          pick = x;
          break;
        }
      }
      return pick;
    };
    bool closes = false;
    for (int64_t guard = 0; guard < 4 * n + 4; ++guard) {
      if (sum + rest[filler] >= room - tolerance) {
        closes = true;
        break;
      }
      if (static_cast<int64_t>(J.size()) < slots - 1) {
        int64_t x = largestFitting(room - sum, -1);
        if (x >= 0) {
          J.push_back(x);
          inJ[x] = 1;
          sum += rest[x];
          continue;
        }
      }
      // Trade J's lightest for the largest heavier one that fits.
      if (J.empty())
        break;
      size_t low = 0;
      for (size_t i = 1; i < J.size(); ++i)
        if (rest[J[i]] < rest[J[low]])
          low = i;
      int64_t x = largestFitting(room - sum + rest[J[low]], rest[J[low]]);
      if (x < 0)
        break;
      inJ[J[low]] = 0;
      sum += rest[x] - rest[J[low]];
      J[low] = x;
      inJ[x] = 1;
    }
    for (int64_t x : J)
      inJ[x] = 0;
    if (!closes)
      return false;
    for (int64_t x : J) {
      add(d, x, rest[x]);
      rest[x] = 0;
    }
    double piece = room - sum;
    std::vector<int64_t> gone(J);
    if (piece > tolerance) {
      if (static_cast<int64_t>(J.size()) + 1 > slots)
        return false;
      if (rest[filler] - piece <= tolerance)
        piece = rest[filler];
      add(d, filler, piece);
      rest[filler] -= piece;
      if (rest[filler] <= tolerance)
        gone.push_back(filler);
    } else if (static_cast<int64_t>(J.size()) < least) {
      return false;
    }
    for (int64_t x : gone)
      alive.erase(std::find(alive.begin(), alive.end(), x));
  }
  return alive.empty();
}

/// From the previous placement (even splits), the trades that pay for their
/// bytes: a replica moved off the busiest device to one with a free slot,
/// swapped with a replica of another expert, a new replica of one of the
/// busiest device's experts added on a device with a free slot, or one of
/// its replicas left unused (the expert's others share its tokens); each time
/// the trade that lowers most the modelled seconds of the devices it
/// touches (the larger load's seconds plus the weights fetched, staying put
/// costing nothing, a fetch within the node less than across), while one
/// does; the map with the least modelled time over the whole cluster seen
/// on the way. An expert the previous placement lacks goes first to the
/// least loaded device with a free slot. Empty where that is impossible.
std::vector<int64_t> fromPrevious(const Cluster &cluster, const LayerInput &layer) {
  const Topology &t = cluster.topology;
  const CostParams &c = cluster.cost;
  const std::vector<double> &w = layer.tokens;
  int64_t E = static_cast<int64_t>(w.size()), D = t.devices;
  int64_t slots = t.slotsPerDevice, perNode = t.devicesPerNode();
  std::vector<char> held(D * E, 0), nodeHeld(t.nodes * E, 0);
  std::vector<int64_t> cnt(D * E, 0), r(E, 0), used(D, 0);
  // Each device's experts (those with cnt > 0), ascending: the trades scan
  // these rather than every expert of every device.
  std::vector<std::vector<int64_t>> heldOn(D);
  auto gain = [&](int64_t d, int64_t e) {
    if (cnt[d * E + e]++ == 0) {
      auto &list = heldOn[d];
      list.insert(std::lower_bound(list.begin(), list.end(), e), e);
    }
  };
  auto lose = [&](int64_t d, int64_t e) {
    if (--cnt[d * E + e] == 0) {
      auto &list = heldOn[d];
      list.erase(std::lower_bound(list.begin(), list.end(), e));
    }
  };
  for (const Holding &h : layer.previous) {
    held[h.device * E + h.expert] = 1;
    nodeHeld[(h.device / perNode) * E + h.expert] = 1;
    gain(h.device, h.expert);
    ++r[h.expert];
    ++used[h.device];
  }
  auto fetch = [&](int64_t e, int64_t d) {
    if (held[d * E + e])
      return 0.0;
    return c.expertBytes / (nodeHeld[(d / perNode) * E + e] ? c.intraNodeBandwidth
                                                           : c.interNodeBandwidth);
  };
  std::vector<double> load(D, 0);
  auto share = [&](int64_t e) { return w[e] / static_cast<double>(r[e]); };
  for (int64_t d = 0; d < D; ++d)
    for (int64_t e = 0; e < E; ++e)
      if (cnt[d * E + e])
        load[d] += cnt[d * E + e] * share(e);
  for (int64_t e = 0; e < E; ++e) {
    if (r[e] > 0)
      continue;
    int64_t best = -1;
    for (int64_t d = 0; d < D; ++d)
      if (used[d] < slots && (best < 0 || load[d] < load[best]))
        best = d;
    if (best < 0)
      return {};
    gain(best, e);
    ++r[e];
    ++used[best];
    load[best] += w[e];
  }
  double moveSeconds = 0;
  for (int64_t d = 0; d < D; ++d)
    for (int64_t e = 0; e < E; ++e)
      if (cnt[d * E + e])
        moveSeconds += fetch(e, d);
  double spt = c.secondsPerToken;
  auto objective = [&]() {
    return *std::max_element(load.begin(), load.end()) * spt + moveSeconds;
  };
  auto mapOf = [&]() {
    // Replicas keep their previous slots where they can.
    std::vector<int64_t> map(t.slots(), -1), left = cnt;
    std::vector<int64_t> filled(D, 0);
    for (const Holding &h : layer.previous) {
      int64_t k = filled[h.device]++;
      if (left[h.device * E + h.expert] > 0) {
        map[h.device * slots + k] = h.expert;
        --left[h.device * E + h.expert];
      }
    }
    for (int64_t d = 0; d < D; ++d) {
      int64_t k = 0;
      for (int64_t e = 0; e < E; ++e)
        for (; left[d * E + e] > 0; --left[d * E + e]) {
          while (map[d * slots + k] >= 0)
            ++k;
          map[d * slots + k] = e;
        }
    }
    return map;
  };
  double scale = std::max(objective(), 1e-300);
  double bestSeconds = objective();
  // The trades made, so that the best state seen is rebuilt once at the
  // end (by undoing the trades after it) rather than a map built at every
  // improvement.
  struct Trade {
    int kind;
    int64_t e, f, d, top;
  };
  std::vector<Trade> trades;
  size_t bestTrades = 0;
  int64_t limit = 4 * (D + E);
  for (int64_t iteration = 0; iteration < limit; ++iteration) {
    int64_t top = std::max_element(load.begin(), load.end()) - load.begin();
    double peak = load[top];
    double bestScore = peak * spt; // the pair's seconds before a trade
    int kind = -1; // 0 move, 1 swap, 2 replicate, 3 drop
    int64_t bestE = -1, bestF = -1, bestD = -1;
    const std::vector<int64_t> &mine = heldOn[top];
    for (int64_t e : mine) {
      double a = share(e);
      double leave = cnt[top * E + e] == 1 ? -fetch(e, top) : 0.0;
      if (r[e] > 1) {
        // Drop: the busiest device's replica goes unused, the expert's
        // other replicas share its tokens (no bytes move).
        double grow = w[e] / static_cast<double>(r[e] - 1) - a;
        double worst = peak - a + (cnt[top * E + e] - 1) * grow;
        for (int64_t d = 0; d < D; ++d)
          if (d != top && cnt[d * E + e])
            worst = std::max(worst, load[d] + cnt[d * E + e] * grow);
        double score = worst * spt + leave;
        if (clearlyBelow(score, bestScore, scale)) {
          bestScore = score;
          kind = 3;
          bestE = e;
        }
      }
      for (int64_t d = 0; d < D; ++d) {
        if (d == top || !(load[d] < peak))
          continue;
        double arrive = cnt[d * E + e] == 0 ? fetch(e, d) : 0.0;
        if (used[d] < slots) {
          double score = std::max(peak - a, load[d] + a) * spt + leave + arrive;
          if (clearlyBelow(score, bestScore, scale)) {
            bestScore = score;
            kind = 0;
            bestE = e;
            bestD = d;
          }
          // Replicate: every holder of e sheds, d takes a share.
          double after = w[e] / static_cast<double>(r[e] + 1);
          double worst = std::max(peak - cnt[top * E + e] * (a - after),
                                  load[d] + after);
          score = worst * spt + arrive;
          if (clearlyBelow(score, bestScore, scale)) {
            bestScore = score;
            kind = 2;
            bestE = e;
            bestD = d;
          }
        }
        for (int64_t f : heldOn[d]) {
          if (f == e)
            continue;
          double b = share(f);
          if (!(b < a))
            continue;
          double cost = leave + arrive +
                        (cnt[d * E + f] == 1 ? -fetch(f, d) : 0.0) +
                        (cnt[top * E + f] == 0 ? fetch(f, top) : 0.0);
          double score = std::max(peak - a + b, load[d] + a - b) * spt + cost;
          if (clearlyBelow(score, bestScore, scale)) {
            bestScore = score;
            kind = 1;
            bestE = e;
            bestF = f;
            bestD = d;
          }
        }
      }
    }
    if (kind < 0)
      break;
    trades.push_back({kind, bestE, bestF, bestD, top});
    auto shift = [&](int64_t e, int64_t from, int64_t to) {
      if (cnt[from * E + e] == 1)
        moveSeconds -= fetch(e, from);
      if (cnt[to * E + e] == 0)
        moveSeconds += fetch(e, to);
      lose(from, e);
      gain(to, e);
      load[from] -= share(e);
      load[to] += share(e);
      --used[from];
      ++used[to];
    };
    if (kind == 0) {
      shift(bestE, top, bestD);
    } else if (kind == 1) {
      shift(bestE, top, bestD);
      shift(bestF, bestD, top);
    } else if (kind == 3) {
      double before = share(bestE);
      if (cnt[top * E + bestE] == 1)
        moveSeconds -= fetch(bestE, top);
      lose(top, bestE);
      --used[top];
      load[top] -= before;
      --r[bestE];
      double after = share(bestE);
      for (int64_t d = 0; d < D; ++d)
        if (cnt[d * E + bestE])
          load[d] += cnt[d * E + bestE] * (after - before);
    } else {
      double before = share(bestE);
      ++r[bestE];
      double after = share(bestE);
      for (int64_t d = 0; d < D; ++d)
        if (cnt[d * E + bestE])
          load[d] += cnt[d * E + bestE] * (after - before);
      if (cnt[bestD * E + bestE] == 0)
        moveSeconds += fetch(bestE, bestD);
      gain(bestD, bestE);
      ++used[bestD];
      load[bestD] += after;
    }
    double now = objective();
    if (clearlyBelow(now, bestSeconds, scale)) {
      bestSeconds = now;
      bestTrades = trades.size();
    }
  }
  // Back to the best state: the later trades undone, last first (only the
  // counts matter to the map).
  for (size_t i = trades.size(); i-- > bestTrades;) {
    const Trade &x = trades[i];
    if (x.kind == 0 || x.kind == 1) {
      ++cnt[x.top * E + x.e];
      --cnt[x.d * E + x.e];
    }
    if (x.kind == 1) {
      ++cnt[x.d * E + x.f];
      --cnt[x.top * E + x.f];
    }
    if (x.kind == 3)
      ++cnt[x.top * E + x.e];
    if (x.kind == 2)
      --cnt[x.d * E + x.e];
  }
  return mapOf();
}

/// Matches bins (lists of experts) to targets by the greedy on the largest
/// score first: bin b to target t earns score[b][t].
std::vector<int64_t> matchBins(const std::vector<std::vector<double>> &score) {
  size_t n = score.size();
  std::vector<std::pair<double, std::pair<size_t, size_t>>> pairs;
  for (size_t b = 0; b < n; ++b)
    for (size_t t = 0; t < n; ++t)
      if (score[b][t] > 0)
        pairs.push_back({score[b][t], {b, t}});
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto &x, const auto &y) {
    return x.first > y.first;
  });
  std::vector<int64_t> target(n, -1);
  std::vector<char> taken(n, 0);
  for (const auto &pair : pairs) {
    auto [b, t] = pair.second;
    if (target[b] >= 0 || taken[t])
      continue;
    target[b] = static_cast<int64_t>(t);
    taken[t] = 1;
  }
  size_t free = 0;
  for (size_t b = 0; b < n; ++b) {
    if (target[b] >= 0)
      continue;
    while (taken[free])
      ++free;
    target[b] = static_cast<int64_t>(free);
    taken[free] = 1;
  }
  return target;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public entry points.
//===----------------------------------------------------------------------===//

std::vector<Holding> loom::moe::holdingsOf(const std::vector<int64_t> &map,
                                           int64_t slotsPerDevice) {
  std::vector<Holding> holdings;
  if (slotsPerDevice < 1)
    return holdings;
  for (size_t p = 0; p < map.size(); ++p)
    if (map[p] >= 0)
      holdings.push_back({map[p], static_cast<int64_t>(p) / slotsPerDevice});
  return holdings;
}

std::vector<Holding>
loom::moe::residentAfter(const std::vector<Holding> &previous,
                         const std::vector<int64_t> &map,
                         int64_t slotsPerDevice) {
  std::vector<Holding> placed = holdingsOf(map, slotsPerDevice);
  if (slotsPerDevice < 1)
    return placed;
  int64_t devices = static_cast<int64_t>(map.size()) / slotsPerDevice;
  std::vector<std::vector<int64_t>> held(static_cast<size_t>(devices));
  for (const Holding &h : placed)
    held[h.device].push_back(h.expert);
  for (const Holding &h : previous) {
    if (h.device < 0 || h.device >= devices)
      continue;
    std::vector<int64_t> &on = held[h.device];
    if (static_cast<int64_t>(on.size()) < slotsPerDevice &&
        std::find(on.begin(), on.end(), h.expert) == on.end())
      on.push_back(h.expert);
  }
  std::vector<Holding> resident;
  for (int64_t d = 0; d < devices; ++d)
    for (int64_t expert : held[d])
      resident.push_back({expert, d});
  return resident;
}

std::vector<double> loom::moe::tokensOf(const std::vector<int64_t> &counts) {
  return std::vector<double>(counts.begin(), counts.end());
}

double loom::moe::minMaxShare(const std::vector<double> &tokens, int64_t slots,
                              int64_t devices) {
  int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0)
    return 0;
  if (n > slots || devices < 1)
    return kInfinity;
  std::vector<int64_t> count(n, 1);
  for (int64_t e : greedyIncrements(tokens, std::min(slots, n * devices), devices))
    ++count[e];
  double worst = 0;
  for (int64_t e = 0; e < n; ++e)
    worst = std::max(worst, tokens[e] / static_cast<double>(count[e]));
  return worst;
}

double loom::moe::lowerBound(const std::vector<double> &tokens,
                             const Topology &topology) {
  double total = std::accumulate(tokens.begin(), tokens.end(), 0.0);
  return std::max(total / static_cast<double>(topology.devices),
                  minMaxShare(tokens, topology.slots(), topology.devices));
}

absl::Status loom::moe::checkLayer(const Cluster &cluster,
                                   const LayerInput &layer) {
  const Topology &t = cluster.topology;
  if (t.nodes < 1)
    return invalid("the topology needs at least one node, got " + str(t.nodes));
  if (t.devices < 1)
    return invalid("the topology needs at least one device, got " +
                   str(t.devices));
  if (t.devices % t.nodes != 0)
    return invalid(str(t.devices) + " devices do not divide into " +
                   str(t.nodes) + " nodes");
  if (t.slotsPerDevice < 1)
    return invalid("a device needs at least one expert slot, got " +
                   str(t.slotsPerDevice));
  // (The planner keeps devices x experts tables: bound them so that bad
  // input gets a status rather than an allocation failure.)
  constexpr int64_t kMaxSlots = int64_t{1} << 22;
  if (t.devices > kMaxSlots / t.slotsPerDevice)
    return invalid(str(t.devices) + " devices of " + str(t.slotsPerDevice) +
                   " slots exceed the planner's limit of " + str(kMaxSlots) +
                   " slots");
  int64_t experts = static_cast<int64_t>(layer.tokens.size());
  if (experts == 0)
    return invalid("the layer has no experts");
  if (t.devices * experts > (int64_t{1} << 26))
    return invalid(str(experts) + " experts on " + str(t.devices) +
                   " devices exceed the planner's limit of 2^26 "
                   "(device, expert) pairs");
  if (experts > t.slots())
    return invalid(str(experts) + " experts need a replica each, but " +
                   str(t.devices) + " devices of " + str(t.slotsPerDevice) +
                   " slots hold only " + str(t.slots()));
  double total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    double w = layer.tokens[e];
    if (!std::isfinite(w) || w < 0 || w > 0x1p53)
      return invalid("expert " + str(e) + " has token count " + number(w) +
                     ", expected a count in [0, 2^53]");
    total += w;
  }
  if (layer.expectedTotal) {
    double expected = *layer.expectedTotal;
    if (!std::isfinite(expected) ||
        std::fabs(total - expected) > 1e-9 * std::max(1.0, std::fabs(expected)))
      return invalid("the counts sum to " + number(total) + " tokens, expected " +
                     number(expected));
  }
  if (cluster.groups < 1 || experts % cluster.groups != 0)
    return invalid(str(experts) + " experts do not divide into " +
                   str(cluster.groups) + " groups");
  std::vector<int64_t> onDevice(t.devices, 0);
  for (size_t i = 0; i < layer.previous.size(); ++i) {
    const Holding &h = layer.previous[i];
    if (h.device < 0 || h.device >= t.devices)
      return invalid("previous placement: replica " + str(i) + " is on device " +
                     str(h.device) + ", but there are " + str(t.devices) +
                     " devices");
    if (h.expert < 0 || h.expert >= experts)
      return invalid("previous placement: replica " + str(i) + " is of expert " +
                     str(h.expert) + ", but the layer has " + str(experts) +
                     " experts");
    if (++onDevice[h.device] > t.slotsPerDevice)
      return invalid("previous placement: device " + str(h.device) +
                     " holds more than its " + str(t.slotsPerDevice) +
                     " slots");
  }
  const CostParams &c = cluster.cost;
  if (!std::isfinite(c.secondsPerToken) || c.secondsPerToken < 0)
    return invalid("seconds per token " + number(c.secondsPerToken) +
                   ", expected a finite value >= 0");
  if (!std::isfinite(c.expertBytes) || c.expertBytes < 0)
    return invalid("expert bytes " + number(c.expertBytes) +
                   ", expected a finite value >= 0");
  if (!(c.intraNodeBandwidth > 0) || !(c.interNodeBandwidth > 0))
    return invalid("bandwidths must be positive, got " +
                   number(c.intraNodeBandwidth) + " within a node and " +
                   number(c.interNodeBandwidth) + " across nodes");
  if (!cluster.freeBytes.empty()) {
    if (static_cast<int64_t>(cluster.freeBytes.size()) != t.devices)
      return invalid("free memory is given for " +
                     str(cluster.freeBytes.size()) + " devices, expected " +
                     str(t.devices));
    double need = c.expertBytes * static_cast<double>(t.slotsPerDevice);
    for (int64_t d = 0; d < t.devices; ++d) {
      double free = cluster.freeBytes[d];
      if (!(free >= need))
        return invalid("device " + str(d) + " has " + number(free) +
                       " bytes free, which cannot hold its " +
                       str(t.slotsPerDevice) + " slots of " +
                       number(c.expertBytes) + "-byte experts (" +
                       number(need) + " bytes)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Placement> loom::moe::evaluateMap(const Cluster &cluster,
                                                 const LayerInput &layer,
                                                 const std::vector<int64_t> &map,
                                                 bool unevenSplits) {
  if (absl::Status status = checkLayer(cluster, layer); !status.ok())
    return status;
  if (static_cast<int64_t>(map.size()) != cluster.topology.slots())
    return invalid("the map has " + str(map.size()) + " slots, expected " +
                   str(cluster.topology.slots()));
  int64_t experts = static_cast<int64_t>(layer.tokens.size());
  std::vector<int64_t> count(experts, 0);
  for (size_t p = 0; p < map.size(); ++p) {
    if (map[p] < -1 || map[p] >= experts)
      return invalid("slot " + str(p) + " names expert " + str(map[p]) +
                     ", but the layer has " + str(experts) + " experts");
    if (map[p] >= 0)
      ++count[map[p]];
  }
  for (int64_t e = 0; e < experts; ++e)
    if (count[e] == 0)
      return invalid("expert " + str(e) + " has no replica");
  return evaluate(cluster, layer, map, unevenSplits);
}

absl::StatusOr<Placement> loom::moe::planEplb(const Cluster &cluster,
                                              const LayerInput &layer,
                                              const PlacementOptions &options) {
  if (absl::Status status = checkLayer(cluster, layer); !status.ok())
    return status;
  const Topology &t = cluster.topology;
  bool hierarchical = options.hierarchical && cluster.groups % t.nodes == 0;
  std::vector<int64_t> map =
      hierarchical ? eplbMap(layer.tokens, cluster.groups, t.nodes, t.devices,
                             t.slotsPerDevice)
                   : eplbMap(layer.tokens, 1, 1, t.devices, t.slotsPerDevice);
  return evaluate(cluster, layer, map, options.unevenSplits);
}

absl::StatusOr<Placement> loom::moe::planPlacement(const Cluster &cluster,
                                                   const LayerInput &layer,
                                                   const PlacementOptions &options) {
  if (absl::Status status = checkLayer(cluster, layer); !status.ok())
    return status;
  const Topology &t = cluster.topology;
  const std::vector<double> &w = layer.tokens;
  int64_t experts = static_cast<int64_t>(w.size());
  int64_t slots = t.slotsPerDevice, perNode = t.devicesPerNode();
  bool hierarchical = options.hierarchical && t.nodes > 1 &&
                      cluster.groups % t.nodes == 0;
  // The baseline, both as a seed and for the node packing it starts from.
  std::vector<int64_t> eplb =
      hierarchical ? eplbMap(w, cluster.groups, t.nodes, t.devices, slots)
                   : eplbMap(w, 1, 1, t.devices, slots);

  // Units: the nodes with their experts (hierarchically), or one unit of
  // all devices. Each unit's devices are planned flat.
  int64_t units = hierarchical ? t.nodes : 1;
  int64_t unitDevices = hierarchical ? perNode : t.devices;
  // Candidate partitions of the experts onto units: EPLB's, then that
  // improved by swapping groups between nodes while the two nodes' larger
  // bound drops. Hierarchically, with each partition its nodes' bounds.
  std::vector<std::vector<std::vector<int64_t>>> partitions;
  std::vector<std::vector<double>> partitionBounds;
  if (!hierarchical) {
    std::vector<int64_t> all(experts);
    std::iota(all.begin(), all.end(), 0);
    partitions.push_back({all});
  } else {
    int64_t groupSize = experts / cluster.groups;
    std::vector<std::vector<int64_t>> nodeGroups(t.nodes);
    for (int64_t node = 0; node < t.nodes; ++node) {
      // EPLB's nodes hold whole groups; read them off its map.
      std::vector<char> seen(cluster.groups, 0);
      for (int64_t p = node * perNode * slots; p < (node + 1) * perNode * slots; ++p) {
        int64_t g = eplb[p] / groupSize;
        if (!seen[g]) {
          seen[g] = 1;
          nodeGroups[node].push_back(g);
        }
      }
    }
    auto expertsOf = [&](const std::vector<std::vector<int64_t>> &groupsOn) {
      std::vector<std::vector<int64_t>> part(t.nodes);
      for (int64_t node = 0; node < t.nodes; ++node) {
        std::vector<int64_t> gs = groupsOn[node];
        std::sort(gs.begin(), gs.end());
        for (int64_t g : gs)
          for (int64_t k = 0; k < groupSize; ++k)
            part[node].push_back(g * groupSize + k);
      }
      return part;
    };
    partitions.push_back(expertsOf(nodeGroups));
    std::vector<double> groupTokens(cluster.groups, 0);
    for (int64_t e = 0; e < experts; ++e)
      groupTokens[e / groupSize] += w[e];
    // A quick floor of a node's bound (its mean) skips most swaps before
    // the greedy; bounds computed are kept, by the node's sorted groups,
    // for later rounds.
    auto floorOf = [&](const std::vector<int64_t> &gs) {
      double sum = 0;
      for (int64_t g : gs)
        sum += groupTokens[g];
      return sum / static_cast<double>(perNode);
    };
    std::map<std::vector<int64_t>, double> known;
    std::vector<int64_t> key;
    auto nodeBoundOf = [&](const std::vector<int64_t> &gs) {
      std::vector<double> local;
      double sum = 0;
      for (int64_t g : gs)
        for (int64_t k = 0; k < groupSize; ++k) {
          local.push_back(w[g * groupSize + k]);
          sum += w[g * groupSize + k];
        }
      return std::max(sum / static_cast<double>(perNode),
                      minMaxShare(local, perNode * slots, perNode));
    };
    auto nodeBound = [&](const std::vector<int64_t> &gs) {
      key = gs;
      std::sort(key.begin(), key.end());
      auto it = known.find(key);
      if (it != known.end())
        return it->second;
      double bound = nodeBoundOf(gs);
      known.emplace(key, bound);
      return bound;
    };
    std::vector<double> bounds(t.nodes);
    for (int64_t node = 0; node < t.nodes; ++node)
      bounds[node] = nodeBound(nodeGroups[node]);
    partitionBounds.push_back(bounds);
    double scale = std::max(1.0, std::accumulate(w.begin(), w.end(), 0.0));
    bool changed = false;
    // Rounds bounded by the instance: twice the nodes.
    for (int64_t round = 0; round < 2 * t.nodes; ++round) {
      int64_t top = std::max_element(bounds.begin(), bounds.end()) - bounds.begin();
      double bestPair = bounds[top];
      int64_t bestNode = -1;
      size_t bestI = 0, bestJ = 0;
      double bestTop = 0, bestOther = 0;
      for (int64_t other = 0; other < t.nodes; ++other) {
        if (other == top)
          continue;
        for (size_t i = 0; i < nodeGroups[top].size(); ++i)
          for (size_t j = 0; j < nodeGroups[other].size(); ++j) {
            if (groupTokens[nodeGroups[top][i]] <= groupTokens[nodeGroups[other][j]])
              continue;
            std::swap(nodeGroups[top][i], nodeGroups[other][j]);
            double a = 0, b = 0;
            bool hope =
                clearlyBelow(std::max(floorOf(nodeGroups[top]),
                                      floorOf(nodeGroups[other])),
                             bestPair, scale) &&
                clearlyBelow(a = nodeBound(nodeGroups[top]), bestPair, scale) &&
                clearlyBelow(b = nodeBound(nodeGroups[other]), bestPair, scale);
            std::swap(nodeGroups[top][i], nodeGroups[other][j]);
            if (hope && clearlyBelow(std::max(a, b), bestPair, scale)) {
              bestPair = std::max(a, b);
              bestNode = other;
              bestI = i;
              bestJ = j;
              bestTop = a;
              bestOther = b;
            }
          }
      }
      if (bestNode < 0)
        break;
      std::swap(nodeGroups[top][bestI], nodeGroups[bestNode][bestJ]);
      bounds[top] = bestTop;
      bounds[bestNode] = bestOther;
      changed = true;
    }
    if (changed) {
      partitions.push_back(expertsOf(nodeGroups));
      partitionBounds.push_back(bounds);
    }
  }

  // Previous holdings, for matching the planned bins to devices (the
  // devices x experts tables only where there is a previous placement).
  bool moving = !layer.previous.empty();
  std::vector<char> held(moving ? t.devices * experts : 0, 0),
      nodeHeld(moving ? t.nodes * experts : 0, 0);
  // What each slot held (a holding's slot is its rank among its
  // device's; an expert may hold several slots of one device).
  std::vector<int64_t> previousIn(moving ? t.slots() : 0, -1),
      filled(t.devices, 0);
  for (const Holding &h : layer.previous) {
    held[h.device * experts + h.expert] = 1;
    nodeHeld[(h.device / perNode) * experts + h.expert] = 1;
    previousIn[h.device * slots + filled[h.device]++] = h.expert;
  }
  const CostParams &c = cluster.cost;
  double bytes = c.expertBytes > 0 ? c.expertBytes : 1;
  // What keeping expert e on device d saves against fetching it.
  auto saving = [&](int64_t e, int64_t d) {
    if (!held[d * experts + e])
      return 0.0;
    return nodeHeld[(d / perNode) * experts + e] && perNode > 1
               ? bytes / c.intraNodeBandwidth + 1e-300
               : bytes / c.interNodeBandwidth;
  };

  // The lower bound every candidate reports, computed once.
  double bound = lowerBound(w, t);
  std::optional<Placement> best;
  // Uneven splits: the wrap-around reaches total / devices where the slots
  // take its pieces; otherwise the even-split plan below, water-filled.
  if (options.unevenSplits) {
    std::vector<int64_t> map;
    std::vector<double> tokens;
    if (wrapAround(w, t.devices, slots, map, tokens)) {
      best = evaluate(cluster, layer, map, true, &tokens, bound);
      best->wrapAround = true;
      partitions.clear();
    }
  }
  // Several units (with even splits): the layer's maximum load is the
  // largest of the units' maxima, so a unit need not go below the largest
  // lower bound of the partition's units, nor below a maximum another unit
  // has already reached: it stops at the first plan at or below that
  // (`enough`). Every unit's maximum is then either what it would have
  // reached anyway or at most the layer's maximum, which therefore stays
  // as it was, at a fraction of the work on the units that are not the
  // bottleneck. The units are planned largest bound first, so that
  // `enough` rises early. (With uneven splits the water-filling works on
  // every unit's plan, so all are planned in full.)
  bool relax = units > 1 && !options.unevenSplits;
  std::vector<int64_t> binCount;
  auto largestLoad = [&](const std::vector<std::vector<int64_t>> &bins) {
    std::vector<double> loads = binLoads(w, bins, binCount);
    return *std::max_element(loads.begin(), loads.end());
  };
  // The first partition's unit plans, with their maxima and the `enough`
  // each was planned against: a later partition differs from it on the
  // few nodes its group swaps touched, and a unit of the same experts
  // plans the same (planFlat depends on the unit's experts, EPLB's seed
  // for it and `enough` only), so those are taken over rather than planned
  // again where that keeps the rule above.
  std::vector<std::vector<std::vector<int64_t>>> firstBins;
  std::vector<double> firstLoad, firstEnough;
  for (size_t index = 0; index < partitions.size(); ++index) {
    const auto &partition = partitions[index];
    // Each unit's flat plan, in local expert and device numbers.
    std::vector<std::vector<std::vector<int64_t>>> unitBins(units);
    std::vector<double> unitBound(units, 0), unitLoad(units, 0),
        unitEnough(units, 0);
    std::vector<char> planned(units, 0);
    double enough = 0;
    if (relax) {
      // (The node bounds of the group swaps above.)
      unitBound = partitionBounds[index];
      enough = *std::max_element(unitBound.begin(), unitBound.end());
    }
    auto take = [&](int64_t u) {
      unitBins[u] = firstBins[u];
      unitLoad[u] = firstLoad[u];
      unitEnough[u] = firstEnough[u];
      planned[u] = 1;
    };
    if (index > 0) {
      // First the units planned in full before (above their `enough`),
      // then those that stopped early where they are within this one.
      for (int64_t u = 0; u < units; ++u)
        if (partition[u] == partitions[0][u] && firstLoad[u] > firstEnough[u]) {
          take(u);
          if (relax)
            enough = std::max(enough, unitLoad[u]);
        }
      for (int64_t u = 0; u < units; ++u)
        if (!planned[u] && partition[u] == partitions[0][u] &&
            firstLoad[u] <= enough)
          take(u);
    }
    // With even splits a unit's largest load is a floor of the plan's
    // modelled time (moves only add to it): once one is at the best plan's
    // time, this partition cannot win and its other units are not planned.
    // (A relative margin covers the order the loads are summed in.)
    auto cannotWin = [&](int64_t u) {
      if (!best || options.unevenSplits)
        return false;
      return unitLoad[u] * cluster.cost.secondsPerToken >=
             best->modelledSeconds * (1 + 1e-9);
    };
    bool hopeless = false;
    for (int64_t u = 0; u < units && !hopeless; ++u)
      hopeless = planned[u] && cannotWin(u);
    std::vector<int64_t> unitOrder(units);
    std::iota(unitOrder.begin(), unitOrder.end(), 0);
    std::stable_sort(unitOrder.begin(), unitOrder.end(), [&](int64_t a, int64_t b) {
      return unitBound[a] > unitBound[b];
    });
    for (int64_t u : unitOrder) {
      if (hopeless)
        break;
      if (planned[u])
        continue;
      const std::vector<int64_t> &members = partition[u];
      std::vector<int64_t> localOf(experts, -1);
      std::vector<double> local;
      for (int64_t e : members) {
        localOf[e] = static_cast<int64_t>(local.size());
        local.push_back(w[e]);
      }
      // EPLB's devices of this unit as a seed where its experts agree.
      std::vector<std::vector<std::vector<int64_t>>> seeds(1);
      seeds[0].assign(unitDevices, {});
      for (auto &bin : seeds[0])
        bin.reserve(slots);
      bool agrees = true;
      for (int64_t d = 0; d < unitDevices && agrees; ++d)
        for (int64_t k = 0; k < slots; ++k) {
          int64_t e = eplb[(u * unitDevices + d) * slots + k];
          if (localOf[e] < 0) {
            agrees = false;
            break;
          }
          seeds[0][d].push_back(localOf[e]);
        }
      if (!agrees)
        seeds.clear();
      std::vector<std::vector<int64_t>> bins = planFlat(
          local, unitDevices, slots, seeds,
          options.exactSmallLayers ? experts * t.devices : -1, enough);
      for (auto &bin : bins)
        for (int64_t &e : bin)
          e = members[e];
      unitBins[u] = std::move(bins);
      unitLoad[u] = largestLoad(unitBins[u]);
      unitEnough[u] = enough;
      if (relax)
        enough = std::max(enough, unitLoad[u]);
      hopeless = cannotWin(u);
    }
    if (hopeless)
      continue;
    if (index == 0 && partitions.size() > 1) {
      firstBins = unitBins;
      firstLoad = unitLoad;
      firstEnough = unitEnough;
    }
    // Units onto nodes (hierarchically: whole nodes may trade places), then
    // each unit's bins onto its devices, to keep the most weights in place.
    std::vector<int64_t> unitNode(units, 0);
    if (units > 1 && !layer.previous.empty()) {
      std::vector<std::vector<double>> score(units, std::vector<double>(units, 0));
      for (int64_t u = 0; u < units; ++u)
        for (int64_t node = 0; node < units; ++node)
          for (const auto &bin : unitBins[u])
            for (int64_t e : bin)
              if (nodeHeld[node * experts + e])
                score[u][node] += 1;
      unitNode = matchBins(score);
    } else {
      std::iota(unitNode.begin(), unitNode.end(), 0);
    }
    std::vector<int64_t> map(t.slots(), -1), rest;
    for (int64_t u = 0; u < units; ++u) {
      int64_t firstDevice = unitNode[u] * unitDevices;
      const auto &bins = unitBins[u];
      std::vector<int64_t> deviceOf(unitDevices);
      if (!layer.previous.empty()) {
        std::vector<std::vector<double>> score(unitDevices,
                                               std::vector<double>(unitDevices, 0));
        for (int64_t b = 0; b < unitDevices; ++b)
          for (int64_t d = 0; d < unitDevices; ++d)
            for (int64_t e : bins[b])
              score[b][d] += saving(e, firstDevice + d);
        deviceOf = matchBins(score);
      } else {
        std::iota(deviceOf.begin(), deviceOf.end(), 0);
      }
      for (int64_t b = 0; b < unitDevices; ++b) {
        int64_t d = firstDevice + deviceOf[b];
        // Experts the device held keep their previous slots where they
        // can (each replica the next one the expert held), so their
        // physical indices stay put too.
        rest.clear();
        for (int64_t e : bins[b]) {
          int64_t k = 0;
          while (moving && k < slots &&
                 (previousIn[d * slots + k] != e || map[d * slots + k] >= 0))
            ++k;
          if (moving && k < slots)
            map[d * slots + k] = e;
          else
            rest.push_back(e);
        }
        int64_t k = 0;
        for (int64_t e : rest) {
          while (map[d * slots + k] >= 0)
            ++k;
          map[d * slots + k] = e;
        }
      }
    }
    Placement plan =
        evaluate(cluster, layer, map, options.unevenSplits, nullptr, bound);
    double scale = std::max(plan.modelledSeconds, 1e-300);
    if (!best || clearlyBelow(plan.modelledSeconds, best->modelledSeconds, scale))
      best = std::move(plan);
  }
  if (!best)
    return absl::InternalError("the planner found no placement of the layer");
  // From the previous placement, only the trades that pay for their bytes.
  if (!layer.previous.empty()) {
    std::vector<int64_t> map = fromPrevious(cluster, layer);
    if (!map.empty()) {
      Placement plan =
          evaluate(cluster, layer, map, options.unevenSplits, nullptr, bound);
      if (clearlyBelow(plan.modelledSeconds, best->modelledSeconds,
                       std::max(best->modelledSeconds, 1e-300)))
        best = std::move(plan);
    }
  }
  // Keeping the previous placement, where it holds every expert, moves
  // nothing; it stays unless the plan's modelled time is lower.
  if (!layer.previous.empty()) {
    std::vector<int64_t> map(t.slots(), -1), filled(t.devices, 0);
    std::vector<char> covered(experts, 0);
    for (const Holding &h : layer.previous) {
      map[h.device * slots + filled[h.device]++] = h.expert;
      covered[h.expert] = 1;
    }
    if (std::all_of(covered.begin(), covered.end(), [](char x) { return x; })) {
      Placement kept =
          evaluate(cluster, layer, map, options.unevenSplits, nullptr, bound);
      kept.keptPrevious = true;
      if (!clearlyBelow(best->modelledSeconds, kept.modelledSeconds,
                        std::max(kept.modelledSeconds, 1e-300)))
        best = std::move(kept);
    }
  }
  return std::move(*best);
}

absl::StatusOr<std::vector<Placement>>
loom::moe::planLayers(const Cluster &cluster, const std::vector<LayerInput> &layers,
                      const PlacementOptions &options, bool baseline) {
  std::vector<Placement> plans;
  for (size_t l = 0; l < layers.size(); ++l) {
    absl::StatusOr<Placement> plan = baseline
                                         ? planEplb(cluster, layers[l], options)
                                         : planPlacement(cluster, layers[l], options);
    if (!plan.ok())
      return absl::Status(plan.status().code(),
                          "layer " + str(l) + ": " +
                              std::string(plan.status().message()));
    plans.push_back(std::move(*plan));
  }
  return plans;
}

absl::Status loom::moe::validatePlacement(const Cluster &cluster,
                                          const LayerInput &layer,
                                          const Placement &placement,
                                          bool evenSplits, bool allowColocated) {
  auto broken = [](const std::string &message) {
    return absl::FailedPreconditionError(message);
  };
  const Topology &t = cluster.topology;
  int64_t experts = static_cast<int64_t>(layer.tokens.size());
  const auto &map = placement.physicalToLogical;
  if (static_cast<int64_t>(map.size()) != t.slots() ||
      placement.slotTokens.size() != map.size())
    return broken("the map has " + str(map.size()) + " slots, expected " +
                  str(t.slots()));
  std::vector<int64_t> count(experts, 0);
  std::vector<double> sum(experts, 0), load(t.devices, 0);
  std::vector<char> holds(t.devices * experts, 0);
  for (size_t p = 0; p < map.size(); ++p) {
    int64_t e = map[p], d = static_cast<int64_t>(p) / t.slotsPerDevice;
    if (e < -1 || e >= experts)
      return broken("slot " + str(p) + " names expert " + str(e));
    if (e < 0) {
      if (placement.slotTokens[p] != 0)
        return broken("empty slot " + str(p) + " has tokens");
      continue;
    }
    if (holds[d * experts + e] && !allowColocated)
      return broken("device " + str(d) + " holds two replicas of expert " +
                    str(e));
    holds[d * experts + e] = 1;
    if (placement.slotTokens[p] < -1e-9)
      return broken("slot " + str(p) + " has negative tokens");
    ++count[e];
    sum[e] += placement.slotTokens[p];
    load[d] += placement.slotTokens[p];
  }
  double total = std::accumulate(layer.tokens.begin(), layer.tokens.end(), 0.0);
  double tolerance = 1e-9 * std::max(1.0, total);
  for (int64_t e = 0; e < experts; ++e) {
    if (count[e] < 1)
      return broken("expert " + str(e) + " has no replica");
    if (placement.replicaCount.size() != static_cast<size_t>(experts) ||
        placement.replicaCount[e] != count[e])
      return broken("expert " + str(e) + "'s replica count is wrong");
    if (std::fabs(sum[e] - layer.tokens[e]) > tolerance)
      return broken("expert " + str(e) + "'s replicas receive " +
                    number(sum[e]) + " tokens, expected " +
                    number(layer.tokens[e]));
  }
  if (evenSplits)
    for (size_t p = 0; p < map.size(); ++p)
      if (map[p] >= 0 &&
          std::fabs(placement.slotTokens[p] -
                    layer.tokens[map[p]] / static_cast<double>(count[map[p]])) >
              tolerance)
        return broken("slot " + str(p) + "'s split is not even");
  if (placement.deviceLoad.size() != static_cast<size_t>(t.devices))
    return broken("loads are given for " + str(placement.deviceLoad.size()) +
                  " devices");
  double worst = 0;
  for (int64_t d = 0; d < t.devices; ++d) {
    if (std::fabs(load[d] - placement.deviceLoad[d]) > tolerance)
      return broken("device " + str(d) + "'s load is " +
                    number(placement.deviceLoad[d]) + ", its replicas sum to " +
                    number(load[d]));
    worst = std::max(worst, load[d]);
  }
  if (std::fabs(worst - placement.maxLoad) > tolerance)
    return broken("the maximum load is " + number(placement.maxLoad) +
                  ", the devices' is " + number(worst));
  if (placement.maxLoad < (evenSplits ? placement.lowerBound
                                      : placement.unevenLowerBound) -
                              tolerance)
    return broken("the maximum load is below the lower bound");
  return absl::OkStatus();
}

std::string loom::moe::planFromForecast(const int64_t *forecast, int64_t rows,
                                        int64_t layers, int64_t experts,
                                        int64_t layer, int64_t devices,
                                        int64_t slots, int64_t nodes,
                                        int64_t expertBytes,
                                        const int64_t *previous,
                                        int64_t *hosts, int64_t *lookup) {
  std::string where = "layer " + std::to_string(layer) + ": ";
  auto str = [](int64_t n) { return std::to_string(n); };
  if (rows < 0 || layers < 1 || experts < 1)
    return where + "a forecast of " + str(rows) + " x " + str(layers) +
           " x " + str(experts) + " (rows x layers x experts) has no expert";
  if (layer < 0 || layer >= layers)
    return where + "not one of the forecast's " + str(layers) + " layers";
  if (devices < 1 || experts % devices != 0)
    return where + str(devices) + " devices do not divide the " +
           str(experts) + " experts (each device is the home of as many)";
  Cluster cluster;
  cluster.topology = {nodes, devices, slots};
  cluster.cost.expertBytes = static_cast<double>(expertBytes);
  LayerInput input;
  input.tokens.assign(static_cast<size_t>(experts), 0.0);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t e = 0; e < experts; ++e) {
      int64_t count = forecast[(m * layers + layer) * experts + e];
      if (count < 0)
        return where + "the forecast gives expert " + std::to_string(e) +
               " a negative count (" + std::to_string(count) + ") in row " +
               std::to_string(m);
      input.tokens[e] += static_cast<double>(count);
    }
  int64_t home = experts / devices;
  if (!previous) {
    for (int64_t e = 0; e < experts; ++e)
      input.previous.push_back({e, e / home});
  } else {
    // What the slots hold now, in slot order: the planner keeps an expert
    // in its slot (its rank among the device's holdings) where it can.
    for (int64_t p = 0; p < devices * slots; ++p) {
      if (previous[p] < 0 || previous[p] >= experts)
        return where + "the previous lookup gives slot " + str(p) +
               " expert " + str(previous[p]) + ", but the layer has " +
               str(experts) + " experts";
      input.previous.push_back({previous[p], p / slots});
    }
  }
  // At run time, before every micro-step: no small-layer search (tens of
  // microseconds instead of milliseconds; never above the baseline).
  PlacementOptions options;
  options.exactSmallLayers = false;
  absl::StatusOr<Placement> plan = planPlacement(cluster, input, options);
  if (!plan.ok())
    return where + std::string(plan.status().message());
  for (int64_t p = 0; p < devices * slots; ++p) {
    hosts[p] = plan->physicalToLogical[p];
    lookup[p] = hosts[p] >= 0 ? hosts[p]
                : previous  ? previous[p]
                            : (p / slots) * home;
  }
  return {};
}
