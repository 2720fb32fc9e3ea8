#!/bin/bash
# v0: tirc's warp-specialized wgmma kernel as generated; v1: without the
# commit/wait/fence around each of the epilogue's 16 stores; v2: v1 and the
# consumers' release by one thread a warpgroup (empty barrier of 2).
T=$(realpath "${1:-./target/release/tirc}")
cd "$(dirname "$0")"
"$T" lower ../../../ir-examples/hgemm.tir -s wgmma -D M=4096 -D N=4096 -D K=4096 --arch sm_90a --emit cuda > /tmp/ws_v.cu
sed -n '1,/^extern "C" __global__/p' /tmp/ws_v.cu | head -n -1 > v_prelude.cuh
sed -n '/^extern "C" __global__/,$p' /tmp/ws_v.cu | sed 's/extern "C" //' > v0.cuh
# In v1, the store loop (the last unrolled loop) loses its waits and fences.
awk '/for \(int ax1_0/{s=1} s&&/tirc_wgmma_(commit|wait<0>|fence)\(\);/{next} {print}' v0.cuh > v1.cuh
sed 's/tirc_mbar_init(&tirc_empty\[i\], 8)/tirc_mbar_init(\&tirc_empty[i], 2)/; s/if (tirc_tid % 32 == 0)/if (tirc_tid % 128 == 0)/g' v1.cuh > v2.cuh
diff v0.cuh v1.cuh | head; diff v1.cuh v2.cuh | head
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a variants.cu -o variants -lcublas -lcuda 2>&1 | grep -E "error" | head
./variants
