#!/usr/bin/env bash
# Issue 14: step6_async's tile shapes, tuned per size, then the best point
# of each size against cuBLAS in one process.
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for n in ${SIZES:-2048 4096}; do
  $T tune ir-examples/matmul.tir -s step6_async -D M=$n -D N=$n -D K=$n \
    --space 'BM=64,128;BN=64,128;TM=4,8;TN=4,8;BK=16,32;STAGES=2,3' \
    --warmup 3 --repeat 10 --seed 7 --db /tmp/tune-$n.jsonl 2>&1 | tail -14
done
