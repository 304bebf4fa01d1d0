#!/usr/bin/env bash
# How replay reads a recorded trace's BE step and HP isolated latency
# (docs/replay.md, "Calibration on the H200 traces of 2026-12-02"), on
# synthetic traces whose answers are known:
#   - BE: 7 start-up kernels, 10 steps of 5 kernels (A B C A D: A twice, so
#     that a shorter period cannot pass), then 2 kernels of an 11th step:
#     replay must find the 5-kernel step after 7 start-up kernels, 10 full
#     periods and a tail of 2, and BE alone at 1 / (5 x (120 + 10) us);
#     the replay before 2026-12-03 took the whole recording (57 kernels) as
#     one step, BE alone 1/57th of that;
#   - BE without a step (distinct kernels, the last two equal): no step,
#     the whole recording, said in the text output;
#   - HP: 40 requests, the first 5 (the warm-up) 5 ms and 10 kernels each
#     (a service's start-up), the rest 330-336 us and 3 kernels: the
#     isolated p99 (host and GPU span) is of the 35, not of the start-up
#     (the replay before 2026-12-03: 5 ms and 1.1 ms).
# Every kernel is unprofiled (ids that no dataset key hashes to), so each
# is 100 us x the trace's scale, and the answers do not depend on the
# dataset.
#
#   tests/sched/test_replay_step.sh BUILD_DIR [MOSAIC_SCHED]
# MOSAIC_SCHED: another binary to check (an older build, to show the test
# fails on it).
set -euo pipefail
build=$(cd "${1:?usage: test_replay_step.sh BUILD_DIR [MOSAIC_SCHED]}" && pwd)
sched=${2:-$build/bin/mosaic-sched}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
US = 1000

def trace(path, events, kernels):
    with open(path, "w") as f:
        f.write(json.dumps({"schema": "mosaic-trace/1", "tool": "test_replay_step.sh",
                            "version": "0", "created": "2026-12-03T00:00:00Z",
                            "policy": "none", "slo": 1.25, "clock": "CLOCK_MONOTONIC",
                            "t_unit": "ns since t0", "t0_ns": "0"}) + "\n")
        for k in kernels:
            f.write(json.dumps({"ev": "kernel", "id": k, "key": ""}) + "\n")
        for e in events:
            f.write(json.dumps(e) + "\n")
        f.write(json.dumps({"ev": "end", "t": events[-1]["t"] + 1, "events": len(events)}) + "\n")

def kid(n):
    return f"{0xfeed000000000000 + n:016x}"

# HP: request i begins at t, its kernels launched at once, ends after its
# duration; 1 ms to the next.
ev, t = [], 10_000 * US
for i in range(40):
    warm = i < 5
    ks = [kid(100 + (j % 3) + (10 if warm else 0)) for j in range(10 if warm else 3)]
    dur = 5000 * US if warm else (330 + i % 7) * US
    ev.append({"ev": "hp_begin", "t": t, "client": 1, "req": i + 1})
    for k in ks:
        ev.append({"ev": "hp_launch", "t": t + 1, "client": 1, "id": k})
    ev.append({"ev": "hp_end", "t": t + dur, "client": 1, "req": i + 1})
    t += dur + 1000 * US
trace(f"{w}/hp.trace", ev, sorted({e["id"] for e in ev if "id" in e}))

# BE: each kernel granted at its want, done 120 us later (scale 1.2); the
# next wanted 10 us after (2 ms in the start-up: its host work).
def be(path, seq, startup):
    ev, t = [], 0
    for n, k in enumerate(seq):
        ev.append({"ev": "be_want", "t": t, "client": 1, "id": kid(k)})
        ev.append({"ev": "be_grant", "t": t, "client": 1, "id": kid(k)})
        ev.append({"ev": "be_done", "t": t + 120 * US, "client": 1, "id": kid(k)})
        t += 120 * US + (2000 if n < startup else 10) * US
    trace(path, ev, sorted({kid(k) for k in seq}))

step = [1, 2, 3, 1, 4]
be(f"{w}/be.trace", list(range(50, 57)) + step * 10 + step[:2], 7)
# No step: 40 distinct kernels, then the last one again.
be(f"{w}/be_nostep.trace", list(range(200, 240)) + [239], 0)
PY

replay() { # out policy traces...
  local out=$1 policy=$2
  shift 2
  "$sched" --config /dev/null --policy "$policy" --slo 1.25 \
    --profile-dir "$src/profiler/data/h200" --model-dir "$src/predictor/models/h200/lockbox" \
    --log-level error replay --warmup 5 "$@" > "$out" || fail "replay $policy $*: exit $?"
}
replay "$work/none.json" none --json "$work/hp.trace" "$work/be.trace"
replay "$work/none.txt" none "$work/hp.trace" "$work/be.trace"
replay "$work/nostep.json" none --json "$work/hp.trace" "$work/be_nostep.trace"
replay "$work/nostep.txt" none "$work/hp.trace" "$work/be_nostep.trace"
cat "$work/none.json" "$work/none.txt" "$work/nostep.txt"

python3 - "$work" <<'PY' || fail "replay's step or isolated HP latency (above)"
import json, sys
w = sys.argv[1]
r = json.load(open(f"{w}/none.json"))
n = json.load(open(f"{w}/nostep.json"))
txt = open(f"{w}/none.txt").read()
ntxt = open(f"{w}/nostep.txt").read()
bad = []
def check(what, ok):
    if not ok:
        bad.append(what)
check(f"the BE step is 5 kernels, not {r['be_step_kernels']}", r["be_step_kernels"] == 5)
check(f"found as a period, not {r.get('be_step_found')}", r.get("be_step_found") == "period")
check(f"7 start-up kernels skipped, not {r.get('be_step_prefix_kernels')}",
      r.get("be_step_prefix_kernels") == 7)
check(f"10 full periods, not {r.get('be_step_full_periods')}", r.get("be_step_full_periods") == 10)
check(f"a tail of 2 kernels, not {r.get('be_step_tail_kernels')}", r.get("be_step_tail_kernels") == 2)
# BE alone by the trace: 5 kernels x (120 us + the step's 10 us gaps; the
# start-up's 2 ms gaps are not the step's).
iso = 1e9 / (5 * 130e3)
check(f"BE alone {r['be_isolated_steps_per_s']:.1f} steps/s, not {iso:.1f} (+-1%)",
      abs(r["be_isolated_steps_per_s"] / iso - 1) < 0.01)
# Beside HP (a quarter of the time busy, both slowed 2x while together by
# the unmeasured-pair rule) BE keeps at least half of that.
check(f"BE beside HP {r['be_steps_per_s']:.1f} steps/s, not within 0.5-1.0 x alone",
      0.5 * iso < r["be_steps_per_s"] <= iso)
check("the text output says how the step was found",
      "BE step: 5 kernels" in txt and "after 7 start-up kernels" in txt and
      "10 full steps and 2 kernels of a partial one" in txt)
# HP: the 35 requests after the warm-up: 330-336 us on the host, 3 x 100
# us x the scale (their median ratio, 1.11) on the GPU span.
check(f"HP isolated p99 {r['hp_isolated_p99_ms']} ms, not 0.336 (the warm-up's 5 ms left out)",
      abs(r["hp_isolated_p99_ms"] - 0.336) < 0.001)
gspan = 3 * 100e3 * r["gpu_scale"] / 1e6
check(f"HP isolated GPU-span p99 {r['hp_gpu_isolated_p99_ms']} ms, not {gspan:.4f} (3 kernels)",
      abs(r["hp_gpu_isolated_p99_ms"] - gspan) < 1e-3)
med = sorted((330 + i % 7) / 300 for i in range(5, 40))[17]
check(f"gpu_scale {r['gpu_scale']}, not {med:.4f} (the median over the 35)",
      abs(r["gpu_scale"] - med) < 1e-4)
check(f"{r['hp_requests']} HP requests counted, not 35", r["hp_requests"] == 35)
# No step: the whole recording, said so; two equal kernels at the end are
# no step of 1.
check(f"no step: {n.get('be_step_found')} with {n['be_step_kernels']} kernels, not the whole "
      "recording of 41", n.get("be_step_found") == "whole-recording" and n["be_step_kernels"] == 41)
check("the text output says no step repeats", "BE step: none repeats in the 41 granted" in ntxt)
if bad:
    print("\n".join(bad))
    sys.exit(1)
print("replay's BE step and HP isolated latency OK")
PY
echo "PASS: the BE step after start-up and before a partial tail, the warm-up out of HP's isolated p99"
