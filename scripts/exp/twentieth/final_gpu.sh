#!/usr/bin/env bash
# Twentieth stop, the last binary on the GPU: the in-place products timed
# again, the small-N transposed products, and the sanitizers.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
line "wgmma 4096" $F -s wgmma -D M=4096 -D N=4096 -D K=4096
line "wgmma 4097 PAD" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1
line "wgmma 8192" $F -s wgmma -D M=8192 -D N=8192 -D K=8192
line "wgmma 8191 PAD" $F -s wgmma -D M=8191 -D N=8191 -D K=8191 -p PAD=1
for ws in 0 1; do
  line "wgmma_nt 4096x16x4096 WS=$ws" $F -s wgmma_nt -D M=4096 -D N=16 -D K=4096 -p WS=$ws
  line "wgmma_nt 4096x31x4096 PAD WS=$ws" $F -s wgmma_nt -D M=4096 -D N=31 -D K=4096 -p PAD=1 -p WS=$ws
done
for tool in memcheck racecheck; do
  echo "== $tool: wgmma_nt 256x31x128 PAD=1"
  timeout 120 compute-sanitizer --tool $tool $T run $F -s wgmma_nt -D M=256 -D N=31 -D K=128 -p PAD=1 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
  echo "== $tool: mma_tf32 100x37x70 PAD=1 small tiles"
  timeout 120 compute-sanitizer --tool $tool $T run $F -s mma_tf32 -D M=100 -D N=37 -D K=70 -p PAD=1 -p BM=64 -p BN=64 -p BK=32 -p WM=2 -p WN=2 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
done
