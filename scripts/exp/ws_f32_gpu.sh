#!/bin/bash
# float32 step6_async with and without warp specialization, against cuBLAS.
T=${1:-./target/release/tirc}
F=ir-examples/matmul.tir
R="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
set -x
$T run $F -s step6_async -D M=256 -D N=196 -D K=100 -p WS=1 --target cuda 2>&1 | grep -E "check|error"
compute-sanitizer --tool racecheck $T run $F -s step6_async -D M=256 -D N=196 -D K=100 -p WS=1 --target cuda 2>&1 | tail -2
for p in "-p STAGES=2" "-p STAGES=2 -p WS=1" "-p STAGES=3 -p WS=1" "-p STAGES=4 -p WS=1" "-p STAGES=3 -p WS=1 -p GROUP_M=8" "-p BM=128 -p BN=64 -p TM=8 -p TN=8 -p STAGES=3 -p WS=1"; do
  $T run $F -s step6_async -D M=4096 -D N=4096 -D K=4096 $p $R 2>&1 | grep -E "check|resources|occupancy|cublas:|error"
done
$T run $F -s step6_async -D M=4000 -D N=4000 -D K=4000 -p STAGES=2 -p WS=1 $R 2>&1 | grep -E "check|cublas:|error"
$T run ir-examples/hgemm.tir -s wgmma -D M=4096 -D N=4096 -D K=4096 $R 2>&1 | grep -E "check|cublas:|error"
$T run ir-examples/hgemm.tir -s wgmma -D M=1100 -D N=600 -D K=72 -p PAD=1 --target cuda 2>&1 | grep -E "check|error"
