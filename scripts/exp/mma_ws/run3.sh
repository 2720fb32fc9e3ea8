#!/usr/bin/env bash
# Third sweep: a producer warpgroup that gives its registers to the
# consumers (setmaxnreg), and ldmatrix addresses split into whole swizzle
# atoms and a constant rest.
T=${T:-./target/release/tirc}
F=scripts/exp/mma_ws/mma_ws.tir
line() {
  local label=$1; shift
  out=$($T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for n in 4096 8192; do
  S="-D M=$n -D N=$n -D K=$n"
  line "mma (committed) $n" ir-examples/hgemm.tir -s mma $S
  line "S4 G8 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=8
  line "S3 G8 $n" $F -s mma_ws $S -p STAGES=3 -p GROUP_M=8
  line "S4 G8 FRAG2 $n" $F -s mma_ws $S -p STAGES=4 -p GROUP_M=8 -p FRAG_STAGES=2
  line "128x256 2x4 S4 G8 $n" $F -s mma_ws $S -p BM=128 -p BN=256 -p WM=2 -p WN=4 -p STAGES=4 -p GROUP_M=8
  line "128x256 2x4 S4 G8 FRAG2 $n" $F -s mma_ws $S -p BM=128 -p BN=256 -p WM=2 -p WN=4 -p STAGES=4 -p GROUP_M=8 -p FRAG_STAGES=2
done
line "S4 G8 4096x11008x4096" $F -s mma_ws -D M=4096 -D N=11008 -D K=4096 -p STAGES=4 -p GROUP_M=8
