#!/bin/bash
# Seventeenth stop: float32 through 3xTF32 (sgemm.tir's `tf32x3`) against
# cuBLAS SGEMM in one process, every result checked at float32's tolerance
# against the float64 reference (cuBLAS's own error printed beside it).
#   bash scripts/exp/tf32x3_gpu.sh [extra -p ..]
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|time:|cublas|kernel:|error'
for D in "-D M=1024 -D N=1024 -D K=1024" "-D M=2048 -D N=2048 -D K=2048" "-D M=4096 -D N=4096 -D K=4096" "-D M=8192 -D N=8192 -D K=8192" "-D M=4096 -D N=11008 -D K=4096"; do
  $T run ir-examples/sgemm.tir -s tf32x3 "$@" $D $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 $* $D] /"
done
