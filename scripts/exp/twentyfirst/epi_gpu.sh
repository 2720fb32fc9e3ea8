#!/usr/bin/env bash
# Twenty-first stop: wgmma_nt storing C through shared memory
# (EPI = columns staged at a time, 0 = straight from the
# registers; the warps store their fragments into a BM x EPI shared tile
# whose rows are padded by 4 floats, then the block's threads copy
# it into C a row segment a warp). 4097^3 with PAD=1, and 4096^3.
T=${T:-./target/release/tirc}
# (Run with scripts/exp/twentyfirst/hgemm_epi.tir, wgmma_nt with EPI and
# EPI_PAD, since folded into ir-examples/hgemm.tir as EPI, rows padded by 4.)
F=ir-examples/hgemm.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
P="-D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1"
line "4096 EPI=0" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096
line "4096 EPI=64" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p EPI=64
line "4096 EPI=32" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p EPI=32
for e in 0 64 32 16; do
  line "4097 BN=208 G1 EPI=$e" $F -s wgmma_nt $P -p EPI=$e
done
line "4097 BN=208 G8 EPI=64" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p EPI=64
line "4097 BM=192 BN=176 G1 EPI=64" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BM=192 -p BN=176 -p GROUP_M=1 -p EPI=64
line "4097 BN=256 G1 EPI=64" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p GROUP_M=1 -p EPI=64
line "8191 EPI=0" $F -s wgmma_nt -D M=8191 -D N=8191 -D K=8191 -p PAD=1
line "8191 EPI=64" $F -s wgmma_nt -D M=8191 -D N=8191 -D K=8191 -p PAD=1 -p EPI=64
for tool in memcheck racecheck; do
  echo "== $tool: EPI=64 150x230x70 PAD=1 BN=208"
  timeout 120 compute-sanitizer --tool $tool $T run $F -s wgmma_nt -D M=150 -D N=230 -D K=70 -p PAD=1 -p BN=208 -p EPI=64 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
done
