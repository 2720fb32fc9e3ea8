#!/usr/bin/env bash
# Twenty-first stop, first call on an H200: the tensor-core products at
# 4096^3 and 4097^3 (PAD=1), and tile widths whose tiles fill whole waves at
# 4097 (BN = 208: 33 x 20 = 660 tiles, 5 waves of 132).
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for s in wgmma_nt wgmma_bf16_nt; do
  line "$s 4096" $F -s $s -D M=4096 -D N=4096 -D K=4096
  for bn in 256 240 224 208 192; do
    line "$s 4097 PAD BN=$bn" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=$bn
  done
done
line "wgmma 4096" $F -s wgmma -D M=4096 -D N=4096 -D K=4096
line "wgmma 4097 PAD" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1
line "wgmma 4097 PAD BN=192" $F -s wgmma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=192
