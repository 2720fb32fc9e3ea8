#!/usr/bin/env bash
# Twentieth stop: where the padded wgmma's time goes at 4097^3 (each
# kernel's duration under ncu), and other tile widths at 4097^3 and 8191^3.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for n in 4096 4097; do
  echo "== ncu wgmma $n"
  p=""; [ $n = 4097 ] && p="-p PAD=1"
  timeout 300 ncu --metrics gpu__time_duration.sum $T run $F -s wgmma -D M=$n -D N=$n -D K=$n $p --target cuda 2>&1 | grep -E "hgemm.*kernel|gpu__time_duration" | head -12
done
for bn in 128 192 256; do
  for bm in 128; do
    line "wgmma 4096 BM=$bm BN=$bn" $F -s wgmma -D M=4096 -D N=4096 -D K=4096 -p BM=$bm -p BN=$bn
    line "wgmma 4097 BM=$bm BN=$bn" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BM=$bm -p BN=$bn
  done
done
line "wgmma 4097 GROUP_M=1" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p GROUP_M=1
line "wgmma 4097 GROUP_M=4" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p GROUP_M=4
line "wgmma 4097 STAGES=4" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p STAGES=4
