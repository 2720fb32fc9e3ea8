#!/usr/bin/env bash
# The twelfth stop's new and changed forms on the GPU, each against the
# float64 reference: cache_read after a producer moved into the readers'
# loop, strides of run-time sizes, float literals, a loop of n - 1, and
# the tensor-core schedules the new code-generation checks pass.
T=${1:-./target/release/tirc}
run() { echo "== $*"; "$T" run "$@" --target cuda --seed 7 2>&1 | tail -2; }
run tests/data/schedule/cache_read_after_writer.tir -s per_row
run tests/data/schedule/cache_read_after_writer.tir -s pipelined
run tests/data/tvm/compact_strides.tir -D m=37 -D n=129
run tests/data/nvrtc/float_literals.tir
run tests/data/sizes/empty_loop.tir -D n=2
run tests/data/sizes/empty_loop.tir -D n=1000
for s in wmma mma mma_nt mma_bf16 mma_tf32; do run ir-examples/hgemm.tir -s $s -D M=256 -D N=256 -D K=128; done
run ir-examples/hgemm.tir -s wgmma -D M=256 -D N=512 -D K=256
run ir-examples/matmul.tir -s step6_async -p STAGES=2 -D M=1000 -D N=1100 -D K=999
