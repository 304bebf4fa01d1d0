#!/usr/bin/env bash
# SM partitions end to end on the simulated GPU, through the shim: the HP
# demo service and the BE demo trainer (tests/simgpu/) side by side, sharing
# the whole GPU, then with HP on a green context of 72 SMs and BE on the
# other 60 (MOSAIC_HP_SMS / MOSAIC_BE_SMS, docs/partitions.md). Prints a
# table; with --check, fails unless the partitioned HP p99 of GPU spans is
# under 0.7x the shared one and BE still runs. GPU spans (events around each
# request, the simulated GPU's time) are what the partition changes; the
# host latency beside them also holds the loaded host's scheduling delays,
# and one stall in 60 requests is their p99. HP starts once BE has made a
# step, not after a fixed sleep.
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
steps=$(mktemp)
trap '"$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true; rm -f "$out" "$steps"' EXIT
"$bin/simgpu" create "$MOSAIC_SIMGPU"

# pair HP_SMS BE_SMS: the HP service's line, then the BE trainer's.
pair() {
  : > "$steps"
  MOSAIC_ROLE=be MOSAIC_BE_SMS=$2 LD_PRELOAD=$lib "$bin/be_trainer" --seconds 600 \
    --step-times "$steps" > "$out" &
  local be=$! i
  # BE running (past the client's wait for a daemon): its first steps done.
  for i in $(seq 1200); do [ "$(wc -l < "$steps")" -ge 3 ] && break; sleep 0.05; done
  [ "$(wc -l < "$steps")" -ge 3 ] || { echo "FAIL: BE made no step in 60 s" >&2; exit 1; }
  MOSAIC_ROLE=hp MOSAIC_HP_SMS=$1 LD_PRELOAD=$lib "$bin/hp_service" --requests 60 --prequeue
  kill -TERM "$be"
  wait "$be" || true
  cat "$out"
}
alone=$(MOSAIC_ROLE=hp LD_PRELOAD=$lib "$bin/hp_service" --requests 60 --prequeue)
shared=$(pair "" "")
part=$(pair 72 60)
python3 - "$alone" "$shared" "$part" "$check" <<'PY'
import json, sys
alone = json.loads(sys.argv[1])
sh = [json.loads(l) for l in sys.argv[2].splitlines() if l.startswith("{")]
pa = [json.loads(l) for l in sys.argv[3].splitlines() if l.startswith("{")]
print(f"{'':24} {'GPU p50 ms':>10} {'GPU p99 ms':>10} {'host p50':>9} {'host p99':>9} {'BE steps/s':>11}")
for name, hp, be in (("HP alone", alone, None), ("shared (no partition)", sh[0], sh[1]),
                     ("HP 72 SMs + BE 60 SMs", pa[0], pa[1])):
    print(f"{name:24} {hp['gpu_p50_ms']:10.2f} {hp['gpu_p99_ms']:10.2f} {hp['p50_ms']:9.2f} "
          f"{hp['p99_ms']:9.2f} {be['steps_per_s'] if be else '':>11}")
print("wall ms at MOSAIC_SIMGPU_SCALE (default 20x H200 time); GPU: events around each "
      "request; host: first launch to the synchronisation's return")
if sys.argv[4] == "--check":
    ok = pa[0]["gpu_p99_ms"] < 0.7 * sh[0]["gpu_p99_ms"] and pa[1]["steps_per_s"] > 0
    if not ok:
        print("FAIL: the partitioned HP GPU p99 is not under 0.7x the shared one, or BE "
              "made no progress beside it")
    sys.exit(0 if ok else 1)
PY
