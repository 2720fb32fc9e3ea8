#!/usr/bin/env bash
# Twenty-first stop: `tirc tune` over wgmma_nt's space (BN 128/192/208/256,
# STAGES, GROUP_M, WS) at 4097^3 with PAD=1, as a user would find the
# wave-filling tile.
T=${T:-./target/release/tirc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 500 $T tune ir-examples/hgemm.tir -s wgmma_nt -D M=4097 -D N=4097 -D K=4097 -p PAD=1 \
  --db "${OUT:-/tmp}/tune.json" --no-progress --warmup 5 --repeat 20 2>&1 | tail -45
