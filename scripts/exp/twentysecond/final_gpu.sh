#!/usr/bin/env bash
# Twenty-second stop: the wgmma schedules at their new defaults (EPI=32,
# BN=0 by waves, raster groups only where they divide the rows) against
# cuBLAS at 4096, 4097 (PAD=1), 8191 (PAD=1) and 8192; each kernel's time
# under ncu at 4097; compute-sanitizer on the staged store at odd sizes.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
line() {
  local label=$1; shift
  out=$(timeout 150 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"registers_per_thread": [0-9]+|"local_bytes_per_thread": [0-9]+|"message": "[^"]*"|error[^"]*' | tr '\n' ' ')"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for s in wgmma_nt wgmma_bf16_nt wgmma wgmma_bf16 wgmma_tf32_nt; do
  line "$s 4096" $F -s $s -D M=4096 -D N=4096 -D K=4096
  line "$s 4097" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1
done
for s in wgmma_nt wgmma_bf16_nt wgmma wgmma_bf16; do
  line "$s 8192" $F -s $s -D M=8192 -D N=8192 -D K=8192
  line "$s 8191" $F -s $s -D M=8191 -D N=8191 -D K=8191 -p PAD=1
done
echo "== ncu wgmma_nt 4097: $(timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum $T run $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 --target cuda 2>&1 | grep -E "gpu__time_duration|hgemm" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')"
for s in wgmma_nt wgmma; do
  echo "== sanitizer $s 150x230x70: $(timeout 300 compute-sanitizer --tool memcheck $T run $F -s $s -D M=150 -D N=230 -D K=70 -p PAD=1 --target cuda 2>&1 | grep -E "ERROR SUMMARY|check:" | tr '\n' ' ')"
  echo "== racecheck $s 150x230x70: $(timeout 300 compute-sanitizer --tool racecheck $T run $F -s $s -D M=150 -D N=230 -D K=70 -p PAD=1 --target cuda 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|check:" | tr '\n' ' ')"
done
