#!/usr/bin/env bash
# Issue 12, run-time sizes: the symbolic-M matmul (ir-examples/
# matmul_dynamic.tir, one kernel for every m) against the constant-shape
# kernel of the same schedule (ir-examples/matmul.tir with M given), and
# both against cuBLAS, in the same process per file, N = K = 4096.
# Usage: scripts/dynamic_bench.sh [TIRC] [SCHEDULES...]
set -u
T=${1:-./target/release/tirc}
shift || true
SCHEDULES=${*:-"step6_async step6"}
MS="1 17 1000 4096 8191"
for s in $SCHEDULES; do
  extra=""
  [ "$s" = step6_async ] && extra="-p STAGES=2"
  echo "== $s: the generic kernel's source (one for every m): $($T lower ir-examples/matmul_dynamic.tir -s "$s" $extra --emit cuda | sha256sum | cut -c1-16)"
  dyn=$(echo $MS | sed 's/\([0-9]*\)/m=\1/g; s/ /,/g')
  cst=$(echo $MS | sed 's/\([0-9]*\)/M=\1/g; s/ /,/g')
  echo "-- run-time m (matmul_dynamic.tir)"
  $T bench ir-examples/matmul_dynamic.tir -s "$s" $extra --sizes "$dyn" --compare cublas --seed 7 --repeat 30 --warmup 5
  echo "-- constant M (matmul.tir -D N=4096 -D K=4096)"
  $T bench ir-examples/matmul.tir -s "$s" $extra -D N=4096 -D K=4096 --sizes "$cst" --compare cublas --seed 7 --repeat 30 --warmup 5
done
