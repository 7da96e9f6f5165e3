//===- Hccl.cpp - HCCL over MPI in the test double ------------------------===//
//
// Part of the CPU test double of CANN (see Double.h): HCCL's communicators
// and collectives carried over MPI, synchronously (the stream is checked
// and counts the collective as launched work). The program initialises MPI
// before its first HCCL call.
//
// HcclGetRootInfo writes a magic string, the caller's MPI_COMM_WORLD rank
// and a per-process sequence number into the root info. In
// HcclCommInitRootInfo the members find each other over MPI_COMM_WORLD
// point to point (not every world rank takes part, so no collective on
// MPI_COMM_WORLD): each member sends (world rank, HCCL rank, size, whether
// its own checks passed) to the root's world rank with a tag derived from
// the sequence number in a reserved range; the root checks them all and
// sends back a status and the members' world ranks ordered by HCCL rank;
// all then create the communicator with MPI_Comm_create_group. A failure
// anywhere fails every member instead of leaving the others waiting.
//
// Every collective first agrees, with one small MPI_Allreduce, that all
// members passed their own checks and call the same collective with the
// same counts, type, operation and root; otherwise all of them fail with
// HCCL_E_PARA (a real HCCL would hang or compute garbage).
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

constexpr char kMagic[] = "loom-ascend-double-root-info-v1";

/// What HcclGetRootInfo writes at the start of the 4108 bytes.
struct RootInfoLayout {
  char magic[sizeof(kMagic)];
  int32_t worldRank;
  int32_t worldSize;
  uint64_t sequence;
};
static_assert(sizeof(RootInfoLayout) <= HCCL_ROOT_INFO_BYTES,
              "the root info layout must fit HcclRootInfo");

/// Tags of the rendezvous, in a range below 32767 (the tag bound every MPI
/// guarantees) that Loom's host runtime does not use.
constexpr int kTagBase = 0x7000;
constexpr int kTagRange = 0x0F00;

struct Communicator {
  uint64_t id = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 0;
};

struct Hccl {
  uint64_t nextCommunicator = 1;
  uint64_t nextSequence = 1;
  std::unordered_map<const void *, std::unique_ptr<Communicator>> comms;
};

Hccl &hccl() {
  static Hccl *instance = new Hccl;
  return *instance;
}

bool mpiRunning() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

HcclResult failHccl(HcclResult code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
HcclResult failHccl(HcclResult code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  char text[1024];
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  fail(code, "%s", text);
  return code;
}

const char *typeName(int type) {
  switch (type) {
  case HCCL_DATA_TYPE_INT8:
    return "int8";
  case HCCL_DATA_TYPE_INT16:
    return "int16";
  case HCCL_DATA_TYPE_INT32:
    return "int32";
  case HCCL_DATA_TYPE_FP16:
    return "fp16";
  case HCCL_DATA_TYPE_FP32:
    return "fp32";
  case HCCL_DATA_TYPE_INT64:
    return "int64";
  case HCCL_DATA_TYPE_UINT64:
    return "uint64";
  case HCCL_DATA_TYPE_UINT8:
    return "uint8";
  case HCCL_DATA_TYPE_UINT16:
    return "uint16";
  case HCCL_DATA_TYPE_UINT32:
    return "uint32";
  case HCCL_DATA_TYPE_FP64:
    return "fp64";
  case HCCL_DATA_TYPE_BFP16:
    return "bfp16";
  default:
    return "unknown";
  }
}

const char *opName(int op) {
  switch (op) {
  case HCCL_REDUCE_SUM:
    return "sum";
  case HCCL_REDUCE_PROD:
    return "prod";
  case HCCL_REDUCE_MAX:
    return "max";
  case HCCL_REDUCE_MIN:
    return "min";
  default:
    return "unknown";
  }
}

/// The MPI type of an HCCL type the double carries, and its size; false for
/// the others.
bool mpiType(int type, MPI_Datatype &datatype, uint64_t &bytes) {
  switch (type) {
  case HCCL_DATA_TYPE_FP32:
    datatype = MPI_FLOAT;
    bytes = 4;
    return true;
  case HCCL_DATA_TYPE_FP64:
    datatype = MPI_DOUBLE;
    bytes = 8;
    return true;
  case HCCL_DATA_TYPE_INT32:
    datatype = MPI_INT32_T;
    bytes = 4;
    return true;
  case HCCL_DATA_TYPE_INT64:
    datatype = MPI_INT64_T;
    bytes = 8;
    return true;
  case HCCL_DATA_TYPE_INT8:
    datatype = MPI_INT8_T;
    bytes = 1;
    return true;
  default:
    return false;
  }
}

bool mpiOp(int op, MPI_Op &result) {
  switch (op) {
  case HCCL_REDUCE_SUM:
    result = MPI_SUM;
    return true;
  case HCCL_REDUCE_PROD:
    result = MPI_PROD;
    return true;
  case HCCL_REDUCE_MAX:
    result = MPI_MAX;
    return true;
  case HCCL_REDUCE_MIN:
    result = MPI_MIN;
    return true;
  default:
    return false;
  }
}

std::string describeComm(HcclComm comm) {
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  auto it = hccl().comms.find(comm);
  if (it == hccl().comms.end())
    return comm ? "unknown" : "null";
  return format("comm%llu", static_cast<unsigned long long>(it->second->id));
}

bool rangesOverlap(const void *a, uint64_t aBytes, const void *b,
                   uint64_t bBytes) {
  if (aBytes == 0 || bBytes == 0)
    return false;
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bBytes && y < x + aBytes;
}

/// One collective call: the local checks, then agreement among the members.
class Collective {
public:
  Collective(const char *function, HcclComm comm, aclrtStream stream)
      : function(function) {
    if (!mpiRunning()) {
      status = failHccl(HCCL_E_INTERNAL,
                        "%s: MPI is not initialised (the program initialises "
                        "MPI before any HCCL call)",
                        function);
      return;
    }
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    auto it = hccl().comms.find(comm);
    if (it == hccl().comms.end()) {
      status = failHccl(HCCL_E_PARA,
                        "%s: not a live communicator (HcclCommInitRootInfo "
                        "makes them, HcclCommDestroy ends them)",
                        function);
      return;
    }
    communicator = it->second.get();
    if (!stream) {
      check(HCCL_E_PARA, "%s: the stream is null", function);
      return;
    }
    Stream *resolved = nullptr;
    if (resolveStream(function, stream, resolved) != ACL_SUCCESS) {
      localStatus = HCCL_E_PARA;
      return;
    }
    ++resolved->pending;
  }

  /// Records a local failure (the first one): the members still agree, so
  /// that all of them fail.
  void check(HcclResult code, const char *format, ...)
      __attribute__((format(printf, 3, 4))) {
    if (localStatus != HCCL_SUCCESS)
      return;
    va_list args;
    va_start(args, format);
    char text[1024];
    std::vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    fail(code, "%s", text);
    localStatus = code;
  }
  bool ok() const { return localStatus == HCCL_SUCCESS; }
  /// The first local failure's code (HCCL_SUCCESS if none).
  HcclResult local() const { return localStatus; }
  /// Whether the communicator is usable at all (else return status()).
  bool usable() const { return communicator != nullptr; }
  HcclResult early() const { return status; }
  const Communicator &comm() const { return *communicator; }

  /// A buffer of `bytes` must lie in device memory.
  void deviceBuffer(const char *what, const void *buffer, uint64_t bytes) {
    if (!ok() || bytes == 0)
      return;
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    if (!buffer)
      return check(HCCL_E_PARA, "%s: %s is null", function, what);
    if (!findAllocation(buffer, bytes))
      check(HCCL_E_PARA,
            "%s: %s (%s, %llu bytes) is not in device memory (inside one "
            "live aclrtMalloc allocation)",
            function, what, describeAddress(buffer).c_str(),
            static_cast<unsigned long long>(bytes));
  }

  /// A count MPI takes as an int.
  int count(const char *what, uint64_t value) {
    if (value > static_cast<uint64_t>(INT_MAX)) {
      check(HCCL_E_NOT_SUPPORT,
            "%s: %s %llu is above 2^31 - 1, which the test double does not "
            "carry",
            function, what, static_cast<unsigned long long>(value));
      return 0;
    }
    return static_cast<int>(value);
  }

  /// Agrees with the other members: all passed their checks and `signature`
  /// is the same everywhere. Returns the call's status.
  HcclResult agree(std::initializer_list<int64_t> signature) {
    // One MPI_MAX reduction over (failed, signature, -signature) gives the
    // maximum and the minimum of each entry.
    std::vector<int64_t> values;
    values.push_back(ok() ? 0 : 1);
    for (int64_t v : signature)
      values.push_back(v);
    for (int64_t v : signature)
      values.push_back(-v);
    std::vector<int64_t> reduced(values.size());
    MPI_Allreduce(values.data(), reduced.data(),
                  static_cast<int>(values.size()), MPI_INT64_T, MPI_MAX,
                  communicator->comm);
    if (!ok())
      return localStatus;
    if (reduced[0])
      return failHccl(HCCL_E_PARA,
                      "%s: another member's call failed its checks", function);
    size_t n = signature.size();
    for (size_t i = 0; i < n; ++i)
      if (reduced[1 + i] != -reduced[1 + n + i])
        return failHccl(HCCL_E_PARA,
                        "%s: the members disagree on the call (counts, type, "
                        "operation or root differ between ranks)",
                        function);
    return HCCL_SUCCESS;
  }

private:
  const char *function;
  Communicator *communicator = nullptr;
  HcclResult status = HCCL_SUCCESS;
  HcclResult localStatus = HCCL_SUCCESS;
};

/// The checks every typed collective shares: the type, and the operation
/// where there is one.
void typeAndOp(Collective &call, const char *function, int type, int op,
               MPI_Datatype &datatype, uint64_t &elementBytes, MPI_Op *mpi) {
  if (!mpiType(type, datatype, elementBytes))
    call.check(HCCL_E_NOT_SUPPORT,
               "%s: data type %s (%d) is not carried by the test double (fp32, "
               "fp64, int32, int64, int8)",
               function, typeName(type), type);
  if (mpi && !mpiOp(op, *mpi))
    call.check(HCCL_E_PARA, "%s: %d is not an HcclReduceOp", function, op);
  // As on Atlas A2/A3: the reducing collectives take no fp64 (all-gather
  // and all-to-all move it).
  if (mpi && type == HCCL_DATA_TYPE_FP64)
    call.check(HCCL_E_NOT_SUPPORT,
               "%s: fp64 is not reduced on Atlas A2/A3 (int8/16/32/64, fp16, "
               "fp32, bf16)",
               function);
}

/// Call kinds in the agreement signature.
enum Kind : int64_t {
  KindAllReduce = 1,
  KindAllGather,
  KindReduceScatter,
  KindBroadcast,
  KindAlltoAllV,
};

/// Tags of HcclSend/HcclRecv on a communicator's MPI communicator (its
/// collectives use no tags): the sender's header (its status, count and
/// type), the receiver's answer (whether both sides passed their checks
/// and agree), then the data.
constexpr int kTagPointHeader = 1;
constexpr int kTagPointAnswer = 2;
constexpr int kTagPointData = 3;

/// The checks HcclSend and HcclRecv share: the peer, the type, the count
/// and the buffer. False when the peer is not another member (then nobody
/// can be told and the call fails alone).
bool pointToPoint(Collective &call, const char *function, const char *peerName,
                  uint32_t peer, int type, uint64_t count, void *buffer,
                  const char *bufferName, MPI_Datatype &datatype, int &n) {
  if (peer >= static_cast<uint32_t>(call.comm().size) ||
      static_cast<int>(peer) == call.comm().rank) {
    call.check(HCCL_E_PARA,
               "%s: %s %u is not another member of the communicator (size "
               "%d, this rank %d)",
               function, peerName, peer, call.comm().size, call.comm().rank);
    return false;
  }
  uint64_t elementBytes = 0;
  typeAndOp(call, function, type, 0, datatype, elementBytes, nullptr);
  n = call.count("count", count);
  call.deviceBuffer(bufferName, buffer, count * elementBytes);
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) {
  CallLog call("HcclGetRootInfo");
  if (!mpiRunning())
    return call.status(failHccl(HCCL_E_INTERNAL,
                                "HcclGetRootInfo: MPI is not initialised (the "
                                "program initialises MPI before any HCCL "
                                "call)"));
  if (!rootInfo)
    return call.status(
        failHccl(HCCL_E_PARA, "HcclGetRootInfo: rootInfo is null"));
  RootInfoLayout layout;
  std::memset(&layout, 0, sizeof(layout));
  std::memcpy(layout.magic, kMagic, sizeof(kMagic));
  MPI_Comm_rank(MPI_COMM_WORLD, &layout.worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &layout.worldSize);
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    layout.sequence = hccl().nextSequence++;
  }
  std::memset(rootInfo->internal, 0, sizeof(rootInfo->internal));
  std::memcpy(rootInfo->internal, &layout, sizeof(layout));
  return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo,
                                uint32_t rank, HcclComm *comm) {
  CallLog call("HcclCommInitRootInfo");
  call.add("nranks=%u rank=%u", nRanks, rank);
  const char *fn = "HcclCommInitRootInfo";
  if (!mpiRunning())
    return call.status(failHccl(HCCL_E_INTERNAL,
                                "%s: MPI is not initialised (the program "
                                "initialises MPI before any HCCL call)",
                                fn));
  if (!rootInfo)
    return call.status(failHccl(HCCL_E_PARA, "%s: rootInfo is null", fn));
  RootInfoLayout layout;
  std::memcpy(&layout, rootInfo->internal, sizeof(layout));
  int worldRank = 0, worldSize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (std::memcmp(layout.magic, kMagic, sizeof(kMagic)) != 0 ||
      layout.worldRank < 0 || layout.worldRank >= worldSize ||
      layout.worldSize != worldSize)
    return call.status(failHccl(HCCL_E_PARA,
                                "%s: rootInfo was not written by "
                                "HcclGetRootInfo of this MPI job",
                                fn));
  if (nRanks == 0 || nRanks > static_cast<uint32_t>(worldSize))
    return call.status(failHccl(HCCL_E_PARA,
                                "%s: nRanks %u is not in [1, %d] (the MPI "
                                "world's size)",
                                fn, nRanks, worldSize));
  // From here on every member takes part in the rendezvous, so that a
  // failing member fails all of them instead of leaving them waiting.
  bool localOk = false;
  int32_t device = 0;
  if (!comm)
    failHccl(HCCL_E_PARA, "%s: comm is null", fn);
  else if (rank >= nRanks)
    failHccl(HCCL_E_PARA, "%s: rank %u is not below nRanks %u", fn, rank,
             nRanks);
  else
    localOk = requireDevice(fn, device) == ACL_SUCCESS;
  // Where this member runs: its node (a hash of the processor name) and
  // device. HCCL takes one rank per NPU.
  char processor[MPI_MAX_PROCESSOR_NAME] = {};
  int processorLength = 0;
  MPI_Get_processor_name(processor, &processorLength);
  int64_t node = 0;
  for (int i = 0; i < processorLength; ++i)
    node = (node * 131 + static_cast<unsigned char>(processor[i])) %
           (int64_t(1) << 40);
  int n = static_cast<int>(nRanks);
  int tag =
      kTagBase + static_cast<int>((layout.sequence * 131 +
                                   static_cast<uint64_t>(layout.worldRank)) %
                                  kTagRange);
  // The reply: a status (0 for success), then the members' world ranks in
  // HCCL rank order.
  std::vector<int64_t> reply(static_cast<size_t>(n) + 1, -1);
  bool isRoot = worldRank == layout.worldRank;
  if (isRoot) {
    std::vector<int64_t> members(static_cast<size_t>(n), -1);
    bool ok = localOk;
    if (localOk)
      members[rank] = worldRank;
    // (node, device) -> the HCCL rank that uses it.
    std::map<std::pair<int64_t, int64_t>, int64_t> devices;
    int64_t sharedDevice = -1, sharedBy[2] = {-1, -1};
    auto place = [&](int64_t memberNode, int64_t memberDevice,
                     int64_t memberRank) {
      auto [it, fresh] =
          devices.emplace(std::make_pair(memberNode, memberDevice), memberRank);
      if (!fresh && sharedDevice < 0) {
        sharedDevice = memberDevice;
        sharedBy[0] = it->second;
        sharedBy[1] = memberRank;
      }
    };
    if (localOk)
      place(node, device, rank);
    std::vector<int> sources;
    for (int i = 0; i + 1 < n; ++i) {
      int64_t message[6];
      MPI_Status status;
      MPI_Recv(message, 6, MPI_INT64_T, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD,
               &status);
      sources.push_back(status.MPI_SOURCE);
      int64_t memberRank = message[1];
      bool fits = message[3] && message[2] == n && memberRank >= 0 &&
                  memberRank < n && members[memberRank] < 0 &&
                  message[0] == status.MPI_SOURCE;
      if (fits) {
        members[memberRank] = message[0];
        place(message[4], message[5], memberRank);
      }
      ok &= fits;
    }
    if (sharedDevice >= 0) {
      ok = false;
      failHccl(HCCL_E_PARA,
               "%s: HCCL ranks %lld and %lld both use device %lld of one node "
               "(HCCL takes one rank per NPU)",
               fn, static_cast<long long>(sharedBy[0]),
               static_cast<long long>(sharedBy[1]),
               static_cast<long long>(sharedDevice));
    }
    reply[0] = ok ? 0 : 1;
    std::copy(members.begin(), members.end(), reply.begin() + 1);
    for (int source : sources)
      MPI_Send(reply.data(), n + 1, MPI_INT64_T, source, tag, MPI_COMM_WORLD);
    if (localOk && !ok && sharedDevice < 0)
      failHccl(HCCL_E_PARA,
               "%s: the members do not fit together (ranks repeated or out of "
               "range, sizes differ, or a member's own checks failed)",
               fn);
  } else {
    int64_t message[6] = {worldRank, static_cast<int64_t>(rank),
                          n,         localOk ? 1 : 0,
                          node,      device};
    MPI_Send(message, 6, MPI_INT64_T, layout.worldRank, tag, MPI_COMM_WORLD);
    MPI_Recv(reply.data(), n + 1, MPI_INT64_T, layout.worldRank, tag,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (localOk && reply[0] != 0)
      failHccl(HCCL_E_PARA,
               "%s: the root found that the members do not fit together "
               "(ranks repeated or out of range, sizes differ, two on one "
               "device, or a member's own checks failed)",
               fn);
  }
  if (!localOk || reply[0] != 0)
    return call.status(HCCL_E_PARA);

  std::vector<int> ranks(reply.begin() + 1, reply.end());
  MPI_Group world, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, n, ranks.data(), &group);
  MPI_Comm created = MPI_COMM_NULL;
  MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &created);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  auto made = std::make_unique<Communicator>();
  made->comm = created;
  MPI_Comm_rank(created, &made->rank);
  MPI_Comm_size(created, &made->size);
  std::lock_guard<std::recursive_mutex> lock(stateMutex());
  made->id = hccl().nextCommunicator++;
  Communicator *handle = made.get();
  hccl().comms.emplace(handle, std::move(made));
  *comm = handle;
  call.add("-> comm%llu", static_cast<unsigned long long>(handle->id));
  return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) {
  CallLog call("HcclCommDestroy");
  call.add("%s", describeComm(comm).c_str());
  if (!mpiRunning())
    return call.status(failHccl(HCCL_E_INTERNAL,
                                "HcclCommDestroy: MPI is not running (destroy "
                                "communicators before MPI_Finalize)"));
  std::unique_ptr<Communicator> owned;
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    auto it = hccl().comms.find(comm);
    if (it == hccl().comms.end())
      return call.status(
          failHccl(HCCL_E_PARA, "HcclCommDestroy: not a live communicator"));
    owned = std::move(it->second);
    hccl().comms.erase(it);
  }
  MPI_Comm_free(&owned->comm);
  return HCCL_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count,
                         HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                         aclrtStream stream) {
  const char *fn = "HcclAllReduce";
  CallLog log(fn);
  int type = enumValue(dataType), opValue = enumValue(op);
  log.add("count=%llu type=%s op=%s comm=%s stream=%s",
          static_cast<unsigned long long>(count), typeName(type),
          opName(opValue), describeComm(comm).c_str(),
          describeStreamHandle(stream).c_str());
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  MPI_Op mpi = MPI_OP_NULL;
  uint64_t elementBytes = 0;
  typeAndOp(call, fn, type, opValue, datatype, elementBytes, &mpi);
  int n = call.count("count", count);
  uint64_t bytes = count * elementBytes;
  call.deviceBuffer("sendBuf", sendBuf, bytes);
  call.deviceBuffer("recvBuf", recvBuf, bytes);
  if (sendBuf != recvBuf && rangesOverlap(sendBuf, bytes, recvBuf, bytes))
    call.check(HCCL_E_PARA, "%s: sendBuf and recvBuf overlap", fn);
  if (HcclResult status = call.agree(
          {KindAllReduce, static_cast<int64_t>(count), type, opValue}))
    return log.status(status);
  MPI_Allreduce(sendBuf == recvBuf ? MPI_IN_PLACE : sendBuf, recvBuf, n,
                datatype, mpi, call.comm().comm);
  return HCCL_SUCCESS;
}

HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount,
                         HcclDataType dataType, HcclComm comm,
                         aclrtStream stream) {
  const char *fn = "HcclAllGather";
  CallLog log(fn);
  int type = enumValue(dataType);
  log.add("count=%llu type=%s comm=%s stream=%s",
          static_cast<unsigned long long>(sendCount), typeName(type),
          describeComm(comm).c_str(), describeStreamHandle(stream).c_str());
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  uint64_t elementBytes = 0;
  typeAndOp(call, fn, type, 0, datatype, elementBytes, nullptr);
  int n = call.count("sendCount", sendCount);
  uint64_t bytes = sendCount * elementBytes;
  uint64_t total = bytes * static_cast<uint64_t>(call.comm().size);
  call.deviceBuffer("sendBuf", sendBuf, bytes);
  call.deviceBuffer("recvBuf", recvBuf, total);
  // In place: the rank's own block of recvBuf is sendBuf.
  bool inPlace =
      recvBuf &&
      static_cast<char *>(recvBuf) + bytes * call.comm().rank == sendBuf;
  if (!inPlace && rangesOverlap(sendBuf, bytes, recvBuf, total))
    call.check(HCCL_E_PARA,
               "%s: sendBuf overlaps recvBuf without being this rank's block "
               "of it",
               fn);
  if (HcclResult status =
          call.agree({KindAllGather, static_cast<int64_t>(sendCount), type}))
    return log.status(status);
  MPI_Allgather(inPlace ? MPI_IN_PLACE : sendBuf, n, datatype, recvBuf, n,
                datatype, call.comm().comm);
  return HCCL_SUCCESS;
}

HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount,
                             HcclDataType dataType, HcclReduceOp op,
                             HcclComm comm, aclrtStream stream) {
  const char *fn = "HcclReduceScatter";
  CallLog log(fn);
  int type = enumValue(dataType), opValue = enumValue(op);
  log.add("count=%llu type=%s op=%s comm=%s stream=%s",
          static_cast<unsigned long long>(recvCount), typeName(type),
          opName(opValue), describeComm(comm).c_str(),
          describeStreamHandle(stream).c_str());
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  MPI_Op mpi = MPI_OP_NULL;
  uint64_t elementBytes = 0;
  typeAndOp(call, fn, type, opValue, datatype, elementBytes, &mpi);
  int n = call.count("recvCount", recvCount);
  uint64_t bytes = recvCount * elementBytes;
  uint64_t total = bytes * static_cast<uint64_t>(call.comm().size);
  bool inPlace = sendBuf == recvBuf;
  call.deviceBuffer("sendBuf", sendBuf, total);
  call.deviceBuffer("recvBuf", recvBuf, inPlace ? total : bytes);
  if (!inPlace && rangesOverlap(sendBuf, total, recvBuf, bytes))
    call.check(HCCL_E_PARA, "%s: sendBuf and recvBuf overlap", fn);
  if (HcclResult status = call.agree(
          {KindReduceScatter, static_cast<int64_t>(recvCount), type, opValue}))
    return log.status(status);
  MPI_Reduce_scatter_block(inPlace ? MPI_IN_PLACE : sendBuf, recvBuf, n,
                           datatype, mpi, call.comm().comm);
  return HCCL_SUCCESS;
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType,
                         uint32_t root, HcclComm comm, aclrtStream stream) {
  const char *fn = "HcclBroadcast";
  CallLog log(fn);
  int type = enumValue(dataType);
  log.add("count=%llu type=%s root=%u comm=%s stream=%s",
          static_cast<unsigned long long>(count), typeName(type), root,
          describeComm(comm).c_str(), describeStreamHandle(stream).c_str());
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  uint64_t elementBytes = 0;
  typeAndOp(call, fn, type, 0, datatype, elementBytes, nullptr);
  int n = call.count("count", count);
  if (root >= static_cast<uint32_t>(call.comm().size))
    call.check(HCCL_E_PARA, "%s: root %u is not below the size %d", fn, root,
               call.comm().size);
  call.deviceBuffer("buf", buf, count * elementBytes);
  if (HcclResult status =
          call.agree({KindBroadcast, static_cast<int64_t>(count), type, root}))
    return log.status(status);
  MPI_Bcast(buf, n, datatype, static_cast<int>(root), call.comm().comm);
  return HCCL_SUCCESS;
}

HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts,
                         const void *sdispls, HcclDataType sendType,
                         const void *recvBuf, const void *recvCounts,
                         const void *rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream) {
  const char *fn = "HcclAlltoAllV";
  CallLog log(fn);
  int type = enumValue(sendType), rtype = enumValue(recvType);
  log.add("type=%s comm=%s stream=%s", typeName(type),
          describeComm(comm).c_str(), describeStreamHandle(stream).c_str());
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  uint64_t elementBytes = 0;
  typeAndOp(call, fn, type, 0, datatype, elementBytes, nullptr);
  if (type != rtype)
    call.check(HCCL_E_PARA,
               "%s: sendType %s and recvType %s differ (the test double "
               "does not convert)",
               fn, typeName(type), typeName(rtype));
  int size = call.comm().size;
  std::vector<int> sc(size), sd(size), rc(size), rd(size);
  // The counts and displacements are uint64_t elements; MPI takes ints.
  uint64_t sendSpan = 0, recvSpan = 0;
  std::vector<uint64_t> sendCountsCopy(size, 0);
  if (!sendCounts || !sdispls || !recvCounts || !rdispls) {
    call.check(HCCL_E_PARA, "%s: a count or displacement array is null", fn);
  } else {
    auto *scIn = static_cast<const uint64_t *>(sendCounts);
    auto *sdIn = static_cast<const uint64_t *>(sdispls);
    auto *rcIn = static_cast<const uint64_t *>(recvCounts);
    auto *rdIn = static_cast<const uint64_t *>(rdispls);
    for (int i = 0; i < size; ++i) {
      sc[i] = call.count("a send count", scIn[i]);
      sd[i] = call.count("a send displacement", sdIn[i]);
      rc[i] = call.count("a receive count", rcIn[i]);
      rd[i] = call.count("a receive displacement", rdIn[i]);
      sendCountsCopy[i] = scIn[i];
      if (scIn[i])
        sendSpan = std::max<uint64_t>(sendSpan, sdIn[i] + scIn[i]);
      if (rcIn[i])
        recvSpan = std::max<uint64_t>(recvSpan, rdIn[i] + rcIn[i]);
    }
  }
  call.deviceBuffer("sendBuf", sendBuf, sendSpan * elementBytes);
  call.deviceBuffer("recvBuf", recvBuf, recvSpan * elementBytes);
  if (rangesOverlap(sendBuf, sendSpan * elementBytes, recvBuf,
                    recvSpan * elementBytes))
    call.check(HCCL_E_PARA, "%s: sendBuf and recvBuf overlap", fn);
  // What each peer sends this rank must be what this rank receives from it.
  std::vector<uint64_t> incoming(size, 0);
  MPI_Alltoall(sendCountsCopy.data(), 1, MPI_UINT64_T, incoming.data(), 1,
               MPI_UINT64_T, call.comm().comm);
  if (call.ok())
    for (int i = 0; i < size; ++i)
      if (incoming[i] != static_cast<uint64_t>(rc[i]))
        call.check(HCCL_E_PARA,
                   "%s: rank %d sends %llu elements to this rank, which "
                   "expects %d",
                   fn, i, static_cast<unsigned long long>(incoming[i]), rc[i]);
  if (HcclResult status = call.agree({KindAlltoAllV, type}))
    return log.status(status);
  MPI_Alltoallv(sendBuf, sc.data(), sd.data(), datatype,
                const_cast<void *>(recvBuf), rc.data(), rd.data(), datatype,
                call.comm().comm);
  return HCCL_SUCCESS;
}

// Point to point: the sender's header, the receiver's answer, the data. A
// send waits for the receive it pairs with (and a receive for its send), as
// HCCL's do in stream order; a send that no receive pairs with waits for
// ever, as on hardware (the device step watchdog ends the rank).

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType,
                    uint32_t destRank, HcclComm comm, aclrtStream stream) {
  const char *fn = "HcclSend";
  CallLog log(fn);
  int type = enumValue(dataType);
  log.add("count=%llu type=%s dest=%u comm=%s stream=%s",
          static_cast<unsigned long long>(count), typeName(type), destRank,
          describeComm(comm).c_str(), describeStreamHandle(stream).c_str());
  // As HCCL: nothing to send is success before any check.
  if (count == 0)
    return HCCL_SUCCESS;
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  int n = 0;
  if (!pointToPoint(call, fn, "destRank", destRank, type, count, sendBuf,
                    "sendBuf", datatype, n))
    return log.status(call.local());
  MPI_Comm mpi = call.comm().comm;
  int peer = static_cast<int>(destRank);
  int64_t header[3] = {call.ok() ? 1 : 0, static_cast<int64_t>(count), type};
  MPI_Send(header, 3, MPI_INT64_T, peer, kTagPointHeader, mpi);
  int64_t answer = 0;
  MPI_Recv(&answer, 1, MPI_INT64_T, peer, kTagPointAnswer, mpi,
           MPI_STATUS_IGNORE);
  if (!call.ok())
    return log.status(call.local());
  if (!answer)
    return log.status(failHccl(
        HCCL_E_PARA,
        "%s: the HcclRecv of rank %u failed its checks or disagrees on the "
        "count or type",
        fn, destRank));
  MPI_Send(sendBuf, n, datatype, peer, kTagPointData, mpi);
  return HCCL_SUCCESS;
}

HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType,
                    uint32_t srcRank, HcclComm comm, aclrtStream stream) {
  const char *fn = "HcclRecv";
  CallLog log(fn);
  int type = enumValue(dataType);
  log.add("count=%llu type=%s src=%u comm=%s stream=%s",
          static_cast<unsigned long long>(count), typeName(type), srcRank,
          describeComm(comm).c_str(), describeStreamHandle(stream).c_str());
  if (count == 0)
    return HCCL_SUCCESS;
  Collective call(fn, comm, stream);
  if (!call.usable())
    return log.status(call.early());
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  int n = 0;
  if (!pointToPoint(call, fn, "srcRank", srcRank, type, count, recvBuf,
                    "recvBuf", datatype, n))
    return log.status(call.local());
  MPI_Comm mpi = call.comm().comm;
  int peer = static_cast<int>(srcRank);
  int64_t header[3] = {0, 0, 0};
  MPI_Recv(header, 3, MPI_INT64_T, peer, kTagPointHeader, mpi,
           MPI_STATUS_IGNORE);
  bool agreed = call.ok() && header[0] &&
                header[1] == static_cast<int64_t>(count) && header[2] == type;
  int64_t answer = agreed ? 1 : 0;
  MPI_Send(&answer, 1, MPI_INT64_T, peer, kTagPointAnswer, mpi);
  if (!call.ok())
    return log.status(call.local());
  if (!agreed)
    return log.status(failHccl(
        HCCL_E_PARA,
        "%s: the HcclSend of rank %u failed its checks or disagrees on the "
        "count or type (it sends %lld elements of %s, this receive expects "
        "%llu of %s)",
        fn, srcRank, static_cast<long long>(header[1]),
        typeName(static_cast<int>(header[2])),
        static_cast<unsigned long long>(count), typeName(type)));
  MPI_Recv(recvBuf, n, datatype, peer, kTagPointData, mpi, MPI_STATUS_IGNORE);
  return HCCL_SUCCESS;
}

const char *HcclGetErrorString(HcclResult code) {
  CallLog call("HcclGetErrorString");
  int value = enumValue(code);
  call.add("code=%d", value);
  // hccl/hccl_types.h's codes, including those AscendApi.h does not name.
  static const char *names[] = {
      "HCCL_SUCCESS: success",
      "HCCL_E_PARA: parameter error",
      "HCCL_E_PTR: empty pointer",
      "HCCL_E_MEMORY: memory error",
      "HCCL_E_INTERNAL: internal error",
      "HCCL_E_NOT_SUPPORT: not supported",
      "HCCL_E_NOT_FOUND: not found",
      "HCCL_E_UNAVAIL: resource unavailable",
      "HCCL_E_SYSCALL: system call error",
      "HCCL_E_TIMEOUT: timeout",
      "HCCL_E_OPEN_FILE_FAILURE: cannot open a file",
      "HCCL_E_TCP_CONNECT: TCP connection failed",
      "HCCL_E_ROCE_CONNECT: RoCE connection failed",
      "HCCL_E_TCP_TRANSFER: TCP transfer failed",
      "HCCL_E_ROCE_TRANSFER: RoCE transfer failed",
      "HCCL_E_RUNTIME: runtime error",
      "HCCL_E_DRV: driver error",
      "HCCL_E_PROFILING: profiling error",
      "HCCL_E_CCE: CCE error",
      "HCCL_E_NETWORK: network error",
      "HCCL_E_AGAIN: try again",
      "HCCL_E_REMOTE: remote error",
      "HCCL_E_SUSPENDING: suspending",
  };
  if (value >= 0 && value < static_cast<int>(std::size(names)))
    return names[value];
  return "unknown HcclResult";
}
