#!/usr/bin/env bash
# The CUDA target on a machine with one NVIDIA GPU: trains the GPT-mini for
# 10 steps on 1 rank from the generated CUDA code, checks every step's loss
# and the final parameters against the host target (f32; 1e-4 relative for
# the losses, 1e-3 norm-wise for the parameters: GEMMs differ between cuBLAS
# and OpenBLAS), then times steps. Skips (exit 0) where there is no GPU.
# NCCL refuses two ranks on one GPU: several ranks need several GPUs.
#   scripts/cuda-check.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-release}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "cuda-check: no NVIDIA GPU here; skipped"
  exit 0
fi
"$root/scripts/setup.sh"
"$root/scripts/configure.sh" "$build" release
cmake --build "$build" --target loom-opt loom-run loom-translate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/loom-opt" "$root/examples/gpt_mini.mlir" \
    --loom-training-pipeline="optimizer=adamw lr=1e-2" -o "$work/step.mlir"
for target in host cuda; do
  "$build/bin/loom-run" --interpret "$work/step.mlir" --train \
      --target "$target" --ranks 1 --steps 10 --json \
      --output-dir "$work/$target" > "$work/$target.log"
done
python3 - "$work" <<'PY'
import json, os, sys
import numpy as np
work = sys.argv[1]
def losses(name):
    with open(os.path.join(work, name + ".log")) as f:
        return [json.loads(l) for l in f if l.startswith("{")]
host, cuda = losses("host"), losses("cuda")
worst = max(abs(c["loss"] - h["loss"]) / abs(h["loss"]) for h, c in zip(host, cuda))
params, k = 0.0, 0
while os.path.exists(os.path.join(work, "host", f"param_{k}.npy")):
    a = np.load(os.path.join(work, "cuda", f"param_{k}.npy")).astype(np.float64)
    b = np.load(os.path.join(work, "host", f"param_{k}.npy")).astype(np.float64)
    params = max(params, np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    k += 1
rate = lambda runs: sorted(r["tokens_per_s"] for r in runs[1:])[len(runs[1:]) // 2]
print(f"cuda-check: {len(cuda)} steps, loss error {worst:.2e} (bound 1e-4), "
      f"{k} parameters error {params:.2e} (bound 1e-3); tokens/s: cuda "
      f"{rate(cuda):.0f}, host {rate(host):.0f}")
sys.exit(0 if worst <= 1e-4 and params <= 1e-3 else 1)
PY
