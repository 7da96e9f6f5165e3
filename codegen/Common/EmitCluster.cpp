//===- EmitCluster.cpp - Each program for its devices' target -------------===//
//
// `--loom-emit-cluster`: the final emission for a cluster description
// (`hspmd.cluster`) whose device groups may be of different kinds. Each
// program (one per device group) is spelled for the target of its devices'
// kind: CPUs the host target, NVIDIA GPUs CUDA, Ascend NPUs Ascend. A
// program's devices must all be of one target. Programs of one target get
// that target's driver; a mixed cluster gets the shared device driver,
// told each program's target, and exchanges between groups run as every
// target runs them: staged through host memory over MPI (the baseline;
// direct device-to-device paths are future work).
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/CallLayerAttrs.h"
#include "codegen/Common/Emission.h"
#include "codegen/Passes.h"
#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "llvm/ADT/StringExtras.h"

namespace loom::codegen {
#define GEN_PASS_DEF_EMITCLUSTERPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom::codegen;

const TargetSpelling *loom::codegen::targetOfKind(StringRef kind) {
  std::string k = kind.lower();
  StringRef text(k);
  if (text == "cpu" || text == "host" || text.starts_with("x86") ||
      text.starts_with("arm") || text.starts_with("aarch64"))
    return &hostSpelling();
  if (text.contains("ascend") || text.contains("npu") ||
      text.starts_with("910") || text.starts_with("310") ||
      text.starts_with("atlas"))
    return &ascendSpelling();
  for (StringRef gpu :
       {"h100", "h200", "h800", "h20", "a100", "a800", "a10", "b100", "b200",
        "gb200", "l4", "l40", "v100", "t4", "rtx", "gpu", "cuda", "nvidia"})
    if (text.starts_with(gpu) || (gpu.size() > 3 && text.contains(gpu)))
      return &cudaSpelling();
  return nullptr;
}

namespace {

struct EmitClusterPass
    : loom::codegen::impl::EmitClusterPassBase<EmitClusterPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto cluster = module->getAttrOfType<loom::hspmd::ClusterAttr>(
        loom::hspmd::HSPMDDialect::getClusterAttrName());
    if (!cluster) {
      module.emitError() << "--loom-emit-cluster needs a cluster description "
                            "(the module attribute hspmd.cluster) to pick "
                            "each program's target";
      return signalPassFailure();
    }
    auto targetOf = [&](emitc::ClassOp cls) -> const TargetSpelling * {
      auto devices = cls->getAttrOfType<DenseI64ArrayAttr>(kDevicesAttr);
      const TargetSpelling *target = nullptr;
      int64_t first = -1;
      for (int64_t id : devices.asArrayRef()) {
        loom::hspmd::DeviceAttr device = cluster.lookup(id);
        if (!device) {
          cls.emitError() << "device " << id << " of @" << cls.getSymName()
                          << " is not in the cluster description";
          return nullptr;
        }
        const TargetSpelling *mine = targetOfKind(device.getKind());
        if (!mine) {
          cls.emitError()
              << "device " << id << " is of kind '" << device.getKind()
              << "', which no target runs (known: cpu, NVIDIA GPUs such as "
                 "h100, h200, a100 for cuda, Ascend NPUs such as 910b for "
                 "ascend)";
          return nullptr;
        }
        if (target && target != mine) {
          cls.emitError() << "@" << cls.getSymName()
                          << " runs on devices of two targets: device " << first
                          << " (" << target->name << ") and device " << id
                          << " (" << mine->name
                          << "); a program's devices must share one target";
          return nullptr;
        }
        if (!target)
          first = id;
        target = mine;
      }
      if (target == &ascendSpelling() && failed(checkAscendCollectives(cls)))
        return nullptr;
      return target;
    };
    if (failed(emitForTargets(module, targetOf)))
      signalPassFailure();
  }
};

} // namespace
