#!/usr/bin/env bash
# The HP client's work per request, counted under the fake driver (issue
# 15: the shim and daemon with no BE work must add <= 1% to HP's p99). An
# unmodified service's request, one CUDA graph of 280 kernels (ResNet-50's
# shape) or 280 eager launches then cuCtxSynchronize (tests/bench/
# bench_request.c), as a client of a daemon (policy none, no BE client):
# from the shim's stats file, per request,
#   completion writes (cuStreamWriteValue64: GPU work on the HP stream) <= 1
#   doorbells (a sendmsg each: a system call in the request)            < 0.1
# (a full-ring backlog doorbell or two under load is allowed for), and the
# client connected, every graph launch counted. The one write is the
# learned request's end, enqueued as its synchronisation begins, so that
# the daemon times the request by the device when the host's return is
# late (docs/sched.md, "A learned request's end"); the graph write of
# MOSAIC_HP_COMPLETION=graph (the default before 2026-12-02) is the same
# one write for a one-graph request and takes its place.
# The controls, which must fail the same check: MOSAIC_HP_COMPLETION=kernel
# on the eager shape (a write behind every launch) and
# MOSAIC_HP_END_DOORBELL=always (a doorbell at every end while the daemon
# sleeps, the rule before 2026-12-02).
#   tests/arbiter/test_hp_request_counts.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:?usage: test_hp_request_counts.sh BUILD_DIR}" && pwd)
preload=${ARBITER_PRELOAD:-$build/lib/libmosaic.so}
dir=$(mktemp -d /tmp/mosaic-hpcount-XXXXXX)
pid=""
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
printf 'ring-entries 1024\n' >"$dir/d.conf"
"$build/bin/mosaic-sched" --config "$dir/d.conf" --socket "$dir/s.sock" --policy none \
  --metrics-port 0 --mps off --log-level error daemon &
pid=$!
for _ in $(seq 100); do [[ -S $dir/s.sock ]] && break; sleep 0.05; done
[[ -S $dir/s.sock ]] || { echo "FAIL: the daemon did not start"; exit 1; }
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fails=0

# run NAME SHAPE [VAR=VALUE ...]: 150 requests (2 ms of stand-in GPU time,
# a ResNet-50 request is 2.44 ms on the H200) after 400 ms of warm-up,
# stats in $dir/NAME.json.
run() {
  local name=$1 shape=$2
  shift 2
  env "$@" LD_PRELOAD="$preload" MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET="$dir/s.sock" \
    MOSAIC_STATS="$dir/$name.json" BENCH_REQUEST_WARM_MS=400 \
    "$build/bin/bench_request" 150 280 "$shape" 2000 >"$dir/$name.out" 2>"$dir/$name.err" ||
    { echo "FAIL: $name: bench_request failed: $(tail -2 "$dir/$name.err")"; return 1; }
}
# check NAME SHAPE: the per-request counts against the bounds; 0 within.
check() {
  python3 - "$dir/$1.json" "$dir/$1.out" "$1" "$2" <<'EOF'
import json, sys
st, out, name, shape = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read()), sys.argv[3], sys.argv[4]
n = out["requests"] + out["warmup_requests"]
bad = []
if st.get("sched_connections", 0) < 1:
    bad.append("never connected to the daemon (sched_connections 0)")
if shape == "graph" and st["graph_launches"] != n:
    bad.append(f"{st['graph_launches']} graph launches counted for {n} requests")
if shape == "eager" and st["launches_total"] != 280 * n:
    bad.append(f"{st['launches_total']} launches counted for {280 * n}")
w, b = st["hp_completion_writes"] / n, st["sched_doorbells"] / n
if w > 1:
    bad.append(f"{w:.3f} completion writes per request (want at most 1: the learned "
               "request's end)")
if b >= 0.1:
    bad.append(f"{b:.3f} doorbells per request (want < 0.1: no system call at a request's end "
               "while no BE kernel waits)")
print(f"{name}: {n} requests of 280 kernels ({shape}): {w:.3f} completion writes, {b:.3f} "
      f"doorbells per request, {st['sched_dropped']} events dropped"
      + ("" if not bad else ": " + "; ".join(bad)))
sys.exit(1 if bad else 0)
EOF
}

for shape in graph eager; do
  run "$shape" "$shape" || { fails=$((fails + 1)); continue; }
  check "$shape" "$shape" || { echo "FAIL: $shape"; fails=$((fails + 1)); }
done
# The controls: the check must see each regression.
run ctl_writes eager MOSAIC_HP_COMPLETION=kernel &&
  if check ctl_writes eager; then echo "FAIL: the control MOSAIC_HP_COMPLETION=kernel passed the check"; fails=$((fails + 1)); fi
run ctl_bells graph MOSAIC_HP_END_DOORBELL=always &&
  if check ctl_bells graph; then echo "FAIL: the control MOSAIC_HP_END_DOORBELL=always passed the check"; fails=$((fails + 1)); fi
if [[ $fails -ne 0 ]]; then
  echo "FAIL: $fails"
  exit 1
fi
echo "PASS: one completion write (its end) and no doorbell per learned request; both controls caught"
