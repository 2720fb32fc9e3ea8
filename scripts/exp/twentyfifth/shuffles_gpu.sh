#!/usr/bin/env bash
# Twenty-fifth stop: reductions across threads through warp shuffles,
# timed against the shared-memory tree they replace (the binary before the
# change, OLD) and against a device copy of as many bytes, in one call.
T=${T:-./target/release/tirc}
OLD=${OLD:-./target/release/tirc_old}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F="--target cuda --bench --compare copy --seed 7 --repeat 30 --warmup 5"
run() {  # label, then tirc arguments
  local label=$1; shift
  for b in "$OLD" "$T"; do
    echo "== $label [$(basename $b)]"
    $b run "$@" $F 2>&1 | tail -5
  done
}
run "row_sum per_block TX=128, 8192x1024" ir-examples/row_sum.tir -s per_block
run "row_sum per_block TX=32, 8192x1024" ir-examples/row_sum.tir -s per_block -p TX=32
run "row_sum per_block TX=512, 8192x4096" ir-examples/row_sum.tir -s per_block -p TX=512 -D K=4096
run "row_sum per_block TX=128, 65536x256" ir-examples/row_sum.tir -s per_block -D M=65536 -D K=256
run "layer_norm per_block TX=256, 4096x4096" ir-examples/layer_norm.tir -s per_block
run "layer_norm per_block TX=1024, 4096x4096" ir-examples/layer_norm.tir -s per_block -p TX=1024
run "layer_norm per_block TX=32, 16384x1024" ir-examples/layer_norm.tir -s per_block -p TX=32 -D M=16384 -D N=1024
run "argmax per_block TX=256, 64x32000" ir-examples/argmax.tir -s per_block
run "argmax per_block TX=256, 4096x32000" ir-examples/argmax.tir -s per_block -D M=4096
echo "== compute-sanitizer on the shuffles (racecheck, memcheck)"
for tool in racecheck memcheck; do
  compute-sanitizer --tool $tool $T run ir-examples/row_sum.tir -s per_block -D M=70 -D K=45 --target cuda --seed 3 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check:" | head -3
  compute-sanitizer --tool $tool $T run tests/data/conformance/warp_reductions.tir -s float64_product --target cuda --seed 3 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check:" | head -3
done
for s in in_a_warp over_warps int8_max float16_in float64_product argmin_pairs not_a_power_of_two; do
  echo "$s: $($T run tests/data/conformance/warp_reductions.tir -s $s --target cuda --seed 5 2>&1 | grep check)"
done
