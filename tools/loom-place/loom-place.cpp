//===- loom-place.cpp - MoE expert placement plans -------------------------===//
//
//   loom-place plan FILE [--baseline] [--uneven] [--hierarchical | --global]
//       plans each layer of FILE with the runtime planner (runtime/moe,
//       moe::planPlacement), or with DeepSeek EPLB's rebalance under
//       --baseline; prints per layer the physical-to-logical map, each
//       device's load, the maximum, the lower bound and the ratio, the
//       bytes moved from the previous placement and the modelled time.
//       --uneven splits experts' tokens unevenly over their replicas;
//       --global plans over all devices at once (default: hierarchical,
//       groups on nodes, where the groups divide by the nodes).
//
// FILE: one directive a line, '#' starts a comment:
//   nodes N               nodes (default 1)
//   devices_per_node N    devices of each node (required)
//   slots N               expert slots a device (required)
//   groups N              expert groups (default 1)
//   seconds_per_token X   modelled seconds a token (default 1e-6)
//   expert_bytes X        bytes of one expert's weights (default 0)
//   intra_bandwidth X     bytes a second within a node (default 4e11)
//   inter_bandwidth X     bytes a second across nodes (default 5e10)
//   free_bytes X X ...    bytes free on each device (optional)
//   layer W W ...         the tokens of each logical expert of one layer
//   previous E E ...      the physical-to-logical map before the layer
//                         above it (-1: an empty slot; optional)
//   total T               the tokens the layer above must sum to (optional)
//
// Errors go to stderr as `loom-place: error: FILE:LINE: ...` (or without
// the line where the problem is the whole file) with exit status 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/moe/Placement.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

using namespace loom;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "loom-place: error: %s\n", message.c_str());
  return 1;
}

const char *kUsage =
    "usage: loom-place plan FILE [--baseline] [--uneven] [--hierarchical | "
    "--global]";

int help() {
  std::printf("%s\n\n", kUsage);
  std::printf(
      "FILE: one directive a line ('#' starts a comment):\n"
      "  nodes N, devices_per_node N, slots N, groups N,\n"
      "  seconds_per_token X, expert_bytes X, intra_bandwidth X,\n"
      "  inter_bandwidth X, free_bytes X X ...,\n"
      "  layer W W ...     (tokens of each logical expert of a layer)\n"
      "  previous E E ...  (the layer's previous physical-to-logical map)\n"
      "  total T           (the tokens the layer must sum to)\n");
  return 0;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

struct Parsed {
  moe::Cluster cluster;
  int64_t devicesPerNode = 0;
  std::vector<moe::LayerInput> layers;
  std::vector<std::vector<int64_t>> previousMaps;
  std::vector<int> layerLines;
};

/// Whether the whole of `text` is a number; stores it.
bool toDouble(const std::string &text, double &value) {
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end && !*end;
}
bool toInt(const std::string &text, int64_t &value) {
  char *end = nullptr;
  errno = 0;
  value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && end && !*end && errno != ERANGE;
}

int parse(const std::string &path, Parsed &out) {
  std::ifstream file(path);
  if (!file)
    return fail("cannot read '" + path + "'");
  std::string line;
  out.cluster.topology.nodes = 1;
  out.cluster.topology.slotsPerDevice = 0;
  for (int number = 1; std::getline(file, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    std::istringstream fields(line);
    std::string key;
    if (!(fields >> key))
      continue;
    std::vector<std::string> values;
    for (std::string v; fields >> v;)
      values.push_back(v);
    std::string where = path + ":" + std::to_string(number) + ": ";
    auto one = [&](double &value) {
      return values.size() == 1 && toDouble(values[0], value);
    };
    auto oneInt = [&](int64_t &value) {
      return values.size() == 1 && toInt(values[0], value);
    };
    moe::CostParams &c = out.cluster.cost;
    if (key == "nodes" || key == "devices_per_node" || key == "slots" ||
        key == "groups") {
      int64_t value = 0;
      if (!oneInt(value))
        return fail(where + "'" + key + "' takes one integer");
      if (key == "nodes")
        out.cluster.topology.nodes = value;
      else if (key == "devices_per_node")
        out.devicesPerNode = value;
      else if (key == "slots")
        out.cluster.topology.slotsPerDevice = value;
      else
        out.cluster.groups = value;
    } else if (key == "seconds_per_token" || key == "expert_bytes" ||
               key == "intra_bandwidth" || key == "inter_bandwidth") {
      double value = 0;
      if (!one(value))
        return fail(where + "'" + key + "' takes one number");
      (key == "seconds_per_token" ? c.secondsPerToken
       : key == "expert_bytes"    ? c.expertBytes
       : key == "intra_bandwidth" ? c.intraNodeBandwidth
                                  : c.interNodeBandwidth) = value;
    } else if (key == "free_bytes" || key == "layer") {
      std::vector<double> numbers;
      for (const std::string &v : values) {
        double x = 0;
        if (!toDouble(v, x))
          return fail(where + "'" + v + "' is not a number");
        numbers.push_back(x);
      }
      if (key == "free_bytes") {
        out.cluster.freeBytes = numbers;
      } else {
        if (numbers.empty())
          return fail(where + "a layer needs the tokens of its experts");
        moe::LayerInput layer;
        layer.tokens = numbers;
        out.layers.push_back(layer);
        out.previousMaps.emplace_back();
        out.layerLines.push_back(number);
      }
    } else if (key == "previous" || key == "total") {
      if (out.layers.empty())
        return fail(where + "'" + key + "' before any layer");
      if (key == "total") {
        double value = 0;
        if (!one(value))
          return fail(where + "'total' takes one number");
        out.layers.back().expectedTotal = value;
      } else {
        std::vector<int64_t> map;
        for (const std::string &v : values) {
          int64_t e = 0;
          if (!toInt(v, e))
            return fail(where + "'" + v + "' is not an expert index");
          map.push_back(e);
        }
        out.previousMaps.back() = map;
      }
    } else {
      return fail(where + "unknown directive '" + key + "'");
    }
  }
  if (out.devicesPerNode < 1)
    return fail(path + ": 'devices_per_node' must be given, at least 1");
  if (out.cluster.topology.slotsPerDevice < 1)
    return fail(path + ": 'slots' must be given, at least 1");
  if (out.layers.empty())
    return fail(path + ": no 'layer' to plan");
  moe::Topology &t = out.cluster.topology;
  // (Sizes far past any cluster are refused before they are multiplied.)
  constexpr int64_t kMaxSlots = int64_t{1} << 22;
  if (t.nodes < 1 || t.nodes > kMaxSlots / out.devicesPerNode ||
      t.nodes * out.devicesPerNode > kMaxSlots / t.slotsPerDevice)
    return fail(path + ": " + std::to_string(t.nodes) + " nodes of " +
                std::to_string(out.devicesPerNode) + " devices of " +
                std::to_string(t.slotsPerDevice) +
                " slots: at least one node, and at most 2^22 slots in all");
  t.devices = t.nodes * out.devicesPerNode;
  for (size_t l = 0; l < out.layers.size(); ++l) {
    const std::vector<int64_t> &map = out.previousMaps[l];
    if (map.empty())
      continue;
    if (static_cast<int64_t>(map.size()) != t.slots())
      return fail(path + ":" + std::to_string(out.layerLines[l]) +
                  ": the previous map has " + std::to_string(map.size()) +
                  " slots, expected " + std::to_string(t.slots()));
    for (size_t p = 0; p < map.size(); ++p)
      if (map[p] < -1)
        return fail(path + ":" + std::to_string(out.layerLines[l]) +
                    ": the previous map names expert " +
                    std::to_string(map[p]));
    out.layers[l].previous = moe::holdingsOf(map, t.slotsPerDevice);
  }
  return 0;
}

int plan(const std::string &path, bool baseline, bool uneven, bool hierarchical) {
  Parsed parsed;
  if (int status = parse(path, parsed))
    return status;
  moe::PlacementOptions options;
  options.unevenSplits = uneven;
  options.hierarchical = hierarchical;
  const moe::Topology &t = parsed.cluster.topology;
  std::printf("%s: %lld nodes x %lld devices, %lld slots a device, %s, %s "
              "splits\n",
              baseline ? "eplb" : "planner", static_cast<long long>(t.nodes),
              static_cast<long long>(parsed.devicesPerNode),
              static_cast<long long>(t.slotsPerDevice),
              hierarchical ? "hierarchical" : "global", uneven ? "uneven" : "even");
  for (size_t l = 0; l < parsed.layers.size(); ++l) {
    const moe::LayerInput &layer = parsed.layers[l];
    absl::StatusOr<moe::Placement> placed =
        baseline ? moe::planEplb(parsed.cluster, layer, options)
                 : moe::planPlacement(parsed.cluster, layer, options);
    if (!placed.ok())
      return fail(path + ":" + std::to_string(parsed.layerLines[l]) + ": " +
                  std::string(placed.status().message()));
    std::string map, loads;
    for (int64_t e : placed->physicalToLogical)
      map += (map.empty() ? "" : " ") + std::to_string(e);
    for (double load : placed->deviceLoad)
      loads += (loads.empty() ? "" : " ") + number(load);
    double bound = uneven ? placed->unevenLowerBound : placed->lowerBound;
    std::printf("layer %zu: map [%s]\n", l, map.c_str());
    std::printf("  loads [%s]\n", loads.c_str());
    std::printf("  max load %s, lower bound %s, ratio %s\n",
                number(placed->maxLoad).c_str(), number(bound).c_str(),
                number(bound > 0 ? placed->maxLoad / bound : 1).c_str());
    std::printf("  moved %lld replicas, %s bytes (%s within nodes, %s across)%s\n",
                static_cast<long long>(placed->replicasMoved),
                number(placed->bytesMoved()).c_str(),
                number(placed->intraNodeBytes).c_str(),
                number(placed->interNodeBytes).c_str(),
                placed->keptPrevious ? ", kept the previous placement" : "");
    std::printf("  modelled time %s s\n", number(placed->modelledSeconds).c_str());
    if (uneven && !baseline)
      std::printf("  uneven: %s, %s\n",
                  placed->wrapAround ? "wrap-around"
                                     : "even-split plan, water-filled",
                  placed->meanReached ? "reached total / devices"
                                      : "total / devices not reached");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h"))
    return help();
  if (argc < 3 || std::string(argv[1]) != "plan")
    return fail(kUsage);
  bool baseline = false, uneven = false, hierarchical = true;
  for (int i = 3; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--baseline")
      baseline = true;
    else if (arg == "--uneven")
      uneven = true;
    else if (arg == "--hierarchical")
      hierarchical = true;
    else if (arg == "--global")
      hierarchical = false;
    else
      return fail(kUsage);
  }
  try {
    return plan(argv[2], baseline, uneven, hierarchical);
  } catch (const std::bad_alloc &) {
    return fail("out of memory while planning '" + std::string(argv[2]) + "'");
  }
}
