#!/bin/bash
# Seventeenth stop, the last binary: tf32x3 and the tensor-core schedules
# whose checks and baselines the review's fixes touch, against cuBLAS in
# one process each.
#   bash scripts/exp/seventeenth_final_gpu.sh
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|cublas:'
S4="-D M=4096 -D N=4096 -D K=4096"
$T run ir-examples/sgemm.tir -s tf32x3 $S4 $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 4096] /"
$T run ir-examples/sgemm.tir -s tf32x3 -p BN=256 -p PROMOTE=0 -D M=8192 -D N=8192 -D K=8192 $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 fast 8192] /"
$T run ir-examples/sgemm.tir -s tf32x3 -D M=1000 -D N=1100 -D K=999 $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 1000x1100x999] /"
$T run ir-examples/hgemm.tir -s wgmma_tf32_nt $S4 $F 2>&1 | grep -E "$keep" | sed "s/^/[wgmma_tf32_nt 4096] /"
$T run ir-examples/hgemm.tir -s mma_tf32 $S4 $F 2>&1 | grep -E "$keep" | sed "s/^/[mma_tf32 4096] /"
$T run ir-examples/hgemm.tir -s wgmma $S4 $F 2>&1 | grep -E "$keep" | sed "s/^/[wgmma 4096] /"
$T run ir-examples/hgemm.tir -s wgmma -p PAD=1 -D M=4097 -D N=4097 -D K=4097 $F 2>&1 | grep -E "$keep" | sed "s/^/[wgmma PAD=1 4097] /"
$T run ir-examples/hgemm.tir -s wgmma_nt -p BN=128 -D M=2048 -D N=2048 -D K=2048 $F 2>&1 | grep -E "$keep" | sed "s/^/[wgmma_nt BN=128 2048] /"
