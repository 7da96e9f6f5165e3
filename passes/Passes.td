//===- Passes.td - Loom's passes ---------------------------*- tablegen -*-===//

#ifndef LOOM_PASSES
#define LOOM_PASSES

include "mlir/Pass/PassBase.td"

def PrintShardsPass : Pass<"hspmd-print-shards", "mlir::ModuleOp"> {
  let summary = "Prints, for every annotated value, the shard each device holds";
  let description = [{
    For every `hspmd.annotate` in the module, in program order, prints the
    value's type and layout and then, for each device the layout names, the
    block of the global tensor it holds (sizes and offsets), which
    contribution of a pending reduction it holds and which replica it is.
    Devices are described from the module's `hspmd.cluster` when there is
    one. The IR is not changed.

    ```
    value %2 : tensor<64x128xf32> at "mlp.mlir":21:10
      layout #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
      device 0 (h200): shard 24x64 at [0, 0]
      ...
      device 5 (910b): shard 16x64 at [48, 64]
    ```

    Annotations on tensors with dynamic sizes are reported as such, without
    shards.
  }];
}

def AutodiffPass : Pass<"nn-autodiff", "mlir::ModuleOp"> {
  let summary = "Generates the gradient function of a forward function";
  let description = [{
    For a forward function `@f` whose body computes a scalar loss from
    arguments marked `nn.param`, creates `@f_grad`, with the same arguments,
    returning the loss followed by the gradient of the loss with respect to
    each `nn.param` argument, in argument order.

    The gradient is built in reverse mode over the (single-block) body:
    every op on a path from a parameter to the loss provides the gradients
    of its operands through `GradientOpInterface`; where a value has several
    uses, its gradients add up with `nn.add`. Layout annotations reach the
    gradients by duality (see `getGradientLayout`). Ops that no gradient
    needs are left out of `@f_grad`.

    ```mlir
    func.func @f(%w: tensor<4x8xf32> {nn.param}, %x: tensor<2x4xf32> {nn.data})
        -> tensor<f32> {
      %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32>
      %l = nn.reduce sum %y dims = [0, 1] : tensor<2x8xf32>
      return %l : tensor<f32>
    }
    // becomes, next to @f:
    func.func @f_grad(%w: tensor<4x8xf32> {nn.param}, %x: tensor<2x4xf32> {nn.data})
        -> (tensor<f32>, tensor<4x8xf32>) {
      %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32>
      %l = nn.reduce sum %y dims = [0, 1] : tensor<2x8xf32>
      %seed = nn.fill 1.000000e+00 : tensor<f32>
      %0 = nn.reshape %seed : tensor<f32> to tensor<1x1xf32>
      %1 = nn.broadcast %0 : tensor<1x1xf32> to tensor<2x8xf32>
      %dw = nn.matmul %x, %1 transpose_lhs : tensor<2x4xf32>, tensor<2x8xf32>
      return %l, %dw : tensor<f32>, tensor<4x8xf32>
    }
    ```

    Which functions: the one named by `func`, or by default every function
    that has `nn.param` arguments and returns a single 0-d float tensor.
    Errors, each at the offending location: a loss that is not a 0-d float
    tensor, a function without `nn.param` arguments, a parameter that does
    not reach the loss, an op without a gradient on the path from a
    parameter to the loss (calls among them: inline first), a body of
    several blocks, a layout without a dual.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"\"",
           "The forward function to differentiate (default: every function "
           "with nn.param arguments that returns a 0-d float tensor)">,
  ];
  let statistics = [
    Statistic<"numFunctions", "functions",
              "Gradient functions created">,
    Statistic<"numGradientOps", "gradient-ops",
              "Ops in the gradient functions beyond their forward ops">,
  ];
}

def MoeSparseExchangePass : Pass<"hspmd-moe-sparse-exchange", "mlir::ModuleOp"> {
  let summary = "Moves an MoE layer's routed rows alone, to the experts and back";
  let description = [{
    In local programs (after `hspmd-specialize`), where expert parallelism
    moves every row of the MoE buffer (docs/moe.md):

    * every `hspmd.reduce_scatter sum ... dim 0` of an `nn.moe_dispatch`'s
      partial buffer becomes an `hspmd.sparse_reduce_scatter` naming the
      dispatch's slots (the buffer is zero outside them, so the sum is the
      same): the routed rows go, with their indices, to the devices whose
      blocks hold them;
    * `hspmd.all_to_all %y split 1 concat 0`, an `nn.moe_combine` of it
      whose slots (and weights) are the same on every member, and
      `hspmd.all_to_all split 0 concat 1` over the same axes become a
      combine of the device's own tokens (local slices of the slots and
      weights) over an `hspmd.sparse_all_gather` of `%y` naming those
      slots: the rows its tokens were routed to, fetched from the devices
      that computed them; with the experts' output partial over other
      axes (tensor parallelism inside the experts), the way back that
      reduce-scatters the width over them, all-to-alls over both and
      all-gathers over them becomes that local combine and an all-reduce
      over them;
    * an `nn.moe_slot_dot` of that width-split buffer and a width-split
      gradient, reduce-scattered along the tokens, becomes the slot dot
      product of the gathered rows and the device's own gradient rows
      (equal within rounding: the width is summed at once);
    * an `nn.moe_route` of experts all-gathered along the tokens, whose
      slots are only sliced back to the device's own tokens over the same
      members, becomes a route of the device's own share (`nn.moe_route
      ... shares(%table : type) at %member`) from a table of every member's counts
      per expert, all-gathered in place of the choices: the same slots and
      counts, with `num_experts` counts moved a member instead of its
      tokens' choices;
    * an `hspmd.local_slice` of an `hspmd.all_gather` along the same
      dimension over the same members is the gather's input (the gates'
      gather, once the way back combines each device's own tokens).
    * across device groups of different sizes, a dispatch's buffer that
      reaches each device's expert rows through reduce-scatters summing
      it over the group, an `hspmd.exchange` summing it across the groups,
      then all-to-alls, all-gathers or local slices inside the group
      ending in whole rows, becomes one `hspmd.sparse_exchange` among
      every device; the experts' output rows that reach a combine's
      width split through in-group collectives and an exchange become an
      `hspmd.sparse_exchange gather` of the rows the combine's slots name
      and a slice of the group's columns (the exchange's result read only
      by combines and slot dot products of those slots). Each device's
      rows are read off the exchange's layouts and the in-group
      collectives; only where every group's function of the global
      function has such a chain at the same exchange (the n-th over the
      same devices in each), which the new op replaces in place.

    "The same on every member" is proved from the program: made by an
    all-gather or all-reduce over (at least) those mesh axes, or by
    side-effect-free nn ops of such values alone. Anything else is left
    dense. `loom-partition-pipeline` runs it unless `moe-sparse=false`.

    ```mlir
    %p = nn.moe_dispatch %x, %slots rows = 512 : tensor<64x32xf64>, tensor<64x2xi64>
    %b = hspmd.reduce_scatter sum %p dim 0 over [0] of [2] : tensor<512x32xf64> -> tensor<256x32xf64>
    // becomes
    %b = hspmd.sparse_reduce_scatter %p rows %slots over [0] of [2]
        : tensor<512x32xf64>, tensor<64x2xi64> -> tensor<256x32xf64>
    ```
  }];
  let dependentDialects = ["loom::hspmd::HSPMDDialect"];
}

def OverlapFetchesPass : Pass<"hspmd-overlap-fetches", "mlir::ModuleOp"> {
  let summary = "Starts weight fetches early, to overlap the compute before them";
  let description = [{
    In local programs (after `hspmd-moe-sparse-exchange`), every
    `hspmd.sparse_all_gather` marked `hspmd.weight_fetch` (the replicas'
    weights a placed MoE layer fetches each micro-step, docs/moe.md)
    becomes an `hspmd.sparse_all_gather_start` as early as it can go and an
    `hspmd.wait` where the fetch was: right after the previous fetch of the
    same weight completes, or at the function's start for the first, so
    micro-step m + 1's fetch overlaps micro-step m's compute and at most
    one fetch of a weight is in flight. The ops that compute the fetch's
    row indices move up with it, in order, where they are `nn` ops without
    effects or local `hspmd` ops (the plan, the comparison with the
    previous plan, local slices); any other op (a collective, an op with
    effects) holds the start below it. A fetch with nothing to overlap is
    split too, its start right before its wait, so that every function
    runs the same fetches as started collectives. Values and bytes are
    unchanged. `loom-partition-pipeline` runs it unless `overlap=false`.

    ```mlir
    %f = hspmd.sparse_all_gather %w rows %ids over [0] of [2]
        : tensor<2x8x8xf64>, tensor<3xi64> -> tensor<4x8x8xf64>
    // becomes, the start earlier
    %p = hspmd.sparse_all_gather_start %w rows %ids over [0] of [2]
        : tensor<2x8x8xf64>, tensor<3xi64> -> tensor<4x8x8xf64>
    %f = hspmd.wait %p keep(%w, %ids : tensor<2x8x8xf64>, tensor<3xi64>)
        : tensor<4x8x8xf64>
    ```
  }];
  let statistics = [
    Statistic<"numOverlapped", "overlapped-fetches",
              "Fetches started before the op that precedes them">
  ];
  let dependentDialects = ["loom::hspmd::HSPMDDialect"];
}

def MoePlacementPass : Pass<"hspmd-moe-placement", "mlir::ModuleOp"> {
  let summary = "Plans where MoE experts run, per micro-step, from a forecast";
  let description = [{
    For a function with an argument marked `nn.moe_forecast` (`tensor<rows
    x layers x experts x i64>`, the expert counts a rollout recorded, one
    layer per expert-parallel `nn.moe_route` in program order), every
    route with expert blocks (`hspmd-expert-blocks`) is planned at run
    time: an `nn.moe_plan` of its layer gives each of the `B` devices `R`
    replica slots (the attribute's value; a unit attribute gives `E / B +
    1`), the route puts each entry in the block of the device that serves
    it (`nn.moe_route ... hosts`), and each grouped matmul multiplies by
    the replicas' weights, looked up from the experts' (`nn.embedding` of
    the weights' rows, annotated with their layout), whose layout is the
    experts' home: master weights and optimizer state stay there, and the
    replicas' gradients sum into them. The results do not depend on the
    plan, only where rows are computed does (docs/moe.md). The forecast is
    a data argument, so each micro-batch of a training step plans from its
    own rows. Runs in `loom-training-pipeline` after `hspmd-expert-blocks`,
    before autodiff; a function without a forecast is left alone.

    ```mlir
    func.func @f(..., %forecast: tensor<2x1x4xi64> {nn.data, nn.moe_forecast = 3 : i64})
    // becomes, at each route:
    %hosts, %lookup = nn.moe_plan %forecast layer = 0 devices = 2 slots = 3
        expert_bytes = 6144 : tensor<2x1x4xi64>
    %slots, %counts = nn.moe_route %e hosts %hosts num_experts = 4 blocks = 2
        : tensor<8x2xi64>, tensor<6xi64>
    ```

    Errors: a forecast of the wrong type or layer count, a route with a
    capacity, weights not split evenly along the experts, too few slots
    for the experts, a program already differentiated.
  }];
  let dependentDialects = ["::loom::nn::NNDialect", "::loom::hspmd::HSPMDDialect"];
}

def MoeResidentReplicasPass
    : Pass<"hspmd-moe-resident-replicas", "mlir::ModuleOp"> {
  let summary = "Keeps placed MoE replicas resident from micro-step to "
                "micro-step";
  let description = [{
    On a training step whose micro-batches are unrolled and whose MoE
    layers are placed per micro-step (`hspmd-moe-placement`, then
    `nn-training-step micro-batches=K`): for each weight whose lookups
    and gradients line up micro-step by micro-step with its layer's plans
    (the same weights read in every micro-step), its layer's plan after
    the first takes the previous plan's lookup (`nn.moe_plan ... previous`), so that
    the planner counts a replica already in a slot as free and keeps it in
    its slot; each micro-step looks up only the slots whose expert changed
    (the others take the previous micro-step's replicas); and a replica's
    gradient stays with it while its slot keeps the expert and goes home
    once, in the micro-step that moves it or after the last. Partitioned,
    the sparse fetch and the sparse send home then name the moving
    replicas alone (docs/moe.md). The step computes the same values, but
    for the order in which a replica's gradients add up (in f32 at least,
    as the micro-batches' gradients do). Runs in
    `loom-training-pipeline` after `nn-training-step`; a step with one
    micro-batch, or without placed layers, is left alone.

    ```mlir
    %h1, %l1 = nn.moe_plan %f1 previous %l0 layer = 0 devices = 2 slots = 3
        expert_bytes = 6144 : tensor<2x1x4xi64>, tensor<6xi64>
    %same = nn.compare eq, %l1, %l0 : tensor<6xi64>, tensor<6xi64>
    %ids = nn.select %same, %home, %l1 : tensor<6xi1>, tensor<6xi64>, tensor<6xi64>
    %fresh = nn.embedding %w, %ids {nn.moe_replicas = 0 : i64}
        : tensor<4x16x12xf64>, tensor<6xi64>
    %r1 = nn.select %same3, %r0, %fresh
        : tensor<6x1x1xi1>, tensor<6x16x12xf64>, tensor<6x16x12xf64>
    ```
  }];
  let dependentDialects = ["::loom::nn::NNDialect",
                           "::loom::hspmd::HSPMDDialect"];
}

def ExpertBlocksPass : Pass<"hspmd-expert-blocks", "mlir::ModuleOp"> {
  let summary = "Puts MoE layers whose experts are split into expert blocks";
  let description = [{
    Expert parallelism splits the experts of a mixture of experts over
    devices, and with them the expert-ordered buffer; but which rows the
    plain buffer gives an expert depends on the counts of every expert
    before it. Expert blocks (`blocks = B`, docs/moe.md) give each group of
    `E / B` experts a block of static size, which splits with them. For
    every `nn.moe_route` whose grouped matmuls' weights are laid out split
    along the experts (an argument's `hspmd.layout` or an `hspmd.annotate`),
    this pass writes the finest blocks every device's share falls on
    (`B = E / gcd(E, every shard's first expert and size)`): `blocks = B` on
    the route and its grouped matmuls, `rows = B * S` on its dispatches, and
    the new types of every value that follows the buffer's rows. The
    results are unchanged; routes whose weights are not split, or that
    already have blocks, are left alone. It runs first in
    `loom-training-pipeline`, before autodiff, which carries the blocks to
    the backward ops.

    ```mlir
    // %w1 : tensor<4x32x128xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}
    %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<128x2xi64>
    %buf = nn.moe_dispatch %x, %slots rows = 256 : ...
    %h = nn.grouped_matmul %buf, %w1, %counts : tensor<256x32xf32>, ...
    // becomes
    %slots, %counts = nn.moe_route %e num_experts = 4 blocks = 2 : ...
    %buf = nn.moe_dispatch %x, %slots rows = 512 : ...
    %h = nn.grouped_matmul %buf, %w1, %counts blocks = 2 : tensor<512x32xf32>, ...
    ```

    The results stay the same only where nothing but the MoE ops sees where
    the rows are: the slots may feed only the route's dispatches, combines
    and slot dot products, and the buffer only element-wise ops (whose
    other operands do not have its rows), casts, the route's grouped
    matmuls, combines and slot dot products. Anything else (a slice or a
    mean over the rows, a return, a call) is an error before anything
    changes, as is a route without static tokens. Under a strategy set
    (specialised later, by `hspmd-specialize-strategies`) the blocks are
    the finest cut every strategy's shares fall on, so one program serves
    every strategy; one that splits the experts less runs with them too,
    its buffer `B` times the plain form's rows.
  }];
  let dependentDialects = ["::loom::nn::NNDialect"];
}

def TrainingStepPass : Pass<"nn-training-step", "mlir::ModuleOp"> {
  let summary = "Generates a training step: forward, backward, optimizer update";
  let description = [{
    For a forward function `@f` (selected as by `nn-autodiff`), creates

    ```
    @f_train_step(params..., state..., [step,] data...)
        -> (loss, new params..., new state...)
    ```

    which computes the loss and its gradients (the same code as
    `nn-autodiff`) and applies one optimizer update to every parameter:
    `nn.sgd_update` (state: one momentum buffer per parameter) or
    `nn.adamw_update` (state: the first moments `m` of all parameters, then
    the second moments `v`; `step` is the 0-d `i64` count of this update,
    starting at 1, which the caller increments). `data` are the forward
    function's other arguments, in their order, with their attributes.

    Roles are attributes, so that a driver knows what feeds what:

    * arguments: `nn.param` (a parameter), `nn.state = <i>` (optimizer state
      of the parameter at argument `i`), `nn.step` (the step counter),
      `nn.data` (per-step input);
    * results: `nn.loss` (the loss of this step, before the update),
      `nn.grad_norm` (with `clip-norm`: the gradients' global norm before
      clipping) and `nn.updates = <i>` (the next step's value of argument
      `i`).

    State starts at zero.

    ```mlir
    func.func @f_train_step(%w: tensor<4x8xf32> {nn.param},
        %m: tensor<4x8xf32> {nn.state = 0 : i64},
        %v: tensor<4x8xf32> {nn.state = 0 : i64},
        %step: tensor<i64> {nn.step}, %x: tensor<2x4xf32> {nn.data})
        -> (tensor<f32> {nn.loss}, tensor<4x8xf32> {nn.updates = 0 : i64},
            tensor<4x8xf32> {nn.updates = 1 : i64},
            tensor<4x8xf32> {nn.updates = 2 : i64}) {
      ...
      %w1, %m1, %v1 = nn.adamw_update %w, %dw, %m, %v, %step
          {lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64}
          : tensor<4x8xf32>
      return %l, %w1, %m1, %v1 : ...
    }
    ```

    Hyper-parameters are checked by the update ops' verifiers; an invalid
    one is reported and nothing is created.

    Training features (docs/training.md):

    * `micro-batches=K`: every `nn.data` argument of rank >= 1 is split
      into K micro-batches along its rows (micro-batch k: rows k, k + K,
      ...); each runs forward and backward in turn, the losses and
      gradients are summed, one update follows. Reductions of the data
      alone over the rows (normalisers) are computed once from the whole
      batch. The loss must be a sum over the rows, scaled by values of the
      whole batch; what is not (a mean over the rows of a
      parameter-dependent value, a non-linear function of such a sum,
      dropout, a batch moved out of dimension 0, K not dividing the rows)
      is reported at its op.
    * `micro-batch-shapes=ROWSxLENGTH[*COUNT],...`: micro-batches of their
      own shapes (length buckets): COUNT micro-batches of ROWS rows of
      LENGTH positions each (dimension 1 of the data of rank >= 2). The
      forward is retyped once per shape, differentiated, and run once per
      micro-batch; one update follows. The step takes, per shape and per
      data argument, `NAME_ROWSxLENGTH` with COUNT * ROWS rows (micro-batch
      k of the shape takes rows k, k + COUNT, ...). The micro-batches
      together hold the forward's tokens, so that normalisers given as
      attributes are the whole step's.
      Several compositions, separated by `;` (`2x16*2,4x8*2;2x16*4;4x8*4`),
      each holding the forward's tokens, give one step per composition:
      `NAME_train_step`, `NAME_train_step_v1`, ..., variants of one step
      (the same parameters, state and results) for steps whose batches
      differ in shape. Each takes the data arguments of every shape of any
      composition, in order of first appearance; a shape its composition
      lacks has no rows (no op reads it). Such steps carry `nn.tokens`
      (their data arguments do not show the tokens); `loom-run --train`
      picks each step's variant from the files of its data folder.
    * `clip-norm=C`: the gradients are scaled by min(1, C / (norm + 1e-6)),
      the norm being that of all gradients together; it is returned as a
      result marked `nn.grad_norm` (after the loss).
    * `warmup-steps`, `decay`, `decay-steps`, `min-lr`: the learning-rate
      schedule, set on every update op (SGD then takes the step counter).
    * `param-groups='PATTERN[,PATTERN...]:KEY=VALUE[ KEY=VALUE...];...'`:
      the first group whose glob matches a parameter's name sets its `lr`,
      `weight-decay`, `momentum`, `beta1`, `beta2`, `eps` or `min-lr`; a
      group matching no parameter is an error.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"\"",
           "The forward function (default: as nn-autodiff)">,
    Option<"optimizer", "optimizer", "::loom::OptimizerKind",
           /*default=*/"::loom::OptimizerKind::AdamW",
           "The optimizer", [{::llvm::cl::values(
             clEnumValN(::loom::OptimizerKind::SGD, "sgd",
                        "SGD with momentum (nn.sgd_update)"),
             clEnumValN(::loom::OptimizerKind::AdamW, "adamw",
                        "AdamW with bias correction (nn.adamw_update)"))}]>,
    Option<"lr", "lr", "double", /*default=*/"1.0e-3", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD: Nesterov momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "AdamW: decay of the first moment">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "AdamW: decay of the second moment">,
    Option<"eps", "eps", "double", /*default=*/"1.0e-8",
           "AdamW: added to the root of the second moment">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (coupled for SGD, decoupled for AdamW; PyTorch's "
           "AdamW uses 0.01, give it explicitly)">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Learning-rate schedule: linear warm-up over this many steps">,
    Option<"decay", "decay", "std::string", /*default=*/"\"constant\"",
           "Learning-rate schedule after the warm-up: constant, linear or "
           "cosine (to min-lr over decay-steps)">,
    Option<"decaySteps", "decay-steps", "int64_t", /*default=*/"0",
           "Learning-rate schedule: the length of the decay">,
    Option<"minLr", "min-lr", "double", /*default=*/"0.0",
           "Learning-rate schedule: the floor the decay ends at">,
    Option<"paramGroups", "param-groups", "std::string", /*default=*/"\"\"",
           "Parameter groups: `PATTERN[,PATTERN...]:KEY=VALUE[ KEY=VALUE...]` "
           "separated by `;`; keys lr, weight-decay, momentum, beta1, beta2, "
           "eps, min-lr">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Run the step as this many micro-batches (the data's leading "
           "dimension split evenly, gradients accumulated, one update)">,
    Option<"microBatchShapes", "micro-batch-shapes", "std::string",
           /*default=*/"\"\"",
           "Micro-batches of their own shapes: ROWSxLENGTH[*COUNT],... (one "
           "compiled forward and backward per shape, one update); several "
           "compositions separated by ';' give one step variant each">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Clip the gradients by their global norm to at most this "
           "(positive), and return the norm (nn.grad_norm); 0: no clipping">,
  ];
  let statistics = [
    Statistic<"numFunctions", "functions", "Training steps created">,
    Statistic<"numParams", "params", "Parameters updated">,
  ];
}

def LayoutPropagationPass : Pass<"hspmd-propagate-layouts", "mlir::ModuleOp"> {
  let summary = "Lays out every tensor of a device group from the user's layouts";
  let description = [{
    For every function whose layouts (`hspmd.annotate`, `hspmd.reshard`,
    `hspmd.layout` argument and result attributes) all lie on one device
    group, deduces the layout of every tensor through the factor rules of the
    ops (`LayoutRuleOpInterface`), forward and backward to a fixed point,
    and records it:

    * `hspmd.layout` on every tensor argument and result of the function
      (user layouts are kept as written);
    * on every op with tensor operands or results, `hspmd.operand_layouts`
      (what the op needs of each ranked-tensor operand) and
      `hspmd.result_layouts` (what it produces), one `#hspmd.union` each.

    Where an operand layout differs from what its producer produces,
    `hspmd-insert-reshards` puts a reshard in between.

    Layouts are read on the group's mesh, the common refinement of the axis
    strides of all user layouts. Per mesh axis every op splits one factor of
    its rule, or none: split parallel factors split every tensor that has
    them, split reduction factors leave the results partial, replicated
    factors are never split. The choice follows the layouts the op's tensors
    already have, by priority: user layouts, then layouts derived onto
    `nn.param` arguments, then onto `nn.data` arguments, then the rest;
    among choices that override layouts of the same priority, the one that
    moves the fewest bytes wins (all-gather `b(m-1)/m`, all-reduce
    `2b(m-1)/m`, reduce-scatter `b(m-1)/m`, all-to-all `b(m-1)/m^2`, slices
    free, for a block of `b` bytes on a mesh axis of `m` devices).
    An op linear in some operands (its rule's linear groups: an add of two
    partial sums, a sum over rows of one) may instead pass partial sums on
    where those operands hold them; a result left partial, or split by a
    split the op invents, is charged the reduction it owes further on, so
    partials are passed on only where that saves bytes (Megatron's backward
    adds the Q, K and V input gradients before their one all-reduce). A
    reshard that an earlier use of the same value needs costs nothing more.
    `hspmd.annotate` is a boundary: its result has the annotated layout, its
    operand only takes that layout if nothing else decides it. Ops without a
    factor rule need and produce duplicated tensors. Values nothing
    constrains are duplicated. Function results take the layout their value
    is produced with, or, for a training step's `nn.updates = i` result, the
    layout of argument `i`.

    ```mlir
    func.func @f(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                 %w: tensor<16x4xf32> {nn.param}) -> tensor<8x4xf32> {
      %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32>
      return %y : tensor<8x4xf32>
    }
    // becomes
    func.func @f(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                 %w: tensor<16x4xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
        -> (tensor<8x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) {
      %y = nn.matmul %x, %w {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>,
                                                      #hspmd.union<{[0, 1]: [D:2]}>],
                             hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]}
             : tensor<8x16xf32>, tensor<16x4xf32>
      return {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [S0:2]}>]} %y : tensor<8x4xf32>
    }
    ```

    A function whose layouts are unions of several device groups is laid
    out in two levels and partitioned: first across the groups (the union's
    relation, `replicated`, `split(d)` in one ratio, or `partial`, read as
    one outer axis), then one function `@<name>_part<g>` per group is added
    after it, holding what group g holds (its share of a dimension split
    across groups), laid out inside the group as above, with an
    `hspmd.exchange` wherever the relation across groups changes (a
    gradient every group holds a partial sum of becomes replicated).
    Exchanges, and the parts' arguments and results
    (`hspmd.whole_layout`), carry the whole layouts, every group's states
    included. The original function gets `hspmd.parts` and is left as the
    single-device reference; later passes work on the parts.
    One-group layouts on different groups (each tensor on one) are pipeline
    stages: every op runs on one group (where most of its operand bytes
    are; optimizer state and updates with their parameter), each group's
    part has the ops placed on it, and an exchange moves a value where
    another group reads it. Where groups overlap, `hspmd-specialize` merges
    the groups' programs per cell of devices that belong to the same
    groups (`@<name>_cell<k>`).

    Functions without any layout are left alone. Errors, at the layout's
    location: a strategy set, layouts on different groups (or lists of
    groups) in one function, splits across groups in different ratios, two
    layouts that share no mesh (with a note at the other). At an op: user layouts
    that split one of its replicated factors on both its operand and its
    result side (with notes where each was written). See
    docs/rationale/partitioning.md for the priorities, the cost formula and
    the fixed point.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "loom::nn::NNDialect"];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions laid out">,
    Statistic<"numReshards", "reshards",
              "Operands whose needed layout differs from the produced one">,
  ];
}

def ReshardInsertionPass : Pass<"hspmd-insert-reshards", "mlir::ModuleOp"> {
  let summary = "Puts a reshard wherever a consumer needs another layout than its producer's";
  let description = [{
    Runs after `hspmd-propagate-layouts`. For every op with
    `hspmd.operand_layouts`, each ranked-tensor operand whose needed layout
    is not equivalent (`areEquivalent`: the same shard on every device) to
    the layout its producer gives it (the producer's
    `hspmd.result_layouts` entry, or a block argument's `hspmd.layout`)
    gets an `hspmd.reshard %v : T from <produced> to <needed>` in front of
    the op, which then uses it; the reshard carries
    `hspmd.operand_layouts = [produced]` and `hspmd.result_layouts =
    [needed]`. A `func.return` operand is checked against the function's
    result `hspmd.layout`. An `hspmd.annotate` is a boundary in
    propagation; here it becomes a reshard from its input's layout to the
    annotation, or disappears when the two agree. Afterwards every consumer
    sees exactly the layout it needs. Reshards to the same layout of the
    same value are shared between consumers.

    ```mlir
    %y = nn.matmul %g, %w2 {hspmd.operand_layouts = [...], hspmd.result_layouts = [#hspmd.union<{[0, 1]: [P(sum):2]}>]} ...
    return {hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [D:2]}>]} %y : tensor<8x16xf32>
    // with the function result laid out [D:2] becomes
    %r = hspmd.reshard %y : tensor<8x16xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}>
           to #hspmd.union<{[0, 1]: [D:2]}> {hspmd.operand_layouts = [...], hspmd.result_layouts = [...]}
    return {...} %r : tensor<8x16xf32>
    ```

    Functions without any layout attribute are left alone. Errors, at the
    op: an op in a laid-out function without `hspmd.operand_layouts`, an
    operand whose producer has no layout, entry counts that do not match
    the tensor operands or results, a layout that is not a union or does
    not fit the tensor (the pass needs propagation first).
  }];
  let statistics = [
    Statistic<"numInserted", "inserted", "Reshards inserted">,
    Statistic<"numAnnotationsErased", "annotations-erased",
              "Annotations that agreed with their input">,
  ];
}

def ReshardLoweringPass : Pass<"hspmd-lower-reshards", "mlir::ModuleOp"> {
  let summary = "Lowers reshards inside one device group to global-view collectives";
  let description = [{
    First fuses chains of reshards (`A -> B -> C` becomes `A -> C` when the
    middle one has no other user) and erases reshards that change nothing
    (`areEquivalent`). Then every `hspmd.reshard` between single-group
    unions on the same group whose states share a mesh becomes a chain of
    global-view collectives on that common mesh, each with explicit `from`
    and `to` (intermediate layouts spelled as `#hspmd.states`), and with
    `hspmd.operand_layouts = [from]`, `hspmd.result_layouts = [to]`.

    The chain is a cheapest one (bytes sent per rank, then fewest steps)
    among chains whose steps are one collective each over one or several
    mesh axes: all_reduce (P -> D), reduce_scatter (P -> S), all_gather
    (S -> D), local_slice (D -> S, free), make_partial (S or D -> P(sum),
    free), all_to_all (S a -> S b) and permute (only which mesh axes split
    which dimensions changes). A pending reduction is only ever reduced,
    never moved; only partial sums are made, where the target has them.
    See docs/rationale/partitioning.md for the order and the costs.

    ```mlir
    %y = hspmd.reshard %x : tensor<8x8xf64>
           from #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, S1:2]}>
           to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
    // becomes
    %0 = hspmd.reduce_scatter sum %x dim 0 over [0] of [2, 2] : tensor<8x8xf64> -> tensor<8x8xf64>
           from #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
    %y = hspmd.all_to_all %0 split 0 concat 1 over [1] of [2, 2] : tensor<8x8xf64> -> tensor<8x8xf64>
           from #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
    ```

    Left untouched (each keeps its reshard for the heterogeneous and
    switching passes, issue 5): strategy sets, unions of several groups,
    reshards between different groups, and layouts that share no mesh.
    Errors, at the reshard: a target that holds a pending reduction the
    source lacks, and a dynamic tensor shape.
  }];
  let statistics = [
    Statistic<"numFused", "fused", "Reshards fused into the next one">,
    Statistic<"numErased", "erased", "Reshards that changed nothing">,
    Statistic<"numLowered", "lowered", "Reshards lowered to collectives">,
    Statistic<"numCollectives", "collectives", "Collectives created">,
    Statistic<"numKept", "kept", "Reshards left for later passes">,
  ];
}

def PrintFactorRulesPass : Pass<"nn-print-factor-rules", "mlir::ModuleOp"> {
  let summary = "Reports the factor rule of every op that has one";
  let description = [{
    For every op implementing `LayoutRuleOpInterface`, in program order,
    computes its factor rule (how layouts flow through the op, see
    `dialects/Interfaces/FactorRule.h`), checks it against the op
    (`FactorRule::verify`: one entry per operand and result, dimension sizes
    equal to the products of their factors, every factor used, no reduction
    factor in a result) and emits it as a remark on the op. A rule that
    fails the check is an error in the op's rule, reported on the op, and
    fails the pass. The IR is not changed; tests pin the rules with
    `-verify-diagnostics`.

    ```mlir
    %0 = nn.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32>
    // remark: factor rule: ([i, k], [k, j]) -> ([i, j])
    //         {i = 8, j = 4, k = 16 reduction(sum)}
    %1 = nn.reshape %x : tensor<8x32xf32> to tensor<8x4x8xf32>
    // remark: factor rule: ([i, j*k]) -> ([i, j, k]) {i = 8, j = 4, k = 8}
    ```

    Factors are named `i`, `j`, `k`, ... in the order the rule creates
    them; a dimension of several factors is written major first (`j*k`),
    one of none (a broadcast dimension of size 1) as `1`.
  }];
}

def SpecializationPass : Pass<"hspmd-specialize", "mlir::ModuleOp"> {
  let summary = "Writes the local function every device of a group runs";
  let description = [{
    For every function whose tensors all have layouts on one device group
    (after `hspmd-propagate-layouts`, `hspmd-insert-reshards` and
    `hspmd-lower-reshards`), adds `@<name>_group0`: the same computation on
    the block of every tensor that a device holds, with the collectives in
    their local view (no layouts; buffer types). Where every device of the
    group holds equally shaped blocks, one function serves all of them and
    its size does not depend on how many devices the group has; a device's
    rank is implicit in the collectives it joins. Where splits inside the
    group are uneven (balanced, or explicit block sizes), the devices that
    hold equally shaped blocks of every tensor form a class with its own
    function `@<name>_group0_block<k>`, listing its devices as
    `hspmd.devices`; block starts are read from the device's coordinate
    (a class whose starts are not affine in it is split into single
    devices). Arguments and results keep
    their attributes, the layout renamed `hspmd.global_layout` (the layout
    of the global tensor the value is a block of, so inputs can be cut into
    shards and results put back); the function records its group as
    `hspmd.group` and its origin as `hspmd.specializes`. The global
    function stays.

    A mean over split dimensions is scaled by local / global count so that
    the contributions add up to the global mean.

    The parts of a function partitioned across device groups
    (`@<name>_part<g>`) become `@<name>_group<g>`, specialising the
    original: their arguments and results record the whole layout (every
    group's states), and an iota along a dimension split across groups
    counts from the group's start plus the device's block start. Pipeline
    stages on groups that overlap are then merged per cell of devices that
    belong to the same groups into `@<name>_cell<k>` (each group's program
    run side by side, the two halves of an exchange met become one, and
    collectives carry the group they run over); the group programs are
    removed.

    ```mlir
    func.func @f(%x: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                 %w: tensor<16x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [D:2]}>})
        -> (tensor<8x4xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) {
      %y = nn.matmul %x, %w {hspmd.operand_layouts = [...], hspmd.result_layouts = [...]}
          : tensor<8x16xf32>, tensor<16x4xf32>
      return %y : tensor<8x4xf32>
    }
    // adds
    func.func @f_group0(%x: tensor<4x16xf32> {hspmd.global_layout = ...},
                        %w: tensor<16x4xf32> {hspmd.global_layout = ...})
        -> (tensor<4x4xf32> {hspmd.global_layout = ...})
        attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @f} {
      %y = nn.matmul %x, %w : tensor<4x16xf32>, tensor<16x4xf32>
      return %y : tensor<4x4xf32>
    }
    ```

    Ops whose local form depends on the device's position rewrite
    themselves through `LocalViewOpInterface` (an iota along a split
    dimension counts from its block's start, a split dropout draws its
    block's global mask elements, a vocabulary-split lookup shifts its ids,
    masked attention on a split query sequence gets its queries' positions,
    a mean over split dimensions is rescaled); a block's global start is
    an `hspmd.axis_index` (the device's coordinate on the splitting axes)
    times the block size, plus the group's start when the dimension is
    also split across groups.

    Errors, at the op: a tensor without a layout (propagation has not run),
    a reshard not lowered, layouts on several groups, ops with regions, and
    ops that cannot be localised (a block start that would have to be added
    to an offset computed at run time), naming the op's layouts.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "loom::nn::NNDialect"];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions specialised">,
  ];
}

def DecomposeCrossEntropyPass
    : Pass<"nn-decompose-cross-entropy", "mlir::ModuleOp"> {
  let summary = "Rewrites the cross-entropy loss and its gradient into "
                "reductions and element-wise ops";
  let description = [{
    `nn.cross_entropy` and `nn.cross_entropy_grad` treat the classes as one
    replicated factor: a logits tensor split along the vocabulary is
    gathered before them. Decomposed, the classes become an ordinary
    dimension: the row maximum is a `max` reduction, the sum of exponentials
    a `sum` reduction, and the label's logit a select against an iota of the
    class ids summed over the classes. Layout propagation then keeps the
    logits split (Megatron's vocabulary-parallel cross-entropy): three
    all-reduces of `[tokens]` values (max, sum, label logit) instead of a
    gather of `[tokens, vocab]`, and the gradient comes out split like the
    logits. Run it after the training step is built (the loss and its
    gradient share their pieces; `-cse` merges them) and before
    `hspmd-propagate-layouts`.

    ```mlir
    %l = nn.cross_entropy %logits, %labels {normalizer = 8.0 : f64}
        : tensor<8x64xf64>, tensor<8xi64>
    // becomes, per token (keep_dims reductions over the classes):
    //   m = max(logits); z = logits - m; s = sum(exp(z))
    //   t = sum(select(iota == label, z, 0))
    //   loss = sum(log(s) - t) / 8
    ```

    The results equal the fused ops' up to rounding (tests compare them in
    f64). Dynamic shapes are an error.
  }];
  let dependentDialects = ["loom::nn::NNDialect"];
  let statistics = [
    Statistic<"numDecomposed", "decomposed",
              "Cross-entropy ops rewritten">,
  ];
}

def PrefixDedupPass : Pass<"nn-prefix-dedup", "mlir::ModuleOp"> {
  let summary = "Rewrites a step over a padded batch into a step over the "
                "batch's prefix trie";
  let description = [{
    RL updates (GRPO, PPO, tree rollouts) train on samples that share
    prefixes. This pass rewrites a function written over a padded batch of
    token sequences, `[batch, seq]`, into the same function over the batch's
    prefix trie packed in depth-first order, `[bins, capacity]` (a row per
    data-parallel bin, each holding the trie of `batch / bins` sample
    slots), so every shared prefix is computed once, forward and, after
    `nn-autodiff` or `nn-training-step`, backward. The loss is unchanged in
    exact arithmetic: what a sample computes at a token depends only on its
    prefix.

    The token argument is the `nn.data` `[batch, seq]` integer tensor read
    as `nn.embedding` ids (exactly one). In the rewritten function

    * values computed from the tokens hold one row per trie node:
      `[batch, seq, ...]` becomes `[bins, capacity, ...]`, the same ops on
      the packed tokens (an op is kept when its factor rule maps the batch
      and sequence dimensions of every tensor that has them to parallel
      factors of its results);
    * causal `nn.attention` becomes `mask = tree subtree_end
      %trie_subtree_end`: a node sees exactly its ancestors;
    * `nn.iota dim = 1` over `[batch, seq]` (positions, for position
      embeddings and `nn.rope`) reads each node's original position,
      `%trie_positions`;
    * an `nn.cross_entropy`, or an `nn.gather` over the classes (a
      log-probability per token), whose labels are a data argument reads
      one log-probability per (sample, token) from a log-softmax computed
      once per node: argument `%trie_index_<labels>` holds `node * vocab +
      label` (`node` the sample's token's node in its bin's row); what
      follows (weights, PPO ratios and clipping with each sample's own old
      log-probabilities and advantage, normalisers) is the per-sample code
      as written, so it keeps the un-deduplicated batch's normalisers;
    * any other op reading token-derived values reads their per-sample form,
      gathered from the nodes by `%trie_nodes` (`[batch, seq]`, the node of
      every (sample, token); exact, but not deduplicated).

    ```mlir
    // before
    func.func @f(%tokens: tensor<8x16xi64> {nn.data}, %targets: tensor<8x16xi64> {nn.data}, ...)
    // after nn-prefix-dedup{capacity=64}
    func.func @f(..., %trie_tokens: tensor<1x64xi64> {nn.data},
                 %trie_positions: tensor<1x64xi64> {nn.data},
                 %trie_subtree_end: tensor<1x64xi64> {nn.data},
                 %trie_index_targets: tensor<8x16xi64> {nn.data})
        attributes {nn.prefix_dedup = {batch = 8, bins = 1, capacity = 64,
                                       seq = 16, vocab = 64}}
    ```

    The padded tokens and labels read only through their index are
    removed; the new arguments come last, named by `nn.name`; the function
    attribute `nn.prefix_dedup` records the shapes a batch packer needs
    (`loom-batch pack`). Padding nodes (past a bin's trie) see only
    themselves and no real token sees them.

    With `buckets=64,128,...` instead of `capacity`, each function becomes
    one variant per capacity, `@<name>_c<capacity>` (ascending), each the
    rewrite at that capacity: the same parameters, data of different
    shapes. A step's batch is packed at the smallest bucket that holds its
    largest bin.

    Errors, at the op: dropout with a non-zero rate (its mask depends on the
    sample's index), attention that is not causal or has a positions
    operand, attention between token-derived and other tensors, no or
    several token arguments, `bins` not dividing the batch, an argument name
    the rewrite needs already taken; `capacity` and `buckets` together, a
    bucket that is not positive or is given twice, a variant name already
    taken.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: every function with nn.data "
           "arguments)">,
    Option<"capacity", "capacity", "int64_t", /*default=*/"0",
           "Packed tokens per bin (the shape bucket; this or buckets is "
           "required)">,
    ListOption<"buckets", "buckets", "int64_t",
               "Capacities of several shape buckets: one variant of each "
               "function per bucket, @<name>_c<capacity>, in place of it">,
    Option<"bins", "bins", "int64_t", /*default=*/"1",
           "Data-parallel bins (rows of the packing); must divide the batch">,
  ];
  let dependentDialects = ["loom::nn::NNDialect"];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions deduplicated">,
  ];
}

def GradientBucketingPass : Pass<"hspmd-bucket-gradients", "mlir::ModuleOp"> {
  let summary = "Fuses the collectives of a local-view function into buckets";
  let description = [{
    In local-view functions (after `hspmd-specialize`), collectives of the
    same kind, reduction, sub-groups and element type share one:
    all-reduces, and reduce-scatters and all-gathers along dimension 0 (the
    gradients and parameters of ZeRO). Each buffer is seen as a
    `[rows, columns]` matrix (rows = the sub-group size where the collective
    cuts or stacks dimension 0, else 1; dimension-0 blocks are contiguous
    rows), the matrices are concatenated along columns, the collective runs
    once and each buffer's columns are sliced back. Every element meets the
    same ranks in the same order, so results are bitwise unchanged; the step
    issues fewer, larger collectives.

    Buckets form in program order: a collective joins the open bucket of its
    kind unless that would pass `bucket-bytes` (then the open bucket is
    issued first), and a bucket is issued right before the first op that
    reads one of its results, or before the return. In a data-parallel
    training step the gradient all-reduces are read only by the optimizer
    updates, so the step ends with one all-reduce per `bucket-bytes` of
    gradients (under ZeRO one reduce-scatter, and one all-gather of the
    updated parameters); an all-reduce whose result is read at once (tensor
    parallelism in the forward pass) stays alone. A collective reading a
    pending one (a reshard chain on a 2-D mesh: all-reduce over one axis,
    all-gather over the other) joins its own bucket, issued after the one it
    reads, instead of cutting that bucket short.

    ```mlir
    %a = hspmd.all_reduce sum %ga over [0] of [2] : tensor<4x4xf32> -> tensor<4x4xf32>
    %b = hspmd.all_reduce sum %gb over [0] of [2] : tensor<8xf32> -> tensor<8xf32>
    %u = nn.add %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
    // becomes
    %fa = nn.reshape %ga : tensor<4x4xf32> to tensor<1x16xf32>
    %fb = nn.reshape %gb : tensor<8xf32> to tensor<1x8xf32>
    %c = nn.concat %fa, %fb dim = 1 : tensor<1x16xf32>, tensor<1x8xf32>
    %r = hspmd.all_reduce sum %c over [0] of [2] : tensor<1x24xf32> -> tensor<1x24xf32>
    %sa = nn.slice %r offsets = [0, 0] sizes = [1, 16] strides = [1, 1] : tensor<1x24xf32>
    %a = nn.reshape %sa : tensor<1x16xf32> to tensor<4x4xf32>
    ...
    ```
  }];
  let dependentDialects = ["loom::nn::NNDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "The largest bucket, in bytes (an all-reduce larger than this "
           "gets a bucket of its own)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "Fused collectives issued">,
  ];
}

def SelectSharesPass : Pass<"hspmd-select-shares", "mlir::ModuleOp"> {
  let summary = "Chooses the shares of splits across device groups from the cluster";
  let description = [{
    For every function whose layouts split a dimension across device groups
    (`split(d) shares [...]` unions), chooses the shares from the module's
    `#hspmd.cluster`: each group's speed is the sum of its devices' speeds,
    its capacity what its smallest device's memory (less `reserved-gib`)
    holds, times its device count, of units of the split dimension, a unit
    costing the bytes of one slice of the largest tensor split that way.
    Shares go in proportion to speed within the capacities, in multiples of
    `alignment` and of every group's own split degree of the dimension
    (`selectShares`, dialects/hspmd/IR/HSPMDShares.h), and every
    split union of the function is rewritten to the chosen ratio (the
    shares the user wrote are placeholders). Run it before
    `hspmd-propagate-layouts`.

    ```mlir
    // Devices 0-3 of speed 1.0, devices 4-5 of speed 0.5: speeds 4 : 1.
    %x = hspmd.annotate %in : tensor<64x128xf32>
        as #hspmd.union<split(0) shares [1, 1]: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>
    // becomes, with alignment = 8 (64 rows: 51.2 : 12.8, rounded to 48 : 16)
        as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>
    ```

    Errors: a split across groups without a cluster, splits of one
    function over different groups or dimensions of different sizes, and
    what `selectShares` refuses (a dimension not a multiple of the
    alignment, groups that cannot hold it).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"1",
           "Shares are multiples of this many units of the split dimension">,
    Option<"reservedGib", "reserved-gib", "double", /*default=*/"0.0",
           "Memory per device kept for other uses, in GiB">,
  ];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions whose shares were chosen">,
  ];
}

def SpecializeStrategiesPass : Pass<"hspmd-specialize-strategies", "mlir::ModuleOp"> {
  let summary = "Turns a function with strategy sets into one function per strategy";
  let description = [{
    Dynamic graph switching compiles a program once per parallel strategy.
    A function whose arguments carry strategy sets
    (`hspmd.layout = #hspmd.strategies<[...], optimizer = "...">`, the same
    strategies on every argument that has one)
    is replaced by one function per strategy, `@<name>_<strategy>`, in the
    set's order, marked `hspmd.strategy = "<strategy>"`:

    * every argument's strategy set becomes the strategy's layout, and every
      `hspmd.annotate` with a strategy set in the body the same;
    * every optimizer state argument (`nn.state = <i>`) without a layout of
      its own takes the *optimizer* strategy's layout of parameter `i`: the
      state stays where the optimizer strategy keeps it whatever strategy
      computes the step, and propagation brings the gradients to it (as for
      ZeRO) and the updated parameters back to the strategy's layout.

    The functions are then partitioned like any other (the pass runs first
    in `loom-partition-pipeline`), and a run switches between them: the
    parameters move from one strategy's layout to the next in one batched
    exchange (`hspmd-switch-plans` prints its plan). Functions without
    strategy sets are left alone.

    A set of `n` strategies makes `n` functions, each partitioned and
    compiled on its own (and `n` times the length buckets where the module
    has a function per sequence length): `max-strategies` (default 16)
    bounds `n`.

    Diagnostics: those of `hspmd-switch-plans` for sets that disagree, and
    a strategy name that cannot end a symbol (letters, digits and `_`), a
    function name that is taken, an annotation or result whose set names
    other strategies, a function with sets that something calls or names,
    more strategies than `max-strategies`.
  }];
  let options = [
    Option<"maxStrategies", "max-strategies", "int64_t", /*default=*/"16",
           "The most strategies a set may have (each is a compiled step)">,
  ];
}

def SwitchPlansPass : Pass<"hspmd-switch-plans", "mlir::ModuleOp"> {
  let summary = "Prints the plan of every switch between the strategies of a parameter set";
  let description = [{
    For every function whose arguments carry strategy sets
    (`hspmd.layout = #hspmd.strategies<...>`), plans the switch of the whole
    parameter set between each ordered pair of its strategies
    (`layout::planSwitch`, runtime/layout/Switch.h) and prints its figures:
    the bytes moved against the least any plan moves under the identity
    mapping and under the best relabelling of interchangeable devices (the
    same node and kind in the module's `hspmd.cluster`), the bytes that stay
    in place, the number of messages (one per device pair: the switch is one
    batched exchange), the largest bytes one device sends and receives and
    on one link between nodes, each against its lower bound, and the
    relabelling where the plan renames devices. The IR is not changed.

    ```
    switch plans @step: 2 tensors, strategies "dp", "tp" (optimizer "dp")
    switch "dp" -> "tp"
      volume 512 bytes (identity minimum 512, relabelled minimum 512), kept 512
      messages 2, largest sent 256 (bound 256), received 256 (bound 256)
      cross-node 0 (bound 0), largest link 0 (bound 0)
    ```

    Every argument with a strategy set must have a static shape and the same
    strategies with the same optimizer strategy, each layout fitting its
    shape; otherwise the pass fails with a diagnostic at the argument.
    Parameters without a set are left to propagation in each strategy's
    function and are not in these plans (a run plans their switch from the
    compiled programs' layouts); data arguments do not move.

    After `loom-partition-pipeline`, the functions of one step specialised to
    its strategies (`@<step>_<strategy>`, `hspmd.strategy`, see
    `hspmd-specialize-strategies`) are planned the same way over everything
    a run carries from one strategy to the next, every parameter and
    optimizer state from one function's layouts to the other's, under
    `switch plans @<step> (compiled)`: the switch a run carries out, never
    relabelled (rank r runs device r's program). Its volume, and what each
    device receives, are the run's; the run's driver plans with every device
    on one node, so with a cluster of several nodes its choice of senders
    may differ from the one printed here.
  }];
  let options = [
    Option<"relabel", "relabel", "bool", /*default=*/"false",
           "Relabel the target's interchangeable devices to move the least">,
    Option<"from", "from", "std::string", /*default=*/"",
           "Only the switches from this strategy (default: every pair); "
           "functions without it are skipped, and a module where none has "
           "it is an error">,
  ];
}

def CommReportPass : Pass<"hspmd-comm-report", "mlir::ModuleOp"> {
  let summary = "Prints the bytes each device sends and receives per step";
  let description = [{
    For every local-view function (one with `hspmd.group`, written by
    `hspmd-specialize`), prints what one call makes each device of the group
    send and receive, per collective kind, computed from the buffer types
    and the collectives' semantics:

    * `all_gather` of a `B`-byte buffer over `k` devices: `(k - 1) B` each
      way;
    * `reduce_scatter` and `all_to_all`: `(k - 1) B / k`;
    * `all_reduce`: a reduce-scatter of `k` near-equal chunks then an
      all-gather of them: `B - c + (k - 1) c`, `c` the device's own chunk
      (the first `N mod k` of the `N` elements' chunks are one element
      longer);
    * `permute`: `B` for a device that changes place, else 0;
    * `local_slice`, `make_partial`: nothing;
    * `exchange` (across device groups): what its plan (`planExchange`)
      makes the device send and receive, reductions and sends together;
    * `sparse_reduce_scatter` (an MoE dispatch's routed rows): a bound, as
      its bytes depend on the routing; printed `at most`: an 8-byte count
      each way with each of the `k - 1` others, then, per row of `R` bytes,
      `8 + R` for at most `min(n, (k - 1) b)` rows sent and `(k - 1)
      min(n, b)` received (`n` the indices a device names, `b` the rows of
      a block); `sparse_all_gather` (the way back) likewise, its indices
      going one way and its rows the other. The runtimes and the simulator
      count the bytes they move.

    For the functions of a step partitioned across groups (several
    specialisations of one function), ranks are device ids.

    The lines read like `loom-run --simulate --comm-stats`, which counts the
    same quantities while the simulator moves the data, so the two can be
    compared line by line. The IR is not changed.

    ```
    comm report @step_group0: 2 devices, 12544 bytes sent per step in all
    rank 0 all_reduce: calls 2, bytes sent 6272, received 6272
    rank 1 all_reduce: calls 2, bytes sent 6272, received 6272
    ```

    With `calls=1`, also the device library calls (NCCL, HCCL) each device
    makes per step on a device target, in program order, as the CUDA and
    Ascend runtimes record them at their call sites (`loom-run --train
    --target ascend --comm-calls` prints the same lines with the step):
    the collective's place among the device's collectives of the step, the
    library call, the data type, the element count passed (all-reduce: the
    operand's elements; all-gather: the operand's, per member;
    reduce-scatter: the result's; all-to-all: a send and a receive of
    1/k of the operand to and from each member in member order; permute:
    a send to the device it moves to and a receive from the one it takes
    from), the communicator's members (device ids) and the peer. Ranks are
    device ids. Exchanges are staged through host memory over MPI and make
    no library call; `local_slice` and `make_partial` move nothing.

    ```
    call rank 0 #1 all_reduce: all_reduce f32 x 29824 over {0, 1}
    call rank 0 #2 all_to_all: send f32 x 64 over {0, 1} to 0
    call rank 0 #2 all_to_all: recv f32 x 64 over {0, 1} from 0
    ```
  }];
  let options = [
    Option<"calls", "calls", "bool", /*default=*/"false",
           "Also print the device library calls each device makes per step">,
  ];
}

#endif // LOOM_PASSES
