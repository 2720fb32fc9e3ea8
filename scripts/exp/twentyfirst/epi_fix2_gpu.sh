#!/usr/bin/env bash
# Twenty-first stop: hgemm_epi.tir's staged store after both fixes (the
# wgmma accumulator's offset; reverse_compute_at keeping to the producer's
# chunk guard).
T=${T:-./target/release/tirc}
# (Run with scripts/exp/twentyfirst/hgemm_epi.tir, wgmma_nt with EPI and
# EPI_PAD, since folded into ir-examples/hgemm.tir as EPI, rows padded by 4.)
F=ir-examples/hgemm.tir
line() {
  local label=$1; shift
  out=$(timeout 90 $T run "$@" --target cuda --bench --compare cublas --seed 7 --repeat 10 --warmup 3 --json 2>&1)
  echo "$label: $(echo "$out" | grep -oE '"status": "[a-z]+"|"time_ms": [0-9.]+|"ratio_vs_cublas": [0-9.]+|"registers_per_thread": [0-9]+|"local_bytes_per_thread": [0-9]+|"message": "[^"]*"' | tr '\n' ' ')"
}
line "150x230x70 EPI=64" $F -s wgmma_nt -D M=150 -D N=230 -D K=70 -p PAD=1 -p BN=208 -p EPI=64
line "4097 BN=208 G1 EPI=64" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1 -p EPI=64
line "4097 BN=208 G1 EPI=0" $F -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 -p BN=208 -p GROUP_M=1
line "4096 EPI=64" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096 -p EPI=64
line "4096 EPI=0" $F -s wgmma_nt -D M=4096 -D N=4096 -D K=4096
