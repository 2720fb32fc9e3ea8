#!/usr/bin/env bash
# Nineteenth stop, experiment, second call: the aligned-copy variants alone
# (`--compare cublas` recognizes only the plain matmul; the first call,
# aligned_gpu.sh, timed cuBLAS and the originals at the same sizes).
T=${T:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 100 $T run "$@" --target cuda --bench --seed 7 --repeat ${REP:-20} --warmup 3 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|rror.*' | tr '\n' ' ')"
}
sz() { echo "-D M=$1 -D N=$2 -D K=$3"; }
F=scripts/exp/nineteenth/aligned.tir
for s in "4097 4097 4097" "2000 2000 2000" "1000 1100 999"; do
  line "step1 TX=128 aligned $s" $F -s step1 -p TX=128 $(sz $s)
done
for s in "1000 1100 999" "8191 8191 8191" "4097 4097 4097"; do
  line "step4 32x64 aligned $s" $F -s step4 $(sz $s)
  line "step6_async aligned $s" $F -s step6_async $(sz $s)
done
line "step4 32x64 orig 1000 1100 999 (no compare)" ir-examples/matmul.tir -s step4 -p BN=64 $(sz 1000 1100 999)
REP=5 line "step1 TX=128 aligned 8191" $F -s step1 -p TX=128 $(sz 8191 8191 8191)
