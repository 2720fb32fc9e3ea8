#!/bin/bash
# Seventeenth stop, issue 14's table: float32 C = A @ B on an H100, tirc's
# tf32x3 (defaults: BN=128, PROMOTE=4; and BN=256 PROMOTE=0, the fastest)
# and step6_async (CUDA cores) against cuBLAS SGEMM in the same process,
# every result checked against float64 (cuBLAS's own error printed beside
# it); Triton's float32 matmul (no TF32) against torch in its own process;
# sizes no tile divides; compute-sanitizer on a small promoted kernel.
#   bash scripts/exp/tf32x3_table_gpu.sh
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='check|time:|cublas'
for D in "1024 1024 1024" "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  set -- $D; S="-D M=$1 -D N=$2 -D K=$3"
  $T run ir-examples/sgemm.tir -s tf32x3 $S $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 $D] /"
  $T run ir-examples/sgemm.tir -s tf32x3 -p BN=256 -p PROMOTE=0 $S $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 BN=256 PROMOTE=0 $D] /"
  $T run ir-examples/matmul.tir -s step6_async -p STAGES=2 $S $F 2>&1 | grep -E "$keep" | sed "s/^/[step6_async STAGES=2 $D] /"
done
for D in "4097 4097 4097" "1000 1100 999" "2000 2000 2000"; do
  set -- $D; S="-D M=$1 -D N=$2 -D K=$3"
  $T run ir-examples/sgemm.tir -s tf32x3 $S $F 2>&1 | grep -E "$keep" | sed "s/^/[tf32x3 $D] /"
done
python scripts/triton_sgemm.py 1024 2048 4096 8192 4096x11008x4096 2>&1 | tail -8 | sed "s/^/[triton] /"
compute-sanitizer --tool racecheck $T run ir-examples/sgemm.tir -s tf32x3 -p PROMOTE=2 -D M=256 -D N=384 -D K=96 --target cuda 2>&1 | grep -E 'check|RACECHECK SUMMARY|ERROR SUMMARY' | sed "s/^/[racecheck] /"
compute-sanitizer --tool memcheck $T run ir-examples/sgemm.tir -s tf32x3 -D M=200 -D N=136 -D K=72 --target cuda 2>&1 | grep -E 'check|ERROR SUMMARY' | sed "s/^/[memcheck] /"
