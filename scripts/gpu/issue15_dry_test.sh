#!/usr/bin/env bash
# The issue-15 harness end to end on the simulated GPU (ctest issue15_dry):
# scripts/gpu/issue15_services.sh with DRY=sim, every phase (capture has no
# simulated form and is left out by the script), one pair, p = 1.25, then
# checks of what it left against answers known without the harness:
#   - bad PHASES and PAIRS words are refused before anything runs;
#   - the HP kernels taken from the recorded trace are the three
#     convolutions hp_service was given, in launch order;
#   - policy static put HP on 120 SMs and BE on 12 (docs/partitions.md: the
#     eval HP service's split, computed by hand in test_sched_static);
#   - tune's pick is the candidate with the most BE kernels/s among those
#     with at most 1% of requests over p, and the tuned run's daemon ran
#     that sm-mode; or tune refused with no candidate within p (a loaded
#     machine's host stalls) and no tuned row exists;
#   - every replay counted exactly the 60 requests hp_service measured (its
#     start-up's requests skipped by the count from the trace), and ranks
#     policy none's HP p99 above MosaicSched's, as the real runs do;
#   - the costs phase measured the HP launch and both grant round trips;
#   - the summary names nothing missing, and a phase time for each phase;
#   - a time budget too short for the co-runs skips them, names them, and
#     still leaves the summary and the archive.
#
#   scripts/gpu/issue15_dry_test.sh BUILD_DIR [--gpu-path]
# ISSUE15_PRELOAD (the ASan build) passes through to the harness.
#
# --gpu-path (ctest issue15_gpu_path) runs the harness's GPU path instead,
# without DRY: issue15_fake_python/ first in PATH makes `python3 svc_hp.py`
# and `python3 svc_be.py` run issue15_fake_svc.py, which plays them with
# the same C demos on the simulated GPU (their options, files, JSON lines
# and Unix-time stamps), every other python3 the real one; no MPS (none
# here), no capture and no costs (the GPU's own). Checked: every co-run
# scored with BE counted within the HP requests from the Unix-time logs;
# tune's trials with a BE job waited for its ready file (svc_hp.py
# --after) and the isolated ones did not; the recording, the keys, static,
# the tuned row, replay beside the real runs, the fault run's BE recovery.
set -uo pipefail
build=$(cd "${1:?usage: issue15_dry_test.sh BUILD_DIR [--gpu-path]}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d /tmp/issue15-dry-XXXXXX)
sim=""
cleanup() {
  [[ -n $sim ]] && "$build/bin/simgpu" rm "$sim" >/dev/null 2>&1
  rm -rf "$out"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cd "$root"

if [[ ${2:-} == --gpu-path ]]; then
  sim=issue15-gpu-path-$$
  export MOSAIC_SIMGPU=$sim MOSAIC_SIMGPU_SCALE=20
  "$build/bin/simgpu" create "$sim" >/dev/null || exit 2
  mkdir -p "$out/prof"
  cp profiler/data/h200/zoo.profile.json "$out/prof/"
  env PATH="$root/scripts/gpu/issue15_fake_python:$PATH" ISSUE15_REAL_PYTHON="$(command -v python3)" \
    ISSUE15_FAKE_BIN="$build/bin" LD_LIBRARY_PATH="$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    BUILD=$build OUT=$out/x KEEP_RUN=1 PROFILES=$out/prof PS=1.25 REQUESTS=60 BUDGET_S=0 \
    TUNE_SPLITS=120 TUNE_KEEP=1 BE_ISO_S=4 REC_BE_S=3 PAIRS=resnet50:resnet18_train \
    PHASES="iso policies static tune replay fault" scripts/gpu/issue15_services.sh >"$out/console.txt" 2>&1
  rc=$?
  cat "$out/console.txt"
  [[ $rc == 0 ]] || fail "issue15_services.sh (GPU path) exited $rc"
  python3 - "$out/x" <<'PY' || fails=$((fails + 1))
import glob, json, os, sys
d = sys.argv[1]
run = os.path.join(d, "run")
T = "resnet50+resnet18_train"
bad = []
res = json.load(open(os.path.join(d, "results.json")))
pair = res["pairs"][0]
rows = {r["policy"]: r for r in pair["runs"]}
for pol in ("none", "mps-priority", "orion", "static", "mosaic"):
    if pol not in rows:
        bad.append(f"no {pol} row")
    elif rows[pol]["be_rate_over"] != "steps within the HP service's measured requests":
        bad.append(f"{pol}: BE counted over {rows[pol]['be_rate_over']}")
if pair.get("hp_kernels", {}).get("keys_written") != 3:
    bad.append(f"keys: {pair.get('hp_kernels')}")
if "tuned" not in rows and not os.path.exists(os.path.join(run, f"{T}.tune-1.25.err")):
    bad.append("neither a tuned row nor tune's reason")
logs = sorted(glob.glob(os.path.join(run, f"{T}.tune-1.25.keep", "t*.hp.log")))
waits = {}
for l in logs:
    t = os.path.basename(l).split(".")[0]
    j = [json.loads(x) for x in open(l) if x.startswith("{")]
    waits[t] = (j[-1].get("waited_for_after_s") if j else "no JSON",
                os.path.exists(os.path.join(os.path.dirname(l), f"{t}.be.log")))
if not waits:
    bad.append("no tune trial logs kept")
for t, (w, with_be) in waits.items():
    if with_be and w is None:
        bad.append(f"tune trial {t} (with BE) did not wait for the BE job")
    if not with_be and w is not None:
        bad.append(f"tune trial {t} (isolated) waited for a BE job: {w}")
if not all("real" in r for r in pair.get("replay") or [{}]):
    bad.append("replay rows without their real runs")
if "be_first_step_after_restart_s" not in pair.get("fault", {}):
    bad.append(f"fault: {pair.get('fault')}")
for b in bad:
    print("FAIL: gpu path: " + b)
if not bad:
    print(f"ok: gpu path: tune trial waits {waits}")
sys.exit(1 if bad else 0)
PY
  [[ $fails == 0 ]] && echo "issue15_gpu_path: all checks passed"
  exit $((fails > 0))
fi

# Bad input: refused at once, with the word and the fix.
msg=$(BUILD=$build DRY=sim OUT=$out/bad PHASES="iso polices" scripts/gpu/issue15_services.sh 2>&1); rc=$?
[[ $rc == 2 && $msg == *"PHASES word 'polices' is not a phase: use capture iso"* ]] ||
  fail "a bad PHASES word: rc $rc: $msg"
msg=$(BUILD=$build DRY=sim OUT=$out/bad PAIRS="resnet50" scripts/gpu/issue15_services.sh 2>&1); rc=$?
[[ $rc == 2 && $msg == *"PAIRS entry 'resnet50' is not HP:BE"* ]] || fail "a bad PAIRS entry: rc $rc: $msg"
# (The model names are checked on the GPU path only: DRY=sim runs the C demos.)
msg=$(BUILD=$build OUT=$out/bad PAIRS="resnet50:resnet50_batch" scripts/gpu/issue15_services.sh 2>&1); rc=$?
[[ $rc == 2 && $msg == *"model 'resnet50_batch' (PAIRS) is not in"*"resnet50_infer_be"* ]] ||
  fail "an unknown model: rc $rc: $msg"
[[ ! -d $out/bad/run ]] || fail "a refused call left a run directory"

BUILD=$build DRY=sim OUT=$out/x KEEP_RUN=1 PS=1.25 PAIRS=resnet50:resnet18_train \
  PHASES="iso overhead policies static tune replay fault costs" \
  scripts/gpu/issue15_services.sh >"$out/console.txt" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "issue15_services.sh exited $rc"
cat "$out/console.txt"

python3 - "$out/x" <<'PY' || fails=$((fails + 1))
import json, os, sys
d = sys.argv[1]
run = os.path.join(d, "run")
T = "resnet50+resnet18_train"
bad = []
res = json.load(open(os.path.join(d, "results.json")))
pair = res["pairs"][0]
rows = {(r["policy"], r["p"]): r for r in pair["runs"]}
# The HP kernels from the trace: the three convolutions, in order.
want = ["_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
        "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
        "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192"]
keys = [l.strip() for l in open(os.path.join(run, "resnet50.hp.keys")) if not l.startswith("#")]
if keys != want:
    bad.append(f"hp.keys {keys}")
# The static split.
st = rows.get(("static", 1.25))
if not st or st.get("split") != "HP on 120 SMs, BE on 12":
    bad.append(f"static row {st}")
# tune's pick follows its rule, and the tuned run used it.
tj = os.path.join(run, f"{T}.tune-1.25.json")
if os.path.exists(tj):
    t = json.load(open(tj))
    ok = [c for c in t["candidates"] if c.get("ran") and c["over_p_pct"] <= 1.0]
    chosen = [c for c in t["candidates"] if c.get("chosen")]
    if len(chosen) != 1 or not ok or chosen[0]["be_kernels_per_s"] != max(c["be_kernels_per_s"] for c in ok):
        bad.append(f"tune's pick breaks its rule: {t['candidates']}")
    elif ("tuned", 1.25) not in rows:
        bad.append("no tuned row after a tune that chose")
    else:
        mode = chosen[0]["sm_mode"]
        conf = open(os.path.join(run, f"{T}.tune-1.25.conf")).read()
        if f"\nsm-mode {mode}\n" not in conf:
            bad.append(f"the tuned config does not say sm-mode {mode}")
        log = open(os.path.join(run, f"{T}.tuned-1.25.daemon.log")).read()
        if mode == "partition" and "sm-mode partition" not in log:
            bad.append("the tuned daemon did not run the partition tune chose")
        print(f"ok: tune chose {chosen[0]['candidate']}")
else:
    err = open(os.path.join(run, f"{T}.tune-1.25.err")).read()
    if "no candidate kept at most 1%" not in err or ("tuned", 1.25) in rows:
        bad.append(f"tune gave no report: {err[-300:]}")
    else:
        print("ok: tune refused (no candidate within p on this machine), no tuned row")
# Replay: 60 requests counted in each, none's p99 above mosaic's.
rp = {r["policy"]: r["replay"] for r in pair.get("replay") or []}
if sorted(rp) != ["mosaic", "mps-priority", "none", "orion"]:
    bad.append(f"replays: {sorted(rp)}")
elif any(r["hp_requests"] != 60 for r in rp.values()):
    bad.append(f"replay request counts {[r['hp_requests'] for r in rp.values()]}, not 60")
elif not rp["none"]["hp_p99_ms"] > rp["mosaic"]["hp_p99_ms"]:
    bad.append(f"replay ranks none ({rp['none']['hp_p99_ms']}) not above mosaic ({rp['mosaic']['hp_p99_ms']})")
if not all(("real" in r) for r in pair["replay"]):
    bad.append("a replay row without its real run")
# Costs.
c = res.get("costs") or {}
for k in ("hp_launch_connected_added_ns", "be_grant_host_hold_us", "be_grant_device_gate_us", "decision_ns"):
    if k not in c:
        bad.append(f"costs lack {k}")
if "fault" not in pair:
    bad.append("no fault run")
if res["missing"]:
    bad.append(f"missing: {res['missing']}")
ph = {p["phase"] for p in res["phases"]}
if ph != {"iso", "overhead", "policies", "static", "tune", "replay", "fault", "costs"}:
    bad.append(f"phase times for {sorted(ph)}")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
# The time budget: with 6 s, the isolated runs fit and the co-runs do
# not; they are skipped, named, and the summary and archive still made.
BUILD=$build DRY=sim OUT=$out/budget BUDGET_S_DRY=6 PS=1.25 PAIRS=resnet50:resnet18_train \
  PHASES="iso policies" scripts/gpu/issue15_services.sh >"$out/budget.txt" 2>&1
rc=$?
python3 - "$out/budget" "$rc" <<'PY' || { fails=$((fails + 1)); cat "$out/budget.txt"; }
import json, os, sys
d, rc = sys.argv[1], int(sys.argv[2])
res = json.load(open(os.path.join(d, "results.json")))
sk = res.get("skipped_for_budget", [])
bad = []
if rc != 0:
    bad.append(f"exit status {rc}")
if "resnet50+resnet18_train.none" not in sk or "resnet50+resnet18_train.mosaic-1.25" not in sk:
    bad.append(f"skipped: {sk}")
if res["pairs"][0]["runs"]:
    bad.append(f"co-runs ran over the budget: {[r['policy'] for r in res['pairs'][0]['runs']]}")
if not os.path.exists(os.path.join(d, "run.tgz")) or "skipped (the call's time budget" not in open(os.path.join(d, "summary.txt")).read():
    bad.append("no archive, or the summary does not say what was skipped")
for b in bad:
    print("FAIL: budget: " + b)
if not bad:
    print(f"ok: budget: {len(sk)} runs skipped and named")
sys.exit(1 if bad else 0)
PY

[[ $fails == 0 ]] && echo "issue15_dry: all checks passed"
exit $((fails > 0))
