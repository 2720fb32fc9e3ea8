#!/usr/bin/env bash
# Times the matmul schedules at shapes no tile divides, and at the nearest
# multiples of their tiles, against cuBLAS in the same run (issue 12).
# Usage: scripts/boundary_bench.sh [TIRC] [SCHEDULES...]
#   SHAPES="M,N,K ..." overrides the shapes. step1's tile is one row of 1024
#   columns, so its multiples keep M and K (2000x2048x2000 for 2000^3);
#   step6_async runs with STAGES=2, and with VEC=2 too (8-byte copies,
#   which rows of an odd length keep one row in two).
set -u
T=${1:-./target/release/tirc}
shift || true
SCHEDULES=${*:-"step4 step6 step6_async"}
DEFAULT="4096,4096,4096 4000,4000,4000 4097,4097,4097 2048,2048,2048 2000,2000,2000 1024,1088,1024 992,1088,992 1000,1100,999 1024,1120,1024 8192,8192,8192 8191,8191,8191"
STEP1="4096,4096,4096 4097,4097,4097 4097,4096,4097 2000,2000,2000 2000,2048,2000 1000,1100,999 1000,1024,999 8191,8191,8191 8191,8192,8191"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for s in $SCHEDULES; do
  variants="-"
  [ "$s" = step6_async ] && variants="-p:STAGES=2 -p:STAGES=2:-p:VEC=2"
  shapes=${SHAPES:-$DEFAULT}
  [ "$s" = step1 ] && shapes=${SHAPES:-$STEP1}
  for v in $variants; do
    extra=""
    [ "$v" != - ] && extra=${v//:/ }
    for shape in $shapes; do
      IFS=, read -r M N K <<<"$shape"
      out=$($T run ir-examples/matmul.tir -s "$s" $extra -D M="$M" -D N="$N" -D K="$K" \
            --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
      echo "$s $extra ${M}x${N}x${K}: $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
    done
  done
done
