#!/usr/bin/env bash
# Runs a libFuzzer target for a fixed number of inputs with a fixed seed,
# seeded with the lit tests (each `// -----` case a seed of its own).
#   run-fuzzer.sh FUZZER TEST_ROOT WORK_DIR RUNS
set -euo pipefail
fuzzer=$1 tests=$2 work=$3 runs=$4

rm -rf "$work"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
n=0
while IFS= read -r -d '' file; do
  # One seed per split-input-file case.
  awk -v dir="$work/seeds" -v base="$n" '
    /^\/\/ -----/ { part++; next }
    { print > (dir "/" base "-" part ".mlir") }' "$file"
  n=$((n + 1))
done < <(find "$tests" -name '*.mlir' -not -path '*/fuzz/*' -print0)
echo "fuzz: $(ls "$work/seeds" | wc -l) seeds from $n test files, $runs runs"

set +e
"$fuzzer" -seed=1 -runs="$runs" -max_len=8192 -timeout=20 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$work/seeds" >"$work/log" 2>&1
status=$?
set -e
tail -n 25 "$work/log"
if [[ $status -ne 0 ]]; then
  echo "fuzz: FAILED (exit $status); reproducers in $work/artifacts:" >&2
  ls "$work/artifacts" >&2
  exit "$status"
fi
echo "fuzz: clean after $runs runs"
