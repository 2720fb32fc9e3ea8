#!/usr/bin/env bash
# GPU checks of this stop's new forms: every program against the float64
# reference on fresh random data, and memcheck on the rfactor argmax.
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for s in per_block topi_per_block topi_rfactor; do
  echo "== argmax $s"; $T run ir-examples/argmax.tir -s $s --target cuda --seed 5 2>&1 | grep -E "check|rror"
done
for f in "tests/data/nvrtc/half_min_max.tir threads" "tests/data/nvrtc/half_min_max.tir cross_thread" \
         "tests/data/schedule/fused_index_compute_at.tir consumer_at_pairs" \
         "tests/data/schedule/fused_index_compute_at.tir producer_at_rows" \
         "tests/data/schedule/fused_index_compute_at.tir producer_at_half_rows" \
         "tests/data/nvrtc/math_functions.tir s" "tests/data/nvrtc/math_functions.tir half" \
         "tests/data/nvrtc/bitwise.tir s"; do
  set -- $f; echo "== $1 $2"; $T run $1 -s $2 --target cuda --seed 6 2>&1 | grep -E "check|rror"
done
echo "== memcheck argmax topi_rfactor"
compute-sanitizer --tool memcheck $T run ir-examples/argmax.tir -s topi_rfactor -D M=8 -D N=1000 --target cuda 2>&1 | grep -E "check|ERROR SUMMARY"
echo "== racecheck argmax topi_per_block"
compute-sanitizer --tool racecheck $T run ir-examples/argmax.tir -s topi_per_block -D M=8 -D N=1000 --target cuda 2>&1 | grep -E "check|RACECHECK SUMMARY|hazard"
