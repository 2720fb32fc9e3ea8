#!/usr/bin/env bash
# mma.sync fed by TMA (warp-specialized) from swizzled tiles, against the
# committed `mma` schedule and cuBLAS, each line one process (tirc and
# cuBLAS in the same run, results checked against float64).
T=${T:-./target/release/tirc}
F=scripts/exp/mma_ws/mma_ws.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() { # label, then tirc run arguments
  local label=$1; shift
  out=$($T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for n in 4096 8192; do
  S="-D M=$n -D N=$n -D K=$n"
  line "mma (committed) $n" ir-examples/hgemm.tir -s mma $S
  line "mma_ws WS=0 SWZ=0 $n" $F -s mma_ws $S -p WS=0 -p SWZ=0
  line "mma_ws WS=0 SWZ=1 $n" $F -s mma_ws $S -p WS=0
  line "mma_ws WS=1 $n" $F -s mma_ws $S
  line "mma_ws WS=1 STAGES=4 $n" $F -s mma_ws $S -p STAGES=4
  line "mma_ws WS=1 GROUP_M=8 $n" $F -s mma_ws $S -p GROUP_M=8
  line "mma_ws WS=1 STAGES=4 GROUP_M=8 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=8
  line "mma_ws WS=1 128x256 2x4 $n" $F -s mma_ws $S -p BM=128 -p BN=256 -p WM=2 -p WN=4 -p GROUP_M=8
  line "mma_ws WS=1 128x128 2x2 S4 $n" $F -s mma_ws $S -p BM=128 -p BN=128 -p WM=2 -p WN=2 -p STAGES=4 -p GROUP_M=8
  line "mma_ws WS=1 FRAG_STAGES=2 G8 $n" $F -s mma_ws $S -p FRAG_STAGES=2 -p GROUP_M=8
done
