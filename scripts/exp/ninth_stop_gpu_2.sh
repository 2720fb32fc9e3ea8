T=./target/release/tirc
nvidia-smi --query-gpu=name --format=csv,noheader
for f in tests/data/traces/*.tir tests/data/schedule/cache_write_part.tir tests/data/schedule/cache_read_consumers.tir tests/data/nvrtc/float_floor_division.tir; do
  ss=$(grep -A1 '^@tirc.schedule' $f | grep -o '^def [a-z_0-9]*' | sed 's/def //')
  [ -z "$ss" ] && { echo "== $f: $($T run $f --target cuda --seed 13 2>&1 | grep -E 'check|rror' | head -2)"; continue; }
  for s in $ss; do echo "== $f $s: $($T run $f -s $s --target cuda --seed 13 2>&1 | grep -E 'check|rror' | head -2)"; done
done
