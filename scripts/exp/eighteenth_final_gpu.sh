#!/usr/bin/env bash
# The stop's last binary on the GPU: the review's fixes (a producer
# warpgroup serving 16 warps, B tiles of fewer than 64 columns) checked,
# with the sanitizers, and the timed kernels again.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 60 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
W16="-p WS=1 -p BM=128 -p BN=128 -p BK=32 -p WM=4 -p WN=4 -p STAGES=3"
line "mma 16 warps 1024" $F -s mma -D M=1024 -D N=1024 -D K=1024 $W16
line "mma_nt 16 warps 1000x600x200 PAD" $F -s mma_nt -D M=1000 -D N=600 -D K=200 -p PAD=1 $W16
line "mma BN=32 WS 300x200x100 PAD" $F -s mma -D M=300 -D N=200 -D K=100 -p PAD=1 -p WS=1 -p BM=64 -p BN=32 -p WM=2 -p WN=1
line "mma_bf16 BN=32 WS 512" $F -s mma_bf16 -D M=512 -D N=512 -D K=512 -p WS=1 -p BM=64 -p BN=32 -p WM=2 -p WN=1
for tool in racecheck synccheck; do
  echo "== $tool (16 warps)"
  timeout 120 compute-sanitizer --tool $tool $T run $F -s mma -D M=256 -D N=256 -D K=128 $W16 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
done
WS="-p WS=1 -p STAGES=4 -p GROUP_M=8"
for n in 4096 8192; do
  line "mma $n WS" $F -s mma -D M=$n -D N=$n -D K=$n $WS
  line "mma_bf16 $n WS" $F -s mma_bf16 -D M=$n -D N=$n -D K=$n $WS
  line "wgmma $n" $F -s wgmma -D M=$n -D N=$n -D K=$n
done
