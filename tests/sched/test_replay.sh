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
hp_args=(--requests 20 --warmup 3 --gap-ms 4)
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
# 20 to 23 requests (20 + 3 warm-up; under ctest -j2 on the loaded 2 cores
# the connection has come up as late as the third), each of 3 kernels.
nreq=$(grep -c '"ev":"hp_end"' "$work/hp.trace")
[ "$nreq" -ge 20 ] && [ "$nreq" -le 23 ] || fail "the HP trace holds $nreq request ends, not 20-23"
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
    replay --json "$@" > "$out"
}
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# The four replays' CPU time (user + system, bash's time): the wall time
# is the loaded machine's (24 s once at load 14, for 1-2 s of CPU).
TIMEFORMAT='%U %S'
{ time {
replay "$work/none.json" none 1.25 "$work/hp.trace" "$work/be.trace" 2>&3
replay "$work/none3.json" none 1.25 --warmup 3 "$work/hp.trace" "$work/be.trace" 2>&3
replay "$work/hold.json" hold-be 1.25 "$work/hp.trace" "$work/be.trace" 2>&3
replay "$work/mosaic.json" mosaic 1.25 "$work/hp.trace" "$work/be.trace" 2>&3
} ; } 3>&2 2> "$work/cpu.time"
read -r u s < "$work/cpu.time"
t0=0
t1=$(python3 -c "print($u + $s)")
# The same traces, policy and seed replay to the same numbers.
replay "$work/none_again.json" none 1.25 "$work/hp.trace" "$work/be.trace"
cmp -s "$work/none.json" "$work/none_again.json" || fail "two replays of the same traces differ"
cat "$work/none.json" "$work/hold.json" "$work/mosaic.json"
[ "$(field "$work/none.json" hp_requests)" = "$nreq" ] || fail "replay counted $(field "$work/none.json" hp_requests) requests, not $nreq"
[ "$(field "$work/none3.json" hp_requests)" = $((nreq - 3)) ] || fail "--warmup 3 counted $(field "$work/none3.json" hp_requests) requests, not $((nreq - 3))"
[ "$(field "$work/none.json" hp_kernels)" = $((3 * nreq)) ] || fail "replay ran $(field "$work/none.json" hp_kernels) HP kernels, not $((3 * nreq))"
[ "$(field "$work/none.json" be_step_kernels)" = 2 ] || fail "the BE step is not 2 kernels"
[ "$(field "$work/none.json" unprofiled_kernels)" = 0 ] || fail "kernels without a profile"
python3 - "$work" "$t0" "$t1" <<'PY' || fail "replay's results"
import json, sys
w, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
none, hold, mos = (json.load(open(f"{w}/{n}.json")) for n in ("none", "hold", "mosaic"))
# conv beside conv is slowed 1.5-2x on the H200: without control the
# replayed HP median is well above hold-be's (whose HP runs alone in the
# replay: 1.38-1.41x in the runs that failed the old test), its p99 above
# the recorded isolated one, and BE makes progress. The isolated p99 is
# the recording's host time over 20-23 requests, nearly their maximum,
# which one host stall of the loaded machine moves (9.5 ms against a usual
# 7.9): 1.3x of it failed runs whose replay was right.
# How much above depends on how much of the time the recorded BE kernels
# keep the GPU: their GPU time over their recorded time, gpu_scale /
# be_scale (0.9 in quiet runs; 0.39 in the ASan build's recording, whose BE
# host time is that build's, where none's median was 1.13x hold-be's):
# at least 1 + 0.2 x that share.
duty = none["gpu_scale"] / none["be_scale"]
assert none["hp_p50_ms"] > (1 + 0.2 * duty) * hold["hp_p50_ms"], (duty, none, hold)
assert none["hp_p99_ms"] > none["hp_isolated_p99_ms"], none
assert none["be_steps_per_s"] > 0, none
assert hold["over_p_pct"] <= none["over_p_pct"], (hold, none)
# On the GPU span: the host p99 of 20-23 requests is one request's
# recorded host excess, replayed as it was under every policy (the ASan
# build's recording: 12.84 ms under hold-be, 12.81 under none).
assert hold["hp_gpu_p99_ms"] < none["hp_gpu_p99_ms"], (hold, none)
assert hold["be_steps_per_s"] < none["be_steps_per_s"], (hold, none)
# The simulated time covers the run: at least the recorded HP run's own
# length (its requests alone, first begin to last end; a loaded machine
# stretches the recording's gaps, and replay keeps them), at most 3x that
# (conv beside conv: 1.5-2x per request); and the four replays took under
# 20 s of CPU in all (loading the dataset is most of a replay's 0.25 s).
ts = [json.loads(l) for l in open(f"{w}/hp.trace")]
ts = [e["t"] for e in ts if e.get("ev") in ("hp_begin", "hp_end")]
rec_ms = (max(ts) - min(ts)) / 1e6
assert 0.9 * rec_ms < none["simulated_ms"] < 3.0 * rec_ms, (rec_ms, none)
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
grep -v '"ev":"hp_launch"' "$work/hp.trace" | head -n 40 > "$work/edit.trace"
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
# Partitioned replays that cannot be made: refused by the checks the daemon
# makes at its start, with nothing printed as a result.
printf '%s\n' "${hp_k[@]}" > "$work/hp.keys"
refused_mode() { # what expect args...
  local what=$1 expect=$2
  shift 2
  if ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 \
     "$bin/mosaic-sched" --config /dev/null --slo 1.25 \
       --profile-dir "$(dirname "$0")/../../profiler/data/h200" \
       --model-dir "$(dirname "$0")/../../predictor/models/h200/lockbox" --log-level error \
       "$@" --json "$work/hp.trace" "$work/be.trace" > "$work/out" 2> "$work/err"; then
    fail "$what: replay accepted it"
  fi
  grep -qF -- "$expect" "$work/err" || fail "$what: the message is '$(cat "$work/err")', not about '$expect'"
  [ ! -s "$work/out" ] || fail "$what: replay printed a result: $(cat "$work/out")"
  echo "refused ($what): $(cat "$work/err")"
}
refused_mode "--mode bogus" "--mode bogus: use full" --policy mosaic replay --mode bogus
refused_mode "a split the GPU cannot make" "hp-sms 50: the GPU (132 SMs) cannot give HP a partition of 50 SMs (a multiple of 8, at least 8, leaving BE at least 8); the nearest it can: 48 or 56" \
  --policy mosaic --hp-kernels "$work/hp.keys" --hp-sms 50 replay --mode partition
refused_mode "static's split the GPU cannot make" "hp-sms 130: the GPU (132 SMs) cannot give HP a partition of 130 SMs (a multiple of 8, at least 8, leaving BE at least 8); the nearest it can: 120" \
  --policy static --hp-sms 130 replay
refused_mode "partition without a split" "set hp-sms" --policy mosaic --hp-kernels "$work/hp.keys" \
  replay --mode partition
refused_mode "partition without the HP kernels" "set hp-kernels" --policy mosaic --hp-sms 56 \
  replay --mode partition
refused_mode "a split where HP alone misses p" "use hp-sms" --policy mosaic --hp-sms 16 \
  --hp-kernels "$work/hp.keys" replay --mode partition
refused_mode "partition under policy none" "sm-mode partition is a mode of policy mosaic" \
  --policy none --hp-sms 56 --hp-kernels "$work/hp.keys" replay --mode partition
refused_mode "static on the full GPU" "policy static always splits the GPU" --policy static \
  --hp-sms 56 replay --mode full
refused_mode "a PART_F0 out of range" "--part-f0 '0.5' is not valid: use a number in [1, 16]" \
  --policy mosaic replay --part-f0 0.5
# The split replayed: a partition the GPU can make runs, and says so.
replay "$work/part.json" mosaic 1.6 --mode partition --hp-sms 120 --hp-kernels "$work/hp.keys" \
  "$work/hp.trace" "$work/be.trace" || fail "replay of partition 120"
python3 - "$work/part.json" "$work/mosaic.json" <<'PY' || fail "the partitioned replay's result"
import json, sys
part, full = (json.load(open(f)) for f in sys.argv[1:])
assert part["mode"] == "partition" and part["hp_sms"] == 120 and part["be_sms"] == 12, part
assert full["mode"] == "full" and full["hp_sms"] == 0, full
# On 12 SMs the BE convolutions (1.5-2x slower on 48 SMs, measured) are
# several times slower than on the whole GPU.
assert part["be_steps_per_s"] < 0.5 * full["be_steps_per_s"], (part, full)
print("partitioned replay OK: HP on 120 SMs, BE on 12 at", part["be_steps_per_s"], "steps/s")
PY
echo "PASS: record -> replay ($nreq requests, $((3 * nreq)) HP kernels, $nbe BE kernels recorded and replayed; bad traces refused)"
