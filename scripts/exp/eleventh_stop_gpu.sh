#!/usr/bin/env bash
# Eleventh stop: wgmma tiles that let two thread blocks share a
# multiprocessor (issue 13), and the per-tile cost of the default kernel.
set -u
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
run() { echo "== $*"; "$T" run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1 | grep -E 'check|tirc|cublas|ratio|TFLOPS|GFLOPS|registers|×|warning|error' | head -8; }
H=ir-examples/hgemm.tir
for n in 4096 8192; do
  D="-D M=$n -D N=$n -D K=$n"
  run $H -s wgmma $D
  run $H -s wgmma -p BM=64 -p BK=32 -p STAGES=3 $D
  run $H -s wgmma -p BM=64 -p BK=32 -p STAGES=4 $D
  run $H -s wgmma -p BM=64 -p BK=32 -p STAGES=4 -p GROUP_M=16 $D
  run $H -s wgmma -p BM=64 -p BK=64 -p STAGES=2 $D
  run $H -s wgmma -p BM=128 -p BK=32 -p STAGES=4 $D
done
# The default kernel's time against K at M = N = 4096: a fixed cost per tile
# (fill of the pipeline, the store of C) shows as a time not proportional to K.
for k in 2048 8192 16384; do
  run $H -s wgmma -D M=4096 -D N=4096 -D K=$k
done
