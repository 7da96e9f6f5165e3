//===- ProgramSwitch.cpp - Moving arguments between two programs ----------===//

#include "runtime/driver/ProgramSwitch.h"

#include "runtime/layout/Switch.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <thread>
#include <vector>

using namespace loom;
using namespace loom::driver;

namespace {

/// Takes the message of a failed call and frees its status.
std::string messageOf(const loom_program_api &api, loom_status *status) {
  std::string message = api.status_get_message(status);
  api.status_destroy(status);
  return message;
}

/// An argument of one program as the switch sees it.
struct Argument {
  int64_t index = 0;
  loom_arg_info info;
  std::vector<int64_t> shape;
  std::string name() const {
    return info.name && *info.name ? std::string(info.name)
                                   : "#" + std::to_string(index);
  }
};

/// The arguments of `program` a switch carries: all but the data and the
/// step counters.
std::string carriedArguments(const loom_program_api &api,
                             loom_program *program, bool parametersOnly,
                             std::vector<Argument> &args) {
  for (int64_t i = 0; i < api.get_num_args(program); ++i) {
    Argument arg;
    arg.index = i;
    if (loom_status *status = api.get_arg_info(program, i, &arg.info))
      return messageOf(api, status);
    if (arg.info.role == LOOM_ARG_DATA || arg.info.role == LOOM_ARG_STEP ||
        (parametersOnly && arg.info.role != LOOM_ARG_PARAM))
      continue;
    arg.shape.assign(arg.info.global_shape,
                     arg.info.global_shape + arg.info.rank);
    args.push_back(std::move(arg));
  }
  return "";
}

int64_t shardBytes(const loom_arg_info &info) {
  int64_t bytes = getElementBytes(info.dtype);
  for (int64_t d = 0; d < info.rank; ++d)
    bytes *= info.local_shape[d];
  return bytes;
}

std::string secondsText(int64_t ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(ms) / 1000.0);
  return text;
}

} // namespace

int64_t loom::driver::getElementBytes(loom_dtype dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
  case LOOM_DTYPE_I32:
    return 4;
  case LOOM_DTYPE_F64:
  case LOOM_DTYPE_I64:
    return 8;
  case LOOM_DTYPE_BF16:
    return 2;
  case LOOM_DTYPE_I1:
    return 1;
  }
  return 1;
}

SwitchSettings loom::driver::getSwitchSettings() {
  SwitchSettings settings;
  // LOOM_SWITCH_NODES: decimal node numbers (at most 9 digits each),
  // separated by single commas; anything else (also an empty value) is
  // refused.
  if (const char *nodes = std::getenv("LOOM_SWITCH_NODES")) {
    std::string text = nodes;
    bool valid = !text.empty();
    int64_t node = 0, digits = 0;
    for (size_t i = 0; i <= text.size() && valid; ++i) {
      if (i == text.size() || text[i] == ',') {
        valid = digits > 0;
        settings.nodeOf.push_back(node);
        node = digits = 0;
      } else if (text[i] >= '0' && text[i] <= '9' && digits < 9) {
        node = node * 10 + (text[i] - '0');
        ++digits;
      } else {
        valid = false;
      }
    }
    if (!valid) {
      settings.nodesInvalid = true;
      settings.invalid = "LOOM_SWITCH_NODES is not a list of node numbers, "
                         "one per rank (\"0,0,1,1\"): '" +
                         text + "'";
      settings.nodeOf.clear();
    }
  }
  if (const char *seconds = std::getenv("LOOM_COLLECTIVE_TIMEOUT_S"))
    settings.timeoutMs = static_cast<int64_t>(std::atof(seconds) * 1000);
  // (The programs' runtimes check that the limit is the same valid number
  // on every rank.)
  if (const char *limit = std::getenv("LOOM_MPI_MESSAGE_LIMIT")) {
    char *end = nullptr;
    long long bytes = std::strtoll(limit, &end, 10);
    if (end != limit && !*end && bytes >= 1 && bytes <= INT_MAX)
      settings.pieceBytes = bytes;
  }
  return settings;
}

namespace {

/// The switch's tensors and plan from the two programs' arguments (no
/// communication); the empty string, or why not.
std::string planPrograms(const loom_program_api &fromApi, loom_program *from,
                         const loom_program_api &toApi, loom_program *to,
                         const SwitchSettings &settings,
                         const layout::Topology &topology,
                         std::vector<Argument> &sources,
                         std::vector<Argument> &targets,
                         std::vector<layout::SwitchTensor> &tensors,
                         std::vector<std::pair<const Argument *,
                                               const Argument *>> &pairs,
                         layout::SwitchPlan &plan) {
  // (Parameters only: from the source's parameters to the target's.)
  if (std::string why = carriedArguments(fromApi, from,
                                         settings.parametersOnly, sources);
      !why.empty())
    return why;
  if (std::string why =
          carriedArguments(toApi, to, settings.parametersOnly, targets);
      !why.empty())
    return why;
  // Every target argument from the source: by name, else (unnamed on both
  // sides) by index. A parameter or state of the target the source lacks
  // is an error (it would keep stale values).
  for (const Argument &target : targets) {
    bool named = target.info.name && *target.info.name;
    auto source = std::find_if(
        sources.begin(), sources.end(), [&](const Argument &a) {
          bool aNamed = a.info.name && *a.info.name;
          return named ? aNamed && a.name() == target.name()
                       : !aNamed && a.index == target.index;
        });
    if (source == sources.end()) {
      if (target.info.role == LOOM_ARG_PARAM ||
          target.info.role == LOOM_ARG_STATE)
        return "argument '" + target.name() +
               "' of the target program has no counterpart in the source "
               "program (no argument of that name)";
      continue;
    }
    if (source->info.dtype != target.info.dtype ||
        source->shape != target.shape)
      return "argument '" + target.name() +
             "' has another element type or shape in the two programs";
    layout::SwitchTensor tensor;
    tensor.name = target.name();
    tensor.shape = target.shape;
    tensor.elementBytes = getElementBytes(target.info.dtype);
    const Argument *sourceArg = &*source;
    for (auto [arg, layout] : {std::pair{sourceArg, &tensor.from},
                               std::pair{&target, &tensor.to}}) {
      absl::StatusOr<layout::Layout> decoded =
          layout::decodeLayout(arg->info.layout, arg->info.layout_size);
      if (!decoded.ok())
        return "the layout of argument '" + arg->name() +
               "' does not decode: " + std::string(decoded.status().message());
      *layout = *std::move(decoded);
    }
    tensors.push_back(std::move(tensor));
    pairs.push_back({sourceArg, &target});
  }
  absl::StatusOr<layout::SwitchPlan> planned =
      layout::planSwitch(tensors, topology, {});
  if (!planned.ok())
    return "the switch cannot be planned: " +
           std::string(planned.status().message());
  plan = *std::move(planned);
  return "";
}

/// A digest of everything the ranks must agree on: every tensor (name,
/// shape, element size) and every message's pieces.
uint64_t digestOf(const std::vector<layout::SwitchTensor> &tensors,
                  const layout::SwitchPlan &plan) {
  uint64_t digest = 1469598103934665603ull;
  auto mix = [&](int64_t value) {
    digest = (digest ^ static_cast<uint64_t>(value)) * 1099511628211ull;
  };
  mix(static_cast<int64_t>(tensors.size()));
  for (const layout::SwitchTensor &tensor : tensors) {
    for (char c : tensor.name)
      mix(c);
    for (int64_t size : tensor.shape)
      mix(size);
    mix(tensor.elementBytes);
  }
  mix(plan.totalBytes);
  for (const layout::SwitchMessage &message : plan.messages) {
    mix(message.source);
    mix(message.destination);
    mix(message.bytes);
    for (const layout::SwitchPiece &piece : message.pieces) {
      mix(piece.tensor);
      for (int64_t offset : piece.offsets)
        mix(offset);
      for (int64_t size : piece.sizes)
        mix(size);
    }
  }
  // (0 stands for a rank that could not plan.)
  return digest ? digest : 1;
}

/// Buffers of an exchange abandoned after a failure, kept for the
/// requests MPI may still complete into or out of them.
std::vector<std::vector<char>> &abandonedBuffers() {
  static std::vector<std::vector<char>> buffers;
  return buffers;
}

} // namespace

std::string loom::driver::switchPrograms(const loom_program_api &fromApi,
                                         loom_program *from,
                                         const loom_program_api &toApi,
                                         loom_program *to, MPI_Comm callerComm,
                                         const SwitchSettings &settings,
                                         SwitchRecord &record) {
  auto begin = std::chrono::steady_clock::now();
  record = {};
  // The exchange's own communicator: no message of the caller's matches
  // one of the switch's, nor one of an earlier, abandoned switch.
  MPI_Comm comm;
  if (MPI_Comm_dup(callerComm, &comm) != MPI_SUCCESS)
    return "cannot duplicate the communicator";
  struct FreeComm {
    MPI_Comm &comm;
    ~FreeComm() { MPI_Comm_free(&comm); }
  } freeComm{comm};
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The ranks' nodes: those sharing memory with each other (numbered in
  // the order of their lowest rank), unless LOOM_SWITCH_NODES names them.
  // Every rank runs the same collectives here whatever its environment
  // says, then the ranks agree on the override (a rank whose setting
  // differs fails them all, at the digest below).
  layout::Topology topology;
  std::string why = settings.invalid;
  std::vector<int64_t> nodes;
  {
    MPI_Comm shared;
    int leader = rank;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                            &shared) == MPI_SUCCESS) {
      MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, shared);
      MPI_Comm_free(&shared);
    }
    std::vector<int> leaders(static_cast<size_t>(size));
    MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
    std::vector<int> seen;
    for (int r = 0; r < size; ++r) {
      auto at = std::find(seen.begin(), seen.end(), leaders[r]);
      nodes.push_back(at - seen.begin());
      if (at == seen.end())
        seen.push_back(leaders[r]);
    }
  }
  // (What this rank's setting is: 0 none, 1 a list, 2 invalid; and the
  // list's digest.)
  uint64_t setting[2] = {settings.nodesInvalid ? 2u
                         : settings.nodeOf.empty() ? 0u
                                                   : 1u,
                         1469598103934665603ull};
  for (int64_t node : settings.nodeOf)
    setting[1] = (setting[1] ^ static_cast<uint64_t>(node)) * 1099511628211ull;
  uint64_t settingLow[2], settingHigh[2];
  MPI_Allreduce(setting, settingLow, 2, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(setting, settingHigh, 2, MPI_UINT64_T, MPI_MAX, comm);
  if (why.empty() && (settingLow[0] != settingHigh[0] ||
                      settingLow[1] != settingHigh[1]))
    why = "LOOM_SWITCH_NODES differs between the ranks (set it alike on "
          "every rank, or on none)";
  if (why.empty() && !settings.nodeOf.empty()) {
    if (static_cast<int64_t>(settings.nodeOf.size()) != size)
      why = "LOOM_SWITCH_NODES names the nodes of " +
            std::to_string(settings.nodeOf.size()) +
            " ranks, but the communicator has " + std::to_string(size);
    else
      nodes = settings.nodeOf;
  }
  for (size_t r = 0; r < nodes.size(); ++r)
    topology.nodeOf[static_cast<int64_t>(r)] = nodes[r];
  std::vector<Argument> sources, targets;
  std::vector<layout::SwitchTensor> tensors;
  std::vector<std::pair<const Argument *, const Argument *>> pairs;
  layout::SwitchPlan planned;
  if (why.empty())
    why = planPrograms(fromApi, from, toApi, to, settings, topology, sources,
                       targets, tensors, pairs, planned);
  if (why.empty())
    for (const layout::SwitchMessage &message : planned.messages)
      if (message.source >= size || message.destination >= size) {
        why = "the programs' layouts name device " +
              std::to_string(std::max(message.source, message.destination)) +
              " but the communicator has " + std::to_string(size) +
              " ranks (rank r runs device r)";
        break;
      }
  // This rank's shards under the source layouts, packed into what it
  // sends, before the ranks agree: a rank that cannot read or pack fails
  // them all there, rather than leaving them waiting for its messages.
  std::vector<std::vector<char>> ownData(tensors.size());
  std::vector<layout::ShardBytes> own(tensors.size());
  absl::StatusOr<std::vector<std::vector<char>>> packed =
      std::vector<std::vector<char>>();
  // (What throws here, out of memory most likely, fails the switch on
  // every rank at the digest rather than on this one alone.)
  try {
    for (size_t t = 0; t < tensors.size() && why.empty(); ++t) {
      const Argument &arg = *pairs[t].first;
      if (!arg.info.held)
        continue;
      int64_t bytes = shardBytes(arg.info);
      ownData[t].resize(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
      if (loom_status *status = fromApi.get_arg(
              from, arg.index, LOOM_FORM_LOCAL, arg.info.dtype, arg.info.rank,
              arg.info.local_shape, ownData[t].data()))
        why = messageOf(fromApi, status);
      own[t] = {ownData[t].data(), bytes};
    }
    if (why.empty()) {
      packed = layout::packSwitch(planned, tensors, rank, own);
      if (!packed.ok())
        why = std::string(packed.status().message());
    }
  } catch (const std::exception &error) {
    why = std::string("cannot prepare what this rank sends: ") + error.what();
  }
  // Every rank must have planned the same switch (each from its own
  // program's layout tables), or every one fails: the digests compared
  // (every rank reaches this, whether or not it could plan).
  uint64_t digest = why.empty() ? digestOf(tensors, planned) : 0;
  uint64_t lowest = 0, highest = 0;
  MPI_Allreduce(&digest, &lowest, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&digest, &highest, 1, MPI_UINT64_T, MPI_MAX, comm);
  if (!why.empty())
    return why;
  if (lowest == 0)
    return "another rank could not plan the switch or read what it sends";
  if (lowest != highest)
    return "the ranks planned different switches (their programs' argument "
           "layouts disagree)";
  layout::SwitchPlan *plan = &planned;
  // The exchange, unpacking and setting: what fails in them on one rank
  // fails every rank at the agreement after it (each rank gets there: the
  // wait has a deadline), so that no rank goes on while another gave up.
  auto exchange = [&]() -> std::string {
    // Every receive posted before any send; messages in pieces, in order
    // between each pair (MPI does not overtake on one tag and communicator).
    constexpr int kSwitchTag = 0x5717;
    std::vector<std::vector<char>> received;
    std::vector<int64_t> peers;
    for (const layout::SwitchMessage &message : plan->messages)
      if (message.destination == rank) {
        received.emplace_back(static_cast<size_t>(message.bytes));
        peers.push_back(message.source);
      }
    std::vector<MPI_Request> requests;
    std::vector<int64_t> requestPeer;
    std::vector<int> requestBytes;
    std::string posting;
    auto post = [&](char *data, int64_t bytes, int64_t peer, bool send) {
      for (int64_t at = 0; at < bytes && posting.empty();
           at += settings.pieceBytes) {
        int piece = static_cast<int>(std::min(settings.pieceBytes, bytes - at));
        MPI_Request request;
        int code = send ? MPI_Isend(data + at, piece, MPI_BYTE,
                                    static_cast<int>(peer), kSwitchTag, comm,
                                    &request)
                        : MPI_Irecv(data + at, piece, MPI_BYTE,
                                    static_cast<int>(peer), kSwitchTag, comm,
                                    &request);
        if (code != MPI_SUCCESS) {
          posting = std::string("cannot post a message ") +
                    (send ? "to" : "from") + " rank " + std::to_string(peer);
          return;
        }
        requests.push_back(request);
        requestPeer.push_back(send ? -1 : peer);
        requestBytes.push_back(piece);
      }
    };
    for (size_t k = 0; k < received.size(); ++k)
      post(received[k].data(), static_cast<int64_t>(received[k].size()),
           peers[k], /*send=*/false);
    size_t next = 0;
    for (const layout::SwitchMessage &message : plan->messages)
      if (message.source == rank) {
        std::vector<char> &buffer = (*packed)[next++];
        post(buffer.data(), static_cast<int64_t>(buffer.size()),
             message.destination, /*send=*/true);
        record.bytesSent += static_cast<int64_t>(buffer.size());
        if (topology.nodeOf[message.destination] != topology.nodeOf[rank])
          record.bytesSentOffNode += static_cast<int64_t>(buffer.size());
        ++record.messagesSent;
      }
    // After a failure with messages in flight: cancel what can be, and keep
    // every buffer alive for what MPI may still complete.
    auto abandon = [&](const std::string &message) {
      for (size_t r = 0; r < requests.size(); ++r)
        if (requests[r] != MPI_REQUEST_NULL) {
          if (requestPeer[r] >= 0)
            MPI_Cancel(&requests[r]);
          MPI_Request_free(&requests[r]);
        }
      for (std::vector<char> &buffer : received)
        abandonedBuffers().push_back(std::move(buffer));
      for (std::vector<char> &buffer : *packed)
        abandonedBuffers().push_back(std::move(buffer));
      return message;
    };
    if (!posting.empty())
      return abandon(posting);
    for (const std::vector<char> &buffer : received)
      record.bytesReceived += static_cast<int64_t>(buffer.size());
    // Wait, but not for ever (as the runtime's collectives do: the deadline
    // moves with progress).
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(settings.timeoutMs);
    std::vector<int> done(requests.size());
    std::vector<MPI_Status> statuses(requests.size());
    while (!requests.empty()) {
      int completed = 0;
      if (MPI_Testsome(static_cast<int>(requests.size()), requests.data(),
                       &completed, done.data(), statuses.data()) != MPI_SUCCESS)
        return abandon("the exchange failed in MPI");
      if (completed == MPI_UNDEFINED)
        break;
      for (int c = 0; c < completed; ++c) {
        size_t r = static_cast<size_t>(done[c]);
        if (requestPeer[r] < 0)
          continue;
        int count = -1;
        MPI_Get_count(&statuses[c], MPI_BYTE, &count);
        if (count != requestBytes[r])
          return abandon("received " + std::to_string(count) +
                         " bytes from rank " + std::to_string(requestPeer[r]) +
                         " where " + std::to_string(requestBytes[r]) +
                         " were expected");
      }
      if (completed > 0) {
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(settings.timeoutMs);
        continue;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::string missing;
        for (size_t r = 0; r < requests.size(); ++r)
          if (requests[r] != MPI_REQUEST_NULL && requestPeer[r] >= 0)
            missing += (missing.empty() ? "" : ", ") +
                       std::to_string(requestPeer[r]);
        return abandon("the exchange did not complete within " +
                       secondsText(settings.timeoutMs) +
                       " s: still waiting for rank(s) " +
                       (missing.empty() ? "? (its sends)" : missing));
      }
      std::this_thread::yield();
    }
    absl::StatusOr<std::vector<std::vector<char>>> shards =
        layout::unpackSwitch(*plan, tensors, rank, own, received);
    if (!shards.ok())
      return std::string(shards.status().message());
    for (size_t t = 0; t < tensors.size() && !settings.skipSetting; ++t) {
      const Argument &arg = *pairs[t].second;
      if (!arg.info.held)
        continue;
      if (loom_status *status = toApi.set_arg(
              to, arg.index, LOOM_FORM_LOCAL, arg.info.dtype, arg.info.rank,
              arg.info.local_shape, (*shards)[t].data()))
        return messageOf(toApi, status);
    }
    return "";
  };
  std::string local = exchange();
  int ok = local.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!local.empty())
    return local;
  if (!all)
    return "another rank failed the switch after the exchange began (the "
           "target's arguments are in an unknown state)";
  record.planBytes = plan->totalBytes;
  record.arguments = static_cast<int64_t>(tensors.size());
  record.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - begin)
                       .count();
  return "";
}
