#!/usr/bin/env bash
# Second sweep of the warp-specialized mma.sync (see run.sh), and Nsight
# Compute's view of the best point.
T=${T:-./target/release/tirc}
F=scripts/exp/mma_ws/mma_ws.tir
line() {
  local label=$1; shift
  out=$($T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for n in 4096 8192; do
  S="-D M=$n -D N=$n -D K=$n"
  line "S4 G8 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=8
  line "S4 G8 FRAG2 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=8 -p FRAG_STAGES=2
  line "128x128 2x2 S3 G8 $n" $F -s mma_ws $S -p BM=128 -p BN=128 -p WM=2 -p WN=2 -p STAGES=3 -p GROUP_M=8
  line "128x128 2x2 S2 G8 $n" $F -s mma_ws $S -p BM=128 -p BN=128 -p WM=2 -p WN=2 -p STAGES=2 -p GROUP_M=8
  line "128x256 2x4 S4 G8 $n" $F -s mma_ws $S -p BM=128 -p BN=256 -p WM=2 -p WN=4 -p STAGES=4 -p GROUP_M=8
  line "256x128 4x2 S4 G4 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=4
  line "256x128 4x2 S4 G16 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=16
done
ncu --kernel-name hgemm_kernel --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
  $T run $F -s mma_ws -D M=4096 -D N=4096 -D K=4096 -p STAGES=4 -p GROUP_M=8 --target cuda 2>&1 | grep -vE "^\s*$|----" | head -120
