#!/usr/bin/env bash
# Checks that print -> parse -> print is stable for FILE in custom form,
# generic form and bytecode, and that all three read back to the same IR.
#   check-round-trip.sh FILE TMP_PREFIX [loom-opt flags...]
set -euo pipefail
file=$1 tmp=$2
shift 2
opt() { loom-opt "$@"; }

opt "$file" "$@" > "$tmp.custom"
opt "$tmp.custom" > "$tmp.custom2"
cmp "$tmp.custom" "$tmp.custom2"

opt "$file" "$@" --mlir-print-op-generic > "$tmp.generic"
opt "$tmp.generic" --mlir-print-op-generic > "$tmp.generic2"
cmp "$tmp.generic" "$tmp.generic2"
opt "$tmp.generic" > "$tmp.from-generic"
cmp "$tmp.custom" "$tmp.from-generic"

opt "$file" "$@" --emit-bytecode > "$tmp.bc"
opt "$tmp.bc" > "$tmp.from-bytecode"
cmp "$tmp.custom" "$tmp.from-bytecode"
