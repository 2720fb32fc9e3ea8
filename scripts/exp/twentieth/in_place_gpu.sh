#!/usr/bin/env bash
# Twentieth stop: the padded tensor-core products store C in place (no
# padded C, no copy out), against the nineteenth stop's schedules (the
# padded C and its copy), one binary, one call; the sanitizers on the
# partial stores.
T=${T:-./target/release/tirc}
NEW=ir-examples/hgemm.tir
OLD=scripts/exp/twentieth/hgemm_padded_c.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
WS="-p WS=1 -p STAGES=4 -p GROUP_M=8"
for s in wgmma wgmma_bf16; do
  line "$s 4096" $NEW -s $s -D M=4096 -D N=4096 -D K=4096
  line "$s 4097 old" $OLD -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1
  line "$s 4097 new" $NEW -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1
  line "$s 8192" $NEW -s $s -D M=8192 -D N=8192 -D K=8192
  line "$s 8191 old" $OLD -s $s -D M=8191 -D N=8191 -D K=8191 -p PAD=1
  line "$s 8191 new" $NEW -s $s -D M=8191 -D N=8191 -D K=8191 -p PAD=1
done
line "wgmma_tf32_nt 4096" $NEW -s wgmma_tf32_nt -D M=4096 -D N=4096 -D K=4096
line "wgmma_tf32_nt 4097 old" $OLD -s wgmma_tf32_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1
line "wgmma_tf32_nt 4097 new" $NEW -s wgmma_tf32_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1
line "mma 4096 WS" $NEW -s mma -D M=4096 -D N=4096 -D K=4096 $WS
line "mma 4097 WS old" $OLD -s mma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 $WS
line "mma 4097 WS new" $NEW -s mma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 $WS
line "mma 1000x1100x999 new" $NEW -s mma -D M=1000 -D N=1100 -D K=999 -p PAD=1
for tool in memcheck racecheck; do
  echo "== $tool: wgmma 300x130x72 PAD=1 BM=BN=64"
  timeout 120 compute-sanitizer --tool $tool $T run $NEW -s wgmma -D M=300 -D N=130 -D K=72 -p PAD=1 -p BM=64 -p BN=64 -p STAGES=2 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
  echo "== $tool: mma 100x37x70 PAD=1 small tiles"
  timeout 120 compute-sanitizer --tool $tool $T run $NEW -s mma -D M=100 -D N=37 -D K=70 -p PAD=1 -p BM=64 -p BN=64 -p BK=32 -p WM=2 -p WN=2 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
done
