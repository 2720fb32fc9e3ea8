#!/usr/bin/env bash
# Tenth stop: float32 thread tiles of 16x4 with A stored k-major (issue 14).
set -u
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
run() { echo "== $*"; "$T" run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1 | grep -E 'check|tirc|cublas|ratio|GFLOPS|registers|×|warning' | head -8; }
for n in 4096 8192; do
  D="-D M=$n -D N=$n -D K=$n"
  run ir-examples/matmul.tir -s step6_async -p STAGES=2 $D
  run scripts/exp/sgemm_tall.tir -s tall $D
  run scripts/exp/sgemm_tall.tir -s tall -p MIN_BLOCKS=2 $D
  run scripts/exp/sgemm_tall.tir -s tall -p BK=8 $D
  run scripts/exp/sgemm_tall.tir -s tall -p BK=8 -p STAGES=3 $D
  run scripts/exp/sgemm_tall.tir -s tall -p MIN_BLOCKS=2 -p STAGES=3 $D
  run scripts/exp/sgemm_tall.tir -s tall -p BK=8 -p GROUP_M=8 $D
done
