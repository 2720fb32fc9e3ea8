#!/usr/bin/env bash
# Twentieth stop: step4/step5 at 1000x1100x999 against 992x1088x992 with
# the registers capped so that more blocks fit a multiprocessor
# (MIN_BLOCKS: __launch_bounds__(threads, n)).
T=${T:-./target/release/tirc}
M=ir-examples/matmul.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"cublas_time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"registers_per_thread": [0-9]+|"local_bytes_per_thread": [0-9]+|"max_active_blocks_per_sm": [0-9]+' | tr '\n' ' ')"
}
for s in step4 step5; do
  for mb in 0 12 16; do
    line "$s MIN_BLOCKS=$mb 992x1088x992" $M -s $s -D M=992 -D N=1088 -D K=992 -p MIN_BLOCKS=$mb
    line "$s MIN_BLOCKS=$mb 1000x1100x999" $M -s $s -D M=1000 -D N=1100 -D K=999 -p MIN_BLOCKS=$mb
  done
done
