#!/usr/bin/env bash
# Issue 13's mma.sync bar on Hopper: hgemm.tir's mma schedules with the
# tiles brought by TMA from a producer warpgroup (-p WS=1), against the
# same schedules' defaults (cp.async by every thread) and cuBLAS
# (cublasGemmEx, same types), each line one `tirc run` process, results
# checked against float64. Then the sanitizers on a small warp-specialized
# kernel.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$($T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
WS="-p WS=1 -p STAGES=4 -p GROUP_M=8"
for n in 4096 8192; do
  S="-D M=$n -D N=$n -D K=$n"
  line "mma $n defaults" $F -s mma $S
  line "mma $n WS" $F -s mma $S $WS
  line "mma_nt $n WS" $F -s mma_nt $S $WS
  line "mma_bf16 $n WS" $F -s mma_bf16 $S $WS
done
line "mma 2048 WS" $F -s mma -D M=2048 -D N=2048 -D K=2048 $WS
line "mma 4096x11008x4096 WS" $F -s mma -D M=4096 -D N=11008 -D K=4096 $WS
line "mma 4097 PAD WS" $F -s mma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 $WS
line "mma 8191 PAD WS" $F -s mma -D M=8191 -D N=8191 -D K=8191 -p PAD=1 $WS
line "mma 300x520x200 PAD WS small" $F -s mma -D M=300 -D N=520 -D K=200 -p PAD=1 -p BM=64 -p BN=64 -p WM=2 -p WN=2 $WS
for tool in racecheck synccheck memcheck; do
  echo "== $tool"
  compute-sanitizer --tool $tool $T run $F -s mma -D M=320 -D N=256 -D K=192 -p BM=128 -p BN=128 -p WM=2 -p WN=2 $WS --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY|hazard" | head -5
done
