#!/usr/bin/env bash
# Nineteenth stop, experiment: the seeds' schedules on operands copied first
# into rows padded to 128 bytes (scripts/exp/nineteenth/aligned.tir), against
# the same schedules on the operands as given (ir-examples/matmul.tir).
T=${T:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 100 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat ${REP:-20} --warmup 3 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
sz() { echo "-D M=$1 -D N=$2 -D K=$3"; }
for s in "4097 4097 4097" "4097 4096 4097" "2000 2000 2000" "2000 2048 2000" "1000 1100 999" "1000 1024 999"; do
  line "step1 TX=128 orig $s" ir-examples/matmul.tir -s step1 -p TX=128 $(sz $s)
  line "step1 TX=128 aligned $s" scripts/exp/nineteenth/aligned.tir -s step1 -p TX=128 $(sz $s)
done
for s in "1000 1100 999" "992 1088 992" "8191 8191 8191" "8192 8192 8192" "4097 4097 4097"; do
  line "step4 32x64 orig $s" ir-examples/matmul.tir -s step4 -p BN=64 $(sz $s)
  line "step4 32x64 aligned $s" scripts/exp/nineteenth/aligned.tir -s step4 $(sz $s)
  line "step6_async orig $s" ir-examples/matmul.tir -s step6_async $(sz $s)
  line "step6_async aligned $s" scripts/exp/nineteenth/aligned.tir -s step6_async $(sz $s)
done
REP=5 line "step1 TX=128 orig 8191" ir-examples/matmul.tir -s step1 -p TX=128 $(sz 8191 8191 8191)
REP=5 line "step1 TX=128 aligned 8191" scripts/exp/nineteenth/aligned.tir -s step1 -p TX=128 $(sz 8191 8191 8191)
REP=5 line "step1 TX=128 orig 8191x8192" ir-examples/matmul.tir -s step1 -p TX=128 $(sz 8191 8192 8191)
