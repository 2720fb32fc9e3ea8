#!/usr/bin/env bash
# Twenty-second stop: EPI (C through shared memory) on every wgmma
# schedule, and GROUP_M = 3 (a divisor of 4097's 33 rows of tiles).
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
line() {
  local label=$1; shift
  out=$(timeout 120 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"local_bytes_per_thread": [0-9]+|"message": "[^"]*"|error[^"]*' | tr '\n' ' ')"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for g in 1 3; do for e in 32 64; do
  line "wgmma_nt 4097 BN=208 G=$g EPI=$e" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=$g -p EPI=$e
done; done
line "wgmma_nt 4097 BN=208 G=3 EPI=32 STAGES=4" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=3 -p EPI=32 -p STAGES=4
line "wgmma_nt 4096 EPI=128 STAGES=2" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p EPI=128 -p STAGES=2
for s in wgmma_bf16_nt wgmma wgmma_bf16 wgmma_tf32_nt; do
  case $s in *_nt) bn=208;; *) bn=192;; esac
  for e in 0 32 64; do
    line "$s 4096 EPI=$e" $F -s $s -D M=4096 -D N=4096 -D K=4096 -p EPI=$e
    line "$s 4097 BN=$bn G=1 EPI=$e" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=$bn -p GROUP_M=1 -p EPI=$e
  done
  line "$s 4097 BN=$bn G=3 EPI=32" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=$bn -p GROUP_M=3 -p EPI=32
done
