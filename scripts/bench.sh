#!/usr/bin/env bash
# Times every schedule of an example against cuBLAS at several sizes, on the
# GPU, in one process per point: `scripts/bench.sh ir-examples/matmul.tir
# "step1 step2" "1024 2048 4096"`. Prints one JSON line per point.
set -uo pipefail
file=${1:-ir-examples/matmul.tir}
schedules=${2:-"step1 step2"}
sizes=${3:-"1024 4096"}
tirc=${TIRC:-./target/release/tirc}
for s in $schedules; do
  for n in $sizes; do
    out=$($tirc run "$file" -s "$s" -D M=$n -D N=$n -D K=$n --bench --compare cublas --json ${EXTRA:-} 2>&1)
    echo "{\"schedule\": \"$s\", \"size\": $n, \"result\": $out}"
  done
done
