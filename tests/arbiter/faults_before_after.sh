#!/usr/bin/env bash
# Before and after, side by side in one run: tests/arbiter/arbiter_faults.py
# (this checkout's) against two builds, alternating A, B, A, B ... so that
# both see the same host load, N rounds of each fault case. Prints one line
# per run and a summary per build: for daemon-hold, the requests begun in
# the reconnection (from the restart to 1 s after both clients were back)
# and how many of them went over p x the isolated p99 of GPU spans, the
# worst of them, which client came back first, and BE's first step after
# the restart; for client-kill, BE's next step after the HP client's kill.
# The SLO checks are reported, not gated (ARBITER_TIMING_GATES=report), so
# that a run over p still gives its numbers.
#
#   faults_before_after.sh BUILD_A BUILD_B [ROUNDS] [CASES]
#
# e.g. tests/arbiter/faults_before_after.sh /tmp/base/build build 8
# (a build needs mosaic-sched, libmosaic, simgpu, fakecuda, hp_service and
# be_trainer). About 12 s a run.
set -euo pipefail
a=${1:?usage: faults_before_after.sh BUILD_A BUILD_B [ROUNDS] [CASES]}
b=${2:?usage: faults_before_after.sh BUILD_A BUILD_B [ROUNDS] [CASES]}
rounds=${3:-6}
cases=${4:-daemon-hold client-kill}
here=$(cd "$(dirname "$0")" && pwd)
for d in "$a" "$b"; do
    for f in bin/mosaic-sched lib/libmosaic.so bin/simgpu bin/hp_service bin/be_trainer; do
        [[ -e $d/$f ]] || { echo "faults_before_after.sh: $d has no $f: build it first" >&2; exit 2; }
    done
done
log=$(mktemp "${TMPDIR:-/tmp}/faults_ba.XXXXXX")
trap 'rm -f "$log"' EXIT
for ((r = 1; r <= rounds; r++)); do
    for c in $cases; do
        for d in "$a" "$b"; do
            out=$(ARBITER_TIMING_GATES=report ARBITER_EVAL_PRELOAD=$d/lib/libmosaic.so \
                  python3 "$here/arbiter_faults.py" "$d" "$c" 2>&1 || true)
            if [[ $c == daemon-hold ]]; then
                line=$(python3 - "$out" <<'PY'
import re, sys
o = sys.argv[1]
m = re.search(r"reconnection \(BE back (before|after) HP\): (\d+) requests begun in it, (\d+) over p "
              r"\(worst GPU span ([0-9.]+) of the bound\)", o)
f = re.search(r"the first (\d+) ms after the restart", o)
worst = m.group(4) if m else "?"
print("be_first=%s begun=%s over=%s worst_over_bound=%s be_first_step_ms=%s %s" % (
    m.group(1) == "before" if m else "?", m.group(2) if m else "?", m.group(3) if m else "?",
    worst, f.group(1) if f else "?", "PASS" if "PASS:" in o else "FAIL"))
PY
)
            else
                line=$(sed -n 's/.*BE.s next step \([0-9]*\) ms after the kill.*/be_next_step_ms=\1/p' <<<"$out")
                [[ -n $line ]] || line="be_next_step_ms=? $(grep -m1 FAIL <<<"$out" || true)"
                grep -q "PASS:" <<<"$out" && line+=" PASS" || line+=" FAIL"
            fi
            echo "$c $d round $r: $line" | tee -a "$log"
        done
    done
done
echo "== summary ($rounds rounds)"
python3 - "$log" "$a" "$b" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
for d in sys.argv[2:]:
    hold = [l for l in lines if l.startswith("daemon-hold " + d + " ")]
    kill = [l for l in lines if l.startswith("client-kill " + d + " ")]
    if hold:
        kv = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in hold]
        over = sum(int(k["over"]) for k in kv if k["over"].isdigit())
        begun = sum(int(k["begun"]) for k in kv if k["begun"].isdigit())
        bef = [k for k in kv if k["be_first"] == "True"]
        steps = sorted(int(k["be_first_step_ms"]) for k in kv if k["be_first_step_ms"].isdigit())
        worst = sorted(float(k["worst_over_bound"]) for k in kv if k["worst_over_bound"] != "?")
        print(f"{d}: daemon-hold {len(kv)} runs ({len(bef)} with BE back first): {over} of {begun} "
              f"requests in the reconnection over p, in {sum(1 for k in kv if k['over'] not in ('0', '?'))} runs; "
              f"worst GPU span per run / bound: median {statistics.median(worst) if worst else '?'}, "
              f"max {worst[-1] if worst else '?'}; "
              f"BE's first step after the restart median {statistics.median(steps) if steps else '?'} ms "
              f"(range {steps[0] if steps else '?'}-{steps[-1] if steps else '?'})")
    if kill:
        ms = sorted(int(x) for l in kill for x in re.findall(r"be_next_step_ms=(\d+)", l))
        print(f"{d}: client-kill {len(kill)} runs: BE's next step after the HP kill median "
              f"{statistics.median(ms) if ms else '?'} ms (range {ms[0] if ms else '?'}-{ms[-1] if ms else '?'})")
PY
