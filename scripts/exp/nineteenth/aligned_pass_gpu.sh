#!/usr/bin/env bash
# Nineteenth stop: `align_input_rows` (misaligned inputs copied into aligned
# rows) on the H100. First the issue-12 table (scripts/boundary_bench.sh) for
# the schedules given, then a few sizes with --aligned-copies never beside
# the default, then conv2d's `direct` (the one example whose default sizes
# take a copy).
T=${T:-./target/release/tirc}
bash scripts/boundary_bench.sh "$T" ${SCHEDULES:-step1 step4 step6_async}
line() {
  local label=$1; shift
  out=$(timeout 100 $T run "$@" --target cuda --bench --seed 7 --repeat ${REP:-20} --warmup 3 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'aligned: `[A-Za-z_]+`|check: [a-z]+|time: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
if [ -z "${SKIP_EXTRA:-}" ]; then
  for w in auto never; do
    line "step1 TX=128 4097^3 --aligned-copies $w" ir-examples/matmul.tir -s step1 -p TX=128 -D M=4097 -D N=4097 -D K=4097 --compare cublas --aligned-copies $w
    line "step6_async 8191^3 --aligned-copies $w" ir-examples/matmul.tir -s step6_async -D M=8191 -D N=8191 -D K=8191 --compare cublas --aligned-copies $w
    line "step4 BN=64 4097^3 --aligned-copies $w" ir-examples/matmul.tir -s step4 -p BN=64 -D M=4097 -D N=4097 -D K=4097 --compare cublas --aligned-copies $w
  done
  for s in direct $(grep -A1 "@tirc.schedule" ir-examples/conv2d.tir | grep -oP "^def \K\w+" | grep -v '^direct$'); do
    for w in auto never; do
      line "conv2d $s --aligned-copies $w" ir-examples/conv2d.tir -s $s --aligned-copies $w
    done
  done
fi
