//===- Passes.td - Loom's code-generation passes -----------*- tablegen -*-===//

#ifndef LOOM_CODEGEN_PASSES
#define LOOM_CODEGEN_PASSES

include "mlir/Pass/PassBase.td"

def PlanArenaPass : Pass<"loom-plan-arena", "mlir::ModuleOp"> {
  let summary = "Reports the static memory plan of every local program";
  let description = [{
    Plans every function the way `--loom-lower-to-calls` will place its
    tensors (codegen/Common/ArenaPlan.h): arguments and results that are not
    updates in a persistent part, every other value in a transient part
    where buffers whose lives do not overlap share bytes. Prints, per
    function, the arena's size and what reuse saves, to stdout:

    ```
    arena @f_group0: 123,456 bytes per device (persistent 65,536, transient peak 57,920 of 180,224 without reuse), 31 buffers, 2 updates in place
    ```

    The IR is not changed. Functions named by `func` (default: every
    function with a body).
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"\"",
           "The function to plan (default: every function with a body)">,
  ];
}

def LowerToCallsPass : Pass<"loom-lower-to-calls", "mlir::ModuleOp"> {
  let summary = "Lowers per-device programs to the target-neutral call layer";
  let description = [{
    Every local program of the training step `entry` (its specialisations
    for each device group, `hspmd.specializes = @entry`, or `@entry` itself
    on one device when it has none) becomes an `emitc.class` named after the
    function, in destination-passing style:

    - fields: the arena (`loom.arena`, its bytes in `loom.bytes`), one
      typed pointer per buffer of the arena plan, named after the value
      (`param_2`, `matmul_0`, `loss`; offset in `loom.offset`), one
      communicator per sub-group the collectives run in (`loom.comm`, with
      the group's devices, mesh and axes), one plan per cross-group
      exchange (`loom.exchange`, the serialised plan), and the tables a
      driver needs (`arg_offsets`, `arg_bytes`, `result_offsets`,
      `result_bytes`, `loss_result`, `grad_norm_result`);
    - methods: one per step phase (`forward` up to the loss, `backward`,
      `update` from the first optimizer update; `run` for a function
      without a loss), each a sequence of `emitc.call_opaque` to
      `loom.kernel.<op>` (every `nn` op, the results' buffers first, then
      the operands', each tensor as a pointer and its shape, then the op's
      attributes in alphabetical order) or `loom.comm.<op>` (collectives,
      with their communicator or plan), and `step`, which calls them and
      copies updates that could not be written in place back into their
      arguments.

    Only the final emission differs per target (`--loom-emit-host`). The
    other functions of the module are removed. Errors: no such entry,
    tensors of dynamic shape or an unsupported element type, ops without a
    lowering (named), functions of several blocks.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The training step whose programs to lower (default: the only "
           "function with an nn.loss result that specialises nothing)">,
  ];
  let dependentDialects = ["mlir::emitc::EmitCDialect"];
}

def EmitHostPass : Pass<"loom-emit-host", "mlir::ModuleOp"> {
  let summary = "Final emission of the call layer for the host target";
  let description = [{
    Turns the target-neutral call layer (`--loom-lower-to-calls`) into code
    for the host runtime (runtime/host/Program.h): kernels become calls to
    `loom::host::<op>` (Loom's CPU kernels, cblas for GEMM), collectives to
    the MPI runtime, fields get their C++ types and initialisers (pointers
    into the arena, communicators opened once at start-up), and a `main`
    runs the program of the rank's device group under the host driver.
    `mlir-translate --mlir-to-cpp` (or `loom-translate --loom-to-host-cpp`)
    prints the result as C++.
  }];
  let dependentDialects = ["mlir::emitc::EmitCDialect"];
}

def EmitCudaPass : Pass<"loom-emit-cuda", "mlir::ModuleOp"> {
  let summary = "Final emission of the call layer for the CUDA target";
  let description = [{
    The CUDA target's spelling of the call layer (`--loom-lower-to-calls`):
    kernels and collectives are `loom::cuda::<op>` (Loom's CUDA kernels,
    cuBLAS for GEMM, NCCL for collectives), the arena is device memory,
    communicators are NCCL communicators made once per collective group,
    and `main` runs the programs under the CUDA driver
    (`runtime/cuda/Program.h`). The same call layer as the host target; only
    the names differ (codegen/Common/Emission.h).
  }];
  let dependentDialects = ["mlir::emitc::EmitCDialect"];
}

def EmitAscendPass : Pass<"loom-emit-ascend", "mlir::ModuleOp"> {
  let summary = "Final emission of the call layer for the Ascend target";
  let description = [{
    The Ascend target's spelling of the call layer (`--loom-lower-to-calls`):
    kernels are `loom::ascend::<op>`, each one aclnn operator called in two
    phases (`aclnn<Op>GetWorkspaceSize`, a workspace from `aclrtMalloc`, the
    launch on the rank's stream, the workspace freed after the stream is
    synchronised); nn ops without an aclnn operator of the same semantics
    are operators of Loom's own package (`aclnnLoom<Op>`). Collectives are
    HCCL's, on communicators made once per group from a root info broadcast
    over MPI; a mean is a sum and a scale. `main` runs the programs under the
    Ascend driver (`runtime/ascend/Program.h`), which resolves every CANN
    function at run time.

    An op without an Ascend kernel is an error at the op.
  }];
  let dependentDialects = ["mlir::emitc::EmitCDialect"];
}

def EmitClusterPass : Pass<"loom-emit-cluster", "mlir::ModuleOp"> {
  let summary = "Final emission with each program for its devices' target";
  let description = [{
    For a module with a cluster description (`hspmd.cluster`): each program
    of the call layer (one per device group) is spelled for the target that
    runs its devices' kind: `cpu` the host target, NVIDIA GPUs (`h100`,
    `h200`, `a100`, ...) CUDA, Ascend NPUs (`910b`, ...) Ascend. A program
    whose devices belong to two targets is an error, as is a kind no target
    runs. When the programs have different targets, `main` runs them under
    the shared device driver (`runtime/host/DeviceSupport.h`), each rank
    starting its own program's device; exchanges between groups are staged
    through host memory over MPI on every target (the baseline).
  }];
  let dependentDialects = ["mlir::emitc::EmitCDialect"];
}

#endif // LOOM_CODEGEN_PASSES
