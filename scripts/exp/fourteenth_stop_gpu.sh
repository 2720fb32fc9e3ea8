#!/usr/bin/env bash
# The fourteenth stop on the GPU. Part 1: the forms this stop fixed, each
# against the float64 reference on the GPU (a blockized reduction's init
# and updates under a split's guard, halo tiles bound to threads, a
# reduction across threads into local memory read after the thread loop,
# a shared buffer in lowered text, TVM's operator calls), with
# compute-sanitizer's racecheck on the first two. Part 2: the kernels the
# earlier stops measured, timed against cuBLAS in the same process, to see
# that nothing moved (step6_async, sgemm, wgmma at 4096^3).
# Usage: scripts/exp/fourteenth_stop_gpu.sh [TIRC]
set -u
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
run() { echo "== $*"; "$T" run "$@" --target cuda --seed 7 2>&1 | grep -E 'check|rror|warning' | tr '\n' ' '; echo; }
run tests/data/schedule/blockized_init_threads_split.tir -s s
run tests/data/schedule/blockized_init_threads_split.tir -s s -D NB=33 -D M=8 -D N=64 -D K=16
run tests/data/schedule/legal_halo_bind.tir -s threads
run tests/data/schedule/legal_halo_bind.tir -s threads_first -D N=1000
run tests/data/conformance/cross_thread_local_read_after_loop.tir
run tests/data/conformance/lowered_shared_stores_per_thread.tir
run tests/data/conformance/operator_calls.tir --func affine
run tests/data/conformance/operator_calls.tir --func integer
for f in "tests/data/schedule/blockized_init_threads_split.tir -s s -D NB=33 -D M=8 -D N=64 -D K=16" \
         "tests/data/schedule/legal_halo_bind.tir -s threads -D N=1000"; do
  echo "== racecheck $f"
  compute-sanitizer --tool racecheck "$T" run $f --target cuda --seed 7 2>&1 | grep -E 'check:|ERROR SUMMARY|RACECHECK SUMMARY|hazard' | head -4 | tr '\n' ' '
  echo
done
bench() {
  "$T" run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1 |
    grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|[0-9]+ registers|[0-9]+ B local|[0-9]+ blocks/SM|rror.*' | tr '\n' ' '
  echo
}
echo "step6_async STAGES=2 4096: $(bench ir-examples/matmul.tir -s step6_async -p STAGES=2 -D M=4096 -D N=4096 -D K=4096)"
echo "step6_async STAGES=2 4097: $(bench ir-examples/matmul.tir -s step6_async -p STAGES=2 -D M=4097 -D N=4097 -D K=4097)"
echo "sgemm 4096: $(bench ir-examples/sgemm.tir -s sgemm -D M=4096 -D N=4096 -D K=4096)"
echo "wgmma 4096: $(bench ir-examples/hgemm.tir -s wgmma -D M=4096 -D N=4096 -D K=4096)"
echo "wgmma 8192: $(bench ir-examples/hgemm.tir -s wgmma -D M=8192 -D N=8192 -D K=8192)"
