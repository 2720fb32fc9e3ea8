#!/usr/bin/env bash
# On the GPU machine: step6_async with the compute ordered first (one barrier
# per k-tile) or last (two), 2 to 4 stages, at 4096 and 8192, and
# compute-sanitizer on each at a size no tile divides. Writes to $OUT.
set -u
T=./target/release/tirc
for cf in 1 0; do for st in 2 3 4; do for n in 4096 8192; do
  r=$($T run ir-examples/matmul.tir -s step6_async -p STAGES=$st -p COMPUTE_FIRST=$cf -D M=$n -D N=$n -D K=$n --bench --compare cublas --json 2>&1 | tail -1)
  echo "{\"compute_first\": $cf, \"stages\": $st, \"size\": $n, \"result\": $r}"
done; done; done | tee $OUT/order.jsonl
for n in 1024 2048; do
  r=$($T run ir-examples/matmul.tir -s step6_async -D M=$n -D N=$n -D K=$n --bench --compare cublas --json 2>&1 | tail -1)
  echo "{\"compute_first\": 1, \"stages\": 3, \"size\": $n, \"result\": $r}"
done | tee -a $OUT/order.jsonl
for cf in 0 1; do for st in 2 3 4; do for tool in racecheck memcheck; do
  echo "$tool cf=$cf st=$st: $(compute-sanitizer --tool $tool $T run ir-examples/matmul.tir -s step6_async -p STAGES=$st -p COMPUTE_FIRST=$cf -D M=200 -D N=136 -D K=328 --target cuda 2>&1 | grep -E 'SUMMARY|check:' | tr '\n' ' ')"
done; done; done | tee $OUT/sanitizer2.txt
