#!/usr/bin/env bash
# GPU checks of the ninth stop: (1) copies now stand in the order they were
# made (compute_at's index=-1): the kernels' speed before (OLD, the binary
# of 4103ec8) and after (NEW), each against cuBLAS in its own process, in
# one call; (2) this stop's new forms on the GPU against the float64
# reference on fresh random data: MetaSchedule traces, reindex, loops from
# a start, lowered tensor-core text read back.
NEW=${1:-./target/release/tirc}
OLD=${2:-./target/old/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
for round in 1 2; do
  for bin in OLD NEW; do
    T=${!bin}
    echo "== $bin matmul step6_async STAGES=2 4096^3 (round $round)"
    $T run ir-examples/matmul.tir -s step6_async -p STAGES=2 -D M=4096 -D N=4096 -D K=4096 $B 2>&1 | tail -5
    echo "== $bin hgemm wgmma 4096^3 (round $round)"
    $T run ir-examples/hgemm.tir -s wgmma -D M=4096 -D N=4096 -D K=4096 $B 2>&1 | tail -5
    echo "== $bin hgemm mma 4096^3 (round $round)"
    $T run ir-examples/hgemm.tir -s mma -D M=4096 -D N=4096 -D K=4096 $B 2>&1 | tail -5
  done
done
T=$NEW
for f in tests/data/traces/*.tir tests/data/schedule/reindex.tir tests/data/schedule/loops_from_a_start.tir \
         tests/data/schedule/unit_loop_and_iter_order.tir tests/data/schedule/cache_read_consumers.tir; do
  for s in $(grep -A1 '^@tirc.schedule' $f | grep -o '^def [a-z_0-9]*' | sed 's/def //'); do
    echo "== $f $s: $($T run $f -s $s --target cuda --seed 11 2>&1 | grep -E 'check|rror' | head -2)"
  done
done
for s in mma wmma wgmma; do
  $T lower ir-examples/hgemm.tir -s $s -D M=256 -D N=256 -D K=256 --emit tir > /tmp/low_$s.tir
  echo "== lowered $s read back: $($T run /tmp/low_$s.tir --target cuda --seed 3 2>&1 | grep -E 'check|rror' | head -2)"
done
