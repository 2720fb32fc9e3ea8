#!/usr/bin/env bash
# The zero-filled tiles (`zero_fill_tiles`, for reductions of run-time
# length) on the GPU: results checked at shapes no tile divides, for every
# tiled schedule (constant shapes, unchanged by the pass) and the run-time
# example, and compute-sanitizer's memcheck and racecheck on the copies
# that fill zeros (cp.async with a source size of 0, and the selects).
# Usage: scripts/zero_fill_check.sh [TIRC]
set -u
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { grep -E 'check|rror' | tr '\n' ' '; echo; }
for sh in "37 45 29" "100 68 130" "1000 1100 999" "130 1100 1001" "64 64 50"; do
  set -- $sh
  for s in step4 step5 step6 step6_async step6_padded; do
    echo "$s ${1}x${2}x${3}: $($T run ir-examples/matmul.tir -s $s -D M=$1 -D N=$2 -D K=$3 --target cuda --seed 3 2>&1 | g)"
  done
  for s in step6 step6_async; do
    echo "linear_dynamic $s m=$1 n=$2 k=$3: $($T run ir-examples/linear_dynamic.tir -s $s -D m=$1 -D n=$2 -D k=$3 --target cuda --seed 3 2>&1 | g)"
  done
done
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool $T run ir-examples/matmul.tir -s step6_async -p STAGES=3 -D M=130 -D N=1100 -D K=1001 --target cuda 2>&1 | tail -1
  compute-sanitizer --tool $tool $T run ir-examples/linear_dynamic.tir -s step6_async -p STAGES=4 -D m=70 -D n=92 -D k=41 --target cuda 2>&1 | tail -1
  compute-sanitizer --tool $tool $T run ir-examples/matmul.tir -s step6 -D M=100 -D N=68 -D K=130 --target cuda 2>&1 | tail -1
done
for p in "STAGES=0 -p VEC=1" "STAGES=3 -p VEC=1" "STAGES=2 -p VEC=2" "STAGES=3"; do
  echo "zero_filled_tiles -p $p: $($T run tests/data/nvrtc/zero_filled_tiles.tir -s tiles -p $p -D m=100 -D n=68 -D k=130 --target cuda --seed 3 2>&1 | g)"
  compute-sanitizer --tool memcheck $T run tests/data/nvrtc/zero_filled_tiles.tir -s tiles -p $p -D m=70 -D n=93 -D k=41 --target cuda 2>&1 | tail -1
done
