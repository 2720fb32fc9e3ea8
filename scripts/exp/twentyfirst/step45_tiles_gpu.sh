#!/usr/bin/env bash
# Twenty-first stop: step4/step5 at 1000x1100x999. Which dimension costs
# (default tiles, one dimension odd at a time), and other tiles, each against
# the nearest multiple of its own tile.
T=${T:-./target/release/tirc}
M=ir-examples/matmul.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"cublas_time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"registers_per_thread": [0-9]+|"max_active_blocks_per_sm": [0-9]+|"grid": \[[0-9, ]+\]' | tr '\n' ' ')"
}
for s in step4 step5; do
  for shape in 992,1088,992 992,1088,999 1000,1088,992 992,1100,992 1000,1100,992 1000,1100,999 1024,1120,1024; do
    IFS=, read -r m n k <<<"$shape"
    line "$s default ${m}x${n}x${k}" $M -s $s -D M=$m -D N=$n -D K=$k
  done
  while read -r params near; do
    IFS=, read -r m n k <<<"$near"
    p=""; for x in ${params//;/ }; do p="$p -p $x"; done
    line "$s $params ${m}x${n}x${k}" $M -s $s $p -D M=$m -D N=$n -D K=$k
    line "$s $params 1000x1100x999" $M -s $s $p -D M=1000 -D N=1100 -D K=999
  done <<'LIST'
BM=64 1024,1088,992
BN=64 992,1088,992
BM=64;BN=64 1024,1088,992
BM=16;TM=4 1008,1088,992
BM=64;TN=2 1024,1088,992
BM=64;BN=64;TM=4;TN=4 1024,1088,992
LIST
done
