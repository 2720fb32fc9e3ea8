#!/usr/bin/env bash
# Nineteenth stop, the last binary: the aligned copies and the guard that a
# compacted tile keeps, on the GPU, with the sanitizers.
T=${T:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 120 $T run "$@" --target cuda --bench --seed 7 --repeat ${REP:-20} --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'aligned: `[A-Za-z_]+`|check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
M=ir-examples/matmul.tir
line "step1 4097^3" $M -s step1 -D M=4097 -D N=4097 -D K=4097 --compare cublas
line "step1 4097x4096x4097" $M -s step1 -D M=4097 -D N=4096 -D K=4097 --compare cublas
line "step6_async 8191^3" $M -s step6_async -D M=8191 -D N=8191 -D K=8191 --compare cublas
line "step6_async 8192^3" $M -s step6_async -D M=8192 -D N=8192 -D K=8192 --compare cublas
line "step4 8191^3" $M -s step4 -D M=8191 -D N=8191 -D K=8191 --compare cublas
line "conv2d direct" ir-examples/conv2d.tir -s direct
for tool in memcheck racecheck; do
  echo "== $tool: step1 TX=32 37x41x35 --aligned-copies always"
  timeout 120 compute-sanitizer --tool $tool $T run $M -s step1 -p TX=32 -D M=37 -D N=41 -D K=35 --aligned-copies always --target cuda 2>&1 | grep -E "aligned:|check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -4
  echo "== $tool: step6_async 32x31x32 BM=BN=32 BK=16"
  timeout 120 compute-sanitizer --tool $tool $T run $M -s step6_async -D M=32 -D N=31 -D K=32 -p BM=32 -p BN=32 -p BK=16 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
  echo "== $tool: step6_async 300x200x100 --aligned-copies always"
  timeout 120 compute-sanitizer --tool $tool $T run $M -s step6_async -D M=300 -D N=201 -D K=99 --aligned-copies always --target cuda 2>&1 | grep -E "aligned:|check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -4
done
