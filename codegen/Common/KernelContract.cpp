//===- KernelContract.cpp - The generated kernel contracts ----------------===//

#include "codegen/Common/KernelContract.h"

#include "llvm/ADT/StringMap.h"

using namespace loom::codegen;

namespace {
#include "codegen/KernelContract.cpp.inc"
} // namespace

const KernelTarget *KernelContract::getTarget(llvm::StringRef name) const {
  if (name == "host")
    return &host;
  if (name == "cuda")
    return &cuda;
  if (name == "ascend")
    return &ascend;
  return nullptr;
}

const KernelContract *loom::codegen::lookupKernelContract(llvm::StringRef name) {
  static const llvm::StringMap<const KernelContract *> byName = [] {
    llvm::StringMap<const KernelContract *> map;
    for (const KernelContract &contract : kKernelContracts)
      map[contract.op] = &contract;
    return map;
  }();
  return byName.lookup(name);
}

llvm::ArrayRef<KernelContract> loom::codegen::getKernelContracts() {
  return kKernelContracts;
}
