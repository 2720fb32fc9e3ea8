#!/usr/bin/env bash
# On a GPU machine: every regression program of tests/data/conformance on the
# GPU (checked against the sequential reference), the cross-thread row sum
# at 8192x1024 timed, and step6_async at 4096^3 against cuBLAS as a check
# that nothing regressed. Usage: scripts/gpu_conformance.sh [path/to/tirc]
set -u
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for f in tests/data/conformance/*.tir; do
  printf '%-60s ' "$f"
  $T run "$f" --target cuda --json 2>&1 | tail -1
done
for s in per_thread per_block; do
  echo "row_sum $s 8192x1024:"
  $T run ir-examples/row_sum.tir -s $s --target cuda --bench 2>&1 | tail -4
done
$T run ir-examples/row_sum.tir -s per_block -p TX=256 --target cuda --bench 2>&1 | tail -3
$T run ir-examples/matmul.tir -s step6_async -p STAGES=2 -D M=4096 -D N=4096 -D K=4096 --target cuda --bench --compare cublas 2>&1 | tail -4
