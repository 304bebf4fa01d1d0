#!/usr/bin/env bash
# mosaic-sched tune and sm-mode partition on the simulated GPU (docs/tune.md).
#
#   tests/sched/test_tune.sh BUILD_DIR [--table-only]
#
# 1. Bad input, each named with its fix: a partition the GPU cannot make
#    (the nearest ones offered), sm-mode partition without hp-sms or under
#    another policy, a split on which HP alone misses p; tune with an HP or
#    BE command that fails, an HP command that never issues a request, a
#    tune-splits size the GPU cannot make (config untouched in each);
#    green contexts unavailable (the partition trial says why, the full GPU
#    is chosen); the config rewritten whole, in place, with the old keys
#    named and an earlier tune block replaced.
# 2. Two HP/BE pairs where the simulated truth favours different modes
#    (why these two: docs/tune.md), tuned at p = 1.1, 1.25 and 1.6:
#      conv:    HP one 3x3 convolution (7 ms a request at scale 20, 12 ms
#               apart) beside a convolution training step (arbiter_eval's
#               eval BE): full-GPU sharing must win at every p;
#      rmsnorm: HP five RMSNorms (memory-bound, 1.00-1.05x on 48-120 SMs)
#               beside a convolution: a partition must win at 1.25 and 1.6.
#               At 1.1 (1.8 ms of slack on an 18 ms request, host-clock
#               spans) the partition trials' share over p sits at the
#               1% line on this machine, from host CPU contention that
#               grows with the BE work a partition lets run (0-0.7% in
#               quiet runs, 1.4-2.9% in a loaded Release run), so there
#               the mode is not asserted, only the rule below.
#    Each pick must be the candidate with the most BE kernels/s among those
#    with at most 1% of HP requests over p, and written to the config. At
#    1.1, tune's refusal when no candidate is within p (seen for the conv
#    pair in loaded Release runs: full sharing's trial at 1.5-4% over, and
#    no split survives the prediction) passes if the config is untouched.
# TEST_TUNE_PRELOAD: the clients' LD_PRELOAD (the ASan build puts the ASan
# runtime ahead of the shim). TEST_TUNE_TRIAL_MS scales the trials.
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build/bin
preload=${TEST_TUNE_PRELOAD:-$build/lib/libmosaic.so}
for f in "$bin/mosaic-sched" "$bin/hp_service" "$bin/be_trainer" "$bin/simgpu"; do
  [ -x "$f" ] || { echo "test_tune: $f is missing: build first" >&2; exit 2; }
done
export MOSAIC_SIMGPU_SCALE=20
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOSAIC_SIMGPU=tune-test-$$
work=$(mktemp -d)
cleanup() {
  "$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null
profiles=$root/profiler/data/h200
models=$root/predictor/models/h200/lockbox
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

conv_hp=('_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808')
conv_be=(
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976'
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
)
rms='_Z9k_rmsnormPK6float4S1_PS_i|grid=16384,1,1|block=128,1,1|dsmem=0'
rmsnorm_hp=("$rms" "$rms" "$rms" "$rms" "$rms")
rmsnorm_be=('_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808')
conv_gap=12
rmsnorm_gap=4
# About 150 requests a trial (a conv request takes 7 ms and 12 ms of gap,
# an rmsnorm one 18 ms and 4), so that one request over p, which host
# stalls on a loaded 2-core machine cause under any mode (seen: 1 of 84
# with no BE at all), stays within 1%.
conv_trial=${TEST_TUNE_TRIAL_MS:-3000}
rmsnorm_trial=$(( ${TEST_TUNE_TRIAL_MS:-3000} * 11 / 10 ))
# The split sizes tried, two a pair to keep the test short: for conv the
# two largest predicted under 1.6 (88: 1.35x, 120: 1.10x); for rmsnorm a
# small and a middle one (56: 1.005x, 88: 1.000x).
conv_splits="88 120"
rmsnorm_splits="56 88"

commands() { # pair: sets hp, be, hpk
  local -n hpkeys=${1}_hp bekeys=${1}_be
  local gapv=${1}_gap k
  hpk=$work/$1.keys
  printf '%s\n' "${hpkeys[@]}" > "$hpk"
  hp="LD_PRELOAD=$preload $bin/hp_service --requests 100000 --warmup 3 --gap-ms ${!gapv}"
  for k in "${hpkeys[@]}"; do hp+=" --kernel '$k'"; done
  be="LD_PRELOAD=$preload $bin/be_trainer --seconds 600"
  for k in "${bekeys[@]}"; do be+=" --kernel '$k'"; done
}

tune() { # conf p trial_ms splits [args for tune...]
  local conf=$1 p=$2 ms=$3 sp=$4
  shift 4
  "$bin/mosaic-sched" --config "$conf" --profile-dir "$profiles" --model-dir "$models" \
    --mps off --log-level warn --hp-kernels "$hpk" --slo "$p" --tune-splits "$sp" \
    --tune-trial-ms "$ms" tune "$@"
}

daemon_refuses() { # expected-text args...
  local want=$1 out rc=0
  shift
  out=$("$bin/mosaic-sched" --config /dev/null --socket "$work/refuse.sock" --metrics-port 0 \
        --mps off --profile-dir "$profiles" --model-dir "$models" "$@" daemon 2>&1) || rc=$?
  if [ "$rc" = 0 ] || ! grep -qF -- "$want" <<< "$out"; then
    fail "daemon $* should refuse with '$want' (rc $rc): $out"
  else
    echo "ok: daemon $*: $(grep -F -- "$want" <<< "$out" | head -1)"
  fi
}

tune_refuses() { # expected-text conf args... (the config must stay as it was)
  local want=$1 conf=$2 out rc=0 before
  shift 2
  before=$(sha256sum < "$conf")
  out=$(tune "$conf" 1.25 1000 "" "$@" 2>&1) || rc=$?
  if [ "$rc" = 0 ] || ! grep -qF -- "$want" <<< "$out"; then
    fail "tune $* should fail with '$want' (rc $rc): $out"
  elif [ "$(sha256sum < "$conf")" != "$before" ]; then
    fail "tune $* changed the config although it failed"
  else
    echo "ok: tune refused: $(grep -F -- "$want" <<< "$out" | head -1 | cut -c1-240)"
  fi
}

# ---- 1. bad input -----------------------------------------------------------
commands conv
daemon_refuses "the nearest it can: 48 or 56" --policy mosaic --sm-mode partition --hp-sms 50 \
  --hp-kernels "$hpk"
daemon_refuses "set hp-sms" --policy mosaic --sm-mode partition --hp-kernels "$hpk"
daemon_refuses "sm-mode partition is a mode of policy mosaic" --policy none --sm-mode partition \
  --hp-sms 56 --hp-kernels "$hpk"
daemon_refuses "set hp-kernels" --policy mosaic --sm-mode partition --hp-sms 56
# The convolution on 16 SMs: several times slower alone, far over 1.25.
daemon_refuses "use hp-sms" --policy mosaic --slo 1.25 --sm-mode partition --hp-sms 16 \
  --hp-kernels "$hpk"

conf=$work/bad.conf
printf '# a user config\nlog-level warn\n' > "$conf"
tune_refuses "the HP command failed (exit status 3)" "$conf" --hp-command 'echo broken >&2; exit 3' \
  --be-command "$be"
tune_refuses "the BE command failed (exit status 5)" "$conf" --hp-command "$hp" \
  --be-command 'echo no trainer >&2; exit 5'
tune_refuses "the HP command issued 0 requests" "$conf" --hp-command 'sleep 30' --be-command "$be"
tune_refuses "cannot give HP a partition of 50 SMs" "$conf" --tune-splits 50 --hp-command "$hp" \
  --be-command "$be"
tune_refuses "no HP command" "$conf" --be-command "$be"

# Green contexts unavailable (the fake driver plays CUDA 12.3): the
# partition's trial says why and the full GPU is chosen.
commands rmsnorm
conf=$work/old-driver.conf
printf '# a user config\nlog-level warn\nhp-sms 64\nsm-mode partition\n' > "$conf"
# (p = 1.6 and 2.5 s: the full trial must pass the criterion, which a
# short trial's few requests make a matter of one host stall.)
if ! FAKECUDA_DRIVER_VERSION=12030 tune "$conf" 1.6 2500 56 --hp-command "$hp" \
     --be-command "$be" --json > "$work/old.json" 2> "$work/old.err"; then
  fail "tune on a driver without green contexts failed: $(cat "$work/old.err")"
else
  python3 - "$work/old.json" "$conf" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
part = [c for c in r["candidates"] if c["sm_mode"] == "partition"][0]
chosen = [c for c in r["candidates"] if c["chosen"]]
bad = []
if "could not make the partition" not in part.get("failed", "") or "CUDA 12.3" not in part["failed"]:
    bad.append("the partition trial does not say the shim could not make it: %r" % part)
if len(chosen) != 1 or chosen[0]["sm_mode"] != "full":
    bad.append("the full GPU was not chosen: %r" % chosen)
lines = [l for l in text.splitlines() if l and not l.startswith("#")]
if "sm-mode full" not in lines or "hp-sms 0" not in lines or "log-level warn" not in lines:
    bad.append("the config does not hold sm-mode full, hp-sms 0 and the user's line: %r" % lines)
if "hp-sms 64" in lines or "sm-mode partition" in lines:
    bad.append("the old hp-sms/sm-mode lines were kept: %r" % lines)
if "Replaced: `hp-sms 64`, `sm-mode partition`" not in text:
    bad.append("the block does not name the lines it replaced")
for b in bad:
    print("FAIL: " + b)
if not bad:
    print("ok: green contexts unavailable: " + part["failed"][:160] + "; full chosen")
sys.exit(1 if bad else 0)
PY
fi
if ls -A "$work" | grep -q '\.tune\.'; then
  fail "a temporary config file was left behind: $(ls -A "$work")"
fi

# ---- 2. the two pairs -------------------------------------------------------
for pair in conv rmsnorm; do
  commands "$pair"
  trialv=${pair}_trial
  splitsv=${pair}_splits
  conf=$work/$pair.conf
  printf '# %s pair\nlog-level warn\n' "$pair" > "$conf"
  for p in 1.1 1.25 1.6; do
    # One retry: on this shared 2-core machine a host stall or two puts a
    # trial's request over p under any mode (full sharing's trials at 1.1
    # and 1.6 had 0.7-1.5% over in runs here), and 1% of 150 is one
    # request. A systematic wrong pick fails both attempts.
    for attempt in 1 2; do
      before=$(sha256sum < "$conf")
      if ! tune "$conf" "$p" "${!trialv}" "${!splitsv}" --hp-command "$hp" --be-command "$be" \
           --json > "$work/$pair-$p.json" 2> "$work/$pair-$p.err"; then
        msg="$pair at p=$p: tune failed: $(tail -3 "$work/$pair-$p.err")"
        # At 1.1 no candidate within p is an outcome tune must handle, not
        # a failure of it: full sharing under policy mosaic misses 1.1 on
        # these short requests in loaded runs (docs/tune.md). It must say
        # so and leave the config as it was.
        if [ "$p" = 1.1 ] && grep -q "no candidate kept at most 1%" "$work/$pair-$p.err" &&
           [ "$(sha256sum < "$conf")" = "$before" ]; then
          echo "$pair at p=$p: no candidate within p (config untouched): $(grep -h 'mosaic-sched tune: [fp][ua]' "$work/$pair-$p.err" | tr '\n' ';')"
          msg=""
          break
        fi
      elif python3 - "$work/$pair-$p.json" "$conf" "$pair" "$p" > "$work/check.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
text, pair, p = open(sys.argv[2]).read(), sys.argv[3], float(sys.argv[4])
want = {"conv": "full", "rmsnorm": "partition" if p > 1.1 else None}[pair]
cs = r["candidates"]
runs = " and ".join(f"{x:.2f}" for x in r["hp_isolated_p99_ms_runs"])
print(f"{pair} at p={p}: HP alone p99 {runs} ms (two runs; the smaller, of {r['hp_isolated_requests']} requests, is the base)")
print(f"  {'candidate':14} {'pred. HP':>8} {'requests':>8} {'HP p99 ms':>9} {'% over p':>8} {'BE kernels/s':>12}")
for c in cs:
    if c["discarded"]:
        print(f"  {c['candidate']:14} {c['predicted_hp_slowdown']:8.3f}  discarded by prediction")
    elif not c["ran"]:
        print(f"  {c['candidate']:14} {c['predicted_hp_slowdown']:8.3f}  no result: {c.get('failed', '')}")
    else:
        print(f"  {c['candidate']:14} {c['predicted_hp_slowdown']:8.3f} {c['hp_requests']:8d} {c['hp_p99_ms']:9.2f} "
              f"{c['over_p_pct']:8.1f} {c['be_kernels_per_s']:12.1f}{'  <- chosen' if c['chosen'] else ''}")
bad = []
chosen = [c for c in cs if c["chosen"]]
ok = [c for c in cs if c["ran"] and c["over_p_pct"] <= 1.0]
if len(chosen) != 1:
    bad.append(f"{len(chosen)} candidates chosen")
else:
    ch = chosen[0]
    if want and ch["sm_mode"] != want:
        bad.append(f"chose {ch['candidate']}, expected {want} (docs/tune.md says why)")
    if ch["over_p_pct"] > 1.0:
        bad.append(f"chose {ch['candidate']} with {ch['over_p_pct']:.1f}% over p")
    if ok and ch["be_kernels_per_s"] < max(c["be_kernels_per_s"] for c in ok):
        bad.append(f"chose {ch['candidate']}, not the most BE kernels/s within p")
    if ch["sm_mode"] == "full" and not ch["be_kernels_per_s"] > 0 and p > 1.1:
        bad.append("full sharing chosen with no BE progress")
    keys = [l for l in text.splitlines() if l and not l.startswith("#")]
    if f"sm-mode {ch['sm_mode']}" not in keys or f"hp-sms {ch['hp_sms']}" not in keys or \
       f"slo {sys.argv[4]}" not in keys or "policy mosaic" not in keys:
        bad.append(f"the config does not hold the choice: {keys}")
    if text.count("# >>> mosaic-sched tune") != 1 or "log-level warn" not in keys:
        bad.append("the config has not exactly one tune block beside the user's lines")
for c in cs:
    if c["sm_mode"] == "partition" and c["discarded"] != (c["predicted_hp_slowdown"] >= p):
        bad.append(f"{c['candidate']}: discarded {c['discarded']} with predicted {c['predicted_hp_slowdown']:.3f} at p {p}")
for b in bad:
    print(f"FAIL: {pair} at p={p}: {b}")
sys.exit(1 if bad else 0)
PY
      then
        cat "$work/check.out"
        msg=""
        break
      else
        cat "$work/check.out"
        msg="$pair at p=$p: $(grep FAIL "$work/check.out" | tr '\n' ' ')"
      fi
      [ "$attempt" = 1 ] && echo "retrying $pair at p=$p once: $msg"
    done
    [ -n "$msg" ] && fail "$msg (after one retry)"
  done
done

if [ "$fails" -ne 0 ]; then
  echo "test_tune: $fails failure(s)"
  exit 1
fi
echo "PASS: test_tune"
