#!/usr/bin/env bash
# Times the matmul schedules at shapes no tile divides against cuBLAS in the
# same run (issue 12). Usage: scripts/boundary_bench.sh [TIRC] [SCHEDULES...]
set -u
T=${1:-./target/release/tirc}
shift || true
SCHEDULES=${*:-"step4 step6 step6_async"}
SHAPES="4096,4096,4096 4000,4000,4000 4097,4097,4097 2000,2000,2000 1000,1100,999 8191,8191,8191 2048,2048,2048 1024,1024,1024"
for s in $SCHEDULES; do
  for shape in $SHAPES; do
    IFS=, read -r M N K <<<"$shape"
    extra=""
    [ "$s" = step6_async ] && extra="-p STAGES=2"
    out=$($T run ir-examples/matmul.tir -s "$s" $extra -D M="$M" -D N="$N" -D K="$K" \
          --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
    echo "$s ${M}x${N}x${K}: $(echo "$out" | grep -E 'check|time:|cublas:|rror' | tr '\n' ' ')"
  done
done
