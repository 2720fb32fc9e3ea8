#!/usr/bin/env bash
# Twenty-first stop: each kernel's time under ncu for wgmma_nt at 4097^3
# (PAD=1, GROUP_M=1) with 128x208 and 192x176 tiles, against the products
# alone on the padded shapes, and with K alone unaligned.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nc() {
  local label=$1; shift
  echo "== $label: $(timeout 300 ncu --clock-control none -k regex:'hgemm_nt_[0-9]*_?kernel|hgemm_nt_kernel' --metrics gpu__time_duration.sum $T run "$@" --target cuda 2>&1 | grep -E "gpu__time_duration" | awk '{print $(NF-1), $NF}' | tr '\n' ' ')"
}
nc "4097 PAD BN=208 G1" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1
nc "4224x4160x4160 BN=208 G1" $F -s wgmma_nt -D M=4224 -D N=4160 -D K=4160 -p BN=208 -p GROUP_M=1
nc "4224x4160x4097 PAD BN=208 G1" $F -s wgmma_nt -D M=4224 -D N=4160 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1
nc "4097 PAD BM=192 BN=176 G1" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BM=192 -p BN=176 -p GROUP_M=1
nc "4224x4224x4160 BM=192 BN=176 G1" $F -s wgmma_nt -D M=4224 -D N=4224 -D K=4160 -p BM=192 -p BN=176 -p GROUP_M=1
nc "4096 defaults" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096
