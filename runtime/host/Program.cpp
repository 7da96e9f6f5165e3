//===- Program.cpp - Support of generated host programs -------------------===//

#include "runtime/host/Program.h"
#include "runtime/layout/Boxes.h"
#include "runtime/layout/Collectives.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace loom;
using namespace loom::host;
using loom::rt::Communicator;
using loom::rt::ElementType;
using loom::rt::Runtime;

//===----------------------------------------------------------------------===//
// Arena
//===----------------------------------------------------------------------===//

void Arena::Free::operator()(char *p) const { std::free(p); }

Arena::Arena(int64_t bytes) : bytes(bytes) {
  size_t rounded =
      static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  char *memory = static_cast<char *>(std::aligned_alloc(64, rounded));
  if (!memory)
    Runtime::get().fail("cannot allocate the program's arena of " +
                        std::to_string(bytes) + " bytes");
  std::memset(memory, 0, rounded);
  storage.reset(memory);
}

//===----------------------------------------------------------------------===//
// The profiler
//===----------------------------------------------------------------------===//

namespace {

struct TraceEvent {
  std::string name;
  bool comm;
  double start, duration; // microseconds
  /// The thread: 0 compute, 1 the driving thread's communication, 2 the
  /// communication thread's (collectives started ahead of their use).
  int thread;
};

struct Tracer {
  bool enabled = false;
  /// Guards `events`: the communication thread records its spans too.
  std::mutex mutex;
  std::vector<TraceEvent> events;
  double phaseStart = 0;
  std::string phase;
};

Tracer &tracer() {
  static Tracer instance;
  return instance;
}

double nowMicros() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

CommSpan::CommSpan(const char *name)
    : name(name), start(tracer().enabled ? nowMicros() : 0) {}

CommSpan::~CommSpan() {
  Tracer &t = tracer();
  if (!t.enabled)
    return;
  TraceEvent event{name, true, start, nowMicros() - start,
                   Runtime::onCommunicationThread() ? 2 : 1};
  std::lock_guard<std::mutex> lock(t.mutex);
  t.events.push_back(std::move(event));
}

bool loom::host::tracing() { return tracer().enabled; }

void loom::host::setTracing(bool on) { tracer().enabled = on; }

std::string loom::host::getTraceJson(int rank) {
  // One process per rank; compute on thread 0, communication on 1 (on 2
  // where the communication thread ran it).
  std::string json = "[";
  char line[512];
  std::lock_guard<std::mutex> lock(tracer().mutex);
  for (const TraceEvent &event : tracer().events) {
    std::snprintf(line, sizeof(line),
                  "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\","
                  "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                  json.size() > 1 ? ",\n" : "", event.name.c_str(),
                  event.comm ? "communication" : "compute", event.start,
                  event.duration, rank, event.thread);
    json += line;
  }
  return json + "]\n";
}

void loom::host::tracePhaseBegin(const char *name) {
  if (!tracer().enabled)
    return;
  tracer().phase = name;
  tracer().phaseStart = nowMicros();
}

void loom::host::tracePhaseEnd() {
  Tracer &t = tracer();
  if (!t.enabled)
    return;
  TraceEvent event{t.phase, false, t.phaseStart, nowMicros() - t.phaseStart,
                   0};
  std::lock_guard<std::mutex> lock(t.mutex);
  t.events.push_back(std::move(event));
}

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

namespace {

std::string listOf(const std::vector<int> &values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "}";
}

} // namespace

Communicator *loom::host::subgroup(Ints devices, Shape mesh, Shape axes) {
  Runtime &runtime = Runtime::get();
  std::vector<int64_t> group(devices);
  auto self = std::find(group.begin(), group.end(), runtime.getWorldRank());
  if (self == group.end())
    runtime.fail("a program of the device group " +
                 listOf(std::vector<int>(group.begin(), group.end())) +
                 " runs on a rank outside it");
  std::vector<int64_t> meshSizes(mesh.dims, mesh.dims + mesh.rank);
  std::vector<int64_t> axisList(axes.dims, axes.dims + axes.rank);
  std::vector<int> members;
  for (int64_t member :
       layout::getSubgroup(meshSizes, axisList, self - group.begin()).members)
    members.push_back(static_cast<int>(group[member]));
  return &runtime.getGroup(members);
}

void loom::host::openGroups(std::initializer_list<Ints> groups) {
  Runtime &runtime = Runtime::get();
  for (Ints group : groups) {
    std::vector<int> members(group.begin(), group.end());
    if (std::find(members.begin(), members.end(), runtime.getWorldRank()) !=
        members.end())
      runtime.getGroup(members);
  }
}

//===----------------------------------------------------------------------===//
// Boxes of row-major tensors
//===----------------------------------------------------------------------===//

namespace {

/// Copies what the block `from` (at `fromOffsets`, global coordinates) and
/// the block `to` have in common (the layout core's copyOverlap).
void copyOverlap(const char *from, const std::vector<int64_t> &fromOffsets,
                 const std::vector<int64_t> &fromSizes, char *to,
                 const std::vector<int64_t> &toOffsets,
                 const std::vector<int64_t> &toSizes, int64_t elementBytes) {
  layout::copyOverlap(from, {fromOffsets, fromSizes}, to, {toOffsets, toSizes},
                      elementBytes);
}

int64_t product(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t size : sizes)
    n *= size;
  return n;
}

} // namespace

//===----------------------------------------------------------------------===//
// Exchange plans
//===----------------------------------------------------------------------===//

ExchangePlan::ExchangePlan(Ints memberList, Ints tableList)
    : members(memberList) {
  std::vector<int64_t> table(tableList);
  size_t at = 0;
  auto next = [&]() -> int64_t {
    if (at >= table.size())
      Runtime::get().fail("a compiled exchange plan is truncated");
    return table[at++];
  };
  auto box = [&](Box &b) {
    b.offsets.resize(rank);
    b.sizes.resize(rank);
    for (int64_t d = 0; d < rank; ++d)
      b.offsets[d] = next();
    for (int64_t d = 0; d < rank; ++d)
      b.sizes[d] = next();
  };
  rank = next();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(next());
  partial = next() != 0;
  devices.resize(next());
  for (Device &device : devices) {
    device.id = next();
    device.holdsSource = next() != 0;
    box(device.source);
    device.holdsTarget = next() != 0;
    box(device.target);
  }
  reductions.resize(next());
  for (Reduction &reduction : reductions) {
    box(reduction.box);
    reduction.devices.resize(next());
    for (int64_t &device : reduction.devices)
      device = next();
  }
  transfers.resize(next());
  for (Transfer &transfer : transfers) {
    transfer.source = next();
    transfer.destination = next();
    box(transfer.box);
  }
  Runtime &runtime = Runtime::get();
  std::vector<int> ranks(members.begin(), members.end());
  if (std::find(ranks.begin(), ranks.end(), runtime.getWorldRank()) !=
      ranks.end())
    comm = &runtime.getGroup(ranks);
}

void ExchangePlan::run(void *outData, int64_t outElements, const void *inData,
                       int64_t elementBytes, ElementType type) {
  CommSpan span("exchange");
  Runtime &runtime = Runtime::get();
  int64_t me = runtime.getWorldRank();
  if (!comm)
    runtime.fail("runs an exchange it takes no part in");
  runtime.count("exchange").calls += 1;
  auto positionOf = [&](int64_t device) {
    return static_cast<int>(std::find(members.begin(), members.end(), device) -
                            members.begin());
  };
  const Device *self = nullptr;
  for (const Device &device : devices)
    if (device.id == me)
      self = &device;
  if (!self)
    runtime.fail("an exchange plan without this rank");
  char *out = static_cast<char *>(outData);
  const char *in = static_cast<const char *>(inData);
  // A device that holds nothing of the target gets zeros (a 0-d result
  // stands in for nothing), as in the simulator.
  int64_t outBytes =
      (self->holdsTarget ? product(self->target.sizes) : outElements) *
      elementBytes;
  if (out && outBytes > 0)
    std::memset(out, 0, static_cast<size_t>(outBytes));
  if (!partial && self->holdsSource && self->holdsTarget)
    copyOverlap(in, self->source.offsets, self->source.sizes, out,
                self->target.offsets, self->target.sizes, elementBytes);

  // Reductions, in plan order: the box of each contribution, summed in the
  // order of the reduction's devices.
  std::map<size_t, std::vector<char>> reduced;
  for (size_t r = 0; r < reductions.size(); ++r) {
    const Reduction &reduction = reductions[r];
    if (std::find(reduction.devices.begin(), reduction.devices.end(), me) ==
        reduction.devices.end())
      continue;
    std::vector<char> &boxData = reduced[r];
    boxData.resize(
        static_cast<size_t>(product(reduction.box.sizes) * elementBytes));
    std::vector<int64_t> start(rank);
    for (int64_t d = 0; d < rank; ++d)
      start[d] = reduction.box.offsets[d] - self->source.offsets[d];
    layout::copyBox(in, self->source.sizes, start, boxData.data(),
                    reduction.box.sizes, std::vector<int64_t>(rank, 0),
                    reduction.box.sizes, elementBytes);
    std::vector<int> ring;
    for (int64_t device : reduction.devices)
      ring.push_back(positionOf(device));
    comm->allReduceSumAmong(boxData.data(), product(reduction.box.sizes), type,
                            ring, "exchange");
    if (partial && self->holdsTarget)
      copyOverlap(boxData.data(), reduction.box.offsets, reduction.box.sizes,
                  out, self->target.offsets, self->target.sizes, elementBytes);
  }

  // Transfers: the boxes between two devices go as one message, in plan
  // order.
  std::map<int, std::vector<char>> outgoing, incoming;
  std::map<int, std::vector<const Transfer *>> incomingBoxes;
  for (const Transfer &transfer : transfers) {
    int64_t bytes = product(transfer.box.sizes) * elementBytes;
    if (transfer.source == me) {
      std::vector<char> &message = outgoing[positionOf(transfer.destination)];
      size_t base = message.size();
      message.resize(base + static_cast<size_t>(bytes));
      if (!partial) {
        copyOverlap(in, self->source.offsets, self->source.sizes,
                    message.data() + base, transfer.box.offsets,
                    transfer.box.sizes, elementBytes);
      } else {
        for (auto &[r, data] : reduced)
          copyOverlap(data.data(), reductions[r].box.offsets,
                      reductions[r].box.sizes, message.data() + base,
                      transfer.box.offsets, transfer.box.sizes, elementBytes);
      }
    }
    if (transfer.destination == me) {
      int from = positionOf(transfer.source);
      incoming[from].resize(incoming[from].size() + static_cast<size_t>(bytes));
      incomingBoxes[from].push_back(&transfer);
    }
  }
  std::vector<Communicator::Message> sends, receives;
  for (auto &[member, data] : outgoing)
    sends.push_back({member, data.data(), static_cast<int64_t>(data.size())});
  for (auto &[member, data] : incoming)
    receives.push_back(
        {member, data.data(), static_cast<int64_t>(data.size())});
  if (!sends.empty() || !receives.empty())
    comm->sendRecv("exchange", sends, receives, /*countCall=*/false);
  for (auto &[member, boxes] : incomingBoxes) {
    const char *data = incoming[member].data();
    for (const Transfer *transfer : boxes) {
      copyOverlap(data, transfer->box.offsets, transfer->box.sizes, out,
                  self->target.offsets, self->target.sizes, elementBytes);
      data += product(transfer->box.sizes) * elementBytes;
    }
  }
}

//===----------------------------------------------------------------------===//
// Collectives along a dimension
//===----------------------------------------------------------------------===//

namespace {

/// The tensor `shape` seen as [outer, extent of `dim`, inner].
struct Split {
  int64_t outer = 1, extent = 1, inner = 1;
};
Split splitAt(const Shape &shape, int64_t dim) {
  Split split;
  for (int64_t d = 0; d < shape.rank; ++d) {
    if (d < dim)
      split.outer *= shape[d];
    else if (d == dim)
      split.extent = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

/// Copies block `j` of `k` along `dim` of `in` (shape `shape`) into `out`,
/// contiguous.
void packBlock(char *out, const char *in, const Shape &shape, int64_t dim,
               int64_t k, int64_t j, int64_t elementBytes) {
  Split s = splitAt(shape, dim);
  int64_t block = s.extent / k;
  int64_t rowBytes = block * s.inner * elementBytes;
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(out + o * rowBytes,
                in + (o * s.extent + j * block) * s.inner * elementBytes,
                static_cast<size_t>(rowBytes));
}

/// The inverse: a contiguous block `j` into `out` (shape `shape`).
void unpackBlock(char *out, const char *in, const Shape &shape, int64_t dim,
                 int64_t k, int64_t j, int64_t elementBytes) {
  Split s = splitAt(shape, dim);
  int64_t block = s.extent / k;
  int64_t rowBytes = block * s.inner * elementBytes;
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(out + (o * s.extent + j * block) * s.inner * elementBytes,
                in + o * rowBytes, static_cast<size_t>(rowBytes));
}

rt::Reduction reductionOf(const char *op, const char *kind) {
  for (auto [name, value] : {std::pair{"sum", rt::Reduction::Sum},
                             {"mean", rt::Reduction::Mean},
                             {"max", rt::Reduction::Max},
                             {"min", rt::Reduction::Min}})
    if (std::strcmp(kind, name) == 0)
      return value;
  Runtime::get().fail(std::string(op) + ": unknown reduction '" + kind + "'");
}

} // namespace

void loom::host::allReduceBytes(void *out, const void *in, Shape shape,
                                ElementType type, Communicator *comm,
                                const char *kind) {
  CommSpan span("all_reduce");
  rt::Reduction reduction = reductionOf("all_reduce", kind);
  int64_t count = shape.numElements();
  if (out != in && count > 0)
    std::memcpy(out, in, static_cast<size_t>(count * rt::getElementSize(type)));
  comm->allReduce(out, count, type, reduction);
}

void loom::host::allGatherBytes(void *out, Shape outShape, const void *in,
                                Shape inShape, ElementType type,
                                Communicator *comm, int64_t dim) {
  CommSpan span("all_gather");
  int64_t k = comm->getSize();
  int64_t count = inShape.numElements();
  int64_t size = rt::getElementSize(type);
  if (dim == 0 || splitAt(inShape, dim).outer == 1) {
    comm->allGather(in, out, count, type);
    return;
  }
  std::vector<char> gathered(static_cast<size_t>(count * k * size));
  comm->allGather(in, gathered.data(), count, type);
  for (int64_t j = 0; j < k; ++j)
    unpackBlock(static_cast<char *>(out), gathered.data() + j * count * size,
                outShape, dim, k, j, size);
}

void loom::host::reduceScatterBytes(void *out, Shape outShape, const void *in,
                                    Shape inShape, ElementType type,
                                    Communicator *comm, int64_t dim,
                                    const char *kind) {
  CommSpan span("reduce_scatter");
  rt::Reduction reduction = reductionOf("reduce_scatter", kind);
  int64_t k = comm->getSize();
  int64_t count = outShape.numElements();
  int64_t size = rt::getElementSize(type);
  if (dim == 0 || splitAt(inShape, dim).outer == 1) {
    comm->reduceScatter(in, out, count, type, reduction);
    return;
  }
  std::vector<char> packed(static_cast<size_t>(count * k * size));
  for (int64_t j = 0; j < k; ++j)
    packBlock(packed.data() + j * count * size, static_cast<const char *>(in),
              inShape, dim, k, j, size);
  comm->reduceScatter(packed.data(), out, count, type, reduction);
}

void loom::host::allToAllBytes(void *out, Shape outShape, const void *in,
                               Shape inShape, ElementType type,
                               Communicator *comm, int64_t splitDim,
                               int64_t concatDim) {
  CommSpan span("all_to_all");
  int k = comm->getSize();
  int me = comm->getRank();
  int64_t size = rt::getElementSize(type);
  int64_t block = inShape.numElements() / k;
  Runtime::get().count("all_to_all").calls += 1;
  std::vector<char> sendBuffer(static_cast<size_t>(block * k * size));
  std::vector<char> receiveBuffer(static_cast<size_t>(block * k * size));
  for (int j = 0; j < k; ++j)
    packBlock(sendBuffer.data() + j * block * size,
              static_cast<const char *>(in), inShape, splitDim, k, j, size);
  std::memcpy(receiveBuffer.data() + me * block * size,
              sendBuffer.data() + me * block * size,
              static_cast<size_t>(block * size));
  std::vector<Communicator::Message> sends, receives;
  for (int j = 0; j < k; ++j) {
    if (j == me)
      continue;
    sends.push_back({j, sendBuffer.data() + j * block * size, block * size});
    receives.push_back(
        {j, receiveBuffer.data() + j * block * size, block * size});
  }
  if (k > 1)
    comm->sendRecv("all_to_all", sends, receives, /*countCall=*/false);
  for (int j = 0; j < k; ++j)
    unpackBlock(static_cast<char *>(out),
                receiveBuffer.data() + j * block * size, outShape, concatDim, k,
                j, size);
}

namespace {

/// Adds `count` elements of `from` into `into` (the layout core's sum).
void accumulateRow(char *into, const char *from, int64_t count,
                   ElementType type) {
  layout::DType dtype = type == ElementType::F32   ? layout::DType::F32
                        : type == ElementType::F64 ? layout::DType::F64
                                                   : layout::DType::I64;
  layout::combineInto(into, from, count, dtype, layout::Reduction::Sum);
}

/// A sparse collective's rows and counts: the distinct rows this rank
/// names, by the member whose block holds them (`mine`), and how many each
/// other member names in this rank's block (`theirs`, exchanged as 8-byte
/// counts: the first messages of the collective).
struct NamedRows {
  std::vector<std::vector<int64_t>> mine;
  std::vector<int64_t> counts, theirs;
};

/// NamedRows of the `count` indices `rows` into `numRows` rows, for the
/// collective `kind`: an index outside [-1, numRows), or a member naming
/// more rows than a block holds, ends the rank.
NamedRows exchangeNamedRows(const char *kind, const int64_t *rows,
                            int64_t count, int64_t numRows,
                            Communicator *comm,
                            const layout::RowBlocks *blocks = nullptr,
                            bool firstOnly = false) {
  Runtime &runtime = Runtime::get();
  int k = comm->getSize();
  int me = comm->getRank();
  NamedRows named;
  std::string error;
  if (blocks) {
    if (blocks->members() != k)
      runtime.fail(std::string(kind) + ": blocks for " +
                   std::to_string(blocks->members()) + " members over " +
                   std::to_string(k));
    // A scatter's row in several members' blocks goes to each; a gather
    // asks the first.
    layout::getSparseRowsByBlock(rows, count, numRows, *blocks, firstOnly,
                                 named.mine);
  } else if (!layout::getSparseRowsByMember(rows, count, numRows, k,
                                            named.mine, error)) {
    runtime.fail(error + " at step " + std::to_string(runtime.getStep()));
  }
  named.counts.resize(k);
  named.theirs.assign(k, 0);
  for (int j = 0; j < k; ++j)
    named.counts[j] = static_cast<int64_t>(named.mine[j].size());
  std::vector<Communicator::Message> sends, receives;
  for (int j = 0; j < k; ++j) {
    if (j == me)
      continue;
    sends.push_back({j, &named.counts[j], 8});
    receives.push_back({j, &named.theirs[j], 8});
  }
  if (k > 1)
    comm->sendRecv(kind, sends, receives, /*countCall=*/false);
  int64_t block = blocks ? blocks->size[me] : numRows / k;
  for (int j = 0; j < k; ++j)
    if (j != me && (named.theirs[j] < 0 || named.theirs[j] > block))
      runtime.fail(std::string(kind) + ": member " + std::to_string(j) +
                   " names " + std::to_string(named.theirs[j]) +
                   " rows of a block of " + std::to_string(block));
  return named;
}

/// Ends the rank unless `row` is in [first, first + block), as member `j`
/// said it would be.
void checkInBlock(const char *kind, int64_t row, int64_t first, int64_t block,
                  int j) {
  if (row < first || row >= first + block)
    Runtime::get().fail(std::string(kind) + ": member " + std::to_string(j) +
                        " names row " + std::to_string(row) +
                        ", outside this rank's block [" +
                        std::to_string(first) + ", " +
                        std::to_string(first + block) + ")");
}

} // namespace

namespace {

/// hspmd.sparse_reduce_scatter (`blocks` null: the equal blocks of the
/// sub-group) and hspmd.sparse_exchange (`blocks`: each member's rows).
void scatterNamedRows(const char *kind, void *out, Shape outShape,
                      const void *in, Shape inShape, const int64_t *rows,
                      Shape rowsShape, ElementType type, Communicator *comm,
                      const layout::RowBlocks *blocks) {
  CommSpan span(kind);
  Runtime &runtime = Runtime::get();
  runtime.count(kind).calls += 1;
  int k = comm->getSize();
  int me = comm->getRank();
  int64_t numRows = inShape.rank > 0 ? inShape[0] : 0;
  int64_t rowElements = numRows > 0 ? inShape.numElements() / numRows : 0;
  int64_t rowBytes = rowElements * rt::getElementSize(type);
  int64_t block = blocks ? blocks->size[me] : numRows / k;
  bool divides = blocks ? blocks->first[me] + block <= numRows
                        : numRows % k == 0;
  if (!divides || outShape.numElements() != block * rowElements)
    runtime.fail(std::string(kind) + ": a result of " +
                 std::to_string(outShape.numElements()) + " elements for " +
                 std::to_string(numRows) + " rows of " +
                 std::to_string(rowElements) + " over " + std::to_string(k) +
                 " members");
  NamedRows named = exchangeNamedRows(kind, rows, rowsShape.numElements(),
                                      numRows, comm, blocks);
  // Per member one message: the indices, then the rows.
  const char *source = static_cast<const char *>(in);
  std::vector<std::vector<char>> outgoing(k), incoming(k);
  std::vector<Communicator::Message> sends, receives;
  for (int j = 0; j < k; ++j) {
    if (j == me)
      continue;
    int64_t n = named.counts[j];
    if (n > 0) {
      outgoing[j].resize(static_cast<size_t>(n * (8 + rowBytes)));
      char *at = outgoing[j].data();
      std::memcpy(at, named.mine[j].data(), static_cast<size_t>(n * 8));
      for (int64_t i = 0; i < n && rowBytes > 0; ++i)
        std::memcpy(at + n * 8 + i * rowBytes,
                    source + named.mine[j][i] * rowBytes,
                    static_cast<size_t>(rowBytes));
      sends.push_back({j, at, n * (8 + rowBytes)});
    }
    if (named.theirs[j] > 0) {
      incoming[j].resize(
          static_cast<size_t>(named.theirs[j] * (8 + rowBytes)));
      receives.push_back(
          {j, incoming[j].data(), named.theirs[j] * (8 + rowBytes)});
    }
  }
  if (!sends.empty() || !receives.empty())
    comm->sendRecv(kind, sends, receives, /*countCall=*/false);
  // The sum in member order, each member's rows into zeros.
  char *result = static_cast<char *>(out);
  if (block * rowBytes > 0)
    std::memset(result, 0, static_cast<size_t>(block * rowBytes));
  if (rowBytes == 0)
    return;
  int64_t first = blocks ? blocks->first[me] : me * block;
  for (int j = 0; j < k; ++j) {
    if (j == me) {
      for (int64_t row : named.mine[me])
        accumulateRow(result + (row - first) * rowBytes,
                      source + row * rowBytes, rowElements, type);
      continue;
    }
    int64_t n = named.theirs[j];
    const char *at = incoming[j].data();
    for (int64_t i = 0; i < n; ++i) {
      int64_t row;
      std::memcpy(&row, at + i * 8, 8);
      checkInBlock(kind, row, first, block, j);
      accumulateRow(result + (row - first) * rowBytes,
                    at + n * 8 + i * rowBytes, rowElements, type);
    }
  }
}

} // namespace

void loom::host::sparseReduceScatterBytes(void *out, Shape outShape,
                                          const void *in, Shape inShape,
                                          const int64_t *rows, Shape rowsShape,
                                          ElementType type,
                                          Communicator *comm) {
  scatterNamedRows("sparse_reduce_scatter", out, outShape, in, inShape, rows,
                   rowsShape, type, comm, /*blocks=*/nullptr);
}

namespace {
void gatherNamedRows(const char *kind, void *out, Shape outShape,
                     const void *in, Shape inShape, const int64_t *rows,
                     Shape rowsShape, ElementType type, Communicator *comm,
                     const layout::RowBlocks *blocks);
} // namespace

void loom::host::sparseExchangeBytes(void *out, Shape outShape, const void *in,
                                     Shape inShape, const int64_t *rows,
                                     Shape rowsShape, ElementType type,
                                     Communicator *comm,
                                     const std::vector<int64_t> &blocks,
                                     bool gather) {
  if (static_cast<int64_t>(blocks.size()) != 2 * comm->getSize())
    Runtime::get().fail("sparse_exchange: " + std::to_string(blocks.size()) +
                        " block bounds for " +
                        std::to_string(comm->getSize()) + " members");
  layout::RowBlocks rowBlocks =
      layout::RowBlocks::fromPairs(blocks.data(), comm->getSize());
  if (gather)
    gatherNamedRows("sparse_exchange", out, outShape, in, inShape, rows,
                    rowsShape, type, comm, &rowBlocks);
  else
    scatterNamedRows("sparse_exchange", out, outShape, in, inShape, rows,
                     rowsShape, type, comm, &rowBlocks);
}

namespace {

/// hspmd.sparse_all_gather (`blocks` null: the equal blocks of the
/// sub-group) and hspmd.sparse_exchange gather (`blocks`: each member's
/// rows; a row from the first member holding it).
void gatherNamedRows(const char *kind, void *out, Shape outShape,
                     const void *in, Shape inShape, const int64_t *rows,
                     Shape rowsShape, ElementType type, Communicator *comm,
                     const layout::RowBlocks *blocks) {
  CommSpan span(kind);
  Runtime &runtime = Runtime::get();
  runtime.count(kind).calls += 1;
  int k = comm->getSize();
  int me = comm->getRank();
  int64_t block = inShape.rank > 0 ? inShape[0] : 0;
  int64_t numRows = blocks ? (outShape.rank > 0 ? outShape[0] : 0) : block * k;
  int64_t rowElements =
      block > 0 ? inShape.numElements() / block
                : (numRows > 0 ? outShape.numElements() / numRows : 0);
  int64_t rowBytes = rowElements * rt::getElementSize(type);
  if (outShape.numElements() != numRows * rowElements ||
      (blocks && (blocks->size[me] != block ||
                  blocks->first[me] + block > numRows)))
    runtime.fail(std::string(kind) + ": a result of " +
                 std::to_string(outShape.numElements()) + " elements for " +
                 std::to_string(numRows) + " rows of " +
                 std::to_string(rowElements) + " from a block of " +
                 std::to_string(block));
  // The rows to ask each member for (its block holds them), and how many
  // each asks of this rank; then the indices asked.
  NamedRows named = exchangeNamedRows(kind, rows, rowsShape.numElements(),
                                      numRows, comm, blocks,
                                      /*firstOnly=*/true);
  std::vector<std::vector<int64_t>> asked(k);
  std::vector<Communicator::Message> sends, receives;
  for (int j = 0; j < k; ++j) {
    if (j == me)
      continue;
    asked[j].resize(static_cast<size_t>(named.theirs[j]));
    if (named.counts[j] > 0)
      sends.push_back({j, named.mine[j].data(), named.counts[j] * 8});
    if (named.theirs[j] > 0)
      receives.push_back({j, asked[j].data(), named.theirs[j] * 8});
  }
  if (!sends.empty() || !receives.empty())
    comm->sendRecv(kind, sends, receives, /*countCall=*/false);
  // The rows asked of this rank go back; those it asked for come in.
  const char *source = static_cast<const char *>(in);
  int64_t first = blocks ? blocks->first[me] : me * block;
  std::vector<std::vector<char>> answers(k), answered(k);
  sends.clear();
  receives.clear();
  for (int j = 0; j < k && rowBytes > 0; ++j) {
    if (j == me)
      continue;
    if (named.theirs[j] > 0) {
      answers[j].resize(static_cast<size_t>(named.theirs[j] * rowBytes));
      for (int64_t i = 0; i < named.theirs[j]; ++i) {
        checkInBlock(kind, asked[j][i], first, block, j);
        std::memcpy(answers[j].data() + i * rowBytes,
                    source + (asked[j][i] - first) * rowBytes,
                    static_cast<size_t>(rowBytes));
      }
      sends.push_back({j, answers[j].data(), named.theirs[j] * rowBytes});
    }
    if (named.counts[j] > 0) {
      answered[j].resize(static_cast<size_t>(named.counts[j] * rowBytes));
      receives.push_back({j, answered[j].data(), named.counts[j] * rowBytes});
    }
  }
  if (!sends.empty() || !receives.empty())
    comm->sendRecv(kind, sends, receives, /*countCall=*/false);
  // Zeros but the named rows.
  char *result = static_cast<char *>(out);
  if (numRows * rowBytes > 0)
    std::memset(result, 0, static_cast<size_t>(numRows * rowBytes));
  if (rowBytes == 0)
    return;
  for (int j = 0; j < k; ++j)
    for (size_t i = 0; i < named.mine[j].size(); ++i) {
      int64_t row = named.mine[j][i];
      const char *from = j == me ? source + (row - first) * rowBytes
                                 : answered[j].data() + i * rowBytes;
      std::memcpy(result + row * rowBytes, from,
                  static_cast<size_t>(rowBytes));
    }
}

} // namespace

void loom::host::sparseAllGatherBytes(void *out, Shape outShape,
                                      const void *in, Shape inShape,
                                      const int64_t *rows, Shape rowsShape,
                                      ElementType type, Communicator *comm) {
  gatherNamedRows("sparse_all_gather", out, outShape, in, inShape, rows,
                  rowsShape, type, comm, /*blocks=*/nullptr);
}

loom::host::Request::~Request() {
  if (!work)
    return;
  try {
    Runtime::get().complete(*work);
  } catch (...) {
    // A step that failed already reported it.
  }
}

void loom::host::Request::start(std::function<void()> run,
                                std::function<void()> then) {
  if (work) {
    // The previous start of a step that failed before its wait.
    std::shared_ptr<rt::AsyncWork> previous = std::move(work);
    finish = nullptr;
    try {
      Runtime::get().complete(*previous);
    } catch (...) {
    }
  }
  Runtime &runtime = Runtime::get();
  if (!runtime.overlapsCollectives()) {
    run();
    if (then)
      then();
    return;
  }
  work = runtime.post(std::move(run));
  finish = std::move(then);
}

void loom::host::Request::wait() {
  if (!work)
    return;
  std::shared_ptr<rt::AsyncWork> done = std::move(work);
  std::function<void()> then = std::move(finish);
  finish = nullptr;
  Runtime::get().complete(*done);
  if (then)
    then();
}

void loom::host::sparseAllGatherStartBytes(void *out, Shape outShape,
                                           const void *in, Shape inShape,
                                           const int64_t *rows,
                                           Shape rowsShape, ElementType type,
                                           Communicator *comm,
                                           Request &request) {
  // The gather's own communicator: its messages never meet those of the
  // collectives the driving thread runs meanwhile.
  Communicator *twin = Runtime::get().overlapsCollectives()
                           ? &comm->getAsyncTwin()
                           : comm;
  request.start([=] {
    sparseAllGatherBytes(out, outShape, in, inShape, rows, rowsShape, type,
                         twin);
  });
}

void loom::host::localSliceBytes(void *out, Shape outShape, const void *in,
                                 Shape inShape, int64_t elementBytes,
                                 Communicator *comm, int64_t dim) {
  Runtime::get().count("local_slice").calls += 1;
  if (outShape.numElements() == 0)
    return;
  packBlock(static_cast<char *>(out), static_cast<const char *>(in), inShape,
            dim, comm->getSize(), comm->getRank(), elementBytes);
}

void loom::host::makePartialBytes(void *out, Shape outShape, const void *in,
                                  Shape inShape, int64_t elementBytes,
                                  Communicator *comm, int64_t dim) {
  Runtime::get().count("make_partial").calls += 1;
  if (outShape.numElements() == 0)
    return;
  std::memset(out, 0,
              static_cast<size_t>(outShape.numElements() * elementBytes));
  if (dim >= 0)
    unpackBlock(static_cast<char *>(out), static_cast<const char *>(in),
                outShape, dim, comm->getSize(), comm->getRank(), elementBytes);
  else if (comm->getRank() == 0)
    std::memcpy(out, in,
                static_cast<size_t>(inShape.numElements() * elementBytes));
}

//===----------------------------------------------------------------------===//
// Permutations of mesh axes
//===----------------------------------------------------------------------===//

PermutePeers loom::host::permutePeers(int rank, int members, Shape perm,
                                      Shape sizes) {
  Runtime &runtime = Runtime::get();
  std::vector<int64_t> permList(perm.dims, perm.dims + std::max<int64_t>(perm.rank, 0));
  std::vector<int64_t> sizeList(sizes.dims,
                                sizes.dims + std::max<int64_t>(sizes.rank, 0));
  bool valid = perm.rank == sizes.rank && perm.rank >= 0 &&
               sizes.numElements() == members && rank >= 0 && rank < members &&
               layout::isAxisPermutation(permList, sizeList);
  if (!valid) {
    std::string text = "permute: perm {";
    for (int64_t i = 0; i < perm.rank; ++i)
      text += (i ? ", " : "") + std::to_string(perm[i]);
    text += "} over axes of sizes {";
    for (int64_t i = 0; i < sizes.rank; ++i)
      text += (i ? ", " : "") + std::to_string(sizes[i]);
    runtime.fail(text +
                 "} is not a permutation of equal-sized axes of a "
                 "sub-group of " +
                 std::to_string(members) + " members");
  }
  // The layout core's rule (runtime/layout/Collectives.h).
  auto sourceOf = [&](int64_t q) {
    return static_cast<int>(layout::getPermuteSource(q, permList, sizeList));
  };
  auto destinationOf = [&](int64_t q) {
    return static_cast<int>(
        layout::getPermuteDestination(q, permList, sizeList));
  };
  PermutePeers peers;
  peers.source = sourceOf(rank);
  peers.destination = destinationOf(rank);
  // The cycle through this rank: it leads when no member of it is smaller.
  for (int q = peers.destination; q != rank; q = destinationOf(q))
    if (q < rank)
      peers.leads = false;
  return peers;
}

void loom::host::permuteBytes(void *out, const void *in, int64_t bytes,
                              Communicator *comm, Shape perm, Shape sizes) {
  CommSpan span("permute");
  PermutePeers peers =
      permutePeers(comm->getRank(), comm->getSize(), perm, sizes);
  if (peers.source == comm->getRank()) {
    // The rank keeps its buffer: a local copy, nothing on the network.
    Runtime::get().count("permute").calls += 1;
    if (out != in && bytes > 0)
      std::memcpy(out, in, static_cast<size_t>(bytes));
    return;
  }
  // The result may be the operand's buffer: receive aside, then copy.
  std::vector<char> staged(out == in ? static_cast<size_t>(bytes) : 0);
  void *receive = out == in ? static_cast<void *>(staged.data()) : out;
  comm->sendRecv("permute",
                 {{peers.destination, const_cast<void *>(in), bytes}},
                 {{peers.source, receive, bytes}});
  if (out == in && bytes > 0)
    std::memcpy(out, staged.data(), static_cast<size_t>(bytes));
}
