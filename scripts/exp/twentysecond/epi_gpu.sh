#!/usr/bin/env bash
# Twenty-second stop: wgmma_nt's C staged through shared memory (EPI) once
# its accumulators are one warp's tile (extract_launch's per-thread
# compaction), against the direct stores, at 4096, 4097 and 8191.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
line() {
  local label=$1; shift
  out=$(timeout 120 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"registers_per_thread": [0-9]+|"local_bytes_per_thread": [0-9]+|"message": "[^"]*"' | tr '\n' ' ')"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line "150x230x70 BN=208 EPI=64" $F -s wgmma_nt -D M=150 -D N=230 -D K=70 -p PAD=1 -p BN=208 -p EPI=64
line "150x230x70 BN=208 EPI=32 WS=0" $F -s wgmma_nt -D M=150 -D N=230 -D K=70 -p PAD=1 -p BN=208 -p EPI=32 -p WS=0
for n in 4096 4097; do
  for bn in 208 256; do
    for g in 1 8; do
      for e in 0 32 64 128; do
        line "$n BN=$bn G=$g EPI=$e" $F -s wgmma_nt -D M=$n -D N=$n -D K=$n -p PAD=1 -p BN=$bn -p GROUP_M=$g -p EPI=$e
      done
    done
  done
done
line "8191 EPI=0" $F -s wgmma_nt -D M=8191 -D N=8191 -D K=8191 -p PAD=1
line "8191 EPI=64" $F -s wgmma_nt -D M=8191 -D N=8191 -D K=8191 -p PAD=1 -p EPI=64
line "8192 EPI=0" $F -s wgmma_nt -D M=8192 -D N=8192 -D K=8192
line "8192 EPI=64" $F -s wgmma_nt -D M=8192 -D N=8192 -D K=8192 -p EPI=64
