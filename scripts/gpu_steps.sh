#!/usr/bin/env bash
# On the GPU machine: every matmul step and the v1-v4 GEMM against cuBLAS,
# plus registers and shared memory per kernel from ptxas. Writes to $OUT
# (or ./gpu-out): bench.jsonl, gemm_v.jsonl, resources.txt.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
T=${TIRC:-./target/release/tirc}
scripts/bench.sh ir-examples/matmul.tir "${STEPS:-step1 step2 step3 step4 step6}" "${SIZES:-1024 2048 4096}" | tee "$out/bench.jsonl"
for s in v1 v2 v3 v4; do
  echo "{\"schedule\": \"$s\", \"result\": $($T run ir-examples/gemm_v.tir -s $s --bench --compare cublas --json 2>&1)}"
done | tee "$out/gemm_v.jsonl"
for s in ${STEPS:-step1 step2 step3 step4 step6}; do
  $T lower ir-examples/matmul.tir -s $s -D M=4096 -D N=4096 -D K=4096 --emit cuda > /tmp/$s.cu
  echo "== $s: $(nvcc -arch=sm_90 -cubin --resource-usage -o /tmp/$s.cubin /tmp/$s.cu 2>&1 | grep -o 'Used.*')"
done | tee "$out/resources.txt"
