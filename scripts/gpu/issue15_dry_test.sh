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
#     still leaves the summary and the archive;
#   - the HP load: the isolated runs busy 0.5 +- 0.1 (LOAD 0.5), every
#     co-run's busy fraction reported; the fault run's kill, cued by the HP
#     service's own progress, has HP requests in the kill-restart gap;
#   - REUSE of the first call's run: its period and keys taken (no iso0
#     run, no recording), and at another LOAD its period left.
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
    BUILD=$build OUT=$out/x KEEP_RUN=1 PROFILES=$out/prof PS=1.25 REQUESTS=60 PREROLL=20 BUDGET_S=0 \
    TUNE_SPLITS=120 TUNE_KEEP=1 BE_ISO_S=4 REC_BE_S=3 PAIRS=resnet50:resnet18_train \
    PHASES="iso policies static tune replay fault" scripts/gpu/issue15_services.sh >"$out/console.txt" 2>&1
  rc=$?
  cat "$out/console.txt"
  [[ $rc == 0 ]] || fail "issue15_services.sh (GPU path) exited $rc"
  python3 scripts/gpu/issue15_dry_check.py gpu-path "$out/x" || fails=$((fails + 1))
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

python3 scripts/gpu/issue15_dry_check.py dry "$out/x" || fails=$((fails + 1))
# The check must fail a tuned config that lost tune's beside-hp pick.
if ls "$out"/x/run/*.tune-1.25.conf >/dev/null 2>&1; then
  cp -r "$out/x" "$out/x-nobeside"
  sed -i '/^beside-hp /d' "$out"/x-nobeside/run/*.tune-1.25.conf
  if python3 scripts/gpu/issue15_dry_check.py dry "$out/x-nobeside" >"$out/nobeside.txt" 2>&1 ||
     ! grep -q "the tuned config does not say beside-hp" "$out/nobeside.txt"; then
    fail "the dry check did not refuse a tuned config without beside-hp: $(tail -3 "$out/nobeside.txt")"
  else
    echo "ok: the dry check refuses a tuned config without beside-hp"
  fi
fi
# REUSE: a second call taking the first one's period, keys and traces
# (run/ kept): no back-to-back iso0 run, no recording for static, the
# period the same; with another LOAD the period is not taken.
BUILD=$build DRY=sim OUT=$out/reuse REUSE=$out/x PS=1.25 PAIRS=resnet50:resnet18_train \
  PHASES="iso static" KEEP_RUN=1 scripts/gpu/issue15_services.sh >"$out/reuse.txt" 2>&1
rc=$?
r=$out/reuse/run
if [[ $rc != 0 || -e $r/resnet50.iso0.lat || -e $r/resnet50.rec_hp.lat || ! -s $r/resnet50+resnet18_train.static.lat ]] ||
   ! cmp -s "$r/resnet50.gap_ms" "$out/x/run/resnet50.gap_ms" || ! grep -qx resnet50.hp.keys "$r/reused.txt"; then
  fail "REUSE: rc $rc; $(ls "$r" | grep -E 'iso0|rec_hp|static.lat|gap_ms' | tr '\n' ' '); $(tail -5 "$out/reuse.txt")"
else
  echo "ok: REUSE took the period ($(cat "$r/resnet50.gap_ms") ms) and the keys: no iso0 run, no recording"
fi
BUILD=$build DRY=sim OUT=$out/reuse2 REUSE=$out/x LOAD=0.4 PS=1.25 PAIRS=resnet50:resnet18_train \
  PHASES="iso" KEEP_RUN=1 scripts/gpu/issue15_services.sh >"$out/reuse2.txt" 2>&1
if [[ ! -s $out/reuse2/run/resnet50.iso0.lat ]] || ! grep -q "periods (gap_ms) not taken: that call's LOAD was 0.5, this one's 0.4" "$out/reuse2/script.log"; then
  fail "REUSE at another LOAD took the period: $(grep REUSE "$out/reuse2/script.log")"
else
  echo "ok: REUSE at LOAD 0.4 left the 0.5 call's period and ran iso0"
fi
# The time budget: with 6 s, the isolated runs fit and the co-runs do
# not; they are skipped, named, and the summary and archive still made.
BUILD=$build DRY=sim OUT=$out/budget BUDGET_S_DRY=6 PS=1.25 PAIRS=resnet50:resnet18_train \
  PHASES="iso policies" scripts/gpu/issue15_services.sh >"$out/budget.txt" 2>&1
rc=$?
python3 scripts/gpu/issue15_dry_check.py budget "$out/budget" "$rc" || { fails=$((fails + 1)); cat "$out/budget.txt"; }

[[ $fails == 0 ]] && echo "issue15_dry: all checks passed"
exit $((fails > 0))
