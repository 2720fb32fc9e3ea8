#!/usr/bin/env bash
# Twenty-first stop: the padded copies of wgmma_nt at 4097^3 (BN=208)
# scheduled otherwise (hgemm_copies.tir: COPY=1 as hgemm.tir, 2 = CR rows
# a block on threadIdx.y and CT threads a row, 3 = the same with CC chunks a
# thread), each copy kernel under ncu, then the whole product timed.
T=${T:-./target/release/tirc}
F=scripts/exp/twentyfirst/hgemm_copies.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
while read -r label params; do
  p=""; for x in $params; do p="$p -p $x"; done
  echo "== $label: $(timeout 300 ncu --clock-control none -k regex:'hgemm_nt_kernel|hgemm_nt_1_kernel' --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed $T run $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 $p --target cuda 2>&1 | grep -E "gpu__time_duration|dram__throughput" | awk '{print $NF}' | tr '\n' ' ')"
  line "$label" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1 $p
done <<'LIST'
v1 COPY=1
v2_4x64 COPY=2 CR=4 CT=64
v2_2x128 COPY=2 CR=2 CT=128
v2_8x32 COPY=2 CR=8 CT=32
v2_1x256 COPY=2 CR=1 CT=256
v3_2x64x2 COPY=3 CR=2 CT=64 CC=2
v3_1x128x4 COPY=3 CR=1 CT=128 CC=4
v3_4x64x4 COPY=3 CR=4 CT=64 CC=4
LIST
