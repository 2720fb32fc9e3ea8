#!/usr/bin/env bash
# Twenty-third stop: hgemm.tir's tensor-core schedules with their defaults
# (PAD=1 now among them) at shapes other than square powers of two, each
# against cuBLAS in the same run, results checked against float64.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
line() {
  local label=$1; shift
  out=$(timeout 150 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"message": "[^"]*"|error[^"]*' | tr '\n' ' ')"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for sz in "2048 2048 2048" "1024 1024 1024" "3000 3000 3000" "4096 11008 4096" "512 4096 4096" "1000 1100 999" "8192 1024 8192" "6144 6144 6144"; do
  set -- $sz
  for s in wgmma_nt wgmma mma; do
    line "$s M=$1 N=$2 K=$3" $F -s $s -D M=$1 -D N=$2 -D K=$3
  done
done
