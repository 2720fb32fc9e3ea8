#!/usr/bin/env bash
# Twenty-fifth stop: the fixes that only a GPU shows.
T=${T:-./target/release/tirc}
W=${OUT:-/tmp}/w25; mkdir -p $W
echo "== wgmma -p EPI=0 where M cuts a warpgroup's rows (was an illegal instruction)"
for s in wgmma wgmma_nt; do for ws in 0 1; do for shape in "208 208 208" "48 1040 24"; do
  set -- $shape
  echo "$s WS=$ws ${1}x${2}x${3}: $($T run ir-examples/hgemm.tir -s $s -p EPI=0 -p WS=$ws -D M=$1 -D N=$2 -D K=$3 --target cuda --seed 3 2>&1 | grep -E 'check|error' | head -2)"
done; done; done
echo "== nvcc -arch=sm_90a on a tirc build of a wgmma kernel"
$T build ir-examples/hgemm.tir -s wgmma_nt -D M=256 -D N=256 -D K=256 -o $W/wg 2>&1 | tail -1
nvcc --version | tail -2
( cd $W/wg && nvcc -arch=sm_90a -c hgemm_nt.cu -o a.o 2>&1 | head -5; echo "rc(-arch=sm_90a)=$?" )
( cd $W/wg && nvcc -gencode arch=compute_90a,code=sm_90a -c hgemm_nt.cu -o b.o 2>&1 | head -5; echo "rc(-gencode)=$?" )
( cd $W/wg && nvcc -arch=sm_90a --dryrun -c hgemm_nt.cu -o a.o 2>&1 | grep -oE "(-arch[= ][a-z_0-9,]+|__CUDA_ARCH[A-Z_0-9]*=?[0-9]*|--gpu-name [a-z_0-9]+)" | sort | uniq -c )
