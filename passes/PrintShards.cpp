//===- PrintShards.cpp - Print the shard every device holds ---------------===//

#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "hspmd-print-shards"

namespace loom {
#define GEN_PASS_DEF_PRINTSHARDSPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

void printLocation(llvm::raw_ostream &os, Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    os << '"' << fileLoc.getFilename().getValue() << "\":" << fileLoc.getLine()
       << ':' << fileLoc.getColumn();
  else
    loc.print(os);
}

void printLayoutShards(llvm::raw_ostream &os, UnionAttr layout,
                       ArrayRef<int64_t> shape, ClusterAttr cluster,
                       StringRef indent) {
  os << indent << "layout " << layout << '\n';
  for (int64_t device : layout.getAllDevices()) {
    os << indent << "device " << device;
    if (cluster)
      if (DeviceAttr info = cluster.lookup(device))
        os << " (" << info.getKind() << ')';
    os << ": " << *getShard(layout, shape, device) << '\n';
  }
}

struct PrintShardsPass : loom::impl::PrintShardsPassBase<PrintShardsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto cluster = module->getAttrOfType<ClusterAttr>(
        HSPMDDialect::getClusterAttrName());
    AsmState state(module);
    llvm::raw_ostream &os = llvm::outs();
    module.walk([&](AnnotateOp op) {
      RankedTensorType type = op.getInput().getType();
      os << "value ";
      op.getResult().printAsOperand(os, state);
      os << " : " << type << " at ";
      printLocation(os, op.getLoc());
      os << '\n';
      if (!type.hasStaticShape()) {
        os << "  dynamic shape: shards depend on run-time sizes\n";
        return;
      }
      if (auto set = dyn_cast<StrategySetAttr>(op.getLayout())) {
        for (auto [i, name, layout] :
             llvm::enumerate(set.getNames(), set.getLayouts())) {
          os << "  strategy \"" << name.getValue() << '"';
          if (static_cast<int64_t>(i) == set.getOptimizerIndex())
            os << " (optimizer)";
          os << '\n';
          printLayoutShards(os, layout, type.getShape(), cluster, "    ");
        }
        return;
      }
      printLayoutShards(os, cast<UnionAttr>(op.getLayout()), type.getShape(),
                        cluster, "  ");
    });
    markAllAnalysesPreserved();
  }
};

} // namespace
