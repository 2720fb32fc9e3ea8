#!/usr/bin/env bash
# Twenty-first stop: does the product's store of C cost at 4097 because
# C's rows are not 8-byte aligned? wgmma_nt PAD=1 BN=208 GROUP_M=1 at
# M=4224, K=4097 and N = 4097 (rows of 4 bytes' alignment), 4098 (8),
# 4100 (16), 4160 (whole tiles); each kernel under ncu.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for n in 4097 4098 4100 4160; do
  echo "== N=$n: $(timeout 300 ncu --clock-control none -k regex:'hgemm_nt' --metrics gpu__time_duration.sum $T run $F -s wgmma_nt -D M=4224 -D N=$n -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1 --target cuda 2>&1 | grep -E "gpu__time_duration" | awk '{print $(NF-1), $NF}' | tr '\n' ' ')"
done
