//===- HSPMDOps.td - Operations of the hspmd dialect -------*- tablegen -*-===//

#ifndef LOOM_HSPMD_OPS
#define LOOM_HSPMD_OPS

include "dialects/hspmd/IR/HSPMDAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class HSPMD_Op<string mnemonic, list<Trait> traits = []>
    : Op<HSPMD_Dialect, mnemonic, traits>;

def HSPMD_LayoutAttr : AnyAttrOf<[HSPMD_UnionAttr, HSPMD_StrategySetAttr]>;

def HSPMD_AnnotateOp : HSPMD_Op<"annotate",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Constrains the layout of a value";
  let description = [{
    States that the value is laid out as `layout`: a union, or a strategy
    set with one union per parallel strategy. The result is the same value;
    annotations are constraints that layout deduction starts from.

    ```mlir
    %y = hspmd.annotate %x : tensor<64x1024xf32> as #hspmd.union<
           split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
    ```

    Constraints: the layout fits the tensor type: split dimensions are within
    the rank, shares cover their dimension exactly, and every even split
    divides the part of the dimension its group holds.
  }];
  let arguments = (ins AnyRankedTensor:$input, HSPMD_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `:` type($input) `as` $layout attr-dict";
  let hasVerifier = 1;
}

def HSPMD_ReshardOp : HSPMD_Op<"reshard",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Changes the layout of a value";
  let description = [{
    An abstract layout change: the value laid out as `source` becomes the
    same logical value laid out as `target`. Lowering turns it into
    collectives or point-to-point transfers.

    ```mlir
    %y = hspmd.reshard %x : tensor<8x8xf32>
           from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
    ```

    Constraints: both layouts fit the tensor type, and both are unions or both
    are strategy sets with the same strategy names.
  }];
  let arguments = (ins AnyRankedTensor:$input, HSPMD_LayoutAttr:$source,
                       HSPMD_LayoutAttr:$target);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `:` type($input) `from` $source `to` $target attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class HSPMD_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : HSPMD_Op<mnemonic, !listconcat(traits, [Pure])> {
  code commonDescription = [{

    Sub-groups: the devices of the group, in order, are read as mixed-radix
    numbers over the mesh `of [n0, n1, ...]` (first digit slowest, product =
    group size); the collective runs within every set of devices that differ
    only in the digits of the mesh axes `over [a, ...]` (strictly
    increasing). `subgroups` lists them. A device's rank inside its
    sub-group is the mixed-radix number of those digits.

    Two views. In the global view (what reshard lowering produces) the op
    carries `from` and `to` layouts, its operand and result have the global
    tensor type, and its value is its operand: it only moves data between
    devices, so the single-device interpreter runs the lowered program
    unchanged. In the local view (after specialisation) there are no
    layouts and the types are one device's buffers.

    Global-view constraints: `from` and `to` are single-group unions on the
    same group; the mesh is one both can be read on, i.e. their common mesh
    (`refineMesh`) or a refinement of it (every axis of each layout covers
    whole mesh axes); and, read on the mesh, `to` is exactly what the op
    makes of `from` (dialects/hspmd/IR/HSPMDTransitions.h): the axes in
    `over` change as the op's summary says (all_reduce P(kind) -> D,
    reduce_scatter P(kind) -> S(dim), all_gather S(dim) -> D, local_slice
    D -> S(dim), make_partial S(dim) or D -> P(sum), all_to_all S(concat)
    -> S(split), permute moves the role
    of axis `over[i]` to axis `over[perm[i]]`), every other axis keeps its
    role. A gathered or cut split must be the innermost of the mesh axes
    that split its dimension (so blocks stay contiguous), and a permute
    keeps the order of the axes that split one dimension.
  }];
  code commonFormat = [{
    `over` $axes `of` $mesh `:` type($input) `->` type($result)
    (`from` $from^ `to` $to)? attr-dict
  }];
  let results = (outs AnyRankedTensor:$result);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The devices of each sub-group, as indices into the group (0 ..
    /// product(mesh) - 1), in rank order.
    ::llvm::SmallVector<::llvm::SmallVector<int64_t>> getSubgroupIndices();
    /// The number of devices in each sub-group.
    int64_t getSubgroupSize();
  }];
}

def HSPMD_AllReduceOp : HSPMD_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Reduces partial values within each sub-group";
  let description = [{
    Every device of a sub-group contributes its buffer; every device gets
    the reduction (`sum`, `mean`, `max`, `min`) of all of them. Resolves a
    partial axis into a duplicate one.

    ```mlir
    %y = hspmd.all_reduce sum %x over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, HSPMD_ReductionKindAttr:$reduction,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat = "custom<ReductionKind>($reduction) $input " # commonFormat;
}

def HSPMD_AllGatherOp : HSPMD_CollectiveOp<"all_gather"> {
  let summary = "Concatenates the buffers of each sub-group along a dimension";
  let description = [{
    Every device gets the concatenation, in sub-group rank order, of the
    sub-group's buffers along `dim`. Turns a split axis into a duplicate
    one. Local view: the result's `dim` is the operand's times the
    sub-group size.

    ```mlir
    %y = hspmd.all_gather %x dim 0 over [0] of [4] : tensor<2x16xf32> -> tensor<8x16xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$dim,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat = "$input `dim` $dim " # commonFormat;
}

def HSPMD_ReduceScatterOp : HSPMD_CollectiveOp<"reduce_scatter"> {
  let summary = "Reduces within each sub-group and scatters along a dimension";
  let description = [{
    The sub-group's buffers are reduced elementwise; the device of rank r
    gets block r of the reduction along `dim`. Turns a partial axis into a
    split one. Local view: the result's `dim` is the operand's divided by
    the sub-group size.

    ```mlir
    %y = hspmd.reduce_scatter sum %x dim 0 over [0] of [2] : tensor<8x16xf32> -> tensor<4x16xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, HSPMD_ReductionKindAttr:$reduction,
                       I64Attr:$dim, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat = "custom<ReductionKind>($reduction) $input `dim` $dim " # commonFormat;
}

def HSPMD_AllToAllOp : HSPMD_CollectiveOp<"all_to_all"> {
  let summary = "Moves a split from one dimension to another";
  let description = [{
    Each device cuts its buffer into sub-group-size blocks along
    `split_dim` and sends block r to the device of rank r, which
    concatenates what it receives, in rank order, along `concat_dim`. Turns
    a split of `concat_dim` into a split of `split_dim`. Local view: the
    result's `split_dim` is divided and its `concat_dim` multiplied by the
    sub-group size.

    ```mlir
    %y = hspmd.all_to_all %x split 1 concat 0 over [0] of [2] : tensor<4x16xf32> -> tensor<8x8xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$split_dim,
                       I64Attr:$concat_dim, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat =
      "$input `split` $split_dim `concat` $concat_dim " # commonFormat;
}

def HSPMD_PermuteOp : HSPMD_CollectiveOp<"permute",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Exchanges whole buffers by a permutation of mesh axes";
  let description = [{
    A send/recv permutation: with `c_j` the device's digit on mesh axis
    `over[j]`, the device receives the buffer of the device whose digit on
    mesh axis `over[i]` is `c_perm[i]`, for every position `i` of `over`
    (`perm` indexes `over`; every other axis maps to itself); devices whose
    source is themselves keep their buffer. Changes only which mesh axis splits which
    dimension.

    ```mlir
    %y = hspmd.permute %x perm [1, 0] over [0, 1] of [2, 2] : tensor<4x4xf32> -> tensor<4x4xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat = "$input `perm` $perm " # commonFormat;
}

def HSPMD_LocalSliceOp : HSPMD_CollectiveOp<"local_slice"> {
  let summary = "Keeps this device's block of a duplicated dimension";
  let description = [{
    No communication: the device of rank r in its sub-group keeps block r
    of its buffer along `dim`. Turns a duplicate axis into a split one.
    Local view: the result's `dim` is the operand's divided by the
    sub-group size.

    ```mlir
    %y = hspmd.local_slice %x dim 1 over [1] of [2, 2] : tensor<8x16xf32> -> tensor<8x8xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$dim,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat = "$input `dim` $dim " # commonFormat;
}

def HSPMD_MakePartialOp : HSPMD_CollectiveOp<"make_partial"> {
  let summary = "Turns a split or duplicated axis into partial sums, locally";
  let description = [{
    No communication: makes each device's buffer a term of a sum over its
    sub-group. With `dim`, the device of rank r places its buffer as block
    r along `dim` of a zero tensor (S(dim) -> P(sum)); without, the device
    of rank 0 keeps its buffer and the others hold zeros (D -> P(sum)). The
    sub-group's buffers then sum to the whole tensor. Local view: with
    `dim`, the result's `dim` is the operand's times the sub-group size.
    Reshard lowering uses it where a consumer takes a partial sum of a value
    produced split or whole (the gradient of a value annotated as
    duplicated is annotated partial).

    ```mlir
    %y = hspmd.make_partial %x dim 1 over [0] of [2] : tensor<8x8xf32> -> tensor<8x16xf32>
    %z = hspmd.make_partial %w over [0] of [2] : tensor<8xf32> -> tensor<8xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<I64Attr>:$dim,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh,
                       OptionalAttr<HSPMD_UnionAttr>:$from,
                       OptionalAttr<HSPMD_UnionAttr>:$to);
  let assemblyFormat = "$input (`dim` $dim^)? " # commonFormat;
}

def HSPMD_SparseReduceScatterOp : HSPMD_Op<"sparse_reduce_scatter", [Pure]> {
  let summary = "A reduce-scatter of rows, sending only the rows each device names";
  let description = [{
    The sum over each sub-group of its devices' buffers, the device of rank
    r getting block r of the rows (dimension 0), like `hspmd.reduce_scatter
    sum ... dim 0`, for buffers that are zero outside the rows each device
    names in `rows` (an i64 tensor of row indices into the operand; an
    index outside the rows, such as -1, names none, as the MoE ops read
    slots). A device sends each named row, once, to the member whose
    block holds it: the row counts to every member first, then the row
    indices and the rows, an all-to-all with counts; the receiver adds
    them, in member order, into zeros. The bytes moved depend on the
    indices (the communication report gives their bound).

    `hspmd-moe-sparse-exchange` makes it from the reduce-scatter of an
    `nn.moe_dispatch`'s partial buffer, named by the dispatch's slots
    (docs/moe.md). It is a local-view op (after specialisation): the
    operand is one device's buffer, the result its block.

    ```mlir
    %b = hspmd.sparse_reduce_scatter %buf rows %slots over [0] of [2]
        : tensor<512x32xf64>, tensor<64x2xi64> -> tensor<256x32xf64>
    ```

    Constraints: the mesh and axes are a collective's; operand and result
    have one element type and rank (at least 1); the result's rows are the
    operand's divided by the sub-group size, its other dimensions the
    operand's; `rows` has i64 elements.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$rows,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `rows` $rows `over` $axes `of` $mesh `:` type($input) `,`
    type($rows) `->` type($result) attr-dict
  }];
  let hasVerifier = 1;
}

def HSPMD_SparseAllGatherOp : HSPMD_Op<"sparse_all_gather", [Pure]> {
  let summary = "An all-gather of rows, fetching only the rows each device names";
  let description = [{
    The concatenation of the sub-group's blocks along the rows (dimension
    0), like `hspmd.all_gather ... dim 0`, but defined only at the rows the
    device names in `rows` (an i64 tensor of row indices into the result;
    an index outside the rows names none): every other row of the result
    is zero. The device asks
    the member whose block holds each distinct named row for it (the
    counts to every member first, then the row indices), and each member
    answers with the rows asked of it. The bytes moved depend on the
    indices (the communication report gives their bound).

    `hspmd-moe-sparse-exchange` makes it for the way back of expert
    parallelism: the experts' output rows a device's tokens were routed
    to, fetched from the devices that computed them, for an
    `nn.moe_combine` (or `nn.moe_slot_dot`) on the same rows (docs/moe.md).
    It is a local-view op (after specialisation).

    ```mlir
    %full = hspmd.sparse_all_gather %block rows %slots over [0] of [2]
        : tensor<256x32xf64>, tensor<64x2xi64> -> tensor<512x32xf64>
    ```

    Constraints: the mesh and axes are a collective's; operand and result
    have one element type and rank (at least 1); the result's rows are the
    operand's times the sub-group size, its other dimensions the operand's;
    `rows` has i64 elements.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$rows,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `rows` $rows `over` $axes `of` $mesh `:` type($input) `,`
    type($rows) `->` type($result) attr-dict
  }];
  let hasVerifier = 1;
}

def HSPMD_SparseAllGatherStartOp : HSPMD_Op<"sparse_all_gather_start",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Starts a sparse all-gather that a later hspmd.wait completes";
  let description = [{
    `hspmd.sparse_all_gather`, split in two so that the rows move while the
    device computes: this op starts the collective and its result is the
    buffer the rows arrive in, which only its `hspmd.wait` may read. Between
    the two, the program runs on; the operands must stay as they are until
    the wait, which names them (`keep`) so that they stay alive.

    `hspmd-overlap-fetches` makes it from the fetch of the replicas' weights
    (docs/moe.md): the fetch of micro-step m + 1 starts right after the
    fetch of micro-step m completes, so it overlaps micro-step m's compute.
    The runtimes run it on a communication thread over a duplicate of the
    sub-group's communicator (the device targets through host copies made
    at the start and copied back at the wait); where they cannot (MPI
    without `MPI_THREAD_MULTIPLE`), the start does the whole collective and
    the wait nothing. The values and the bytes are those of
    `hspmd.sparse_all_gather`.

    ```mlir
    %pending = hspmd.sparse_all_gather_start %block rows %ids over [0] of [2]
        : tensor<2x8x8xf64>, tensor<3xi64> -> tensor<4x8x8xf64>
    ...
    %full = hspmd.wait %pending keep(%block, %ids : tensor<2x8x8xf64>,
        tensor<3xi64>) : tensor<4x8x8xf64>
    ```

    Constraints: those of `hspmd.sparse_all_gather`; the result has one
    user, an `hspmd.wait` later in the same block that keeps exactly this
    op's operands.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$rows,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `rows` $rows `over` $axes `of` $mesh `:` type($input) `,`
    type($rows) `->` type($result) attr-dict
  }];
  let hasVerifier = 1;
}

def HSPMD_WaitOp : HSPMD_Op<"wait",
    [MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["pending", "result"]>]> {
  let summary = "Completes a started collective";
  let description = [{
    Waits for the collective that `pending` (an
    `hspmd.sparse_all_gather_start`'s result) started and returns its
    result: the same buffer, now complete. `keep` lists the start's
    operands, which the collective reads until here: code generation keeps
    their buffers alive (and unchanged) to this point.

    ```mlir
    %full = hspmd.wait %pending keep(%block, %ids : tensor<2x8x8xf64>,
        tensor<3xi64>) : tensor<4x8x8xf64>
    ```

    Constraints: `pending` is the result of a start op in the same block,
    and `keep` is exactly that op's operands, in order.
  }];
  let arguments = (ins AnyRankedTensor:$pending,
                       Variadic<AnyRankedTensor>:$keep);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $pending `keep` `(` $keep `:` type($keep) `)` `:` type($result) attr-dict
  }];
  let hasVerifier = 1;
}

def HSPMD_SparseExchangeOp : HSPMD_Op<"sparse_exchange"> {
  let summary = "Named rows to or from blocks of any sizes, across device groups";
  let description = [{
    A collective of rows among the devices `among` (global device ids, of
    any device groups, strictly increasing; member j is the j-th), each
    holding a block of the
    rows (dimension 0): `blocks` gives, per member in order, its first row
    and its row count, `[first0, size0, first1, size1, ...]`. Blocks may
    differ in size (groups of different sizes hold different shares of the
    experts) and may overlap. `rows` is an i64 tensor of row indices; an
    index outside the rows, such as -1, names none, as the MoE ops read
    slots; a row no block holds moves nowhere (gathered, it stays zero).

    Without `gather`, `hspmd.sparse_reduce_scatter` over these blocks: the
    operand is the device's buffer of all the rows, zero outside the rows
    it names; the result is its block of the sum over the members. A
    device sends each named row, once, with its index, to every member
    whose block holds it (the counts to every member first), and the
    receiver adds them, in member order, into zeros.

    With `gather`, `hspmd.sparse_all_gather` over these blocks: the
    operand is the device's block, the result all the rows, zero but for
    the rows the device names, each fetched from the first member whose
    block holds it (the counts to every member first, then the indices,
    then the rows back).

    The bytes moved depend on the indices (the communication report gives
    their bound). `hspmd-moe-sparse-exchange` makes both where expert
    parallelism spans device groups of different sizes: an
    `nn.moe_dispatch`'s partial buffer reaching the experts' rows, and the
    experts' output rows coming back to the combine, through
    `hspmd.exchange` (docs/moe.md). It is a local-view op; every member's
    group function holds the same op, at the same place among its
    exchanges over the same devices (the runtimes pair those in order). Like `hspmd.exchange` it is not pure: every member must run
    it, so no function may drop or merge its copy alone.

    ```mlir
    %b = hspmd.sparse_exchange %buf rows %slots among [0, 1, 2]
        blocks [0, 256, 256, 256, 512, 512]
        : tensor<1024x32xf64>, tensor<32x2xi64> -> tensor<256x32xf64>
    %full = hspmd.sparse_exchange gather %b rows %slots among [0, 1, 2]
        blocks [0, 256, 256, 256, 512, 512]
        : tensor<256x32xf64>, tensor<64x2xi64> -> tensor<1024x32xf64>
    ```

    Constraints: operand and result have one element type and rank (at
    least 1), static shapes and the same sizes past the rows; `among`
    names at least one device, strictly increasing, none negative;
    `blocks` has two entries a member, each block inside the whole rows
    (the operand's, or with `gather` the result's); the block (the result,
    or with `gather` the operand) has some member's block size, and in a
    function (or op) of a device group, every device's of the group, each
    of which is among the members; `rows` has i64 elements.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$rows,
                       DenseI64ArrayAttr:$among, DenseI64ArrayAttr:$blocks,
                       UnitAttr:$gather);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    (`gather` $gather^)? $input `rows` $rows `among` $among `blocks` $blocks
    `:` type($input) `,` type($rows) `->` type($result) attr-dict
  }];
  let hasVerifier = 1;
}

def HSPMD_AxisIndexOp : HSPMD_Op<"axis_index", [Pure]> {
  let summary = "This device's coordinate along mesh axes, times a stride";
  let description = [{
    In a local-view function: the rank of the running device in its
    sub-group over the mesh axes `over [a, ...]` of the mesh `of [n0, ...]`
    (the mixed-radix number of the device's digits on those axes, as for
    collectives), multiplied by `stride` (default 1), plus `base` (default
    0), as a 0-d `i64` tensor. Specialisation uses it where a device's block
    must know its offset in the global tensor (positions along a split
    sequence); `base` is where the group's part starts when the dimension
    is also split across groups.

    ```mlir
    %start = hspmd.axis_index over [1] of [2, 2] stride 8 : tensor<i64>
    %pos = hspmd.axis_index over [0] of [2] stride 6 base 4 : tensor<i64>
    ```

    Constraints: mesh sizes at least 1, axes strictly increasing and in
    range; the result is a 0-d `i64` tensor.
  }];
  let arguments = (ins DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$mesh,
                       DefaultValuedAttr<I64Attr, "1">:$stride,
                       DefaultValuedAttr<I64Attr, "0">:$base);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    `over` $axes `of` $mesh (`stride` $stride^)? (`base` $base^)? attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

def HSPMD_ExchangeOp : HSPMD_Op<"exchange"> {
  let summary = "A layout change across device groups";
  let description = [{
    Where a tensor's relation across the groups of a union changes (a
    gradient that every group holds a partial sum of becomes replicated; a
    batch split 3:1 between two groups becomes whole on each), the groups
    exchange data. The op sits in the function of one group (after
    partitioning a function over several groups, each group has its own):
    its operand is what the group holds of the tensor under `from`, its
    result what it holds under `to`. `from` and `to` are the whole layouts,
    every group's states included, of the tensor of static shape `shape`,
    so every group computes the same plan (dialects/hspmd/IR/HSPMDTransfers.h,
    `planExchange`): for a `from` holding partial sums across groups, an
    all-reduce of every cell of the common refinement among one
    representative device per group, then sends of whatever else each
    device lacks under `to`.

    Before specialisation the types are the group's part of the tensor (the
    global view of what the group holds: the whole shape, or its share of a
    split dimension); after, they are one device's blocks.

    ```mlir
    %g = hspmd.exchange %p shape [32, 128] : tensor<32x128xf64> -> tensor<32x128xf64>
        from #hspmd.union<partial(sum): {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
        to #hspmd.union<replicated: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>
    ```

    Constraints: operand and result have the rank of `shape`, which is
    static and non-negative, and the same element type; `from` and `to` are unions of at least one
    group each; `to` holds complete values (no partial relation, no partial
    axis); a `from` with a partial relation sums (`partial(sum)`) and its
    groups hold complete values inside the group.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape,
                       HSPMD_UnionAttr:$source, HSPMD_UnionAttr:$target);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `shape` $shape `:` type($input) `->` type($result) `from` $source
    `to` $target attr-dict
  }];
  let hasVerifier = 1;
}

#endif // LOOM_HSPMD_OPS
