#!/usr/bin/env bash
# Twenty-first stop: more tile shapes for wgmma_nt at 4097^3 (PAD=1):
# 192 x 176 tiles (three consumer warpgroups; 22 x 24 = 528 tiles, exactly
# 4 waves of 132), and the
# products alone on the padded shapes.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"registers_per_thread": [0-9]+|"local_bytes_per_thread": [0-9]+|"message": "[^"]*"' | tr '\n' ' ')"
}
P="-D M=4097 -D N=4097 -D K=4097 -p PAD=1"
line "4096 defaults" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096
line "4097 BN=208 G1" $F -s wgmma_nt $P -p BN=208 -p GROUP_M=1
line "4097 BM=192 BN=176 G1" $F -s wgmma_nt $P -p BM=192 -p BN=176 -p GROUP_M=1
line "4097 BM=192 BN=176 G2" $F -s wgmma_nt $P -p BM=192 -p BN=176 -p GROUP_M=2
line "4097 BM=192 BN=176 G1 S4" $F -s wgmma_nt $P -p BM=192 -p BN=176 -p GROUP_M=1 -p STAGES=4
line "4097 BM=192 BN=176 G1 S2" $F -s wgmma_nt $P -p BM=192 -p BN=176 -p GROUP_M=1 -p STAGES=2
line "product 4224x4224x4160 BM=192 BN=176 G1" $F -s wgmma_nt -D M=4224 -D N=4224 -D K=4160 -p BM=192 -p BN=176 -p GROUP_M=1
line "product 4224x4160x4160 BN=208 G1" $F -s wgmma_nt -D M=4224 -D N=4160 -D K=4160 -p BN=208 -p GROUP_M=1
line "4096 BM=192 BN=176 PAD G1" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p PAD=1 -p BM=192 -p BN=176 -p GROUP_M=1
line "bf16 4096" $F -s wgmma_bf16_nt -D M=4096 -D N=4096 -D K=4096
line "bf16 4097 BM=192 BN=176 G1" $F -s wgmma_bf16_nt $P -p BM=192 -p BN=176 -p GROUP_M=1
