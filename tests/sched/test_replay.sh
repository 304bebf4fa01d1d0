#!/usr/bin/env bash
# mosaic-sched record -> replay on a small run on the simulated GPU
# (docs/replay.md): the HP service and the BE trainer each recorded alone
# under the shim, then replayed through policies. Asserts the exact counts
# of requests and kernels recorded and replayed, that a policy's control
# shows in the replay (hold-be puts no more requests over p than none and
# gives BE less), and that truncated, cut, joined, edited and
# other-version traces are refused with a message naming the problem and
# nothing printed as a result.
#
#   tests/sched/test_replay.sh BUILD_DIR
# Environment: TEST_REPLAY_PRELOAD (the clients' LD_PRELOAD, default the
# build's libmosaic.so; the sanitizer build puts the ASan runtime ahead).
set -euo pipefail
build=$(cd "${1:?usage: test_replay.sh BUILD_DIR}" && pwd)
bin=$build/bin
preload=${TEST_REPLAY_PRELOAD:-$build/lib/libmosaic.so}
export MOSAIC_SIMGPU_SCALE=5
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOSAIC_SIMGPU=test-replay-$$
work=$(mktemp -d)
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  "$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${TEST_REPLAY_KEEP:-}" ] && trap "cp -r $work/. $TEST_REPLAY_KEEP/; cleanup" EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

hp_k=('_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808'
      '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
      '_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192')
be_k=('_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976'
      '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976')
# The warm-up requests absorb the shim's background connection: it comes up
# at the program's first launch, and under ctest -j2 on the loaded 2 cores
# it has taken three requests (about 25 ms); 30 give it about 250 ms.
hp_warmup=30
hp_args=(--requests 20 --warmup "$hp_warmup" --gap-ms 4)
for k in "${hp_k[@]}"; do hp_args+=(--kernel "$k"); done
be_args=(--steps 30)
for k in "${be_k[@]}"; do be_args+=(--kernel "$k"); done
"$bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null

record() { # trace role program args...
  local trace=$1 role=$2 sock=$work/rec.sock i
  shift 2
  "$bin/mosaic-sched" --config /dev/null --socket "$sock" --policy none --metrics-port 0 \
    --mps off --profile-dir "$(dirname "$0")/../../profiler/data/h200" --log-level warn \
    record -o "$trace" 2> "$work/daemon.log" &
  daemon_pid=$!
  for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { cat "$work/daemon.log" >&2; fail "the recording daemon did not start"; }
  MOSAIC_SCHED_SOCKET=$sock MOSAIC_ROLE=$role LD_PRELOAD=$preload "$@" > /dev/null
  # The client's last events reach the daemon on its next poll.
  sleep 0.2
  kill -TERM "$daemon_pid"
  wait "$daemon_pid" || fail "the recording daemon failed: $(cat "$work/daemon.log")"
  daemon_pid=""
}

record "$work/hp.trace" hp "$bin/hp_service" "${hp_args[@]}"
record "$work/be.trace" be "$bin/be_trainer" "${be_args[@]}"

# The trace files themselves: header, events, end record.
head -1 "$work/hp.trace" | grep -q '"schema":"mosaic-trace/1"' || fail "no mosaic-trace/1 header"
tail -1 "$work/hp.trace" | grep -q '"ev":"end"' || fail "no end record"
# The shim connects asynchronously (the program's start never waits), so
# the first requests may run before the connection is up and go unseen:
# the 20 measured requests and those of the warm-up after the connection,
# each of 3 kernels: no fewer than 20, no more than the program ran.
nreq=$(grep -c '"ev":"hp_end"' "$work/hp.trace")
[ "$nreq" -ge 20 ] && [ "$nreq" -le $((20 + hp_warmup)) ] ||
  fail "the HP trace holds $nreq request ends, not 20-$((20 + hp_warmup))"
# A connection that comes up inside the first request adds its last one
# or two launches without their begin.
n=$(grep -c '"ev":"hp_launch"' "$work/hp.trace")
[ "$n" -ge $((3 * nreq)) ] && [ "$n" -le $((3 * nreq + 2)) ] ||
  fail "the HP trace holds $n launches, not $((3 * nreq)) ($nreq requests x 3, +2 at most)"
nbe=$(grep -c '"ev":"be_grant"' "$work/be.trace")
[ "$nbe" -ge 58 ] && [ "$nbe" -le 60 ] || fail "the BE trace holds $nbe grants, not 58-60 (30 steps x 2)"
grep -q '"key":"_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808"' "$work/hp.trace" \
  || fail "the HP trace does not name its kernels' profile keys"
# A launch's time stamp (the client's, from the TSC where it can) lies
# inside its request as the host's CLOCK_MONOTONIC stamps of the begin and
# the end bound it, within 20 us; the first, which began the learned
# request just before it was stamped, is in the median within 20 us of the
# begin's stamp (a stamp 0.2% fast or slow puts it 35-100 us off; a host
# stall between the two stamps moves single requests, not the median).
python3 - "$work/hp.trace" <<'PY' || fail "an HP launch's time stamp lies outside its request"
import json, sys
begin = end = None
launches, checked, first = [], 0, []
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("ev") == "hp_begin":
        begin, launches = e["t"], []
    elif e.get("ev") == "hp_launch" and begin is not None:
        launches.append(e["t"])
    elif e.get("ev") == "hp_end" and begin is not None:
        for t in launches:
            assert begin - 20000 <= t <= e["t"] + 20000, (begin, t, e["t"])
            checked += 1
        if launches:
            first.append(abs(launches[0] - begin))
        begin = None
assert checked >= 60, checked
first.sort()
assert first[len(first) // 2] <= 20000, first
PY
# A recording never overwrites a trace.
if timeout 10 "$bin/mosaic-sched" --config /dev/null --socket "$work/x.sock" --metrics-port 0 \
     --mps off record -o "$work/hp.trace" 2> "$work/err"; then
  fail "record over an existing trace did not fail"
fi
grep -q "does not exist yet" "$work/err" || fail "record over an existing file: $(cat "$work/err")"

replay() { # out policy p
  local out=$1 policy=$2 p=$3
  shift 3
  ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 \
  "$bin/mosaic-sched" --config /dev/null --policy "$policy" --slo "$p" \
    --profile-dir "$(dirname "$0")/../../profiler/data/h200" \
    --model-dir "$(dirname "$0")/../../predictor/models/h200/lockbox" --log-level error \
    replay --mode full --json "$@" > "$out"
}
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

t0=$(date +%s.%N)
replay "$work/none.json" none 1.25 "$work/hp.trace" "$work/be.trace"
replay "$work/none3.json" none 1.25 --warmup 3 "$work/hp.trace" "$work/be.trace"
replay "$work/hold.json" hold-be 1.25 "$work/hp.trace" "$work/be.trace"
replay "$work/mosaic.json" mosaic 1.25 "$work/hp.trace" "$work/be.trace"
t1=$(date +%s.%N)
# The same traces, policy and seed replay to the same numbers.
replay "$work/none_again.json" none 1.25 "$work/hp.trace" "$work/be.trace"
cmp -s "$work/none.json" "$work/none_again.json" || fail "two replays of the same traces differ"
cat "$work/none.json" "$work/hold.json" "$work/mosaic.json"
[ "$(field "$work/none.json" hp_requests)" = "$nreq" ] || fail "replay counted $(field "$work/none.json" hp_requests) requests, not $nreq"
[ "$(field "$work/none3.json" hp_requests)" = $((nreq - 3)) ] || fail "--warmup 3 counted $(field "$work/none3.json" hp_requests) requests, not $((nreq - 3))"
[ "$(field "$work/none.json" hp_kernels)" = $((3 * nreq)) ] || fail "replay ran $(field "$work/none.json" hp_kernels) HP kernels, not $((3 * nreq))"
[ "$(field "$work/none.json" be_step_kernels)" = 2 ] || fail "the BE step is not 2 kernels"
[ "$(field "$work/none.json" unprofiled_kernels)" = 0 ] || fail "kernels without a profile"
python3 - "$work" "$t0" "$t1" "$nreq" <<'PY' || fail "replay's results"
import json, sys
w, t0, t1, nreq = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
none, hold, mos = (json.load(open(f"{w}/{n}.json")) for n in ("none", "hold", "mosaic"))
# conv beside conv is slowed 1.5-2x on the H200: without control the
# replayed HP median is well above hold-be's (whose HP runs alone in the
# replay: 1.38-1.41x in the runs that failed the old test), its p99 above
# the isolated one, and BE makes progress. The tails and the share over p
# are compared on GPU spans (the replay's hp_gpu_*: its own timeline, from
# the first kernel's start to the last one's end): the host-time fields
# carry the recording's host stalls (the isolated p99 is nearly the
# maximum of the recorded requests, which one stall of the loaded machine
# moves, 9.5 ms against a usual 7.9; and each request's own excess is
# replayed after its kernels), and failed runs whose replay was right.
assert none["hp_p50_ms"] > 1.2 * hold["hp_p50_ms"], (none, hold)
assert none["hp_gpu_p99_ms"] > none["hp_gpu_isolated_p99_ms"], none
assert none["be_steps_per_s"] > 0, none
assert hold["over_p_gpu_pct"] <= none["over_p_gpu_pct"], (hold, none)
assert hold["hp_gpu_p99_ms"] < none["hp_gpu_p99_ms"], (hold, none)
assert hold["be_steps_per_s"] < none["be_steps_per_s"], (hold, none)
# The simulated time covers the run (nreq requests of ~5.6 ms plus gaps), and
# four replays took far less wall time than that.
assert nreq * 5.0 < none["simulated_ms"] < nreq * 20.0, none
assert t1 - t0 < 20, t1 - t0
print("replay results OK")
PY

# Refused traces: the exit code, the message, and nothing on stdout (the
# good trace beside a bad one is not replayed either).
refused() { # what expect file...
  local what=$1 expect=$2
  shift 2
  if replay "$work/out" mosaic 1.25 "$@" 2> "$work/err"; then
    fail "$what: replay accepted it"
  fi
  grep -q -- "$expect" "$work/err" || fail "$what: the message is '$(cat "$work/err")', not about '$expect'"
  [ ! -s "$work/out" ] || fail "$what: replay printed a result: $(cat "$work/out")"
  echo "refused ($what): $(cat "$work/err")"
}
lines=$(wc -l < "$work/hp.trace")
head -n $((lines - 1)) "$work/hp.trace" > "$work/noend.trace"
refused "no end record" "truncated after line" "$work/noend.trace" "$work/be.trace"
head -c $(( $(stat -c %s "$work/hp.trace") / 2 )) "$work/hp.trace" > "$work/cut.trace"
refused "cut mid-line" "truncated" "$work/cut.trace" "$work/be.trace"
sed 's#"schema":"mosaic-trace/1"#"schema":"mosaic-trace/2"#' "$work/hp.trace" > "$work/v2.trace"
refused "other version" "mosaic-trace/2, this mosaic-sched reads only mosaic-trace/1" "$work/v2.trace" "$work/be.trace"
# (Not grep | head: with pipefail, grep killed by SIGPIPE once head has
# its 40 lines would end the script.)
grep -v '"ev":"hp_launch"' "$work/hp.trace" > "$work/nolaunch.trace"
head -n 40 "$work/nolaunch.trace" > "$work/edit.trace"
tail -1 "$work/hp.trace" >> "$work/edit.trace"
refused "events removed" "the file was cut or edited" "$work/edit.trace" "$work/be.trace"
cat "$work/hp.trace" "$work/be.trace" > "$work/joined.trace"
refused "two joined" "a line after the end record" "$work/joined.trace"
echo '{"hello":1}' > "$work/other.trace"
refused "not a trace" "not a mosaic trace" "$work/be.trace" "$work/other.trace"
refused "BE only" "no HP client" "$work/be.trace"
: > "$work/empty.trace"
refused "empty file" "empty file: not a mosaic-trace/1 trace" "$work/empty.trace" "$work/be.trace"
head -n 1 "$work/hp.trace" > "$work/header.trace"
refused "header only" "truncated after line 1" "$work/header.trace" "$work/be.trace"
# A key twice in one line: the project's strict JSON reader refuses it
# (cJSON alone would take the first value, Python's json the last).
sed '2s/}$/,"t":0}/' "$work/hp.trace" > "$work/dup.trace"
refused "duplicate key" "dup.trace:2: t: the key appears twice" "$work/dup.trace" "$work/be.trace"
# A FIFO would keep a reader waiting for a writer that never comes.
mkfifo "$work/fifo.trace"
refused "a FIFO" "not a regular file" "$work/fifo.trace" "$work/be.trace"
if replay "$work/out" none 1.25 --mode partition "$work/hp.trace" "$work/be.trace" 2> "$work/err"; then
  fail "--mode partition accepted"
fi
grep -q "replay models only full" "$work/err" || fail "--mode partition: $(cat "$work/err")"
echo "PASS: record -> replay ($nreq requests, $((3 * nreq)) HP kernels, $nbe BE kernels recorded and replayed; bad traces refused)"
