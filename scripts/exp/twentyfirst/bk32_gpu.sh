#!/usr/bin/env bash
# Twenty-first stop: wgmma_nt / wgmma_bf16_nt with 32-deep k-tiles (rows
# of 64 bytes, swizzled by 64): K=4097 pads to 4128 instead of 4160.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for s in wgmma_nt wgmma_bf16_nt; do
  for ws in 0 1; do
    line "$s small BK=32 WS=$ws" $F -s $s -D M=128 -D N=128 -D K=96 -p BK=32 -p BM=64 -p BN=64 -p STAGES=4 -p WS=$ws
    line "$s small PAD BK=32 WS=$ws" $F -s $s -D M=150 -D N=230 -D K=70 -p BK=32 -p BN=208 -p PAD=1 -p WS=$ws
  done
done
line "wgmma_nt 4096" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096
for st in 4 6; do
  line "wgmma_nt 4096 BK=32 S=$st" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p BK=32 -p STAGES=$st
  line "wgmma_nt 4097 PAD BN=208 G1 BK=32 S=$st" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1 -p BK=32 -p STAGES=$st
done
line "wgmma_nt 4097 PAD BN=208 G1" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1
