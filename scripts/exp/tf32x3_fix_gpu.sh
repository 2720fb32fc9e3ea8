#!/bin/bash
# Seventeenth stop: after the tensor-map fix (B of a square product with
# square tiles had read A's map), the schedules that hit it, on the GPU.
#   bash scripts/exp/tf32x3_fix_gpu.sh
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|time:|cublas'
for n in 4096 1024; do
  $T run ir-examples/sgemm.tir -s tf32x3 -p BN=128 -D M=$n -D N=$n -D K=$n $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 BN=128 $n] /"
  $T run ir-examples/hgemm.tir -s wgmma_nt -p BN=128 -D M=$n -D N=$n -D K=$n $F 2>&1 | grep -E "$keep" | sed "s/^/[wgmma_nt BN=128 $n] /"
  $T run ir-examples/hgemm.tir -s wgmma_tf32_nt -p BN=128 -D M=$n -D N=$n -D K=$n $F 2>&1 | grep -E "$keep" | sed "s/^/[wgmma_tf32_nt BN=128 $n] /"
done
$T tune ir-examples/sgemm.tir -s tf32x3 -D M=1024 -D N=1024 -D K=1024 --space 'BM=64,128;BN=128,256;STAGES=3,4;GROUP_M=1' --db /tmp/tune2.jsonl --no-progress 2>&1 | head -16
$T tune ir-examples/sgemm.tir -s tf32x3 -D M=4096 -D N=4096 -D K=4096 --space 'BM=128;BN=128,256;STAGES=2,3,4;GROUP_M=8' --db /tmp/tune3.jsonl --no-progress 2>&1 | head -14
