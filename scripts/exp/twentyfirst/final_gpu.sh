#!/usr/bin/env bash
# Twenty-first stop, the committed binary on the H200: the tensor-core
# products at 4096^3/4097^3/8192^3/8191^3 with the four-row copies and the
# wave-filling tile widths; step4/step5 at 1000x1100x999 against the
# nearest multiples of their tiles, twice; sanitizers on the unevenly split
# warp-specialized copies.
T=${T:-./target/release/tirc}
F=ir-examples/hgemm.tir
M=ir-examples/matmul.tir
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 20 --warmup 5 2>&1)
  echo "$label: rc=$? $(echo "$out" | grep -oE 'check: [a-z]+|time: [0-9.]+ ms|cublas: [0-9.]+ ms|[0-9.]+x cuBLAS|rror.*' | tr '\n' ' ')"
}
for s in wgmma_nt wgmma_bf16_nt; do
  line "$s 4096" $F -s $s -D M=4096 -D N=4096 -D K=4096
  line "$s 4097 PAD" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1
  line "$s 4097 PAD BN=208" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208
  line "$s 4097 PAD BN=208 GROUP_M=1" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1
  line "$s 8192" $F -s $s -D M=8192 -D N=8192 -D K=8192
  line "$s 8191 PAD" $F -s $s -D M=8191 -D N=8191 -D K=8191 -p PAD=1
done
for s in wgmma wgmma_bf16; do
  line "$s 4096" $F -s $s -D M=4096 -D N=4096 -D K=4096
  line "$s 4097 PAD" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1
  line "$s 4097 PAD BN=192" $F -s $s -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=192
done
line "wgmma_tf32_nt 4096" $F -s wgmma_tf32_nt -D M=4096 -D N=4096 -D K=4096
line "wgmma_tf32_nt 4097 PAD" $F -s wgmma_tf32_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1
line "wgmma_tf32_nt 4097 PAD BN=208" $F -s wgmma_tf32_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208
line "mma 4096 WS" $F -s mma -D M=4096 -D N=4096 -D K=4096 -p WS=1 -p STAGES=4 -p GROUP_M=8
line "mma 4097 PAD WS" $F -s mma -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p WS=1 -p STAGES=4 -p GROUP_M=8
for rep in 1 2; do
  while read -r s params a b; do
    p=""; for x in ${params//;/ }; do [ "$x" = - ] || p="$p -p $x"; done
    IFS=, read -r m n k <<<"$a"
    line "$s $params ${m}x${n}x${k}" $M -s $s $p -D M=$m -D N=$n -D K=$k
    IFS=, read -r m n k <<<"$b"
    line "$s $params ${m}x${n}x${k}" $M -s $s $p -D M=$m -D N=$n -D K=$k
  done <<'LIST'
step4 - 992,1088,992 1000,1100,999
step4 BM=64 1024,1088,992 1000,1100,999
step4 BM=64;TN=2 1024,1088,992 1000,1100,999
step5 - 992,1088,992 1000,1100,999
step5 BM=64 1024,1088,992 1000,1100,999
step5 BM=64;TN=2 1024,1088,992 1000,1100,999
LIST
done
for tool in memcheck racecheck; do
  echo "== $tool: wgmma_nt 150x230x70 PAD=1 BN=208 STAGES=2"
  timeout 120 compute-sanitizer --tool $tool $T run $F -s wgmma_nt -D M=150 -D N=230 -D K=70 -p PAD=1 -p BN=208 -p STAGES=2 --target cuda 2>&1 | grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" | head -3
done
