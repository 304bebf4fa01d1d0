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
#               eval BE): full-GPU sharing (BE beside HP requests or held
#               while one is in flight) must win at every p;
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
# runtime ahead of the shim). TEST_TUNE_TRIAL_MS scales the trials,
# TEST_TUNE_TRUTH_REQUESTS the truth's runs; TEST_TUNE_KEEP=DIR keeps the
# reports, the truth and the configs.
set -euo pipefail
. "$(dirname "$0")/simgpu_env.sh"
sim_env tune-test "${1:?usage: test_tune.sh BUILD_DIR}" hp_service be_trainer
preload=${TEST_TUNE_PRELOAD:-$build/lib/libmosaic.so}
work=$(mktemp -d)
cleanup() {
  sim_cleanup
  rm -rf "$work"
}
trap cleanup EXIT
"$bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null
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
# About 100 requests a trial and a truth run (a conv request takes 7 ms and
# 12 ms of gap, an rmsnorm one 18 ms and 4), so that one request over p,
# which host stalls on a loaded 2-core machine cause under any mode (seen:
# 1 of 84 with no BE at all), stays within 1%, and the whole test within
# about two minutes.
conv_trial=${TEST_TUNE_TRIAL_MS:-2000}
rmsnorm_trial=$(( ${TEST_TUNE_TRIAL_MS:-2000} * 11 / 10 ))
truth_requests=${TEST_TUNE_TRUTH_REQUESTS:-100}
# The split sizes tried, to keep the test short: for conv the largest
# (120: 1.10x, so discarded at 1.1 and run at 1.25 and 1.6); for rmsnorm
# 56 (1.005x), where BE keeps the most SMs beside a memory-bound HP.
conv_splits="120"
rmsnorm_splits="56"

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
# Once more when the full trial alone missed p (a host stall: seen once at
# load 10, a 56 ms p99 on 18 ms requests); the partition's refusal is the
# same in both.
old_ok=0
for attempt in 1 2; do
  if FAKECUDA_DRIVER_VERSION=12030 tune "$conf" 1.6 2500 56 --hp-command "$hp" \
       --be-command "$be" --json > "$work/old.json" 2> "$work/old.err"; then
    old_ok=1
    break
  fi
  grep -q "no candidate kept at most 1%" "$work/old.err" || break
  [ "$attempt" = 1 ] && echo "retrying the old driver's tune once: $(grep 'tune: full' "$work/old.err")"
done
if [ "$old_ok" != 1 ]; then
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
# The truth, measured by this test and not by tune: every candidate that
# tune ran is run again here, as a user would run it (a daemon of policy
# mosaic at p in that mode, the BE trainer, 300 ms later the HP service,
# both under the shim), and scored by the programs' own counts: the HP
# service's request latencies (first launch to the sync's return, the
# span tune reads from its daemon's trace, here from the HP program) over
# p x the isolated p99 of the HP service alone (two runs without shim or
# daemon, the smaller p99), and the BE trainer's kernels per second.
truth_iso() { # pair
  local dir=$work/truth-$1 i
  mkdir -p "$dir"
  for i in 1 2; do
    "$bin/hp_service" "${hp_args[@]}" --latencies "$dir/iso.$i.lat" > /dev/null
  done
}
truth_run() { # pair p mode hp_sms beside_hp
  local dir=$work/truth-$1 p=$2 mode=$3 sms=$4 beside=$5 sock=$work/truth.sock tag dpid bpid i
  tag=$p-$mode-$sms-$beside
  "$bin/mosaic-sched" --config /dev/null --socket "$sock" --metrics-port 0 --mps off \
    --profile-dir "$profiles" --model-dir "$models" --log-level warn --hp-kernels "$hpk" \
    --policy mosaic --slo "$p" --sm-mode "$mode" --hp-sms "$sms" --beside-hp "$beside" daemon 2> "$dir/$tag.log" &
  dpid=$!
  for i in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
  MOSAIC_SCHED_SOCKET=$sock MOSAIC_ROLE=be LD_PRELOAD=$preload "$bin/be_trainer" \
    --seconds 600 "${be_args[@]}" > "$dir/$tag.be.json" &
  bpid=$!
  sleep 0.3
  MOSAIC_SCHED_SOCKET=$sock MOSAIC_ROLE=hp LD_PRELOAD=$preload "$bin/hp_service" \
    "${hp_args[@]}" --latencies "$dir/$tag.lat" > /dev/null
  kill -TERM "$bpid"; wait "$bpid" || true
  kill -TERM "$dpid"; wait "$dpid" || true
}
# The check of one (pair, p): tune's report against the truth's runs.
cat > "$work/check.py" <<'PY'
import glob, hashlib, json, os, sys
work, pair, p, trc, conf, before = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
def p99(v):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(0.99 * len(s) + 0.5)) - 1))]
def lat(f):
    return [float(x) for x in open(f) if x.strip()]
tdir = os.path.join(work, f"truth-{pair}")
iso = min(p99(lat(os.path.join(tdir, f"iso.{i}.lat"))) for i in (1, 2))
truth = {}
for f in glob.glob(os.path.join(tdir, f"{sys.argv[3]}-*.lat")):
    _, mode, sms, beside = os.path.basename(f)[:-4].rsplit("-", 3)
    l = lat(f)
    be = json.loads(open(f[:-4] + ".be.json").read().strip().splitlines()[-1])
    truth[("full" if beside == "admit" else "full, hold") if mode == "full" else f"partition {sms}"] = {
        "requests": len(l), "p99_ms": p99(l), "over_pct": 100.0 * sum(x > p * iso for x in l) / len(l),
        "be_kps": be["kernels_per_s"]}
r = json.load(open(os.path.join(work, f"{pair}-{sys.argv[3]}.json")))
cands = {c["candidate"]: c for c in r["candidates"]}
print(f"{pair} at p={p}: HP alone p99 {iso:.2f} ms (the truth's, smaller of two runs; tune's: "
      + " and ".join(f"{x:.2f}" for x in r["hp_isolated_p99_ms_runs"]) + ")"
      + (f"; tune refused: {r['refused'][:80]}" if trc else ""))
print(f"  {'candidate':14} {'pred. HP':>8} | tune: {'reqs':>4} {'p99 ms':>7} {'%>p':>5} {'BE k/s':>7} | truth: {'reqs':>4} {'p99 ms':>7} {'%>p':>5} {'BE k/s':>7}")
for name in sorted(set(cands) | set(truth), key=lambda n: (n != "full", n)):
    c, t = cands.get(name), truth.get(name)
    pred = f"{c['predicted_hp_slowdown']:8.3f}" if c else f"{'':8}"
    if c and c["discarded"]:
        left = f"{'discarded by prediction':30}"
    elif c and c["ran"]:
        left = f"{c['hp_requests']:4d} {c['hp_p99_ms']:7.2f} {c['over_p_pct']:5.1f} {c['be_kernels_per_s']:7.1f}" + (" *" if c["chosen"] else "  ")
    else:
        left = f"{'(' + (c.get('failed', '')[:26] if c else 'tune refused') + ')':30}"
    right = f"{t['requests']:4d} {t['p99_ms']:7.2f} {t['over_pct']:5.1f} {t['be_kps']:7.1f}" if t else "-"
    print(f"  {name:14} {pred} |       {left:<30} |        {right}")
# bad: what tune did wrong by its own numbers and files; timed: what the
# truth's runs say, which the sanitizer build reports rather than gates
# (TUNE_TIMING_GATES=report: the daemon and shim unoptimised under ASan
# beside a simulated GPU in real time measure the instrumentation).
bad, timed = [], []
meets = {n: t for n, t in truth.items() if t["over_pct"] <= 1.0}
best = max(meets, key=lambda n: meets[n]["be_kps"]) if meets else None
# A candidate is reproducible when tune's trial and the truth's run of it
# agree: BE kernels/s within 1.5x of each other (or both under 2), and on
# which side of 1% over p it falls. Under policy mosaic they need not: one
# host stall early in a run puts a ratio far over its prediction into the
# overlap window, and the policy admits little for the next 64 requests
# (seen here: partition 56 of rmsnorm at 1.25 gave 7.7 BE kernels/s in one
# run and 69.7 in the next). Where a candidate is not reproducible, which
# candidate is best is not decided by one run of each, and the check says
# so and asserts only the pick's SLO in the truth and tune's own rule.
# Only a candidate that could change the answer counts: the pick itself,
# or one within p in either run whose better run reaches 0.85x of the
# pick's BE in the truth.
chosen_name = next((c["candidate"] for c in r["candidates"] if c["chosen"]), None)
ref = truth[chosen_name]["be_kps"] if chosen_name in truth else (meets[best]["be_kps"] if best else 0)
unrepro, decided = [], True
for name, t in truth.items():
    c = cands.get(name)
    if not c or not c["ran"]:
        continue
    lo, hi = sorted((t["be_kps"], c["be_kernels_per_s"]))
    if (hi > 2.0 and hi > 1.5 * lo) or ((t["over_pct"] <= 1.0) != (c["over_p_pct"] <= 1.0)):
        within = t["over_pct"] <= 1.0 or c["over_p_pct"] <= 1.0
        matters = name == chosen_name or (within and hi >= 0.85 * ref)
        decided = decided and not matters
        unrepro.append(f"{name}: {c['be_kernels_per_s']:.1f} BE kernels/s and {c['over_p_pct']:.1f}% over "
                       f"in tune's trial, {t['be_kps']:.1f} and {t['over_pct']:.1f}% in the truth's run"
                       + ("" if matters else " (cannot change the answer)"))
if unrepro:
    print(("  not decided by one run of each: " if not decided else "  not reproducible: ")
          + "; ".join(unrepro))
if trc != 0 and "refused" not in r:
    bad.append("tune failed without a refusal in its report")
elif trc != 0:
    # Refused: right when no candidate meets p in the truth either, or when
    # those that do are at the line (a request over p in the truth too).
    if decided and best and any(t["over_pct"] == 0 for t in meets.values()):
        timed.append(f"tune found no candidate within p, but {best} kept every request within p "
                   f"in the truth ({meets[best]['be_kps']:.1f} BE kernels/s)")
    if hashlib.sha256(open(conf, "rb").read()).hexdigest() not in before:
        bad.append("tune refused but changed the config")
else:
    chosen = [c for c in r["candidates"] if c["chosen"]]
    if len(chosen) != 1:
        bad.append(f"{len(chosen)} candidates chosen")
    else:
        ch = chosen[0]
        t = truth.get(ch["candidate"])
        if t is None:
            bad.append(f"the truth did not run {ch['candidate']}")
        elif t["over_pct"] > 2.0:
            # 1% of 100 is one request; a second is the margin for a stall.
            timed.append(f"chose {ch['candidate']}, which put {t['over_pct']:.1f}% of requests over p in the truth")
        elif decided and best and t["be_kps"] < 0.85 * meets[best]["be_kps"] and meets[best]["over_pct"] == 0:
            timed.append(f"chose {ch['candidate']} ({t['be_kps']:.1f} BE kernels/s in the truth), but "
                       f"{best} gave {meets[best]['be_kps']:.1f} within p")
        # The one rule tune applies, checked on its own numbers too.
        ok = [c for c in r["candidates"] if c["ran"] and c["over_p_pct"] <= 1.0]
        if ch["over_p_pct"] > 1.0 or (ok and ch["be_kernels_per_s"] < max(c["be_kernels_per_s"] for c in ok)):
            bad.append(f"chose {ch['candidate']}, not its own trials' most BE kernels/s within p")
        keys = [l for l in open(conf).read().splitlines() if l and not l.startswith("#")]
        if f"sm-mode {ch['sm_mode']}" not in keys or f"hp-sms {ch['hp_sms']}" not in keys or \
           f"beside-hp {ch['beside_hp']}" not in keys or \
           f"slo {sys.argv[3]}" not in keys or "policy mosaic" not in keys:
            bad.append(f"the config does not hold the choice: {keys}")
        if open(conf).read().count("# >>> mosaic-sched tune") != 1 or "log-level warn" not in keys:
            bad.append("the config has not exactly one tune block beside the user's lines")
    for c in r["candidates"]:
        if c["sm_mode"] == "partition" and c["discarded"] != (c["predicted_hp_slowdown"] >= p):
            bad.append(f"{c['candidate']}: discarded {c['discarded']} with predicted {c['predicted_hp_slowdown']:.3f} at p {p}")
# The premise: the truth favours full sharing for conv and a split for
# rmsnorm (at 1.25 and 1.6; at 1.1 the splits sit at the 1% line).
want = {"conv": "full", "rmsnorm": "partition" if p > 1.1 else None}[pair]
if want and decided and best and not best.startswith(want):
    timed.append(f"the truth's best is {best}, not {want}: the pair does not show what it is for")
json.dump({"pair": pair, "p": p, "iso_p99_ms": iso, "truth": truth, "best": best,
           "decided": decided, "not_reproducible": unrepro, "tune": r}, open(os.path.join(work, f"{pair}-{sys.argv[3]}.truth.json"), "w"))
if os.environ.get("TUNE_TIMING_GATES", "gate") == "report":
    for b in timed:
        print(f"NOT GATED (sanitizer build): {pair} at p={p}: {b}")
else:
    bad += timed
for b in bad:
    print(f"FAIL: {pair} at p={p}: {b}")
sys.exit(1 if bad else 0)
PY
for pair in conv rmsnorm; do
  commands "$pair"
  trialv=${pair}_trial
  splitsv=${pair}_splits
  gapv=${pair}_gap
  local_hp=${pair}_hp[@]
  local_be=${pair}_be[@]
  hp_args=(--requests "$truth_requests" --warmup 3 --gap-ms "${!gapv}")
  for k in "${!local_hp}"; do hp_args+=(--kernel "$k"); done
  be_args=()
  for k in "${!local_be}"; do be_args+=(--kernel "$k"); done
  truth_iso "$pair"
  conf=$work/$pair.conf
  printf '# %s pair\nlog-level warn\n' "$pair" > "$conf"
  for p in 1.1 1.25 1.6; do
    # One retry, of tune and of the truth: on this shared 2-core machine a
    # host stall or two puts a run's request over p under any mode, and 1%
    # of 100 is one request. A systematically wrong pick fails both.
    for attempt in 1 2; do
      before=$(sha256sum < "$conf")
      rm -f "$work/$pair-$p.json"
      trc=0
      tune "$conf" "$p" "${!trialv}" "${!splitsv}" --hp-command "$hp" --be-command "$be" \
        --json > "$work/$pair-$p.json" 2> "$work/$pair-$p.err" || trc=$?
      if [ "$trc" != 0 ] && ! grep -q "no candidate kept at most 1%" "$work/$pair-$p.err"; then
        msg="$pair at p=$p: tune failed: $(tail -3 "$work/$pair-$p.err")"
      else
        # Every candidate tune did not discard by prediction (with --json
        # tune reports them when it refuses, too), run again for the truth.
        rm -f "$work/truth-$pair"/"$p"-*.lat
        while read -r mode sms beside; do
          truth_run "$pair" "$p" "$mode" "$sms" "$beside"
        done < <(python3 -c "
import json, sys
for c in json.load(open(sys.argv[1]))['candidates']:
    if not c['discarded']:
        print(c['sm_mode'], c['hp_sms'], c['beside_hp'])" "$work/$pair-$p.json")
        if python3 "$work/check.py" "$work" "$pair" "$p" "$trc" "$conf" "$before" > "$work/check.out"
        then
          cat "$work/check.out"
          msg=""
          break
        else
          cat "$work/check.out"
          msg="$pair at p=$p: $(grep FAIL "$work/check.out" | tr '\n' ' ')"
        fi
      fi
      [ "$attempt" = 1 ] && echo "retrying $pair at p=$p once: $msg"
    done
    [ -n "$msg" ] && fail "$msg (after one retry)"
  done
done
# The check must fail a wrong pick: rmsnorm at 1.6 (where the split won by
# 2x in every run) given to the check with tune's choice moved to the full
# GPU must be refused for its BE throughput in the truth.
if [ -s "$work/rmsnorm-1.6.json" ] && [ "${TUNE_TIMING_GATES:-gate}" != report ]; then
  python3 - "$work/rmsnorm-1.6.json" "$work/wrong-1.6.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["candidates"]:
    c["chosen"] = c["candidate"] == "full"
json.dump(r, open(sys.argv[2], "w"))
PY
  cp "$work/wrong-1.6.json" "$work/rmsnorm-1.6.json"
  if python3 "$work/check.py" "$work" rmsnorm 1.6 0 "$work/rmsnorm.conf" "$(sha256sum < "$work/rmsnorm.conf")" > "$work/wrong.out"; then
    fail "the check passed tune choosing the full GPU for rmsnorm at p=1.6: $(cat "$work/wrong.out")"
  # Refused on the truth's BE throughput, or, where one truth run does not
  # decide it (the split's run near p on a loaded machine), on tune's own
  # trials' BE throughput: either is a refusal for BE throughput.
  elif ! grep -q -e "BE kernels/s in the truth), but partition 56 gave" \
      -e "chose full, not its own trials' most BE kernels/s within p" "$work/wrong.out"; then
    fail "the check refused the wrong pick, but not for its BE throughput: $(grep FAIL "$work/wrong.out")"
  else
    echo "ok: the check refuses a wrong pick: $(grep -m1 'BE kernels/s in the truth' "$work/wrong.out")"
  fi
fi
{ [ -z "${TEST_TUNE_KEEP:-}" ] || { mkdir -p "$TEST_TUNE_KEEP" && cp "$work"/*.json "$work"/*.conf "$TEST_TUNE_KEEP"/; }; } 2>/dev/null || true

if [ "$fails" -ne 0 ]; then
  echo "test_tune: $fails failure(s)"
  exit 1
fi
echo "PASS: test_tune"
