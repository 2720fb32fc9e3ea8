#!/bin/bash
# Warp-specialized schedules a reviewer wrote against the feature (batched
# matmul on blockIdx.z, two pipelined loops one after the other, a 1-D
# elementwise copy, matmuls with other stage lists, orders, thread
# bindings, reversed reads and vector widths), each run on the GPU and
# checked against the float64 reference; two under racecheck. (Its kernel
# whose mbarriers overflowed shared memory is now refused:
# tests/data/err/warp_specialize_barriers_past_shared_memory.tir.)
T=$(realpath "${1:-./target/release/tirc}")
cd "$(dirname "$0")"
for f in *.tir; do
  echo "== $f"
  "$T" run "$f" -s ws --target cuda 2>&1 | grep -E "check|error|×"
done
for f in bmm.tir dep2.tir; do
  compute-sanitizer --tool racecheck "$T" run "$f" -s ws --target cuda 2>&1 | tail -1
  compute-sanitizer --tool synccheck "$T" run "$f" -s ws --target cuda 2>&1 | tail -1
done
# The examples' warp-specialized schedules at other parameters and sizes.
cd ../../..
for p in "-p STAGES=2" "-p STAGES=4" "-p GROUP_M=4" "-p COMPUTE_FIRST=1" "-p BK=16" "-p VEC=2"; do
  echo "== step6_async WS=1 $p"
  "$T" run ir-examples/matmul.tir -s step6_async -D M=300 -D N=196 -D K=200 -p WS=1 $p --target cuda 2>&1 | grep -E "check|error|×"
done
for p in "-p STAGES=2" "-p BN=128" "-p GROUP_M=1" "-p BN=128 -p STAGES=2 -p GROUP_M=4" "-p BK=32"; do
  for s in wgmma wgmma_bf16_nt; do
    echo "== $s $p"
    "$T" run ir-examples/hgemm.tir -s $s -D M=512 -D N=768 -D K=640 $p --target cuda 2>&1 | grep -E "check|error|×"
  done
done
echo "== wgmma PAD=1 at 333 x 517 x 129"
"$T" run ir-examples/hgemm.tir -s wgmma -D M=333 -D N=517 -D K=129 -p PAD=1 --target cuda 2>&1 | grep -E "check|error|×"
