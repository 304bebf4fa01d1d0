# Sourced by the tests/sched scripts that run programs on the simulated GPU
# (test_replay_part.sh, test_tune.sh, part_f0_lockbox.sh,
# test_replay_eval.sh): what every one of them sets up the same way.
#
#   sim_env NAME BUILD_DIR [PROGRAM...]
#     sets root, build, bin, profiles, models; checks that bin/PROGRAM
#     exists for each (the simulated GPU's tool and mosaic-sched always);
#     exports MOSAIC_SIMGPU_SCALE (20 unless set), the fake driver's
#     LD_LIBRARY_PATH and a segment name of its own (NAME-pid).
#   sim_record TRACE ROLE LOG PROGRAM [ARGS...]
#     runs PROGRAM under the shim (ROLE hp or be) beside a `record` daemon
#     of policy none, alone on the whole GPU, and stops the daemon cleanly
#     so that TRACE is complete; the daemon's log goes to LOG.
#     sim_daemon_pid is the daemon's pid while it runs (for a trap).
sim_env() {
  local name=$1 p
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  build=$(cd "$2" && pwd)
  shift 2
  bin=$build/bin
  for p in mosaic-sched simgpu "$@"; do
    [ -x "$bin/$p" ] || { echo "$name: $bin/$p is missing: build first" >&2; exit 2; }
  done
  profiles=$root/profiler/data/h200
  models=$root/predictor/models/h200/lockbox
  export MOSAIC_SIMGPU_SCALE=${MOSAIC_SIMGPU_SCALE:-20}
  export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export MOSAIC_SIMGPU=$name-$$
  sim_daemon_pid=""
}

sim_record() {
  local trace=$1 role=$2 log=$3 sock i
  shift 3
  sock=$(dirname "$trace")/rec.sock
  rm -f "$trace" "$sock"
  "$bin/mosaic-sched" --config /dev/null --socket "$sock" --policy none --metrics-port 0 \
    --mps off --profile-dir "$profiles" --log-level warn record -o "$trace" 2> "$log" &
  sim_daemon_pid=$!
  for i in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { cat "$log" >&2; echo "the recording daemon did not start" >&2; exit 1; }
  MOSAIC_SCHED_SOCKET=$sock MOSAIC_ROLE=$role LD_PRELOAD=${sim_preload:-$build/lib/libmosaic.so} \
    "$@"
  # The client's last events reach the daemon on its next poll.
  sleep 0.2
  kill -TERM "$sim_daemon_pid"
  wait "$sim_daemon_pid" || { tail -3 "$log" >&2; echo "the recording daemon failed" >&2; exit 1; }
  sim_daemon_pid=""
}

# Stops a recording daemon still running, waits for every child and
# removes the segment: the EXIT trap's part common to the scripts.
sim_cleanup() {
  [ -n "${sim_daemon_pid:-}" ] && kill -TERM "$sim_daemon_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  "$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1 || true
}
