#!/bin/bash
# Seventeenth stop: tf32x3 tuned per size, and step6_async (CUDA cores) at
# the small sizes, each against cuBLAS SGEMM in the same process.
#   bash scripts/exp/tf32x3_tune_gpu.sh
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|time:|cublas'
for n in 1024 2048; do
  $T tune ir-examples/sgemm.tir -s tf32x3 -D M=$n -D N=$n -D K=$n --space 'BM=64,128;BN=128,256;STAGES=2,3,4;GROUP_M=1,8' --db /tmp/tune.jsonl --no-progress 2>&1 | grep -vE '^\s*$' | head -30
  $T run ir-examples/matmul.tir -s step6_async -p STAGES=2 -D M=$n -D N=$n -D K=$n $F 2>&1 | grep -E "$keep" | sed "s/^/[step6_async STAGES=2 $n] /"
done
for P in "-p BN=128" "-p BN=128 -p STAGES=4"; do
  $T run ir-examples/sgemm.tir -s tf32x3 $P -D M=4096 -D N=4096 -D K=4096 $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 $P 4096] /"
done
