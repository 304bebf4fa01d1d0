#!/usr/bin/env bash
# SM partitions end to end on the simulated GPU, through the shim: the HP
# demo service and the BE demo trainer (tests/simgpu/) side by side, sharing
# the whole GPU, then with HP on a green context of 72 SMs and BE on the
# other 60 (MOSAIC_HP_SMS / MOSAIC_BE_SMS, docs/partitions.md). Prints a
# table; with --check, fails unless the partitioned HP p99 is under 0.7x
# the shared one and BE still runs (measured: 73.6 ms shared, 26.9 ms
# partitioned, 16.6 ms alone; BE 16.4 and 13.6 steps/s).
# Usage: tests/interposer/green_demo.sh BUILD_DIR [--check]
set -euo pipefail
build=$1
check=${2:-}
bin=$build/bin
# The shim to preload (the sanitizer build puts its runtime ahead of it).
lib=${GREEN_DEMO_PRELOAD:-$build/lib/libmosaic.so}
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOSAIC_SIMGPU=green-demo-$$
# No arbiter: BE runs uncontrolled after the client's 2 s wait.
export MOSAIC_SCHED_SOCKET=/nonexistent/mosaic-green-demo.sock
out=$(mktemp)
trap '"$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true; rm -f "$out"' EXIT
"$bin/simgpu" create "$MOSAIC_SIMGPU"

# pair HP_SMS BE_SMS: the HP service's line, then the BE trainer's.
pair() {
  MOSAIC_ROLE=be MOSAIC_BE_SMS=$2 LD_PRELOAD=$lib "$bin/be_trainer" --seconds 600 > "$out" &
  local be=$!
  sleep 2.5 # past the BE client's wait for a daemon
  MOSAIC_ROLE=hp MOSAIC_HP_SMS=$1 LD_PRELOAD=$lib "$bin/hp_service" --requests 60
  kill -TERM "$be"
  wait "$be" || true
  cat "$out"
}
alone=$(MOSAIC_ROLE=hp LD_PRELOAD=$lib "$bin/hp_service" --requests 60)
shared=$(pair "" "")
part=$(pair 72 60)
python3 - "$alone" "$shared" "$part" "$check" <<'PY'
import json, sys
alone = json.loads(sys.argv[1])
sh = [json.loads(l) for l in sys.argv[2].splitlines() if l.startswith("{")]
pa = [json.loads(l) for l in sys.argv[3].splitlines() if l.startswith("{")]
print(f"{'':24} {'HP p50 ms':>10} {'HP p99 ms':>10} {'BE steps/s':>11}")
print(f"{'HP alone':24} {alone['p50_ms']:10.2f} {alone['p99_ms']:10.2f} {'':>11}")
print(f"{'shared (no partition)':24} {sh[0]['p50_ms']:10.2f} {sh[0]['p99_ms']:10.2f} {sh[1]['steps_per_s']:11.2f}")
print(f"{'HP 72 SMs + BE 60 SMs':24} {pa[0]['p50_ms']:10.2f} {pa[0]['p99_ms']:10.2f} {pa[1]['steps_per_s']:11.2f}")
print("wall ms at MOSAIC_SIMGPU_SCALE (default 20x H200 time); host latency per request")
if sys.argv[4] == "--check":
    ok = pa[0]["p99_ms"] < 0.7 * sh[0]["p99_ms"] and pa[1]["steps_per_s"] > 0
    sys.exit(0 if ok else 1)
PY
