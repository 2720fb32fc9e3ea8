#!/usr/bin/env bash
# Where step4/step5 lose at 1000x1100x999: one dimension at a time.
T=${1:-./target/release/tirc}
for s in step4 step5; do
  for shape in 992,1088,992 1000,1100,999 1000,1100,1000 992,1088,999 1000,1088,992 992,1100,992 1024,1088,1024 1024,1120,1024; do
    IFS=, read -r M N K <<<"$shape"
    for extra in "" "-p VEC=2"; do
      out=$($T run ir-examples/matmul.tir -s $s $extra -D M=$M -D N=$N -D K=$K --target cuda --bench --compare cublas --seed 7 --repeat 50 --warmup 10 2>&1)
      echo "$s $extra ${M}x${N}x${K}: $(echo "$out" | grep -oE 'time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
    done
  done
done
