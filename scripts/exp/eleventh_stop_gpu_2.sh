#!/usr/bin/env bash
# Eleventh stop: the forms fixed this stop, run on the GPU against the
# float64 reference (each `tirc run .. --target cuda`, result checked).
set -u
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
run() { echo "== $*"; "$T" run "$@" --target cuda --seed 7 2>&1 | grep -E '^check|error|×' | head -3; }
run tests/data/nvrtc/integer_literals.tir -s s
run tests/data/tvm/launch_of_runtime_size.tir -D n=300
run tests/data/tvm/launch_of_runtime_size.tir -D n=1
run tests/data/sizes/difference_extent.tir -s s -D n=70
run tests/data/schedule/offset_access.tir -s consumer_at_producer
run tests/data/schedule/offset_access.tir -s producer_at_consumer
run tests/data/schedule/offset_access.tir -s written_at_an_offset
run tests/data/schedule/blockize.tir -s partial_reduction_tile
run tests/data/schedule/legal_nondividing_split_bind.tir -s s
run ir-examples/matmul.tir -s step2 -p TN=5 -D M=1000 -D N=1100 -D K=999
run ir-examples/hgemm.tir -s wmma -D M=80 -D N=64 -D K=128 -p BM=32 -p BN=32 -p BK=32 -p WM=2 -p WN=2 -p STAGES=2 -p PAD=1
run ir-examples/hgemm.tir -s mma_nt -D M=64 -D N=90 -D K=64 -p BM=64 -p BN=64 -p BK=32 -p WM=2 -p WN=2 -p PAD=1
run ir-examples/hgemm.tir -s wgmma -D M=128 -D N=128 -D K=96 -p BM=64 -p BN=128 -p BK=32 -p STAGES=3
# A lowered kernel of run-time sizes read back and run at another size.
"$T" lower ir-examples/matmul_dynamic.tir -s step6_async -p STAGES=2 -D N=512 -D K=256 > /tmp/lowered_dyn.tir
run /tmp/lowered_dyn.tir -D m=777
# tirc build's launcher with an extent n - 1, compiled by nvcc.
rm -rf /tmp/bd && "$T" build tests/data/sizes/difference_extent.tir -s s -o /tmp/bd >/dev/null && nvcc -c -arch=sm_90 -o /tmp/bd/diff.o /tmp/bd/diff.cu && echo "launcher compiles with nvcc"
