#!/usr/bin/env bash
# The thirteenth stop on the GPU. Part 1: the forms this stop changed,
# each against the float64 reference (tiles sized under their guards,
# split-K across threads, a long float16 sum, padding of a global buffer
# left out), and every tiled schedule at shapes no tile divides. Part 2:
# the kernels whose tiles compact_buffers now sizes differently (sgemm,
# gemm_v v3 and v4), timed against cuBLAS with this stop's binary and the
# last stop's (OLD). Part 3: the occupancy hint on step4 and step5 at
# 1000x1100x999 and its multiple 992x1088x992, and step6_async's vector
# width at 8191^3 and 8192^3.
# Usage: scripts/exp/thirteenth_stop_gpu.sh [TIRC] [OLD_TIRC]
set -u
T=${1:-./target/release/tirc}
OLD=${2:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
run() { echo "== $*"; "$T" run "$@" --target cuda --seed 7 2>&1 | grep -E 'check|rror|warning' | tr '\n' ' '; echo; }
run tests/data/schedule/predicated_copy_tile.tir -s tiles
run tests/data/schedule/predicated_copy_tile.tir -s tiles -D M=1000 -D N=999
for k in 1 7 101; do run tests/data/nvrtc/rfactor_split_k_cross_thread.tir -s split_k -D K=$k; done
run tests/data/nvrtc/rfactor_split_k_cross_thread.tir -s split_k -D M=1000 -D K=10007
run tests/data/sizes/f16_long_sum.tir -s rows
run tests/data/warn/global_dim_align.tir
bash scripts/zero_fill_check.sh "$T" | grep -v "^NVIDIA" | grep -v "check: ok" || true
echo "zero_fill_check: every other line ok"
bench() {
  local bin=$1; shift
  "$bin" run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1 |
    grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|[0-9]+ registers|[0-9]+ B local|[0-9]+ blocks/SM|rror.*' | tr '\n' ' '
  echo
}
for b in "$T" $OLD; do
  echo "== binary $b"
  echo "sgemm 4096: $(bench $b ir-examples/sgemm.tir -s sgemm -D M=4096 -D N=4096 -D K=4096)"
  echo "v3 4096: $(bench $b ir-examples/gemm_v.tir -s v3 -D M=4096 -D N=4096 -D K=4096)"
  echo "v4 4096: $(bench $b ir-examples/gemm_v.tir -s v4 -D M=4096 -D N=4096 -D K=4096)"
done
for s in step4 step5; do
  for mb in 0 10 12 16; do
    for sh in "1000 1100 999" "992 1088 992" "1024 1120 1024"; do
      set -- $sh
      echo "$s MIN_BLOCKS=$mb ${1}x${2}x${3}: $(bench $T ir-examples/matmul.tir -s $s -p MIN_BLOCKS=$mb -D M=$1 -D N=$2 -D K=$3)"
    done
  done
done
for v in 2 4; do
  for n in 8191 8192; do
    echo "step6_async STAGES=2 VEC=$v ${n}^3: $(bench $T ir-examples/matmul.tir -s step6_async -p STAGES=2 -p VEC=$v -D M=$n -D N=$n -D K=$n)"
  done
done
