#!/bin/bash
# Sixteenth stop, last binary: virtual-thread kernels checked on the GPU at
# sizes no tile divides (their copies zero-filled inside the virtual
# threads, then interleaved) and timed against cuBLAS.
#   bash scripts/exp/vthread_gpu_final.sh
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|time:|cublas:'
$T run scripts/exp/ms_matmul_4096.tir -s multi_level_tiling $F 2>&1 | grep -E "$keep" | sed "s/^/[metaschedule trace 4096] /"
for D in "-D M=4096 -D N=4096 -D K=4096" "-D M=4097 -D N=4097 -D K=4097" "-D M=1000 -D N=1100 -D K=999" "-D M=2000 -D N=2000 -D K=2000"; do
  $T run ir-examples/matmul.tir -s step6_vthread -p BK=16 $D $F 2>&1 | grep -E "$keep" | sed "s/^/[step6_vthread BK=16 $D] /"
  $T run ir-examples/matmul.tir -s step6_vthread -p BK=16 -p STAGES=1 $D $F 2>&1 | grep -E "$keep" | sed "s/^/[step6_vthread BK=16 STAGES=1 $D] /"
done
