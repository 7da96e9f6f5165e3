//===- HSPMDDialect.td - The hspmd dialect -----------------*- tablegen -*-===//
//
// Hierarchical and heterogeneous SPMD: how tensors are laid out over device
// groups that may differ in size, speed and parallel strategy.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_HSPMD_DIALECT
#define LOOM_HSPMD_DIALECT

include "mlir/IR/OpBase.td"

def HSPMD_Dialect : Dialect {
  let name = "hspmd";
  let cppNamespace = "::loom::hspmd";
  let summary = "Hierarchical and heterogeneous SPMD layouts and communication";
  let description = [{
    The `hspmd` dialect describes where every piece of a tensor lives when a
    program runs on a cluster of possibly different devices.

    A layout is built in three levels:

    * *Distributed states* (`#hspmd.states<[S0:2, D:2]>`): how one device
      group holds a tensor. An ordered list of axes, first axis slowest; each
      axis is a split of a tensor dimension (`S<dim>:<degree>`), a duplicate
      (`D:<degree>`) or a pending reduction (`P(<kind>):<degree>`, kind one of
      `sum`, `mean`, `max`, `min`). The product of the degrees is the group
      size, and the order maps a device's index in its group to its shard
      coordinates.
    * A *union* (`#hspmd.union<...>`): distributed states over disjoint device
      groups, each member local to its group, plus how the groups relate:
      replicated, split along a dimension with per-group shares (ratios or
      explicit sizes, so 3:1 or uneven shares are expressible), or partial.
    * A *strategy set* (`#hspmd.strategies<...>`): one union per parallel
      strategy, for dynamic graph switching, with the strategy that holds
      optimizer state marked.

    The module attribute `hspmd.cluster` describes the devices. When present,
    every device id named by a layout in the module must exist in it.

    Layouts decided by layout propagation are attributes too:
    `hspmd.layout` on a function argument or result (a union or strategy set
    that fits the argument's or result's tensor type), and on an op
    `hspmd.operand_layouts` / `hspmd.result_layouts`: arrays with one union
    per ranked-tensor operand / result, in order, each fitting its type
    (what the op needs and what it produces).

    ```mlir
    module attributes {hspmd.cluster = #hspmd.cluster<[
        #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
        #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>,
        #hspmd.device<2, "910b", speed = 0.5, mem = 64, node = 1>]>} {
      func.func @f(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
        %0 = hspmd.annotate %x : tensor<64x32xf32>
               as #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}>
        return %0 : tensor<64x32xf32>
      }
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The argument / result attribute that holds a function argument's or
    /// result's layout.
    static constexpr ::llvm::StringLiteral getLayoutAttrName() {
      return ::llvm::StringLiteral("hspmd.layout");
    }
    /// The op attributes that hold, per ranked-tensor operand / result, the
    /// layout the op needs / produces.
    static constexpr ::llvm::StringLiteral getOperandLayoutsAttrName() {
      return ::llvm::StringLiteral("hspmd.operand_layouts");
    }
    static constexpr ::llvm::StringLiteral getResultLayoutsAttrName() {
      return ::llvm::StringLiteral("hspmd.result_layouts");
    }
    /// On the arguments and results of a specialised function: the layout
    /// of the global tensor whose block the value is.
    static constexpr ::llvm::StringLiteral getGlobalLayoutAttrName() {
      return ::llvm::StringLiteral("hspmd.global_layout");
    }
    /// Attributes of a specialised function (`hspmd-specialize`): the device
    /// group it runs on and the global function it specialises.
    static constexpr ::llvm::StringLiteral getGroupAttrName() {
      return ::llvm::StringLiteral("hspmd.group");
    }
    static constexpr ::llvm::StringLiteral getSpecializesAttrName() {
      return ::llvm::StringLiteral("hspmd.specializes");
    }
    /// On an `hspmd.sparse_all_gather` that fetches weights ahead of their
    /// use (a placed MoE layer's replicas, `hspmd-moe-sparse-exchange`):
    /// `hspmd-overlap-fetches` starts it early.
    static constexpr ::llvm::StringLiteral getWeightFetchAttrName() {
      return ::llvm::StringLiteral("hspmd.weight_fetch");
    }
    /// On a specialised function whose group's devices hold blocks of
    /// different shapes (uneven splits inside the group): the devices of
    /// the group that run this function, a subset of `hspmd.group` in group
    /// order; the group's other devices run sibling functions. Collectives
    /// still run over `hspmd.group`.
    static constexpr ::llvm::StringLiteral getDevicesAttrName() {
      return ::llvm::StringLiteral("hspmd.devices");
    }
    /// A function laid out across several device groups is partitioned
    /// into one function per group (`hspmd-propagate-layouts`): the
    /// original lists them (`hspmd.parts`), each names the original and its
    /// group's index, and its arguments and results carry the whole
    /// layout of the tensor they hold a part of.
    /// On a function specialised to one strategy of its strategy sets
    /// (`hspmd-specialize-strategies`): the strategy's name.
    static constexpr ::llvm::StringLiteral getStrategyAttrName() {
      return ::llvm::StringLiteral("hspmd.strategy");
    }
    static constexpr ::llvm::StringLiteral getPartsAttrName() {
      return ::llvm::StringLiteral("hspmd.parts");
    }
    static constexpr ::llvm::StringLiteral getPartOfAttrName() {
      return ::llvm::StringLiteral("hspmd.part_of");
    }
    static constexpr ::llvm::StringLiteral getPartAttrName() {
      return ::llvm::StringLiteral("hspmd.part");
    }
    static constexpr ::llvm::StringLiteral getWholeLayoutAttrName() {
      return ::llvm::StringLiteral("hspmd.whole_layout");
    }
    /// The name of the module attribute that holds the cluster description.
    static constexpr ::llvm::StringLiteral getClusterAttrName() {
      return ::llvm::StringLiteral("hspmd.cluster");
    }
  private:
    void registerAttributes();
  public:
  }];
}

#endif // LOOM_HSPMD_DIALECT
