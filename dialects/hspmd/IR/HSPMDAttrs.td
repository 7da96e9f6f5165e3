//===- HSPMDAttrs.td - Attributes of the hspmd dialect -----*- tablegen -*-===//
//
// Layout attributes (device group, distributed states, union, strategy set)
// and the cluster description. Every invariant of an attribute lives in its
// verifier so that every op carrying it gets the same check and message.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_HSPMD_ATTRS
#define LOOM_HSPMD_ATTRS

include "dialects/hspmd/IR/HSPMDDialect.td"
include "dialects/hspmd/IR/HSPMDEnums.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class HSPMD_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<HSPMD_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def HSPMD_ReductionKindAttr
    : EnumAttr<HSPMD_Dialect, HSPMD_ReductionKind, "reduction"> {
  let summary = "A reduction kind as an attribute (of collectives)";
  let description = [{
    `sum`, `mean`, `max` or `min`. Inside an op the value is spelled bare
    (`hspmd.all_reduce sum ...`); on its own it reads
    `#hspmd.reduction<sum>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Device group
//===----------------------------------------------------------------------===//

def HSPMD_DeviceGroupAttr : HSPMD_Attr<"DeviceGroup", "group"> {
  let summary = "An ordered list of distinct device ids";
  let description = [{
    A device group names the devices that hold a tensor together. The order
    matters: the device at position `i` is the group's device *index* `i`,
    which distributed states map to shard coordinates.

    ```mlir
    #hspmd.group<[4, 5, 6, 7]>
    ```

    Constraints: at least one device; ids are non-negative and distinct.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t", "device ids">:$devices);
  let assemblyFormat = "`<` `[` $devices `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The number of devices in the group.
    int64_t size() const { return getDevices().size(); }
    /// The position of `device` in the group, or -1 when it is not a member.
    int64_t indexOf(int64_t device) const;
    /// Whether this group and `other` share a device.
    bool overlaps(DeviceGroupAttr other) const;
  }];
}

//===----------------------------------------------------------------------===//
// Distributed states
//===----------------------------------------------------------------------===//

def HSPMD_DistStatesAttr : HSPMD_Attr<"DistStates", "states"> {
  let summary = "How one device group holds a tensor";
  let description = [{
    Distributed states are an ordered list of axes, the first axis slowest.
    Each axis is one of

    * `S<d>:<n>` — dimension `d` is split into `n` blocks: equal where `n`
      divides it, otherwise balanced (the first `size mod n` blocks one
      element larger: 8 over 3 is 3/3/2);
    * `S<d>:[<s0>, <s1>, ...]` — dimension `d` is split into blocks of the
      listed sizes, one per coordinate (`S1:[16, 8, 8]` keeps heads of 8
      columns whole); they must sum to the dimension the axis cuts;
    * `D:<n>` — the shard is duplicated on `n` devices;
    * `P(<kind>):<n>` — `n` devices each hold a contribution that still has
      to be reduced with `kind` (`sum`, `mean`, `max` or `min`).

    The product of the degrees is the number of devices in the group. A
    device's index `i` in its group is read as a mixed-radix number whose
    digits are the axes' coordinates, the first axis the most significant.
    An empty list `[]` is a single device holding the whole tensor.

    ```mlir
    #hspmd.states<[S0:2, D:2]>        // data parallel 2 x 2 replicas
    #hspmd.states<[P(sum):2, S1:2]>   // partial sums over 2, dim 1 split 2
    #hspmd.states<[S1:[16, 8, 8]]>    // dim 1 as blocks of 16, 8 and 8
    ```

    Constraints: every degree is at least 1 and their product fits in 64
    bits; no axis is named twice (a dimension is split at most once, at most
    one duplicate and one partial axis); a partial axis names its reduction
    kind; split dimensions are non-negative; explicit block sizes are
    positive and belong to split axes. Applied to a tensor, no block may be
    empty and explicit sizes must cover the dimension.
  }];
  let parameters = (ins ArrayRefParameter<"Axis", "axes, first slowest">:$axes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Parses `[S0:2, D:2]` (without the attribute's `<...>`).
    static ::mlir::FailureOr<DistStatesAttr> parseBody(::mlir::AsmParser &parser);
    /// Prints `[S0:2, D:2]`.
    void printBody(::mlir::AsmPrinter &printer) const;

    /// The number of devices these states span: the product of the degrees.
    int64_t getNumDevices() const;
    /// The degree of the duplicate axis, 1 when there is none.
    int64_t getDuplicateDegree() const;
    /// The degree of the partial axis, 1 when there is none.
    int64_t getPartialDegree() const;
    /// The reduction of the partial axis, if there is one.
    std::optional<ReductionKind> getPartialKind() const;
    /// The split degree of tensor dimension `dim` (1 when it is not split).
    int64_t getSplitDegree(int64_t dim) const;
    /// The largest split dimension plus one (the smallest rank these states
    /// can apply to).
    int64_t getMinRank() const;
    /// The coordinate along each axis of the device with index `index`.
    ::llvm::SmallVector<int64_t> getCoordinates(int64_t index) const;
    /// The device index of the given coordinates (inverse of getCoordinates).
    int64_t getIndex(::llvm::ArrayRef<int64_t> coordinates) const;
  }];
}

//===----------------------------------------------------------------------===//
// Union
//===----------------------------------------------------------------------===//

def HSPMD_UnionAttr : HSPMD_Attr<"Union", "union"> {
  let summary = "Distributed states over disjoint device groups";
  let description = [{
    A union lays a tensor out over one or more disjoint device groups. Each
    member pairs a group with distributed states that are *local* to it: they
    describe how the group holds its own part. The relation says what that
    part is:

    * `replicated` — every group holds the whole tensor, complete (no group
      is partial). An element is held by the sum over groups of each group's
      duplicate degree.
    * `split(d) shares [a, b, ...]` — dimension `d` is cut into consecutive
      pieces, one per group in member order, in the ratio `a:b:...`; the
      ratio must divide the dimension exactly.
      `split(d) sizes [x, y, ...]` gives the pieces explicitly; they must sum
      to the dimension. Both express uneven, asymmetric shares.
    * `partial(kind)` — every group holds a contribution to a pending
      reduction of `kind`. An optional `shares [...]` records the fraction of
      the reduced-over work each group did; a `mean` with unequal shares is
      rejected (it would be an average of averages, not the mean).

    A single-member union needs no relation.

    ```mlir
    // 4 fast devices take 3/4 of the batch, 2 slow ones 1/4.
    #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]},
                                         {[4, 5]: [S1:2]}>
    // One group of four doing data parallel 2 x tensor parallel 2.
    #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
    ```

    Constraints: at least one member; groups are pairwise disjoint; each
    group's size equals the device count of its states; a union of several
    groups states its relation; shares are positive, there is one per group
    (explicit sizes always give them) and their total fits in 64 bits;
    members of a replicated union hold complete values (no partial axis);
    members of a split union all hold the same kind of pending reduction or
    none (degrees may differ); a group's local partial kind equals a partial
    relation's kind.
    Checks that need the tensor's shape (ranks, divisibility, sizes that
    cover a dimension) are made by the ops that apply the union to a value.
  }];
  let parameters = (ins
    "UnionRelation":$relation,
    "int64_t":$splitDim,
    "ReductionKind":$reduction,
    ArrayRefParameter<"int64_t", "per-group shares (ratios or sizes)">:$shares,
    "bool":$explicitSizes,
    ArrayRefParameter<"DeviceGroupAttr", "member groups">:$groups,
    ArrayRefParameter<"DistStatesAttr", "member states">:$states
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "DeviceGroupAttr":$group, "DistStatesAttr":$states), [{
      return $_get($_ctxt, UnionRelation::Replicated, -1, ReductionKind::Sum,
                   ::llvm::ArrayRef<int64_t>{}, false,
                   ::llvm::ArrayRef<DeviceGroupAttr>{group},
                   ::llvm::ArrayRef<DistStatesAttr>{states});
    }]>
  ];
  let extraClassDeclaration = [{
    /// Parses the body (without the attribute's `<...>`).
    static ::mlir::FailureOr<UnionAttr> parseBody(::mlir::AsmParser &parser);
    void printBody(::mlir::AsmPrinter &printer) const;

    int64_t getNumGroups() const { return getGroups().size(); }
    /// Every device of every group, in member order.
    ::llvm::SmallVector<int64_t> getAllDevices() const;
    /// The member whose group holds `device`, or -1.
    int64_t getMemberOf(int64_t device) const;
  }];
}

//===----------------------------------------------------------------------===//
// Strategy set
//===----------------------------------------------------------------------===//

def HSPMD_StrategySetAttr : HSPMD_Attr<"StrategySet", "strategies"> {
  let summary = "One layout per parallel strategy, for graph switching";
  let description = [{
    A strategy set gives a tensor one union per named parallel strategy. A
    program carrying strategy sets can switch strategy from step to step;
    the strategy marked `optimizer` is the one whose layout holds the
    optimizer state.

    ```mlir
    #hspmd.strategies<["tp" = <{[0, 1, 2, 3]: [S1:4]}>,
                       "dp" = <{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">
    ```

    Constraints: at least one strategy; names are non-empty and distinct; the
    optimizer strategy is one of them.
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr", "strategy names">:$names,
    ArrayRefParameter<"UnionAttr", "one layout per strategy">:$layouts,
    "int64_t":$optimizerIndex
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getNumStrategies() const { return getNames().size(); }
    /// The layout of the strategy named `name`, or null.
    UnionAttr lookup(::llvm::StringRef name) const;
    UnionAttr getOptimizerLayout() const {
      return getLayouts()[getOptimizerIndex()];
    }
  }];
}

//===----------------------------------------------------------------------===//
// Cluster description
//===----------------------------------------------------------------------===//

def HSPMD_DeviceAttr : HSPMD_Attr<"Device", "device"> {
  let summary = "One device of the cluster";
  let description = [{
    A device with its id, its kind (e.g. `cpu`, `h200`, `910b`), its speed
    relative to the other devices, its memory in GiB and the id of the node
    that hosts it.

    ```mlir
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>
    ```

    Constraints: id and node are non-negative, the kind is non-empty, speed
    and memory are positive.
  }];
  let parameters = (ins
    "int64_t":$id,
    StringRefParameter<"device kind">:$kind,
    APFloatParameter<"relative speed">:$speed,
    "int64_t":$memory,
    "int64_t":$node
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def HSPMD_ClusterAttr : HSPMD_Attr<"Cluster", "cluster"> {
  let summary = "The devices a program may run on";
  let description = [{
    The cluster description, attached to a module as `hspmd.cluster`. When a
    module has one, every device id that a layout inside the module names
    must be one of its devices.

    ```mlir
    module attributes {hspmd.cluster = #hspmd.cluster<[
        #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
        #hspmd.device<1, "910b", speed = 0.5, mem = 64, node = 1>]>} {}
    ```

    Constraints: at least one device; device ids are distinct.
  }];
  let parameters = (ins ArrayRefParameter<"DeviceAttr", "devices">:$devices);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The device with id `id`, or null.
    DeviceAttr lookup(int64_t id) const;
  }];
}

#endif // LOOM_HSPMD_ATTRS
