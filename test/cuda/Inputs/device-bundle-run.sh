#!/usr/bin/env bash
# Runs a device bundle as a bare node would (test/cuda/device-bundle.test):
# copied into a fresh folder outside the build tree, built and run by its
# own run.sh under env -i (the system's tools and CUDA's nvcc on PATH,
# nothing else). Then plants faults in the copy's reference results and
# reruns the checks on the same build, each of which must fail:
#   1. a step's reference loss off by 1e-2 relative;
#   2. a NaN in a reference parameter.
#   device-bundle-run.sh BUNDLE
set -uo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -r "$1" "$dir/bundle"
clean=(env -i PATH=/usr/local/cuda/bin:/usr/bin:/bin HOME="$dir")
"${clean[@]}" "$dir/bundle/run.sh"
echo "run.sh exit $?"
ref=$dir/bundle/programs/gpt_mini/reference
first=$(awk 'NR == 1 { print $2 }' "$ref/params.txt")
plant() {
  "${clean[@]}" python3 - "$@" <<'PY'
import array, sys
path, code, index, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
values = array.array(code)
values.frombytes(open(path, "rb").read())
values[index] = float("nan") if how == "nan" else values[index] * 1.01
open(path, "wb").write(values.tobytes())
PY
}
checks=("${clean[@]}" python3 "$dir/bundle/check.py" --bundle "$dir/bundle"
        --build "$dir/bundle/build" --cuda OFF)
cp "$ref/loss.bin" "$dir/loss.bin"
plant "$ref/loss.bin" d 1 scale
echo "fault 1: a reference loss off by 1e-2"
"${checks[@]}"
echo "checks exit $?"
cp "$dir/loss.bin" "$ref/loss.bin"
plant "$ref/arg$first.bin" f 0 nan
echo "fault 2: a NaN in a reference parameter"
"${checks[@]}"
echo "checks exit $?"
