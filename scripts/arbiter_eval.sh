#!/usr/bin/env bash
# The arbiter's side-by-side evaluation on the simulated GPU (no GPU needed;
# docs/arbiter-eval.md). For each setup (an HP/BE workload pair): the HP
# service and the BE trainer each alone (isolated), then for every p in
# {1.1, 1.25, 1.6} and every policy (none, mps-priority, orion, mosaic) the
# daemon, the HP service under LD_PRELOAD=libmosaic.so MOSAIC_ROLE=hp and
# the BE trainer under MOSAIC_ROLE=be together. Prints a table per setup
# and writes the results as JSON.
#
#   scripts/arbiter_eval.sh [--build DIR] [--json FILE] [--check]
#                           [--setups "eval heldout"]
#
# Setups (below): eval, the one the policy's constants were chosen on, and
# heldout, a second pair frozen before any result on it was seen.
# --check exits 1 unless MosaicSched kept BE throughput above zero at every
# p of every setup run, and <= 1% of HP requests over p at every p of eval
# (on heldout, where it is known to miss that, fewer over p than no
# control at each p), AND the no-control policy fails the 1% criterion on
# each setup (over 1% at some p), so the test cannot pass with a setup
# where nothing interferes. A request is over p when its GPU span (events
# around its kernels, in the simulated GPU's time) exceeds p x the isolated
# p99 of spans; the host latency's share is printed beside it, not gated,
# because on a loaded machine a host stall puts a request over p under any
# policy (2026-12-01: 9 of 150 in one run whose GPU-side p99 was within
# the bound). Environment: ARBITER_EVAL_REQUESTS (HP requests per run of
# eval, default 150), ARBITER_EVAL_HELDOUT_REQUESTS (of heldout, default
# 100), ARBITER_EVAL_PRELOAD (the clients' LD_PRELOAD, default the build's
# libmosaic.so), MOSAIC_SIMGPU_SCALE (default 20: the H200's microseconds
# become tens of milliseconds; at 10 the host jitter of a loaded 2-core
# machine was a tenth of a request, as large as p = 1.1's slack, and put
# 1-3% of the requests over p under every policy).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
json=""
check=0
setups="eval heldout"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --json) json=$2; shift 2 ;;
    --check) check=1; shift ;;
    --setups) setups=$2; shift 2 ;;
    *) echo "usage: scripts/arbiter_eval.sh [--build DIR] [--json FILE] [--check] [--setups \"eval heldout\"]" >&2; exit 2 ;;
  esac
done
bin=$build/bin
shim=$build/lib/libmosaic.so
for f in "$bin/mosaic-sched" "$bin/hp_service" "$bin/be_trainer" "$bin/simgpu" "$shim"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "arbiter_eval: $f is missing: build first (cmake --build $build -j2)" >&2; exit 2; }
done
requests=${ARBITER_EVAL_REQUESTS:-150}
heldout_requests=${ARBITER_EVAL_HELDOUT_REQUESTS:-100}
# For looking into one case: ARBITER_EVAL_POLICIES and ARBITER_EVAL_PS
# narrow the runs (--check needs the defaults), ARBITER_EVAL_KEEP=DIR keeps
# every run's files there (the daemons' logs among them). The static
# green-context baseline (policy static: the daemon sizes HP's partition
# from the HP kernels, written to hp.keys, and sends each client its side)
# runs only when ARBITER_EVAL_POLICIES names it, e.g.
# ARBITER_EVAL_POLICIES="none mps-priority orion mosaic static": it adds six
# runs, a third to the ctest's time (docs/arbiter-eval.md has one run's
# numbers).
policies=${ARBITER_EVAL_POLICIES:-none mps-priority orion mosaic}
ps=${ARBITER_EVAL_PS:-1.1 1.25 1.6}
for s in $setups; do
  case $s in
    eval|heldout) ;;
    *) echo "arbiter_eval: --setups: '$s' is not a setup: use eval, heldout or both (\"eval heldout\")" >&2; exit 2 ;;
  esac
done
# What the clients preload: the shim, or (a sanitizer build) the ASan
# runtime ahead of it, which an instrumented preloaded library needs.
preload=${ARBITER_EVAL_PRELOAD:-$shim}
export MOSAIC_SIMGPU_SCALE=${MOSAIC_SIMGPU_SCALE:-20}
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOSAIC_SIMGPU=arbiter-eval-$$
work=$(mktemp -d)
daemon_pid=""
be_pid=""
cleanup() {
  [ -n "$be_pid" ] && kill -TERM "$be_pid" 2>/dev/null || true
  [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  "$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true
  if [ -n "${ARBITER_EVAL_KEEP:-}" ]; then
    mkdir -p "$ARBITER_EVAL_KEEP" && cp -r "$work"/. "$ARBITER_EVAL_KEEP"/ || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The setups. Both use only lockbox families (predictor/models/h200/LOCKBOX:
# gemv_cublas, conv, copy), so the lockbox models predict pairs they never
# saw, as a deployment meets kernels it never saw.
#
# eval: the setup the policy's constants (the overlap factor's start, 2, and
# MOSAIC_SIMGPU_SCALE=20) were chosen on. HP: three 3x3 convolutions
# (1.12 ms on the H200), one request each, 16 ms apart (wall time: about 70%
# of the HP service's capacity at scale 20); BE: a training step of two
# larger convolutions (0.71 ms).
eval_hp=(
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808'
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192'
)
eval_be=(
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976'
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
)
# heldout: frozen (2026-12-01 22:40 UTC) before any result on it was seen,
# and never used to choose anything: a decode-like HP request of GEMVs and
# copies (gemv_cublas_f32_16384x16384 with its split-K reduce, copy_256M_half,
# gemv_cublas_bf16_32768x8192, copy_512M_w1, gemv_cublas_bf16_16384x16384;
# 0.93 ms on the H200), 16 ms apart, beside a BE step of two other
# convolutions than eval's (conv_n8_c64_h112_t32, conv_n16_c128_h28_t8;
# 0.92 ms). Every HP x BE pair has shared-mode co-runs in
# profiler/data/h200/corun.jsonl, so the simulator slows them as measured.
heldout_hp=(
  '_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKfES3_S1_IfEfEEvT11_T4_S7_|grid=2048,1,8|block=128,1,1|dsmem=0'
  '_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb0EfffLb1ELb0ELb0ELb0EEEvNS_18cublasSplitKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS2_SF_PKT9_S6_PSG_PvlPS2_PiSL_SL_SF_SF_SF_SF_SF_|grid=1,512,1|block=32,16,1|dsmem=0'
  '_Z6k_copyPK6float4PS_m|grid=66,1,1|block=512,1,1|dsmem=0'
  'nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT|grid=2,64,1|block=384,1,1|dsmem=219364'
  '_Z6k_copyPK6float4PS_m|grid=132,1,1|block=1024,1,1|dsmem=0'
  'nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT|grid=2,64,1|block=384,1,1|dsmem=225652'
)
heldout_be=(
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192'
  '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808'
)
models=$root/predictor/models/h200/lockbox
profiles=$root/profiler/data/h200

"$bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null

run_one() { # dir policy p tag
  local dir=$1 policy=$2 p=$3 tag=$4 sock=$work/$4.sock i
  local extra=()
  [ "$policy" = static ] && extra=(--hp-kernels "$dir/hp.keys")
  "$bin/mosaic-sched" --config /dev/null --socket "$sock" --policy "$policy" --slo "$p" \
    --profile-dir "$profiles" --model-dir "$models" --metrics-port 0 --mps off "${extra[@]}" \
    --log-level "${ARBITER_EVAL_LOG_LEVEL:-warn}" daemon 2> "$dir/$tag.daemon.log" &
  daemon_pid=$!
  for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { echo "arbiter_eval: the daemon did not start:" >&2; cat "$dir/$tag.daemon.log" >&2; exit 1; }
  local prio=0
  [ "$policy" = mps-priority ] && prio=1
  CUDA_MPS_CLIENT_PRIORITY=$prio MOSAIC_SCHED_SOCKET=$sock MOSAIC_ROLE=be LD_PRELOAD=$preload \
    "$bin/be_trainer" --seconds 600 "${be_args[@]}" > "$dir/$tag.be.json" &
  be_pid=$!
  sleep 0.3
  MOSAIC_SCHED_SOCKET=$sock MOSAIC_ROLE=hp LD_PRELOAD=$preload \
    "$bin/hp_service" "${hp_args[@]}" --latencies "$dir/$tag.lat" --gpu-latencies "$dir/$tag.gpu" > "$dir/$tag.hp.json"
  kill -TERM "$be_pid"; wait "$be_pid" || true; be_pid=""
  kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""
}

run_setup() { # name requests
  local name=$1 n=$2 dir=$work/$1 k i p policy
  local -n hp_keys=${1}_hp be_keys=${1}_be
  mkdir -p "$dir"
  echo "$n" > "$dir/requests"
  # --prequeue: each request's kernels are all enqueued before the GPU
  # starts it, so that its GPU span holds no wait for a descheduled host
  # thread between two launches (tests/simgpu/hp_service.c).
  hp_args=(--requests "$n" --warmup 3 --gap-ms 16 --prequeue)
  for k in "${hp_keys[@]}"; do hp_args+=(--kernel "$k"); done
  printf '%s\n' "${hp_keys[@]}" > "$dir/hp.keys"
  be_args=()
  for k in "${be_keys[@]}"; do be_args+=(--kernel "$k"); done
  # Isolated: each program alone, without the shim or a daemon.
  "$bin/be_trainer" --seconds 2 "${be_args[@]}" > "$dir/be_iso.json"
  # HP alone three times, pooled: the isolated p99 is every bound's base,
  # and one host stall in a single run would move it by a quarter.
  for i in 1 2 3; do
    "$bin/hp_service" "${hp_args[@]}" --latencies "$dir/hp_iso.$i.lat" --gpu-latencies "$dir/hp_iso.$i.gpu" > "$dir/hp_iso.$i.json"
  done
  cat "$dir"/hp_iso.[123].lat > "$dir/hp_iso.lat"
  cat "$dir"/hp_iso.[123].gpu > "$dir/hp_iso.gpu"
  for p in $ps; do
    for policy in $policies; do
      run_one "$dir" "$policy" "$p" "$policy-$p"
    done
  done
}

for s in $setups; do
  case $s in
    eval) run_setup eval "$requests" ;;
    heldout) run_setup heldout "$heldout_requests" ;;
  esac
done

python3 - "$work" "$MOSAIC_SIMGPU_SCALE" "$json" "$check" $setups <<'PY'
import json, os, sys, time
slo_gated = os.environ.get("ARBITER_TIMING_GATES", "gate") != "report"
work, scale, out, check, setups = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5:]
def p99(v):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(0.99 * len(s) + 0.5)) - 1))]
def setup(name):
    d = os.path.join(work, name)
    def lat(f):
        with open(os.path.join(d, f)) as fh:
            return [float(x) for x in fh if x.strip()]
    def load(f):
        with open(os.path.join(d, f)) as fh:
            return json.loads(fh.read().strip().splitlines()[-1])
    with open(os.path.join(d, "requests")) as fh:
        requests = int(fh.read())
    # The gate counts a request over p by its GPU span in the simulated
    # GPU's time (hp_service --gpu-latencies), which interference changes;
    # the host latency, which adds this loaded machine's wake-up and
    # scheduling delays (a stall of tens of ms puts any policy's request
    # over p), is reported beside it.
    iso = lat("hp_iso.gpu")
    iso_p99 = p99(iso)
    iso_host = lat("hp_iso.lat")
    iso_host_p99 = p99(iso_host)
    be_iso = load("be_iso.json")["steps_per_s"]
    rows = []
    for p in ("1.1", "1.25", "1.6"):
        for policy in ("none", "mps-priority", "orion", "mosaic", "static"):
            tag = f"{policy}-{p}"
            if not os.path.exists(os.path.join(d, tag + ".lat")):
                continue
            l = lat(tag + ".gpu")
            h = lat(tag + ".lat")
            be = load(tag + ".be.json")
            over = sum(1 for x in l if x > float(p) * iso_p99)
            over_h = sum(1 for x in h if x > float(p) * iso_host_p99)
            rows.append({"p": float(p), "policy": policy, "requests": len(l),
                         "hp_p99_ms": p99(l), "hp_p99_slowdown": p99(l) / iso_p99,
                         "over_p_pct": 100.0 * over / len(l),
                         "host_p99_ms": p99(h), "host_p99_slowdown": p99(h) / iso_host_p99,
                         "host_over_p_pct": 100.0 * over_h / len(h),
                         "be_steps_per_s": be["steps_per_s"],
                         "be_vs_isolated": be["steps_per_s"] / be_iso if be_iso else 0.0})
    return {"setup": name, "hp_isolated_p99_ms": iso_p99, "hp_isolated_requests": len(iso),
            "hp_isolated_host_p99_ms": iso_host_p99,
            "hp_isolated_p50_ms": sorted(iso)[len(iso) // 2],
            "be_isolated_steps_per_s": be_iso, "requests_per_run": requests, "runs": rows}
res = {"schema": "mosaic-arbiter-eval/2",
       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "method": "simulated GPU (tests/fakecuda, MOSAIC_SIMGPU), kernel durations x "
                 f"MOSAIC_SIMGPU_SCALE={scale}; HP latency: the request's GPU span (events "
                 "before its first and after its last kernel, simulated GPU time), p99 by "
                 "nearest rank; over p: span > p x isolated p99 of spans; host_*: the same on "
                 "host CLOCK_MONOTONIC from first launch to cuStreamSynchronize return; BE: "
                 "steps per second of wall time over the HP run",
       "setups": [setup(n) for n in setups]}
bad = []
for st in res["setups"]:
    rows = st["runs"]
    print(f"setup {st['setup']}: HP isolated p99 {st['hp_isolated_p99_ms']:.2f} ms GPU span, "
          f"{st['hp_isolated_host_p99_ms']:.2f} ms host "
          f"({st['hp_isolated_requests']} requests in 3 runs), BE isolated "
          f"{st['be_isolated_steps_per_s']:.1f} steps/s (wall time at MOSAIC_SIMGPU_SCALE={scale}; "
          f"{st['requests_per_run']} HP requests per run)")
    print(f"{'p':>5} {'policy':13} {'HP p99 ms':>9} {'p99/iso':>8} {'% over p':>9} {'host %>p':>9} {'BE steps/s':>10} {'BE vs iso':>9}")
    for r in rows:
        print(f"{r['p']:5.2f} {r['policy']:13} {r['hp_p99_ms']:9.2f} {r['hp_p99_slowdown']:8.2f} "
              f"{r['over_p_pct']:9.1f} {r['host_over_p_pct']:9.1f} {r['be_steps_per_s']:10.1f} {r['be_vs_isolated']:9.2f}")
    none_at = {r["p"]: r for r in rows if r["policy"] == "none"}
    for r in rows:
        if r["policy"] != "mosaic":
            continue
        if not r["be_steps_per_s"] > 0:
            bad.append(f"{st['setup']}: mosaic at p={r['p']}: BE made no progress")
        if r["over_p_pct"] <= 1.0:
            continue
        if st["setup"] == "eval" and not slo_gated:
            # A sanitizer build (ARBITER_TIMING_GATES=report): the daemon and
            # shim run unoptimised under ASan/UBSan, several times slower on
            # the host, beside a simulated GPU in real time; the SLO then
            # measures the instrumentation. Reported; gated in the other builds.
            print(f"NOT GATED (sanitizer build): {st['setup']}: mosaic at p={r['p']}: "
                  f"{r['over_p_pct']:.1f}% of HP requests over p")
        elif st["setup"] == "eval":
            bad.append(f"{st['setup']}: mosaic at p={r['p']}: {r['over_p_pct']:.1f}% of HP requests over p (at most 1%)")
        else:
            # The held-out pair misses p under mosaic (docs/arbiter-eval.md,
            # "Held-out"): the lockbox models predict almost no slowdown
            # for GEMV and copy beside a convolution, and no overlap factor
            # scales that up to the measured one. Reported, not tuned away;
            # what is asserted is that mosaic stays better than no control.
            print(f"KNOWN MISS: {st['setup']}: mosaic at p={r['p']}: {r['over_p_pct']:.1f}% of HP "
                  f"requests over p (docs/arbiter-eval.md, held-out)")
            n = none_at.get(r["p"])
            if n is not None and r["over_p_pct"] >= n["over_p_pct"] and slo_gated:
                bad.append(f"{st['setup']}: mosaic at p={r['p']}: {r['over_p_pct']:.1f}% over p, "
                           f"no better than no control ({n['over_p_pct']:.1f}%)")
    # The criterion mosaic passes must fail without control, or the setup
    # shows nothing: none over 1% at some p.
    none = [r for r in rows if r["policy"] == "none"]
    if all(r["over_p_pct"] <= 1.0 for r in none):
        bad.append(f"{st['setup']}: none: at most 1% over p at every p: the setup does not interfere")
    else:
        worst = max(none, key=lambda r: r["over_p_pct"])
        st["none_worst"] = f"{worst['over_p_pct']:.1f}% over at p={worst['p']}"
if out:
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
if check:
    for b in bad:
        print("FAIL: " + b)
    if bad:
        sys.exit(1)
    print("PASS: mosaic BE > 0 at every p, <= 1% over p on eval and better than none on heldout; none over 1% (" +
          "; ".join(f"{st['setup']}: {st['none_worst']}" for st in res["setups"]) + ")")
PY
