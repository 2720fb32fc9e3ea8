#!/usr/bin/env bash
# On a machine with a GPU and nvcc: builds kernels with `tirc build`, links
# docs/export/main.cu against them with nvcc, and runs it (the product is
# checked against the CPU there). Usage: scripts/export_example.sh TIRC [ARCH]
set -euo pipefail
TIRC=${1:-./target/release/tirc}
ARCH=${2:-sm_90}
out=$(mktemp -d)
for shape in "1000 1100 999" "2048 2048 2048"; do
  read -r M N K <<<"$shape"
  for sched in "step6_async -p STAGES=2" "step6_async -p STAGES=4" "step4"; do
    d="$out/$(echo "$sched" | tr -c "a-zA-Z0-9_\n" _)_${M}"
    # shellcheck disable=SC2086
    "$TIRC" build ir-examples/matmul.tir -s $sched -D M="$M" -D N="$N" -D K="$K" -o "$d" >/dev/null
    nvcc -O3 -arch="$ARCH" -std=c++17 -I"$d" -DSIZE_M="$M" -DSIZE_N="$N" -DSIZE_K="$K" docs/export/main.cu "$d/matmul.cu" -o "$d/matmul"
    echo "tirc build -s $sched -D M=$M -D N=$N -D K=$K, nvcc, run:"
    "$d/matmul"
  done
done
# One build of the run-time-M matmul (m = T.int32()), linked and run at
# several M: the launcher takes m and computes the grid.
d="$out/dynamic"
"$TIRC" build ir-examples/matmul_dynamic.tir -s step6_async -p STAGES=2 -o "$d" >/dev/null
for M in 1 17 130; do
  nvcc -O3 -arch="$ARCH" -std=c++17 -I"$d" -DRUNTIME_M -DSIZE_M="$M" -DSIZE_N=4096 -DSIZE_K=4096 docs/export/main.cu "$d/matmul.cu" -o "$d/matmul_$M"
  echo "tirc build ir-examples/matmul_dynamic.tir -s step6_async (one build), nvcc, run at m=$M:"
  "$d/matmul_$M"
done
