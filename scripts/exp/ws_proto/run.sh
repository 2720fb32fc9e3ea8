#!/bin/bash
# Builds the warp-specialized TMA prototype in several variants and times
# each against cuBLAS and tirc's current wgmma kernel (4096³ float16).
cd "$(dirname "$0")"
set -x
for st in 4 5; do for p in 0 1; do
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DST=$st -DPERSIST=$p -Xptxas -v ws.cu -o ws_${st}_${p} -lcublas -lcuda 2>&1 | grep -E "error|warning|registers|ws_kernel" | head -20
done; done
for s in 4096 8192; do for st in 4 5; do for p in 0 1; do ./ws_${st}_${p} $s; done; done; done
