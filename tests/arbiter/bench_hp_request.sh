#!/usr/bin/env bash
# An HP service's request with and without the shim and daemon, side by
# side in one run (issue 15: "the shim and daemon with no BE work: HP p99
# against no shim, target <= 1% added"):
#   tests/arbiter/bench_hp_request.sh [BUILD_DIR] [ROUNDS=5] [BASE_BUILD_DIR]
# Each round runs, one after another, bench_request (tests/bench/
# bench_request.c: one CUDA graph of KERNELS kernels then cuCtxSynchronize,
# the shape of the ResNet-50 service's requests, learned by the shim from
# the synchronisation) in these configurations:
#   noshim      no LD_PRELOAD
#   observe     libmosaic.so observing only
#   hp          MOSAIC_ROLE=hp, a client of this build's daemon (policy none)
#   hp_oldmode  the same with MOSAIC_HP_COMPLETION=graph and
#               MOSAIC_HP_END_DOORBELL=always: this build doing what the HP
#               client did before 2026-12-02 (a completion write behind every
#               graph launch, a doorbell at every request end)
#   hp_writes   only the first of those (MOSAIC_HP_COMPLETION=graph)
#   hp_bells    only the second (MOSAIC_HP_END_DOORBELL=always), so that
#               a GPU run tells the write's GPU time from the system call
#   hp_nowrite  MOSAIC_HP_COMPLETION=off: the HP client without the one
#               write a learned request's end makes as its synchronisation
#               begins (the default before 2026-12-03), so that hp against
#               it is that write's cost
#   hp_base     (BASE_BUILD_DIR given) that build's shim and daemon
# Reported per configuration over all rounds: request latency p50 and p99
# (pooled, and the median of the rounds' p99s, which one stalled round
# does not move),
# added over noshim (us and %); and from each HP run's stats file
# (MOSAIC_STATS) per request: completion writes (a stream operation on the
# HP stream each: GPU work) and doorbells (a system call each); with strace
# on PATH (and STRACE not 0), also every system call of the process per
# request (one shorter run per configuration, all threads, start-up and
# the monitor's heartbeat included: compare with noshim's).
# BENCH_HP_DRIVER=real: the system's libcuda on a GPU host (empty kernels;
# GPU_US 0 by default there). Otherwise the fake driver, where a request's
# GPU time is stood in for by GPU_US (default 2440, the ResNet-50 request's
# median on the H200) of spinning before the synchronisation.
# REQUESTS (default 600) a run, KERNELS (280), CONFIGS (the list above,
# noshim first; hp_base is added when BASE_BUILD_DIR is given).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-5}
base=${3:-}
[[ -n $base ]] && base=$(cd "$base" && pwd)
requests=${REQUESTS:-600}
kernels=${KERNELS:-280}
real=0
[[ ${BENCH_HP_DRIVER:-fake} == real ]] && real=1
gpu_us=${GPU_US:-$([[ $real == 1 ]] && echo 0 || echo 2440)}
for f in "$build/bin/bench_request" "$build/lib/libmosaic.so" "$build/bin/mosaic-sched"; do
  [[ -x $f || -f $f ]] || { echo "bench_hp_request: $f is missing: build bench_request, mosaic and mosaic-sched in $build" >&2; exit 2; }
done
if [[ -n $base ]]; then
  for f in "$base/lib/libmosaic.so" "$base/bin/mosaic-sched"; do
    [[ -f $f ]] || { echo "bench_hp_request: $f is missing: build mosaic and mosaic-sched in $base" >&2; exit 2; }
  done
fi
dir=$(mktemp -d /tmp/mosaic-hpreq-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"' EXIT
# The launching process on the last core, the daemons on the one before.
pin=() dpin=()
if command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]]; then
  pin=(taskset -c "$(($(nproc) - 1))")
  dpin=(taskset -c "$(($(nproc) - 2))")
fi
# The shipped ring size (sched/mosaic-sched.conf), so that doorbells and
# drops are those a deployment sees.
printf 'ring-entries 1024\n' >"$dir/d.conf"
daemon() { # build name
  "${dpin[@]}" "$1/bin/mosaic-sched" --config "$dir/d.conf" --socket "$dir/$2.sock" --policy none \
    --metrics-port 0 --mps off --log-level error daemon &
  pids+=($!)
}
daemon "$build" new
[[ -n $base ]] && daemon "$base" base
for _ in $(seq 100); do
  [[ -S $dir/new.sock && ( -z $base || -S $dir/base.sock ) ]] && break
  sleep 0.05
done
[[ $real == 1 ]] || export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
configs=${CONFIGS:-"noshim observe hp hp_oldmode hp_writes hp_bells hp_nowrite"}
[[ -n $base ]] && configs+=" hp_base"
envof() { # config: the environment of its run, as env arguments
  case $1 in
    noshim) echo "" ;;
    observe) echo "LD_PRELOAD=$build/lib/libmosaic.so" ;;
    hp) echo "LD_PRELOAD=$build/lib/libmosaic.so MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$dir/new.sock" ;;
    hp_oldmode) echo "LD_PRELOAD=$build/lib/libmosaic.so MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$dir/new.sock MOSAIC_HP_COMPLETION=graph MOSAIC_HP_END_DOORBELL=always" ;;
    hp_writes) echo "LD_PRELOAD=$build/lib/libmosaic.so MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$dir/new.sock MOSAIC_HP_COMPLETION=graph" ;;
    hp_bells) echo "LD_PRELOAD=$build/lib/libmosaic.so MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$dir/new.sock MOSAIC_HP_END_DOORBELL=always" ;;
    hp_nowrite) echo "LD_PRELOAD=$build/lib/libmosaic.so MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$dir/new.sock MOSAIC_HP_COMPLETION=off" ;;
    hp_base) echo "LD_PRELOAD=$base/lib/libmosaic.so MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$dir/base.sock" ;;
  esac
}
echo "== HP request: $kernels kernels as one graph + cuCtxSynchronize, $requests requests a run, $rounds rounds, gpu_us $gpu_us ($([[ $real == 1 ]] && echo "real driver" || echo "fake driver"))${pin[*]:+, pinned: ${pin[*]}} ==" >&2
for r in $(seq "$rounds"); do
  for c in $configs; do
    # shellcheck disable=SC2046
    env $(envof "$c") MOSAIC_STATS="$dir/$c.$r.stats.json" BENCH_REQUEST_LAT="$dir/$c.$r.lat" \
      "${pin[@]}" "$build/bin/bench_request" "$requests" "$kernels" graph "$gpu_us" >"$dir/$c.$r.json"
  done
done
if [[ ${STRACE:-1} != 0 ]] && command -v strace >/dev/null; then
  for c in $configs; do
    # shellcheck disable=SC2046
    env $(envof "$c") strace -f -c -o "$dir/$c.strace" \
      "$build/bin/bench_request" 300 "$kernels" graph "$gpu_us" >"$dir/$c.strace.json" 2>/dev/null || true
  done
fi
python3 - "$dir" "$rounds" "$configs" <<'EOF'
import json, os, sys
d, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(p * len(v) + 0.999999) - 1))]
def strace_calls(path):
    # strace -c's table: {syscall: calls}, "total" included
    out = {}
    try:
        for line in open(path):
            f = line.split()
            if len(f) >= 5 and f[0][0].isdigit():
                calls = f[3]
                out[f[-1]] = int(calls)
    except (OSError, ValueError):
        return None
    return out or None
rows, base = {}, None
for c in configs:
    lat, writes, bells, drops, conns, reqs, p99s = [], 0, 0, 0, 0, 0, []
    for r in range(1, rounds + 1):
        one = [float(x) for x in open(f"{d}/{c}.{r}.lat") if x.strip()]
        lat += one
        p99s.append(q(one, 0.99))
        j = json.loads(open(f"{d}/{c}.{r}.json").read())
        reqs += j["requests"] + j["warmup_requests"]
        s = f"{d}/{c}.{r}.stats.json"
        if os.path.exists(s):
            st = json.load(open(s))
            writes += st.get("hp_completion_writes", 0)
            # A build before 2026-12-02 writes no sched_* keys: unknown.
            if "sched_doorbells" in st and bells is not None:
                bells += st["sched_doorbells"]
                drops += st["sched_dropped"]
                conns += st["sched_connections"]
            else:
                bells = drops = conns = None
    row = {"config": c, "requests": len(lat), "p50_us": round(q(lat, 0.5) / 1e3, 3),
           "p99_us": round(q(lat, 0.99) / 1e3, 3),
           # One round's stall (another process on the core) moves the
           # pooled p99; the median of the rounds' p99s is the steadier.
           "p99_round_median_us": round(q(p99s, 0.5) / 1e3, 3)}
    if c.startswith("hp"):
        row.update({"completion_writes_per_request": round(writes / reqs, 3),
                    "doorbells_per_request": None if bells is None else round(bells / reqs, 3),
                    "dropped_events": drops, "connections": conns})
    t = strace_calls(f"{d}/{c}.strace")
    try:
        j = json.loads(open(f"{d}/{c}.strace.json").read())
        n = j["requests"] + j["warmup_requests"]
    except (OSError, ValueError, KeyError):
        t = None
    if t:
        # Every system call of the process (all threads, the monitor's and
        # the connection's set-up included) per request, and the sends (a
        # doorbell is one sendmsg).
        row["syscalls_per_request"] = round(t.get("total", 0) / n, 3)
        row["sends_per_request"] = round((t.get("sendmsg", 0) + t.get("sendto", 0)) / n, 3)
    rows[c] = row
base = rows["noshim"]
for c, row in rows.items():
    row["p50_added_pct"] = round(100 * (row["p50_us"] / base["p50_us"] - 1), 3)
    row["p99_added_pct"] = round(100 * (row["p99_us"] / base["p99_us"] - 1), 3)
    row["p50_added_us"] = round(row["p50_us"] - base["p50_us"], 3)
    row["p99_added_us"] = round(row["p99_us"] - base["p99_us"], 3)
    row["p99_round_median_added_pct"] = round(
        100 * (row["p99_round_median_us"] / base["p99_round_median_us"] - 1), 3)
for c, row in rows.items():
    extra = ""
    if "syscalls_per_request" in row and not c.startswith("hp"):
        extra = (f"  per request: {row['syscalls_per_request']} syscalls of which "
                 f"{row['sends_per_request']} sends (strace, all threads)")
    if c.startswith("hp"):
        extra = (f"  per request: {row['completion_writes_per_request']} completion writes, "
                 f"{row['doorbells_per_request']} doorbells"
                 + (f", {row['syscalls_per_request']} syscalls of which {row['sends_per_request']} sends (strace, all threads)" if "syscalls_per_request" in row else "")
                 + f"; {row['dropped_events']} events dropped, connections {row['connections']}")
    print(f"{c:<11} p50 {row['p50_us']:10.3f} us ({row['p50_added_us']:+8.3f} us, {row['p50_added_pct']:+7.3f}%)"
          f"  p99 {row['p99_us']:10.3f} us ({row['p99_added_us']:+8.3f} us, {row['p99_added_pct']:+7.3f}%)"
          f"  rounds' p99 median {row['p99_round_median_us']:10.3f} us ({row['p99_round_median_added_pct']:+7.3f}%){extra}",
          file=sys.stderr)
print(json.dumps({"bench": "hp_request_configs", "rounds": rounds, "rows": list(rows.values()),
                  "timing": "host CLOCK_MONOTONIC per request, from before the graph launch to "
                            "cuCtxSynchronize returning; rounds interleaved, one run"}))
EOF
