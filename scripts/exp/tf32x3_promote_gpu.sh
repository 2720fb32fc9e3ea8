#!/bin/bash
# Seventeenth stop: tf32x3 with the accumulators promoted every P k-steps
# (`-p PROMOTE=P`, BN = 128 so that both sets fit the registers): error and
# time against cuBLAS SGEMM in one process.
#   bash scripts/exp/tf32x3_promote_gpu.sh
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|time:|cublas'
for n in 4096 8192 1024 2048; do
  for P in "-p BN=256" "-p BN=128" "-p BN=128 -p PROMOTE=1" "-p BN=128 -p PROMOTE=2" "-p BN=128 -p PROMOTE=4" "-p BN=128 -p PROMOTE=8"; do
    $T run ir-examples/sgemm.tir -s tf32x3 $P -D M=$n -D N=$n -D K=$n $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 $P $n] /"
  done
done
