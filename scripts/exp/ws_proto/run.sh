#!/bin/bash
# Builds the warp-specialized TMA prototype (ws.cu) in several variants and
# times each against cuBLAS and tirc's cp.async wgmma kernel (hgemm.tir's
# wgmma at 4096³ with -p WS=0), all in one process. The tirc kernel and the
# helpers ws.cu borrows from it are generated first:
#   bash scripts/exp/ws_proto/run.sh [path/to/tirc]
T=$(realpath "${1:-./target/release/tirc}")
cd "$(dirname "$0")"
"$T" lower ../../../ir-examples/hgemm.tir -s wgmma -D M=4096 -D N=4096 -D K=4096 -p WS=0 --arch sm_90a --emit cuda > /tmp/tirc_wgmma.cu
sed -n '1,/^extern "C" __global__/p' /tmp/tirc_wgmma.cu | head -n -1 > tirc_helpers.cuh
sed -n '/^extern "C" __global__/,$p' /tmp/tirc_wgmma.cu > tirc_kernel.cuh
# The m64n256k16 helper with its scale-d operand free (0 for a tile's first product).
grep "tirc_wgmma_m64n256k16_f16_mn" tirc_helpers.cuh | sed 's/tirc_wgmma_m64n256k16_f16_mn(float\* c, unsigned long long da, unsigned long long db)/ws_wgmma(float* c, unsigned long long da, unsigned long long db, int sd)/; s/"r"(1) : "memory"/"r"(sd) : "memory"/' > ws_wgmma.cuh
set -x
for st in 4 5; do for p in 0 1; do
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DST=$st -DPERSIST=$p -Xptxas -v ws.cu -o ws_${st}_${p} -lcublas -lcuda 2>&1 | grep -E "error|warning|registers|ws_kernel" | head -20
done; done
for s in 4096 8192; do for st in 4 5; do for p in 0 1; do ./ws_${st}_${p} $s; done; done; done
