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

#endif // LOOM_PASSES
