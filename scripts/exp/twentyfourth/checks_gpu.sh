#!/usr/bin/env bash
# Twenty-fourth stop: the fixes of the stop, checked on the GPU.
T=${T:-./target/release/tirc}
D=scripts/exp/twentyfourth
W=${OUT:-/tmp}/w24; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== partitioned kernel, 153 KB of shared tiles a branch (was 307 KB asked)"
$T run $D/conv1d_partitioned.tir -s s -p E=150 -D N=50000 --target cuda --seed 3 2>&1 | tail -2
$T run $D/conv1d_partitioned.tir -s s -D N=50000 --target cuda --seed 3 2>&1 | tail -1
echo "== launcher checks accesses at run-time sizes"
$T build $D/launcher_bounds.tir -s s -o $W/lb 2>&1 | tail -1
nvcc -O2 -arch=sm_90 -I$W/lb $W/lb/f.cu $D/launcher_bounds_main.cu -o $W/lb/main 2>&1 | tail -3 && $W/lb/main; echo "rc=$?"
echo "== names of C++ and CUDA, renamed"
for s in vectorized bound dynamic_shared; do $T run tests/data/nvrtc/reserved_names.tir -s $s --target cuda --seed 3 2>&1 | tail -1; done
echo "== examples, quick"
$T run ir-examples/matmul.tir -s step6_async -D M=1000 -D N=1100 -D K=999 --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1 | tail -3
$T run ir-examples/hgemm.tir -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1 | tail -3
