#!/bin/bash
# Warp-specialized wgmma (hgemm.tir's wgmma, -p WS=1) on the GPU: checked at
# small sizes (and under compute-sanitizer), timed against cuBLAS and the
# cp.async pipeline (WS=0) in the same session.
T=${1:-./target/release/tirc}
F=ir-examples/hgemm.tir
R="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
set -x
$T run $F -s wgmma -D M=256 -D N=512 -D K=512 -p WS=1 --target cuda
$T run $F -s wgmma -D M=384 -D N=768 -D K=192 -p WS=1 --target cuda
compute-sanitizer --tool racecheck $T run $F -s wgmma -D M=256 -D N=512 -D K=512 -p WS=1 --target cuda 2>&1 | tail -4
compute-sanitizer --tool synccheck $T run $F -s wgmma -D M=256 -D N=512 -D K=512 -p WS=1 --target cuda 2>&1 | tail -4
for s in 4096 8192; do
  $T run $F -s wgmma -D M=$s -D N=$s -D K=$s -p WS=1 $R
  $T run $F -s wgmma -D M=$s -D N=$s -D K=$s $R
done
