#!/usr/bin/env bash
# Run-time (m, n, k) step6_async/step6 against the constant-shape kernel and
# cuBLAS, and the aligned/unaligned paths checked on the GPU.
T=${1:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F="--target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5"
g() { grep -E 'check|time:|cublas:|rror' | tr '\n' ' '; echo; }
for sh in "4096 4096 4096" "4097 4097 4097" "2000 2000 2000" "1000 1100 999" "4096 4096 1000" "8192 8192 8192"; do
  set -- $sh
  for s in step6_async step6; do
    p=""; [ $s = step6_async ] && p="-p STAGES=2"
    echo "$s $1x$2x$3 runtime: $($T run ir-examples/linear_dynamic.tir -s $s $p -D m=$1 -D n=$2 -D k=$3 $F 2>&1 | g)"
    echo "$s $1x$2x$3 constant: $($T run ir-examples/matmul.tir -s $s $p -D M=$1 -D N=$2 -D K=$3 $F 2>&1 | g)"
  done
done
for sh in "70 90 1" "70 90 17" "70 90 33" "70 90 40" "70 91 100" "130 101 1002" "130 100 1001" "65 64 64"; do
  set -- $sh
  for s in step6 step6_async; do
    echo "check $s m=$1 n=$2 k=$3: $($T run ir-examples/linear_dynamic.tir -s $s $( [ $s = step6_async ] && echo -p STAGES=3 ) -D m=$1 -D n=$2 -D k=$3 --target cuda 2>&1 | g)"
  done
done
compute-sanitizer --tool racecheck $T run ir-examples/linear_dynamic.tir -s step6_async -p STAGES=3 -D m=70 -D n=92 -D k=100 --target cuda 2>&1 | tail -2
compute-sanitizer --tool memcheck $T run ir-examples/linear_dynamic.tir -s step6_async -p STAGES=4 -D m=70 -D n=93 -D k=41 --target cuda 2>&1 | tail -2
