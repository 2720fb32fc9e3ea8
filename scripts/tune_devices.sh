#!/usr/bin/env bash
# Measures one tuning sweep with one worker and with several (tirc tune
# --devices), and compares their results. Usage:
#   scripts/tune_devices.sh TIRC DEVICES [OUT]     e.g. DEVICES=0,1 (or 0,0 on one GPU)
set -euo pipefail
TIRC=${1:-./target/release/tirc}
DEVICES=${2:-0,1}
OUT=${3:-/tmp}
args=(ir-examples/matmul_sweep.tir -s step2 -D M=2048 -D N=2048 -D K=2048 --budget 32 --strategy random --seed 3 --no-progress --json)
rm -f "$OUT/one.jsonl" "$OUT/many.jsonl"
"$TIRC" tune "${args[@]}" --db "$OUT/one.jsonl" > "$OUT/one.json"
"$TIRC" tune "${args[@]}" --db "$OUT/many.jsonl" --devices "$DEVICES" > "$OUT/many.json"
python3 - "$OUT/one.json" "$OUT/many.json" "$DEVICES" <<'PY'
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:3])
def trials(r):
    return {json.dumps(c["params"], sort_keys=True): c for c in r["candidates"]}
a, b = trials(one), trials(many)
assert a.keys() == b.keys(), "the same candidates"
same_status = sum(a[k]["status"] == b[k]["status"] for k in a)
ratios = sorted(b[k]["time_ms"] / a[k]["time_ms"] for k in a if a[k].get("time_ms") and b[k].get("time_ms"))
med = ratios[len(ratios) // 2] if ratios else float("nan")
print(f"candidates {len(a)}, same status {same_status}, timed {len(ratios)}, median time ratio (--devices {sys.argv[3]} / one) {med:.3f}")
print("best, one worker:", json.dumps(one.get("best")))
print(f"best, --devices {sys.argv[3]}:", json.dumps(many.get("best")))
for r, name in ((one, "one worker"), (many, f"--devices {sys.argv[3]}")):
    print(f"{name}: wall {r['wall_s']:.1f} s, building {r['compile_wall_s']:.1f} s, checking and timing {r['measure_s']:.1f} s")
print("notes:", many.get("notes"))
PY
