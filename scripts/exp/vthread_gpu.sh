#!/bin/bash
# Sixteenth stop: virtual threads interleaved (inject_virtual_thread).
# Kernels with virtual threads, with the binary before the pass
# (target/release/tirc_base, each virtual thread one after the other) and
# after it (target/release/tirc), and matmul.tir's step6_vthread against
# step6_async.
#   bash scripts/exp/vthread_gpu.sh [TVM's cuda_matmul_5 .tir]
T=./target/release/tirc
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
keep='^tirc|cublas:|check|resources|occupancy|time|ms'
for b in $T ./target/release/tirc_base; do
  $b run scripts/exp/ms_matmul_4096.tir -s multi_level_tiling $F 2>&1 | grep -E "$keep" | sed "s/^/[$(basename $b) metaschedule trace 4096] /"
  if [ -f "$1" ]; then
    timeout 120 $b run "$1" --target cuda --bench --seed 7 --repeat 3 --warmup 1 2>&1 | grep -E "$keep" | sed "s/^/[$(basename $b) cuda_matmul_5 2048] /"
  fi
done
for s in 4096 8192; do
  D="-D M=$s -D N=$s -D K=$s"
  $T run ir-examples/matmul.tir -s step6_async -p STAGES=2 $D $F 2>&1 | grep -E "$keep" | sed "s/^/[$s step6_async] /"
  for p in "STAGES=2 -p BK=8" "STAGES=2 -p BK=16"; do
    $T run ir-examples/matmul.tir -s step6_vthread -p $p $D $F 2>&1 | grep -E "$keep" | sed "s/^/[$s step6_vthread $p] /"
  done
done
