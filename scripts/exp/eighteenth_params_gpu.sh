#!/usr/bin/env bash
# Issue 12's two misses, at other points of their schedules' parameters:
# step1's row width TX, and step4/step5's tiles, at the issue's sizes and
# the nearest multiples of the tiles. Each line one `tirc run` against
# cuBLAS in the same process, results checked.
T=${T:-./target/release/tirc}
line() {
  local label=$1; shift
  out=$($T run ir-examples/matmul.tir "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for tx in 1024 512 256 128; do
  for shape in 4096,4096,4096 4097,4097,4097 4097,4096,4097 2000,2000,2000 2000,2048,2000 1000,1100,999 1000,1024,999 8191,8191,8191 8191,8192,8191; do
    IFS=, read -r M N K <<<"$shape"
    line "step1 TX=$tx ${M}x${N}x${K}" -s step1 -p TX=$tx -D M=$M -D N=$N -D K=$K
  done
done
for s in step4 step5; do
  for p in "BM=32 BN=32 TM=8 TN=4" "BM=32 BN=32 TM=4 TN=4" "BM=64 BN=32 TM=8 TN=4" "BM=32 BN=64 TM=8 TN=4" "BM=64 BN=64 TM=8 TN=4" "BM=32 BN=32 TM=4 TN=2" "BM=64 BN=32 TM=4 TN=4" "BM=32 BN=64 TM=4 TN=4" "BM=64 BN=64 TM=8 TN=8" "BM=32 BN=32 TM=8 TN=4 BK=16" "BM=32 BN=32 TM=4 TN=4 BK=16"; do
    args=""; for kv in $p; do args="$args -p $kv"; done
    for shape in 992,1088,992 1000,1100,999 1024,1088,1024 1024,1120,1024; do
      IFS=, read -r M N K <<<"$shape"
      line "$s $p ${M}x${N}x${K}" -s $s $args -D M=$M -D N=$N -D K=$K
    done
  done
done
