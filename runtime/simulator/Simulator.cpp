//===- Simulator.cpp - N ranks in one process on the interpreter ----------===//

#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/Buffers.h"
#include "runtime/simulator/Sharding.h"
#include "runtime/layout/Collectives.h"
#include "runtime/layout/Shards.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "runtime/interpreter/Convert.h"
#include "runtime/interpreter/KernelRegistry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/raw_ostream.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

using namespace mlir;
using namespace loom;
using namespace loom::sim;
using interp::ElementKind;
using interp::KernelCall;
using interp::Tensor;

int64_t CommStats::getBytesSent() const {
  int64_t total = 0;
  for (const auto &[kind, entry] : byKind)
    total += entry.bytesSent;
  return total;
}

int64_t CommStats::getBytesReceived() const {
  int64_t total = 0;
  for (const auto &[kind, entry] : byKind)
    total += entry.bytesReceived;
  return total;
}

namespace {

int64_t product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t value : values)
    result *= value;
  return result;
}

//===----------------------------------------------------------------------===//
// Rendezvous
//===----------------------------------------------------------------------===//

/// One collective instance: a sub-group's n-th collective.
struct Pending {
  SmallVector<int64_t> members;
  std::vector<const Tensor *> inputs;
  /// The row indices each member names (sparse_reduce_scatter only).
  std::vector<const Tensor *> rows;
  std::vector<Operation *> ops;
  int64_t arrived = 0;
  int64_t taken = 0;
  bool done = false;
  /// Set when the collective cannot be carried out; the op of sub-group
  /// rank 0 reports it.
  std::string error;
  std::vector<Tensor> outputs;
  std::vector<CommStats::Entry> traffic;
};

using PendingKey = std::pair<std::vector<int64_t>, int64_t>;

} // namespace

struct Simulator::Impl {
  Impl(ModuleOp module, int64_t numRanks, interp::InterpreterOptions options)
      : module(module), numRanks(numRanks), stats(numRanks),
        sequence(numRanks) {
    options.assumeVerified = true; // run() verifies once for every rank
    interp::registerAllKernels(registry);
    for (StringRef name : {hspmd::AllReduceOp::getOperationName(),
                           hspmd::AllGatherOp::getOperationName(),
                           hspmd::ReduceScatterOp::getOperationName(),
                           hspmd::AllToAllOp::getOperationName(),
                           hspmd::PermuteOp::getOperationName(),
                           hspmd::LocalSliceOp::getOperationName(),
                           hspmd::MakePartialOp::getOperationName(),
                           hspmd::SparseReduceScatterOp::getOperationName(),
                           hspmd::SparseAllGatherOp::getOperationName(),
                           hspmd::SparseAllGatherStartOp::getOperationName()})
      registry.add(name, [this](KernelCall &call) { return collective(call); });
    registry.add(hspmd::ExchangeOp::getOperationName(),
                 [this](KernelCall &call) { return exchange(call); });
    registry.add(hspmd::SparseExchangeOp::getOperationName(),
                 [this](KernelCall &call) { return sparseExchange(call); });
    registry.add(hspmd::AxisIndexOp::getOperationName(),
                 [this](KernelCall &call) { return axisIndex(call); });
    for (int64_t r = 0; r < numRanks; ++r) {
      interpreters.push_back(
          std::make_unique<interp::Interpreter>(module, registry, options));
      rankOf[interpreters.back().get()] = r;
    }
  }

  LogicalResult collective(KernelCall &call);
  /// hspmd.exchange: a layout change across device groups, by its plan.
  LogicalResult exchange(KernelCall &call);
  /// hspmd.sparse_exchange: a reduce-scatter of named rows among devices
  /// of any groups (device d is rank d).
  LogicalResult sparseExchange(KernelCall &call);
  /// Meets the other `members` (simulator ranks) of the collective `call`
  /// runs, `input` being the rank's operand and `position` its place among
  /// them; the last to arrive carries the collective out (`complete`).
  LogicalResult join(KernelCall &call, int64_t rank,
                     std::vector<int64_t> members, int64_t position,
                     const Tensor &input, const std::string &kind,
                     const Tensor *rows = nullptr);
  /// The ranks the function running `op` spreads its collectives over: the
  /// devices of its `hspmd.group` when several groups' functions run
  /// together (every id a rank: rank r is device r), else ranks 0 .. N-1
  /// (one group's function on every rank, rank r its r-th device).
  SmallVector<int64_t> getGroupRanks(Operation *op) const;
  /// The position of `rank` among getGroupRanks of the call's op, which
  /// must number `meshSize`; failure after a diagnostic.
  FailureOr<int64_t> getGroupIndex(KernelCall &call, int64_t rank,
                                   int64_t meshSize) const;
  /// Under the lock: carries out a complete exchange.
  void completeExchange(Pending &pending);
  /// hspmd.axis_index: the rank's coordinate over mesh axes, times a stride.
  LogicalResult axisIndex(KernelCall &call);
  /// Under the lock: computes the outputs of a complete collective.
  void complete(Pending &pending);
  /// Under the lock: aborts the run when a collective can no longer
  /// complete.
  void checkDeadlock();
  void abort() {
    aborted = true;
    wakeup.notify_all();
  }

  ModuleOp module;
  int64_t numRanks;
  interp::KernelRegistry registry;
  std::vector<std::unique_ptr<interp::Interpreter>> interpreters;
  llvm::DenseMap<const interp::Interpreter *, int64_t> rankOf;
  std::vector<CommStats> stats;

  // The state of a run, guarded by `mutex`.
  std::mutex mutex;
  std::condition_variable wakeup;
  std::map<PendingKey, Pending> pending;
  std::vector<std::map<std::vector<int64_t>, int64_t>> sequence;
  int64_t waiting = 0;
  int64_t finished = 0;
  bool aborted = false;
};

LogicalResult Simulator::Impl::collective(KernelCall &call) {
  Operation *op = call.getOp();
  int64_t rank = rankOf.lookup(&call.getInterpreter());
  std::optional<hspmd::CollectiveView> view = hspmd::getCollectiveView(op);
  if (!view)
    return call.emitError() << "is not a collective the simulator knows";
  if (view->from)
    return call.emitError()
           << "is in the global view (it carries layouts); the simulator "
              "runs local-view programs, after specialisation";
  ArrayRef<int64_t> mesh = view->mesh;
  ArrayRef<int64_t> axes = view->axes;
  FailureOr<int64_t> index = getGroupIndex(call, rank, product(mesh));
  if (failed(index))
    return failure();
  SmallVector<int64_t> ranks = getGroupRanks(op);

  // The rank's sub-group (the layout core's, runtime/layout/Collectives.h).
  std::vector<int64_t> meshSizes(mesh.begin(), mesh.end());
  layout::Subgroup subgroup = layout::getSubgroup(
      meshSizes, std::vector<int64_t>(axes.begin(), axes.end()), *index);
  int64_t k = subgroup.members.size();
  std::vector<int64_t> members;
  for (int64_t member : subgroup.members)
    members.push_back(ranks[member]);
  int64_t position = subgroup.position;
  std::string kind = hspmd::getCollectiveKind(op);
  const Tensor &input = call.operand(0);

  if (auto slice = dyn_cast<hspmd::LocalSliceOp>(op)) {
    call.addResult(getBlock(input, slice.getDim(), k, position));
    std::lock_guard<std::mutex> lock(mutex);
    ++stats[rank].byKind[kind].calls;
    return success();
  }
  if (auto make = dyn_cast<hspmd::MakePartialOp>(op)) {
    // The rank's buffer as its term of the sub-group's sum: its block at
    // its position in zeros, or (from a duplicate) on rank 0 only.
    if (std::optional<int64_t> dim = make.getDim()) {
      SmallVector<int64_t> shape(input.getShape());
      shape[*dim] *= k;
      Tensor out(input.getKind(), shape);
      SmallVector<int64_t> offsets(shape.size(), 0);
      offsets[*dim] = position * input.getShape()[*dim];
      insertBlock(out, input, offsets);
      call.addResult(std::move(out));
    } else {
      call.addResult(position == 0 ? input
                                   : Tensor(input.getKind(), input.getShape()));
    }
    std::lock_guard<std::mutex> lock(mutex);
    ++stats[rank].byKind[kind].calls;
    return success();
  }

  const Tensor *rows =
      isa<hspmd::SparseReduceScatterOp, hspmd::SparseAllGatherOp,
          hspmd::SparseAllGatherStartOp>(op)
          ? &call.operand(1)
          : nullptr;
  return join(call, rank, std::move(members), position, input, kind, rows);
}

LogicalResult Simulator::Impl::join(KernelCall &call, int64_t rank,
                                    std::vector<int64_t> members,
                                    int64_t position, const Tensor &input,
                                    const std::string &kind,
                                    const Tensor *rows) {
  Operation *op = call.getOp();
  int64_t k = members.size();
  std::unique_lock<std::mutex> lock(mutex);
  if (aborted)
    return failure();
  PendingKey key{members, sequence[rank][members]++};
  Pending &entry = pending[key];
  if (entry.inputs.empty()) {
    entry.members.assign(members.begin(), members.end());
    entry.inputs.resize(k, nullptr);
    entry.rows.resize(k, nullptr);
    entry.ops.resize(k, nullptr);
  }
  entry.inputs[position] = &input;
  entry.rows[position] = rows;
  entry.ops[position] = op;
  if (++entry.arrived == k) {
    complete(entry);
    entry.done = true;
    // The other members stop waiting now, not when they wake up: until
    // then a rank that runs on could see everyone "waiting" and take it for
    // a deadlock.
    waiting -= k - 1;
    wakeup.notify_all();
  } else {
    ++waiting;
    checkDeadlock();
    wakeup.wait(lock, [&] { return entry.done || aborted; });
    if (!entry.done)
      --waiting;
  }
  if (!entry.done)
    return failure();
  bool failed = !entry.error.empty();
  if (failed && position == 0)
    op->emitError() << entry.error;
  if (!failed) {
    call.addResult(std::move(entry.outputs[position]));
    CommStats::Entry &counts = stats[rank].byKind[kind];
    ++counts.calls;
    counts.bytesSent += entry.traffic[position].bytesSent;
    counts.bytesReceived += entry.traffic[position].bytesReceived;
  }
  if (++entry.taken == k)
    pending.erase(key);
  if (failed)
    abort();
  return failure(failed);
}

LogicalResult Simulator::Impl::axisIndex(KernelCall &call) {
  auto op = cast<hspmd::AxisIndexOp>(call.getOp());
  int64_t rank = rankOf.lookup(&call.getInterpreter());
  ArrayRef<int64_t> mesh = op.getMesh();
  FailureOr<int64_t> index = getGroupIndex(call, rank, product(mesh));
  if (failed(index))
    return failure();
  int64_t position = layout::getSubgroupPosition(
      std::vector<int64_t>(mesh.begin(), mesh.end()),
      std::vector<int64_t>(op.getAxes().begin(), op.getAxes().end()), *index);
  call.addResult(Tensor::fromValues<int64_t>(
      {}, {position * static_cast<int64_t>(op.getStride()) +
               static_cast<int64_t>(op.getBase())}));
  return success();
}

void Simulator::Impl::complete(Pending &entry) {
  if (isa<hspmd::ExchangeOp>(entry.ops.front()))
    return completeExchange(entry);
  int64_t k = entry.members.size();
  // Every member must run the same collective on the same kind of buffer.
  Operation *first = entry.ops.front();
  // (A sparse exchange's gather takes each member's block, of its size.)
  auto across = dyn_cast<hspmd::SparseExchangeOp>(first);
  bool blocksDiffer = across && across.getGather();
  for (int64_t p = 1; p < k; ++p) {
    Operation *other = entry.ops[p];
    ArrayRef<int64_t> shape = entry.inputs[p]->getShape();
    ArrayRef<int64_t> head = entry.inputs[0]->getShape();
    if (other->getName() != first->getName() ||
        other->getAttrDictionary() != first->getAttrDictionary() ||
        entry.inputs[p]->getKind() != entry.inputs[0]->getKind() ||
        (blocksDiffer ? shape.size() != head.size() ||
                            shape.drop_front() != head.drop_front()
                      : shape != head)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "ranks " << entry.members[0] << " and " << entry.members[p]
         << " of a sub-group disagree on a collective: rank "
         << entry.members[0] << " runs '" << first->getName() << "' "
         << first->getAttrDictionary() << " at " << first->getLoc() << " on "
         << entry.inputs[0]->getTypeString() << ", rank " << entry.members[p]
         << " runs '" << other->getName() << "' " << other->getAttrDictionary()
         << " at " << other->getLoc() << " on "
         << entry.inputs[p]->getTypeString();
      entry.error = text;
      return;
    }
  }
  entry.outputs.resize(k);
  entry.traffic.assign(k, {});
  const Tensor &sample = *entry.inputs.front();
  int64_t bytes = sample.getByteSize();
  int64_t elementSize = interp::getElementSize(sample.getKind());
  // What each member moves: the layout core's semantics of the collective.
  std::optional<layout::Collective> collective =
      layout::parseCollective(hspmd::getCollectiveKind(first));
  if (collective && *collective != layout::Collective::Permute)
    for (int64_t p = 0; p < k; ++p) {
      layout::Traffic traffic =
          layout::getTraffic(*collective, bytes, elementSize, k, p);
      entry.traffic[p] = {1, traffic.sent, traffic.received};
    }
  if (auto op = dyn_cast<hspmd::AllReduceOp>(first)) {
    FailureOr<Tensor> sum =
        reduce(entry.inputs, op.getReduction(), entry.error);
    if (failed(sum))
      return;
    for (int64_t p = 0; p < k; ++p)
      entry.outputs[p] = *sum;
  } else if (auto op = dyn_cast<hspmd::AllGatherOp>(first)) {
    Tensor whole = concatenate(entry.inputs, op.getDim());
    for (int64_t p = 0; p < k; ++p)
      entry.outputs[p] = whole;
  } else if (auto op = dyn_cast<hspmd::ReduceScatterOp>(first)) {
    FailureOr<Tensor> sum =
        reduce(entry.inputs, op.getReduction(), entry.error);
    if (failed(sum))
      return;
    for (int64_t p = 0; p < k; ++p)
      entry.outputs[p] = getBlock(*sum, op.getDim(), k, p);
  } else if (isa<hspmd::SparseReduceScatterOp, hspmd::SparseAllGatherOp,
                 hspmd::SparseAllGatherStartOp, hspmd::SparseExchangeOp>(
                 first)) {
    // Each member's distinct named rows, by the member whose block holds
    // them (layout::getSparseRowsByBlock; a sparse exchange's blocks are
    // its own and may overlap: a row goes to each).
    const Tensor &input = *entry.inputs.front();
    bool gather =
        isa<hspmd::SparseAllGatherOp, hspmd::SparseAllGatherStartOp>(first) ||
                  (across && across.getGather());
    int64_t inputRows = input.getShape()[0];
    int64_t numRows =
        across && gather
            ? cast<RankedTensorType>(first->getResult(0).getType()).getDimSize(0)
        : gather ? inputRows * k
                 : inputRows;
    int64_t rowBytes = product(input.getShape().drop_front()) * elementSize;
    if (!across && !gather && inputRows % k != 0) {
      entry.error = "sparse collective: " + std::to_string(inputRows) +
                    " rows do not divide among " + std::to_string(k) +
                    " members";
      return;
    }
    layout::RowBlocks blocks =
        across ? layout::RowBlocks::fromPairs(across.getBlocks().data(), k)
               : layout::RowBlocks::equal(numRows, k);
    // Each member's block is its own rows (operand or result).
    for (int64_t p = 0; across && p < k; ++p) {
      int64_t held =
          gather ? entry.inputs[p]->getShape()[0]
                 : cast<RankedTensorType>(entry.ops[p]->getResult(0).getType())
                       .getDimSize(0);
      int64_t whole =
          cast<RankedTensorType>(
              (gather ? entry.ops[p]->getResult(0) : entry.ops[p]->getOperand(0))
                  .getType())
              .getDimSize(0);
      if (held != blocks.size[p] || whole != numRows) {
        entry.error = "sparse_exchange: rank " +
                      std::to_string(entry.members[p]) + " holds " +
                      std::to_string(held) + " rows of " +
                      std::to_string(whole) + " where its block is " +
                      std::to_string(blocks.size[p]) + " rows of " +
                      std::to_string(numRows);
        return;
      }
    }
    std::vector<std::vector<std::vector<int64_t>>> named(k);
    for (int64_t q = 0; q < k; ++q) {
      const Tensor &rows = *entry.rows[q];
      if (rows.getKind() != interp::ElementKind::I64) {
        entry.error = "row indices of " + rows.getTypeString() +
                      "; expected i64";
        return;
      }
      // A scattered row goes to each member holding it, a gathered one
      // comes from the first.
      layout::getSparseRowsByBlock(rows.data<int64_t>(), rows.getNumElements(),
                                   numRows, blocks,
                                   /*firstOnly=*/!across || gather, named[q]);
    }
    layout::DType dtype = toLayoutType(input.getKind());
    for (int64_t p = 0; p < k; ++p) {
      int64_t block = blocks.size[p];
      SmallVector<int64_t> shape(input.getShape());
      shape[0] = gather ? numRows : block;
      Tensor out(input.getKind(), shape);
      std::vector<int64_t> mine(k), theirs(k);
      for (int64_t q = 0; q < k; ++q) {
        mine[q] = named[p][q].size();
        theirs[q] = named[q][p].size();
        if (gather) {
          // Zeros but the rows p names, each from its member's block.
          for (int64_t row : named[p][q])
            if (rowBytes > 0)
              std::memcpy(out.rawData() + row * rowBytes,
                          entry.inputs[q]->rawData() +
                              (row - blocks.first[q]) * rowBytes,
                          rowBytes);
          continue;
        }
        // The rows every member sends p, summed in member order into zeros.
        for (int64_t row : named[q][p])
          layout::combineInto(out.rawData() +
                                  (row - blocks.first[p]) * rowBytes,
                              entry.inputs[q]->rawData() + row * rowBytes,
                              rowBytes / elementSize, dtype,
                              layout::Reduction::Sum);
      }
      entry.outputs[p] = std::move(out);
      layout::Traffic traffic = layout::getSparseTraffic(
          gather ? layout::SparseRows::Gather : layout::SparseRows::Scatter,
          mine, theirs, rowBytes, p);
      entry.traffic[p] = {1, traffic.sent, traffic.received};
    }
  } else if (auto op = dyn_cast<hspmd::AllToAllOp>(first)) {
    for (int64_t p = 0; p < k; ++p) {
      std::vector<Tensor> blocks;
      for (const Tensor *input : entry.inputs)
        blocks.push_back(getBlock(*input, op.getSplitDim(), k, p));
      SmallVector<const Tensor *> parts;
      for (const Tensor &block : blocks)
        parts.push_back(&block);
      entry.outputs[p] = concatenate(parts, op.getConcatDim());
    }
  } else if (auto op = dyn_cast<hspmd::PermuteOp>(first)) {
    std::vector<int64_t> sizes = layout::getAxisSizes(
        std::vector<int64_t>(op.getMesh().begin(), op.getMesh().end()),
        std::vector<int64_t>(op.getAxes().begin(), op.getAxes().end()));
    std::vector<int64_t> perm(op.getPerm().begin(), op.getPerm().end());
    for (int64_t p = 0; p < k; ++p) {
      entry.outputs[p] = *entry.inputs[layout::getPermuteSource(p, perm, sizes)];
      layout::Traffic traffic = layout::getPermuteTraffic(bytes, p, perm, sizes);
      entry.traffic[p] = {1, traffic.sent, traffic.received};
    }
  }
}

SmallVector<int64_t> Simulator::Impl::getGroupRanks(Operation *op) const {
  SmallVector<int64_t> ranks;
  // The op's own group (in a program that merges several groups' ops),
  // else its function's.
  auto group = op->getAttrOfType<hspmd::DeviceGroupAttr>(
      hspmd::HSPMDDialect::getGroupAttrName());
  if (auto func = op->getParentOfType<func::FuncOp>(); func && !group)
    group = func->getAttrOfType<hspmd::DeviceGroupAttr>(
        hspmd::HSPMDDialect::getGroupAttrName());
  if (group)
      if (llvm::all_of(group.getDevices(), [&](int64_t device) {
            return device >= 0 && device < numRanks;
          }))
        ranks.assign(group.getDevices().begin(), group.getDevices().end());
  if (ranks.empty())
    for (int64_t r = 0; r < numRanks; ++r)
      ranks.push_back(r);
  return ranks;
}

FailureOr<int64_t> Simulator::Impl::getGroupIndex(KernelCall &call,
                                                  int64_t rank,
                                                  int64_t meshSize) const {
  SmallVector<int64_t> ranks = getGroupRanks(call.getOp());
  if (meshSize != static_cast<int64_t>(ranks.size()))
    return call.emitError() << "runs over a mesh of " << meshSize
                            << " devices but its group has " << ranks.size()
                            << " ranks in the simulator";
  auto it = llvm::find(ranks, rank);
  if (it == ranks.end())
    return call.emitError() << "runs on rank " << rank
                            << ", which is not in its function's group";
  return it - ranks.begin();
}

LogicalResult Simulator::Impl::exchange(KernelCall &call) {
  auto op = cast<hspmd::ExchangeOp>(call.getOp());
  int64_t rank = rankOf.lookup(&call.getInterpreter());
  // Every device of either layout takes part; device d is rank d.
  std::vector<int64_t> members;
  for (hspmd::UnionAttr layout : {op.getSource(), op.getTarget()})
    for (int64_t device : layout.getAllDevices())
      members.push_back(device);
  llvm::sort(members);
  members.erase(llvm::unique(members), members.end());
  if (members.back() >= numRanks || members.front() < 0)
    return call.emitError() << "exchanges among devices up to "
                            << members.back() << " but the simulator has "
                            << numRanks << " ranks (rank d is device d)";
  auto it = llvm::find(members, rank);
  if (it == members.end())
    return call.emitError() << "runs on rank " << rank
                            << ", which holds nothing of either layout";
  int64_t position = it - members.begin();
  return join(call, rank, std::move(members), position, call.operand(0),
              "exchange");
}

LogicalResult Simulator::Impl::sparseExchange(KernelCall &call) {
  auto op = cast<hspmd::SparseExchangeOp>(call.getOp());
  int64_t rank = rankOf.lookup(&call.getInterpreter());
  std::vector<int64_t> members(op.getAmong().begin(), op.getAmong().end());
  if (members.back() >= numRanks)
    return call.emitError() << "runs among devices up to " << members.back()
                            << " but the simulator has " << numRanks
                            << " ranks (rank d is device d)";
  auto it = llvm::find(members, rank);
  if (it == members.end())
    return call.emitError() << "runs on rank " << rank
                            << ", which is not among its devices";
  int64_t position = it - members.begin();
  return join(call, rank, std::move(members), position, call.operand(0),
              "sparse_exchange", &call.operand(1));
}

namespace {

/// Copies the part of `from` (a block at `fromOffsets` of the global
/// tensor) that overlaps `to` (a block at `toOffsets`) into `to`, and adds
/// one to `covered` for every element of `to` it writes.
void copyOverlap(const Tensor &from, ArrayRef<int64_t> fromOffsets,
                 Tensor &to, ArrayRef<int64_t> toOffsets,
                 std::vector<int> &covered) {
  auto boxOf = [](ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
    return layout::Box{std::vector<int64_t>(offsets.begin(), offsets.end()),
                       std::vector<int64_t>(sizes.begin(), sizes.end())};
  };
  layout::Box toBox = boxOf(toOffsets, to.getShape()), box;
  if (!layout::copyOverlap(from.rawData(), boxOf(fromOffsets, from.getShape()),
                           to.rawData(), toBox,
                           interp::getElementSize(from.getKind()), &box))
    return;
  // Mark the elements written.
  int64_t rank = box.sizes.size();
  if (rank == 0) {
    ++covered[0];
    return;
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < layout::getNumElements(box.sizes); ++n) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat = flat * toBox.sizes[d] + box.offsets[d] - toBox.offsets[d] +
             index[d];
    ++covered[flat];
    for (int64_t d = rank - 1; d >= 0 && ++index[d] == box.sizes[d]; --d)
      index[d] = 0;
  }
}

} // namespace

void Simulator::Impl::completeExchange(Pending &entry) {
  int64_t k = entry.members.size();
  auto first = cast<hspmd::ExchangeOp>(entry.ops.front());
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t p = 1; p < k; ++p) {
    Operation *other = entry.ops[p];
    if (other->getName() != first->getName() ||
        other->getAttrDictionary() != first->getAttrDictionary() ||
        entry.inputs[p]->getKind() != entry.inputs[0]->getKind()) {
      os << "ranks " << entry.members[0] << " and " << entry.members[p]
         << " disagree on an exchange: rank " << entry.members[0] << " runs "
         << first->getAttrDictionary() << " at " << first->getLoc()
         << ", rank " << entry.members[p] << " runs '" << other->getName()
         << "' " << other->getAttrDictionary() << " at " << other->getLoc();
      entry.error = text;
      return;
    }
  }
  hspmd::UnionAttr source = first.getSource(), target = first.getTarget();
  ArrayRef<int64_t> shape = first.getShape();
  interp::ElementKind kind = entry.inputs[0]->getKind();
  int64_t elementBytes = interp::getElementSize(kind);
  std::string why;
  FailureOr<hspmd::ExchangePlan> plan =
      hspmd::planExchange(source, target, shape, elementBytes, why);
  if (failed(plan)) {
    entry.error = "cannot plan the exchange: " + why;
    return;
  }
  auto positionOf = [&](int64_t device) {
    return llvm::find(entry.members, device) - entry.members.begin();
  };
  // Every member's block under the source, checked against its operand.
  // (The layout core's shards: the runtime's one implementation.)
  layout::Layout sourceLayout = hspmd::toLayoutCore(source);
  layout::Layout targetLayout = hspmd::toLayoutCore(target);
  std::vector<int64_t> globalShape(shape.begin(), shape.end());
  auto shardOf = [&](const layout::Layout &layout,
                     int64_t device) -> std::optional<layout::Shard> {
    absl::StatusOr<layout::Shard> shard =
        layout::getShard(layout, globalShape, device);
    if (!shard.ok())
      return std::nullopt;
    return *std::move(shard);
  };
  std::vector<std::optional<layout::Shard>> held(k);
  for (int64_t p = 0; p < k; ++p) {
    held[p] = shardOf(sourceLayout, entry.members[p]);
    if (held[p] &&
        entry.inputs[p]->getShape() != ArrayRef<int64_t>(held[p]->sizes)) {
      os << "rank " << entry.members[p] << " holds a "
         << entry.inputs[p]->getTypeString()
         << " but its block of the exchange's source " << source
         << " has shape " << llvm::interleaved_array(held[p]->sizes);
      entry.error = text;
      return;
    }
  }
  bool partial = source.getRelation() == hspmd::UnionRelation::Partial;
  // The reductions, in plan order: every member's contribution to the box,
  // summed in the order of the plan's devices.
  std::vector<Tensor> reduced;
  for (const hspmd::Reduction &reduction : plan->reductions) {
    std::vector<Tensor> parts;
    for (int64_t device : reduction.devices) {
      int64_t p = positionOf(device);
      SmallVector<int64_t> inBlock;
      for (size_t d = 0; d < shape.size(); ++d)
        inBlock.push_back(reduction.offsets[d] - held[p]->offsets[d]);
      parts.push_back(
          extractBlock(*entry.inputs[p], inBlock, reduction.sizes));
    }
    SmallVector<const Tensor *> pointers;
    for (const Tensor &part : parts)
      pointers.push_back(&part);
    FailureOr<Tensor> sum =
        reduce(pointers, hspmd::ReductionKind::Sum, entry.error);
    if (failed(sum))
      return;
    reduced.push_back(std::move(*sum));
  }
  // What device `device` can send of the box at `offsets`/`sizes`: its own
  // block, or (from partial sums) what it has reduced.
  auto sendable = [&](int64_t device, ArrayRef<int64_t> offsets,
                      ArrayRef<int64_t> sizes) -> std::optional<Tensor> {
    Tensor box(kind, sizes);
    std::vector<int> covered(std::max<int64_t>(box.getNumElements(), 1), 0);
    int64_t p = positionOf(device);
    if (!partial) {
      if (p == k || !held[p])
        return std::nullopt;
      copyOverlap(*entry.inputs[p], held[p]->offsets, box, offsets, covered);
    } else {
      for (auto [i, reduction] : llvm::enumerate(plan->reductions))
        if (llvm::is_contained(reduction.devices, device))
          copyOverlap(reduced[i], reduction.offsets, box, offsets, covered);
    }
    if (llvm::any_of(covered, [](int count) { return count != 1; }))
      return std::nullopt;
    return box;
  };

  entry.outputs.resize(k);
  entry.traffic.assign(k, {});
  for (int64_t p = 0; p < k; ++p) {
    int64_t device = entry.members[p];
    entry.traffic[p] = {1, plan->sent[device], plan->received[device]};
    std::optional<layout::Shard> wanted = shardOf(targetLayout, device);
    if (!wanted) {
      // A sending stage: it holds nothing of the target (an empty buffer,
      // or a zero standing in for a 0-d one).
      auto type = cast<RankedTensorType>(entry.ops[p]->getResult(0).getType());
      if (type.getRank() != 0 && type.getNumElements() != 0) {
        os << "device " << device << " holds nothing of the exchange's target "
           << target << " but its result is a " << type;
        entry.error = text;
        return;
      }
      entry.outputs[p] = Tensor(kind, type.getShape());
      continue;
    }
    Tensor out(kind, wanted->sizes);
    std::vector<int> covered(std::max<int64_t>(out.getNumElements(), 1), 0);
    if (!partial && held[p])
      copyOverlap(*entry.inputs[p], held[p]->offsets, out, wanted->offsets,
                  covered);
    if (partial)
      for (auto [i, reduction] : llvm::enumerate(plan->reductions))
        if (llvm::is_contained(reduction.devices, device))
          copyOverlap(reduced[i], reduction.offsets, out, wanted->offsets,
                      covered);
    for (const hspmd::Transfer &transfer : plan->transfers) {
      if (transfer.destination != device)
        continue;
      std::optional<Tensor> data =
          sendable(transfer.source, transfer.offsets, transfer.sizes);
      if (!data) {
        os << "the exchange plan has device " << transfer.source
           << " send a box at " << llvm::interleaved_array(transfer.offsets)
           << " it does not hold (a bug in the planner)";
        entry.error = text;
        return;
      }
      copyOverlap(*data, transfer.offsets, out, wanted->offsets, covered);
    }
    if (out.getNumElements() > 0 &&
        llvm::any_of(covered, [](int count) { return count != 1; })) {
      os << "the exchange plan does not give device " << device
         << " every element of its block exactly once (a bug in the "
            "planner)";
      entry.error = text;
      return;
    }
    entry.outputs[p] = std::move(out);
  }
}

void Simulator::Impl::checkDeadlock() {
  if (aborted || waiting + finished < numRanks)
    return;
  for (auto &[key, entry] : pending) {
    if (entry.done)
      continue;
    std::string arrived, missing;
    llvm::raw_string_ostream arrivedOs(arrived), missingOs(missing);
    Operation *op = nullptr;
    for (auto [p, member] : llvm::enumerate(entry.members)) {
      if (entry.ops[p]) {
        arrivedOs << (arrived.empty() ? "" : ", ") << member;
        op = op ? op : entry.ops[p];
      } else {
        missingOs << (missing.empty() ? "" : ", ") << member;
      }
    }
    op->emitError() << "deadlock: collective #" << key.second
                    << " of the sub-group {"
                    << llvm::join(llvm::map_range(entry.members,
                                                  [](int64_t m) {
                                                    return std::to_string(m);
                                                  }),
                                  ", ")
                    << "} was reached by rank(s) " << arrived
                    << " but never by rank(s) " << missing
                    << ", which finished or wait elsewhere";
    break;
  }
  abort();
}

Simulator::Simulator(ModuleOp module, int64_t numRanks,
                     interp::InterpreterOptions options)
    : impl(std::make_unique<Impl>(module, numRanks, options)) {}

Simulator::~Simulator() = default;

int64_t Simulator::getNumRanks() const { return impl->numRanks; }

const CommStats &Simulator::getStats(int64_t rank) const {
  return impl->stats[rank];
}

FailureOr<std::vector<std::vector<Tensor>>>
Simulator::run(StringRef func, std::vector<std::vector<Tensor>> args) {
  return run(std::vector<std::string>(impl->numRanks, func.str()),
             std::move(args));
}

FailureOr<std::vector<std::vector<Tensor>>>
Simulator::run(ArrayRef<std::string> funcs,
               std::vector<std::vector<Tensor>> args) {
  if (static_cast<int64_t>(args.size()) != impl->numRanks ||
      static_cast<int64_t>(funcs.size()) != impl->numRanks)
    return emitError(impl->module.getLoc())
           << "the simulator has " << impl->numRanks << " ranks but got "
           << args.size() << " argument lists and " << funcs.size()
           << " functions";
  // Verify once here rather than concurrently in every rank's interpreter.
  if (failed(mlir::verify(impl->module)))
    return failure();
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    impl->pending.clear();
    for (auto &perRank : impl->sequence)
      perRank.clear();
    impl->waiting = impl->finished = 0;
    impl->aborted = false;
  }
  std::vector<FailureOr<std::vector<Tensor>>> results(impl->numRanks,
                                                      failure());
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < impl->numRanks; ++r)
    threads.emplace_back([this, r, &funcs, &args, &results] {
      results[r] = impl->interpreters[r]->call(funcs[r], args[r]);
      std::lock_guard<std::mutex> lock(impl->mutex);
      ++impl->finished;
      if (failed(results[r]))
        impl->abort();
      else
        impl->checkDeadlock();
    });
  for (std::thread &thread : threads)
    thread.join();
  std::vector<std::vector<Tensor>> out;
  for (auto &result : results) {
    if (failed(result))
      return failure();
    out.push_back(std::move(*result));
  }
  return out;
}
