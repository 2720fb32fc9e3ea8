#!/usr/bin/env bash
# Twenty-first stop: wgmma_nt at 4097^3 with BN=208 (whole waves of tiles),
# each kernel's time under ncu, against 4096^3 at BN=208 and 256; and the
# tile order and pipeline depth at 4097.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
nc() {
  local label=$1; shift
  echo "== ncu $label"
  timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size,launch__registers_per_thread $T run "$@" --target cuda 2>&1 | grep -E "hgemm.*kernel|gpu__time_duration|dram__bytes|grid_size|registers" | head -24
}
nc "4097 PAD BN=208" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208
nc "4096 BN=208" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p BN=208
nc "4096 BN=256" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096
line "4096 BN=208" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p BN=208
line "4160x4160x4160 BN=208" $F -s wgmma_nt -D M=4224 -D N=4160 -D K=4160 -p BN=208
for g in 1 4 16; do
  line "4097 PAD BN=208 GROUP_M=$g" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=$g
done
line "4097 PAD BN=208 STAGES=4" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p STAGES=4
line "4097 PAD BN=208 STAGES=2" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p STAGES=2
line "4097 PAD BN=176" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=176
line "4097 PAD BN=208 WS=0" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p WS=0
