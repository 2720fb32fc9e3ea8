#!/bin/bash
# How wgmma rounds float32 operands to tf32 (seventeenth stop): A holds
# 1 + 2^-11 (half a tf32 step: to nearest, ties away, gives 1 + 2^-10;
# truncation gives 1), B ones, K = 64; then 1 + 3 * 2^-12. C = 64 * (A's
# tf32 value). mma_tf32 (mma.sync after cvt.rna) for comparison.
#   bash scripts/exp/wgmma_tf32_rounding.sh
T=./target/release/tirc
python3 - <<'PY'
import numpy as np
for name, v in [("half", 1 + 2**-11), ("three", 1 + 3 * 2**-12)]:
    np.save(f"/tmp/A_{name}.npy", np.full((128, 64), v, dtype=np.float32))
np.save("/tmp/B_nt.npy", np.ones((128, 64), dtype=np.float32))
np.save("/tmp/B_nn.npy", np.ones((64, 128), dtype=np.float32))
PY
for name in half three; do
  $T run ir-examples/hgemm.tir -s wgmma_tf32_nt -p BM=64 -p BN=64 -p STAGES=2 -D M=128 -D N=128 -D K=64 --target cuda --input A=/tmp/A_$name.npy --input B=/tmp/B_nt.npy --output C=/tmp/C_w_$name.npy > /dev/null 2>&1
  $T run ir-examples/hgemm.tir -s mma_tf32 -p BM=32 -p BN=32 -p BK=32 -p WM=2 -p WN=2 -D M=128 -D N=128 -D K=64 --target cuda --input A=/tmp/A_$name.npy --input B=/tmp/B_nn.npy --output C=/tmp/C_m_$name.npy > /dev/null 2>&1
  python3 -c "
import numpy as np
for k in ['w','m']:
    c=np.load('/tmp/C_%s_$name.npy'%k); print('$name', {'w':'wgmma_tf32_nt','m':'mma_tf32'}[k], 'C[0,0] =', repr(float(c[0,0])), 'all equal:', bool((c==c[0,0]).all()), '(nearest: %r, truncation: 64.0)' % (64*(1+2**-10)))
"
done
