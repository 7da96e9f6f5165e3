//===- CommReport.cpp - Bytes each device moves per step ------------------===//
//
// For every local-view function (after specialisation), what one call (one
// training step) makes each device of its group send and receive, per
// collective kind, computed from the buffer types and the collectives'
// semantics alone. The simulator counts the same quantities while it moves
// the data (runtime/simulator/Simulator.h states what each collective
// moves); tests compare the two line by line.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioning/Utils.h"
#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "runtime/layout/Collectives.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace loom {
#define GEN_PASS_DEF_COMMREPORTPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct Traffic {
  int64_t calls = 0;
  int64_t sent = 0;
  int64_t received = 0;
  /// The bytes are a bound: they depend on the data (sparse collectives).
  bool bound = false;
};

int64_t getBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() *
         ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// What a collective runs over: its mesh, the mesh axes of its sub-groups,
/// their sizes and product (the sub-group size), and the number of devices
/// the mesh covers.
struct Subgroups {
  ArrayRef<int64_t> mesh, axes;
  SmallVector<int64_t> sizes;
  int64_t size = 1;
  int64_t meshDevices = 1;
};

Subgroups getSubgroups(Operation *op) {
  CollectiveView view = *getCollectiveView(op);
  Subgroups subgroups{view.mesh, view.axes, {}, 1, 1};
  for (int64_t axis : view.axes) {
    subgroups.sizes.push_back(view.mesh[axis]);
    subgroups.size *= view.mesh[axis];
  }
  for (int64_t size : view.mesh)
    subgroups.meshDevices *= size;
  return subgroups;
}

/// Adds to `traffic[rank]` what collective `op` makes each rank move.
LogicalResult account(Operation *op,
                      std::vector<std::map<std::string, Traffic>> &traffic) {
  Subgroups subgroups = getSubgroups(op);
  ArrayRef<int64_t> mesh = subgroups.mesh, axes = subgroups.axes;
  int64_t devices = static_cast<int64_t>(traffic.size());
  int64_t k = subgroups.size;
  int64_t meshDevices = subgroups.meshDevices;
  if (meshDevices != devices)
    return op->emitError() << "runs over a mesh of " << meshDevices
                           << " devices in a function of a group of "
                           << devices;
  for (Value operand : op->getOperands())
    if (!cast<RankedTensorType>(operand.getType()).hasStaticShape())
      return op->emitError("has a dynamic buffer; its bytes are unknown");
  std::string kind = hspmd::getCollectiveKind(op);
  int64_t bytes = getBytes(op->getOperand(0).getType());
  int64_t elements =
      cast<RankedTensorType>(op->getOperand(0).getType()).getNumElements();
  int64_t element = elements ? bytes / elements : 0;
  std::vector<int64_t> meshSizes(mesh.begin(), mesh.end());
  std::vector<int64_t> axisList(axes.begin(), axes.end());
  std::optional<layout::Collective> collective = layout::parseCollective(kind);
  for (int64_t rank = 0; rank < devices; ++rank) {
    int64_t position = layout::getSubgroupPosition(meshSizes, axisList, rank);
    Traffic &entry = traffic[rank][kind];
    ++entry.calls;
    // What the layout core says the collective moves.
    layout::Traffic moved;
    if (isa<hspmd::SparseReduceScatterOp, hspmd::SparseAllGatherOp,
            hspmd::SparseAllGatherStartOp>(op)) {
      // Data-dependent: the most the named rows can move.
      bool gather =
          isa<hspmd::SparseAllGatherOp, hspmd::SparseAllGatherStartOp>(op);
      int64_t inputRows =
          cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(0);
      moved = layout::getSparseTrafficBound(
          gather ? layout::SparseRows::Gather : layout::SparseRows::Scatter,
          cast<RankedTensorType>(op->getOperand(1).getType())
              .getNumElements(),
          gather ? inputRows * k : inputRows,
          inputRows ? bytes / inputRows : 0, k);
      entry.bound = true;
    } else if (auto permute = dyn_cast<hspmd::PermuteOp>(op))
      moved = layout::getPermuteTraffic(
          bytes, position,
          std::vector<int64_t>(permute.getPerm().begin(),
                               permute.getPerm().end()),
          layout::getAxisSizes(meshSizes, axisList));
    else if (collective)
      moved = layout::getTraffic(*collective, bytes, element, k, position);
    entry.sent += moved.sent;
    entry.received += moved.received;
  }
  return success();
}

/// The name of an element type as the device runtimes record it.
std::string dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isInteger(64))
    return "i64";
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// Appends to `calls[i]` the device library calls collective `op` makes
/// on device i of `group` (the function's), numbering them in `numbers[i]`:
/// see the pass's description. The communicator of a device is its
/// sub-group as the runtimes form it (runtime/host/Program.cpp,
/// `subgroup`): the devices of the op's group that differ from it only in
/// the digits of `axes`, in the mixed-radix order of those digits.
void predictCalls(Operation *op, hspmd::DeviceGroupAttr group,
                  std::vector<std::vector<std::string>> &calls,
                  std::vector<int64_t> &numbers) {
  if (!isa<hspmd::AllReduceOp, hspmd::AllGatherOp, hspmd::ReduceScatterOp,
           hspmd::AllToAllOp, hspmd::PermuteOp>(op))
    return;
  hspmd::DeviceGroupAttr opGroup = getGroup(op);
  ArrayRef<int64_t> devices =
      opGroup ? opGroup.getDevices() : group.getDevices();
  Subgroups subgroups = getSubgroups(op);
  ArrayRef<int64_t> mesh = subgroups.mesh, axes = subgroups.axes;
  ArrayRef<int64_t> sizes = subgroups.sizes;
  int64_t k = subgroups.size;
  int64_t meshDevices = subgroups.meshDevices;
  auto operand = cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  // (account() reports both.)
  if (meshDevices != static_cast<int64_t>(devices.size()) ||
      !operand.hasStaticShape() || !result.hasStaticShape())
    return;
  int64_t elements = operand.getNumElements();
  std::string dtype = dtypeName(operand.getElementType());
  std::string kind = hspmd::getCollectiveKind(op);
  for (size_t slot = 0; slot < group.getDevices().size(); ++slot) {
    int64_t device = group.getDevices()[slot];
    auto it = llvm::find(devices, device);
    if (it == devices.end())
      continue;
    layout::Subgroup subgroup = layout::getSubgroup(
        std::vector<int64_t>(mesh.begin(), mesh.end()),
        std::vector<int64_t>(axes.begin(), axes.end()), it - devices.begin());
    SmallVector<int64_t> members;
    for (int64_t member : subgroup.members)
      members.push_back(devices[member]);
    int64_t me = subgroup.position;
    std::string head = "call rank " + std::to_string(device) + " #" +
                       std::to_string(++numbers[slot]) + " " + kind + ": ";
    std::string over = " over {";
    for (auto [i, member] : llvm::enumerate(members))
      over += (i ? ", " : "") + std::to_string(member);
    over += "}";
    auto part = [&](StringRef primitive, int64_t count,
                    const std::string &peer) {
      calls[slot].push_back(head + primitive.str() + " " + dtype + " x " +
                            std::to_string(count) + over + peer);
    };
    if (isa<hspmd::AllReduceOp>(op)) {
      part("all_reduce", elements, "");
    } else if (isa<hspmd::AllGatherOp>(op)) {
      part("all_gather", elements, "");
    } else if (isa<hspmd::ReduceScatterOp>(op)) {
      part("reduce_scatter", result.getNumElements(), "");
    } else if (isa<hspmd::AllToAllOp>(op)) {
      // One block to and from every member, itself included, in order.
      for (int64_t member : members) {
        part("send", elements / k, " to " + std::to_string(member));
        part("recv", elements / k, " from " + std::to_string(member));
      }
    } else if (auto permute = dyn_cast<hspmd::PermuteOp>(op)) {
      // Position p takes the buffer of the position whose digit i is p's
      // digit perm[i] (the layout core's rule).
      std::vector<int64_t> perm(permute.getPerm().begin(),
                                permute.getPerm().end());
      std::vector<int64_t> axisSizes(sizes.begin(), sizes.end());
      auto sourceOf = [&](int64_t p) {
        return layout::getPermuteSource(p, perm, axisSizes);
      };
      for (int64_t p = 0; p < k; ++p)
        if (p != me && sourceOf(p) == me)
          part("send", elements, " to " + std::to_string(members[p]));
      if (int64_t source = sourceOf(me); source != me)
        part("recv", elements, " from " + std::to_string(members[source]));
    }
  }
}

/// Adds to `traffic` what exchange `op` makes each device of `group` move,
/// by the exchange's plan.
LogicalResult
accountExchange(hspmd::ExchangeOp op, hspmd::DeviceGroupAttr group,
                std::vector<std::map<std::string, Traffic>> &traffic) {
  if (op.getInput().getType().getRank() !=
      static_cast<int64_t>(op.getShape().size()))
    return op->emitError("does not match its shape");
  Type element = op.getInput().getType().getElementType();
  if (!element.isIntOrFloat())
    return op->emitError("has elements of unknown size");
  std::string why;
  FailureOr<hspmd::ExchangePlan> plan =
      hspmd::planExchange(op.getSource(), op.getTarget(), op.getShape(),
                          (element.getIntOrFloatBitWidth() + 7) / 8, why);
  if (failed(plan))
    return op->emitError("cannot be planned: ") << why;
  for (auto [index, device] : llvm::enumerate(group.getDevices())) {
    Traffic &entry = traffic[index]["exchange"];
    ++entry.calls;
    entry.sent += plan->sent[device];
    entry.received += plan->received[device];
  }
  return success();
}

/// Adds to `traffic` the most sparse exchange `op` can make each device
/// of `group` move (it depends on the rows named).
LogicalResult
accountSparseExchange(hspmd::SparseExchangeOp op, hspmd::DeviceGroupAttr group,
                      std::vector<std::map<std::string, Traffic>> &traffic) {
  auto input = op.getInput().getType();
  if (!input.hasStaticShape() || !op.getRows().getType().hasStaticShape())
    return op->emitError("has a dynamic buffer; its bytes are unknown");
  ArrayRef<int64_t> among = op.getAmong();
  layout::RowBlocks blocks =
      layout::RowBlocks::fromPairs(op.getBlocks().data(), among.size());
  int64_t elements = 1;
  for (int64_t size : input.getShape().drop_front())
    elements *= size;
  int64_t rowBytes =
      elements * ((input.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  for (auto [index, device] : llvm::enumerate(group.getDevices())) {
    auto it = llvm::find(among, device);
    if (it == among.end())
      return op->emitError("runs on device ")
             << device << ", which is not among its devices";
    layout::Traffic moved = layout::getSparseTrafficBound(
        op.getGather() ? layout::SparseRows::Gather
                       : layout::SparseRows::Scatter,
        op.getRows().getType().getNumElements(), blocks, rowBytes,
        it - among.begin());
    Traffic &entry = traffic[index]["sparse_exchange"];
    ++entry.calls;
    entry.sent += moved.sent;
    entry.received += moved.received;
    entry.bound = true;
  }
  return success();
}

struct CommReportPass : loom::impl::CommReportPassBase<CommReportPass> {
  using CommReportPassBase::CommReportPassBase;
  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      hspmd::DeviceGroupAttr group = getGroup(func);
      if (!group)
        continue;
      int64_t devices = group.getDevices().size();
      std::vector<std::map<std::string, Traffic>> traffic(devices);
      std::vector<std::vector<std::string>> libraryCalls(devices);
      std::vector<int64_t> numbers(devices, 0);
      WalkResult walk = func.walk([&](Operation *op) {
        if (auto exchange = dyn_cast<hspmd::ExchangeOp>(op))
          return failed(accountExchange(exchange, group, traffic))
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        if (auto sparse = dyn_cast<hspmd::SparseExchangeOp>(op))
          return failed(accountSparseExchange(sparse, group, traffic))
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        if (!isa<hspmd::AllReduceOp, hspmd::AllGatherOp, hspmd::ReduceScatterOp,
                 hspmd::AllToAllOp, hspmd::PermuteOp, hspmd::LocalSliceOp,
                 hspmd::MakePartialOp, hspmd::SparseReduceScatterOp,
                 hspmd::SparseAllGatherOp, hspmd::SparseAllGatherStartOp>(op))
          return WalkResult::advance();
        if (getCollectiveView(op)->from) {
          op->emitError("is in the global view; the report counts local-view "
                        "functions (run --hspmd-specialize first)");
          return WalkResult::interrupt();
        }
        if (calls)
          predictCalls(op, group, libraryCalls, numbers);
        // In a program that merges several groups' ops, a collective runs
        // over its own group: count it there, keep this program's devices.
        hspmd::DeviceGroupAttr opGroup = getGroup(op);
        if (!opGroup || opGroup == group)
          return failed(account(op, traffic)) ? WalkResult::interrupt()
                                              : WalkResult::advance();
        std::vector<std::map<std::string, Traffic>> overGroup(
            opGroup.getDevices().size());
        if (failed(account(op, overGroup)))
          return WalkResult::interrupt();
        for (auto [index, device] : llvm::enumerate(group.getDevices())) {
          auto it = llvm::find(opGroup.getDevices(), device);
          if (it == opGroup.getDevices().end())
            continue;
          for (auto &[kind, entry] :
               overGroup[it - opGroup.getDevices().begin()]) {
            Traffic &into = traffic[index][kind];
            into.calls += entry.calls;
            into.sent += entry.sent;
            into.received += entry.received;
            into.bound |= entry.bound;
          }
        }
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
      // A function that only some of the group's devices run (blocks of
      // unequal size inside the group: each class of devices has its own)
      // reports those devices; its siblings report the others.
      SmallVector<int64_t> running = getRunningDevices(func);
      auto runs = [&](int64_t rank) {
        return llvm::is_contained(running, group.getDevices()[rank]);
      };
      int64_t total = 0;
      bool bound = false;
      for (auto [rank, perRank] : llvm::enumerate(traffic))
        if (runs(rank))
          for (auto &[kind, entry] : perRank) {
            total += entry.sent;
            bound |= entry.bound;
          }
      os << "comm report @" << func.getSymName() << ": ";
      if (static_cast<int64_t>(running.size()) != devices)
        os << running.size() << " of ";
      os << devices << " devices, " << (bound ? "at most " : "") << total
         << " bytes sent per step in all\n";
      // One group's function among several specialisations of one function
      // (partitioned across groups): ranks are device ids, as when the
      // groups run together.
      bool byDevice = false;
      if (FlatSymbolRefAttr of = getSpecializes(func))
        byDevice = llvm::count_if(getOperation().getOps<func::FuncOp>(),
                                  [&](func::FuncOp other) {
                                    return getSpecializes(other) == of;
                                  }) > 1;
      for (int64_t rank = 0; rank < devices; ++rank)
        for (auto &[kind, entry] : runs(rank) ? traffic[rank]
                                              : std::map<std::string, Traffic>())
          os << "rank " << (byDevice ? group.getDevices()[rank] : rank) << " "
             << kind << ": calls " << entry.calls << ", bytes sent "
             << (entry.bound ? "at most " : "") << entry.sent << ", received "
             << (entry.bound ? "at most " : "") << entry.received << "\n";
      for (auto [rank, lines] : llvm::enumerate(libraryCalls))
        if (runs(rank))
          for (const std::string &line : lines)
            os << line << "\n";
    }
    os.flush();
    markAllAnalysesPreserved();
  }
};

} // namespace
