#!/usr/bin/env bash
# On the GPU machine: the software-pipelined schedules (step5, step6_async)
# against step4, step6 and cuBLAS from 1024 to 8192, the pipeline depth of
# step6_async, registers and shared memory from ptxas, and compute-sanitizer
# racecheck and memcheck on every schedule of every example at its test
# sizes. Writes to $OUT (or ./gpu-out): pipeline.jsonl, stages.jsonl,
# resources.txt, sanitizer.txt.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
T=${TIRC:-./target/release/tirc}
scripts/bench.sh ir-examples/matmul.tir "${STEPS:-step4 step5 step6 step6_async}" "${SIZES:-1024 2048 4096 8192}" | tee "$out/pipeline.jsonl"
for st in 2 4; do
  EXTRA="-p STAGES=$st" scripts/bench.sh ir-examples/matmul.tir step6_async "4096 8192" | sed "s/^{/{\"stages\": $st, /"
done | tee "$out/stages.jsonl"
for s in step4 step5 step6 step6_async; do
  $T lower ir-examples/matmul.tir -s $s -D M=4096 -D N=4096 -D K=4096 --emit cuda > /tmp/$s.cu
  echo "== $s: $(nvcc -arch=sm_90 -cubin --resource-usage -o /tmp/$s.cubin /tmp/$s.cu 2>&1 | grep -o 'Used.*')"
done | tee "$out/resources.txt"
# Sanitizers: one line per example, schedule and tool.
jobs=()
for f in ir-examples/*.tir; do
  defs=$(sed -n 's/^# test-sizes://p' "$f" | head -1 | sed 's/\([A-Za-z_0-9]*=\)/-D \1/g')
  for s in $(sed -n 's/^def \([A-Za-z_0-9]*\)(sch.*/\1/p' "$f"); do
    for tool in racecheck memcheck; do jobs+=("$tool $f $s $defs"); done
  done
done
printf '%s\n' "${jobs[@]}" | xargs -P 8 -I{} bash -c '
  set -- {}; tool=$1; f=$2; s=$3; shift 3
  r=$(compute-sanitizer --tool $tool --error-exitcode 9 '"$T"' run $f -s $s "$@" --target cuda 2>&1)
  echo "$tool $f $s rc=$? $(echo "$r" | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check:" | tr "\n" " ")"' | sort | tee "$out/sanitizer.txt"
