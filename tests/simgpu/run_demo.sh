#!/usr/bin/env bash
# The no-GPU demo without an arbiter: the HP service alone, then beside the
# BE trainer, on one simulated GPU (docs/simgpu.md). Prints both JSON lines
# of each run and a table. Usage: tests/simgpu/run_demo.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
bin=$build/bin
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOSAIC_SIMGPU=demo-$$
be_out=$(mktemp)
trap '"$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true; rm -f "$be_out"' EXIT
"$bin/simgpu" create "$MOSAIC_SIMGPU"

be_alone=$("$bin/be_trainer" --seconds 3)
hp_alone=$("$bin/hp_service" --requests 100)
"$bin/be_trainer" --seconds 600 > "$be_out" &
be=$!
sleep 0.3
hp_shared=$("$bin/hp_service" --requests 100)
kill -TERM "$be"
wait "$be" || true
be_shared=$(cat "$be_out")
printf '%s\n' "$hp_alone" "$hp_shared" "$be_alone" "$be_shared"
python3 - "$hp_alone" "$hp_shared" "$be_alone" "$be_shared" <<'PY'
import json, sys
ha, hs, ba, bs = (json.loads(a) for a in sys.argv[1:])
print(f"{'':14} {'HP p50 ms':>10} {'HP p99 ms':>10} {'BE steps/s':>11}")
print(f"{'alone':14} {ha['p50_ms']:10.2f} {ha['p99_ms']:10.2f} {ba['steps_per_s']:11.2f}")
print(f"{'HP + BE':14} {hs['p50_ms']:10.2f} {hs['p99_ms']:10.2f} {bs['steps_per_s']:11.2f}")
print(f"HP p99 slowdown {hs['p99_ms'] / ha['p99_ms']:.2f}x (wall ms at MOSAIC_SIMGPU_SCALE, default 20x H200 time)")
PY
