#!/bin/bash
# The fifteenth stop on the GPU: the warp-specialized wgmma schedules of
# hgemm.tir checked (small sizes, sizes no tile divides, compute-sanitizer,
# the exported launcher) and timed against cuBLAS in one session.
T=${1:-./target/release/tirc}
F=ir-examples/hgemm.tir
R="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
set -x
for s in wgmma wgmma_nt wgmma_bf16 wgmma_bf16_nt wgmma_tf32_nt; do
  $T run $F -s $s -D M=256 -D N=512 -D K=320 --target cuda 2>&1 | grep -E "check|error"
  $T run $F -s $s -D M=1100 -D N=600 -D K=72 -p PAD=1 --target cuda 2>&1 | grep -E "check|error"
done
compute-sanitizer --tool racecheck $T run $F -s wgmma -D M=1100 -D N=600 -D K=72 -p PAD=1 --target cuda 2>&1 | tail -2
compute-sanitizer --tool synccheck $T run $F -s wgmma_nt -D M=1100 -D N=600 -D K=72 -p PAD=1 --target cuda 2>&1 | tail -2
compute-sanitizer --tool memcheck $T run $F -s wgmma -D M=256 -D N=512 -D K=320 --target cuda 2>&1 | tail -2
B=$(mktemp -d)
$T build $F -s wgmma -D M=256 -D N=512 -D K=320 --arch sm_90a -o $B >/dev/null
nvcc -gencode=arch=compute_90a,code=sm_90a -I $B scripts/exp/hgemm_launcher_check.cu $B/hgemm.cu -o $B/check && $B/check
for s in wgmma wgmma_bf16 wgmma_nt wgmma_bf16_nt wgmma_tf32_nt; do
  for n in 4096 8192; do
    $T run $F -s $s -D M=$n -D N=$n -D K=$n $R 2>&1 | grep -E "check|resources|cublas:"
  done
done
$T run $F -s wgmma -D M=4096 -D N=11008 -D K=4096 $R 2>&1 | grep -E "check|cublas:"
$T run $F -s wgmma -D M=2048 -D N=2048 -D K=2048 $R 2>&1 | grep -E "check|cublas:"
$T run $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 $R 2>&1 | grep -E "check|cublas:"
$T run $F -s wgmma -D M=8191 -D N=8191 -D K=8191 -p PAD=1 $R 2>&1 | grep -E "check|cublas:"
for n in 4096 8192; do
  $T run $F -s wgmma -D M=$n -D N=$n -D K=$n -p WS=0 $R 2>&1 | grep -E "check|cublas:"
done
