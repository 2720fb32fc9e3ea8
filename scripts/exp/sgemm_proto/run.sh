#!/bin/bash
# Times the hand-written SGEMM prototype against cuBLAS, in several tile
# shapes: bash scripts/exp/sgemm_proto/run.sh
cd "$(dirname "$0")"
V="2,2,8,2 4,2,8,1 2,4,8,1 4,2,16,1 2,4,16,1"
for v in $V; do IFS=, read tm tn bk mb <<< "$v"
  nvcc -O3 -std=c++17 -arch=sm_90 -DTMS=$tm -DTNS=$tn -DBK=$bk -DMINB=$mb -Xptxas -v sgemm.cu -o /tmp/sg_$tm$tn$bk$mb -lcublas 2>&1 | grep -E "error|registers|spill" | head -4
done
for s in 4096 8192; do for v in $V; do IFS=, read tm tn bk mb <<< "$v"; /tmp/sg_$tm$tn$bk$mb $s; done; done
