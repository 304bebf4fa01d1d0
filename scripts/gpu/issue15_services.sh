#!/usr/bin/env bash
# Issue 15: MosaicSched against its baselines on real PyTorch services
# (docs/results/<date>-issue15). One device call:
#
#   OUT=DIR [PAIRS="resnet50:resnet18_train ..."] [PS="1.1 1.25 1.6"]
#   [PHASES="capture iso overhead policies fault"] scripts/gpu/issue15_services.sh
#
# For each HP:BE pair (models in workloads/svc_models.py): the kernel
# profiles captured with `mosaic-profile capture`; HP and BE alone; the HP
# service under the shim and daemon with no BE work (the shim's cost); then
# HP + BE under each policy (none, BE at low MPS client priority, Orion-like,
# MosaicSched at each p), and a daemon SIGKILL + restart in the middle of a
# MosaicSched run. All co-runs and the isolated runs are under MPS (started
# and stopped here), so isolated and shared runs differ only in the sharing.
# Prints a short table last; everything else lands under $OUT.
#
# DRY=sim runs the same harness on the simulated GPU with the C demo
# programs (tests/simgpu) instead of PyTorch, on a machine with no GPU, so the
# harness itself is tested before device time is spent on it.
set -uo pipefail
: "${OUT:?set OUT to a results directory}"
REPO=$(pwd)
BUILD=${BUILD:-build-gpu}
PAIRS=${PAIRS:-"resnet50:resnet18_train"}
PS=${PS:-"1.1 1.25 1.6"}
PHASES=${PHASES:-"capture iso overhead policies fault"}
REQUESTS=${REQUESTS:-300}
DRY=${DRY:-}
mkdir -p "$OUT"
T0=$SECONDS
log() { printf '[+%4ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$OUT/script.log" >&2; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
export LD_LIBRARY_PATH=$REPO/$BUILD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# NVLink multicast stays off on these machines (KINDS.md), in every child.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SHIM=$REPO/$BUILD/lib/libmosaic.so
SCHED=$REPO/$BUILD/bin/mosaic-sched
PROFBIN=$REPO/$BUILD/bin/mosaic-profile
MODELS=$REPO/predictor/models/h200
for f in "$SHIM" "$SCHED"; do
  [[ -e $f ]] || { log "missing $f: build $BUILD first (cmake -S . -B $BUILD -DMOSAIC_BUILD_CUDA=ON && cmake --build $BUILD)"; exit 2; }
done
WL=$REPO/scripts/gpu/workloads
export PYTHONPATH=$WL:$REPO/python${PYTHONPATH:+:$PYTHONPATH}

if [[ $DRY == sim ]]; then
  export LD_LIBRARY_PATH=$REPO/$BUILD/tests/fakecuda:$LD_LIBRARY_PATH
  export MOSAIC_SIMGPU=issue15-dry-$$ MOSAIC_SIMGPU_SCALE=${MOSAIC_SIMGPU_SCALE:-20}
  "$REPO/$BUILD/bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null || exit 2
  REQUESTS=${REQUESTS_DRY:-60}
  PHASES=${PHASES/capture/}
  { date -u; echo "DRY=sim: the simulated GPU, C demo programs; nothing here is a GPU measurement"; } >"$OUT/env.txt"
else
  { date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,compute_mode --format=csv
    nvcc --version 2>&1 | tail -2
    python3 -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0), "torchvision", torchvision.__version__, "transformers", transformers.__version__)'
    git -C "$REPO" rev-parse --short HEAD 2>/dev/null; } >"$OUT/env.txt" 2>&1
fi
cat "$OUT/env.txt" >&2

# The programs. Real GPU: the PyTorch services; DRY=sim: the C demos with
# the arbiter evaluation's convolution keys (scripts/arbiter_eval.sh).
SIM_HP=(--kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808'
        --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
        --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192')
SIM_BE=(--kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976'
        --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976')
hp_cmd() { # model requests gap_ms latfile
  if [[ $DRY == sim ]]; then
    echo "$REPO/$BUILD/bin/hp_service --requests $2 --warmup 3 --gap-ms $3 --latencies $4 ${SIM_HP[*]@Q}"
  else
    echo "python3 $WL/svc_hp.py --model $1 --requests $2 --warmup 20 --gap-ms $3 --latencies $4"
  fi
}
be_cmd() { # model seconds readyfile
  if [[ $DRY == sim ]]; then
    echo "$REPO/$BUILD/bin/be_trainer --seconds $2 ${SIM_BE[*]@Q}; : $3"
  else
    echo "python3 $WL/svc_be.py --model $1 --seconds $2 --ready $3 --steps-log ${3%.ready}.steps"
  fi
}

# MPS: started for the whole run (isolated runs included), stopped at exit.
MPS_ARGS=(--mps off)
MPS_STARTED=0
MPSCTL=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mosaic15-mps-$$ CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log
daemon_pid="" be_pid=""
archived=0
archive() { # few files come back from the device: everything goes into one archive
  [[ $archived == 1 || ! -d $OUT/run ]] && return
  tar -C "$OUT" -czf "$OUT/run.tgz" run $( [[ -d $OUT/prof ]] && echo prof) 2>/dev/null && archived=1
}
cleanup() {
  [[ -n $be_pid ]] && kill -TERM "$be_pid" 2>/dev/null
  [[ -n $daemon_pid ]] && kill -TERM "$daemon_pid" 2>/dev/null
  wait 2>/dev/null
  if [[ $MPS_STARTED == 1 ]]; then
    echo quit | "$MPSCTL" >/dev/null 2>&1
    for _ in $(seq 20); do pgrep -f "nvidia-cuda-mps-(control|server)" >/dev/null || break; sleep 0.5; done
    log "mps: stopped"
  fi
  [[ $DRY == sim ]] && "$REPO/$BUILD/bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1
  archive
  [[ -n ${KEEP_RUN:-} || $archived == 0 ]] || rm -rf "$OUT/run" "$OUT/prof" "$OUT/mps-log"
}
trap cleanup EXIT
# A timeout (TERM) still archives what was measured.
trap 'exit 130' INT TERM

# Profiles first, without MPS (CUPTI's range profiler replays kernels).
# PROFILES=DIR: profiles captured before (DIR/<model>.profile.json) are
# used as they are and only the missing ones captured.
# Profiles given are copied even when the capture phase is left out, so
# that the daemons of a policies-only run find them.
mkdir -p "$OUT/prof"
[[ -n ${PROFILES:-} ]] && cp "$PROFILES"/*.profile.json "$OUT/prof/" 2>/dev/null
if has capture; then
  for pair in $PAIRS; do
    for m in ${pair%%:*} ${pair##*:}; do
      [[ -s $OUT/prof/$m.profile.json ]] && continue
      if [[ $m == "${pair%%:*}" ]]; then
        cmd="python3 $WL/svc_hp.py --model $m --requests 2 --warmup 1"
      else
        cmd="python3 $WL/svc_be.py --model $m --seconds 0 --warmup 1"
      fi
      timeout "${CAPTURE_TIMEOUT:-150}" "$PROFBIN" capture -o "$OUT/prof/$m.profile.json" -- $cmd >"$OUT/prof/$m.log" 2>&1
      log "capture $m rc=$? $(grep -c '"name"' "$OUT/prof/$m.profile.json" 2>/dev/null) kernel entries"
    done
  done
fi
PROFDIR=$OUT/prof
[[ $DRY == sim ]] && PROFDIR=$REPO/profiler/data/h200 && MODELS=$REPO/predictor/models/h200/lockbox

if [[ $DRY != sim ]]; then
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if "$MPSCTL" -d >>"$OUT/script.log" 2>&1; then
    MPS_STARTED=1
    MPS_ARGS=(--mps check --mps-pipe-dir "$CUDA_MPS_PIPE_DIRECTORY")
    sleep 0.5
    log "mps: control daemon started ($CUDA_MPS_PIPE_DIRECTORY: $(ls -la "$CUDA_MPS_PIPE_DIRECTORY" | tr '\n' ' '))"
  else
    log "mps: could not start the control daemon: processes are time-sliced; results say so"
  fi
fi

start_daemon() { # tag policy p
  local sock=$OUT/run/$1.sock
  rm -f "$sock"
  "$SCHED" --config /dev/null --socket "$sock" --policy "$2" --slo "$3" \
    --profile-dir "$PROFDIR" --model-dir "$MODELS" --metrics-port "${METRICS_PORT:-19464}" "${MPS_ARGS[@]}" \
    --log-level info daemon 2>>"$OUT/run/$1.daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do [[ -S $sock ]] && return 0; sleep 0.05; done
  log "daemon for $1 did not start"; tail -5 "$OUT/run/$1.daemon.log" >&2; return 1
}
stop_daemon() {
  [[ -n $daemon_pid ]] && kill -TERM "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; daemon_pid=""; }
wait_ready() { # file seconds
  local i
  for i in $(seq $(($2 * 10))); do [[ -e $1 || $DRY == sim ]] && return 0; sleep 0.1; done
  return 1
}

# One co-run: $1 tag, $2 policy ("" = no daemon, no shim), $3 p, $4 hp model,
# $5 be model ("" = HP alone), $6 gap ms, [$7 fault: kill the daemon after
# this many HP requests' worth of time and restart it 2 s later].
corun() {
  local tag=$1 pol=$2 p=$3 hm=$4 bm=$5 gap=$6 fault=${7:-} sock=$OUT/run/$1.sock env=() prio=0
  if [[ -n $pol ]]; then
    start_daemon "$tag" "$pol" "$p" || return 1
    env=(MOSAIC_SCHED_SOCKET="$sock" LD_PRELOAD="$SHIM")
  fi
  if [[ -n $bm ]]; then
    [[ $pol == mps-priority ]] && prio=1
    rm -f "$OUT/run/$tag.ready"
    env "${env[@]}" ${pol:+MOSAIC_ROLE=be} CUDA_MPS_CLIENT_PRIORITY=$prio \
      bash -c "exec $(be_cmd "$bm" 900 "$OUT/run/$tag.ready")" >"$OUT/run/$tag.be.json" 2>"$OUT/run/$tag.be.err" &
    be_pid=$!
    wait_ready "$OUT/run/$tag.ready" 120 || log "$tag: BE not ready after 120 s"
    sleep 0.5
  fi
  if [[ -n $fault ]]; then
    ( sleep "$fault"; kill -KILL "$daemon_pid"; date +%s.%N >"$OUT/run/$tag.kill"; sleep 2
      "$SCHED" --config /dev/null --socket "$sock" --policy "$pol" --slo "$p" \
        --profile-dir "$PROFDIR" --model-dir "$MODELS" --metrics-port 0 "${MPS_ARGS[@]}" \
        --log-level info daemon 2>>"$OUT/run/$tag.daemon2.log" & echo $! >"$OUT/run/$tag.daemon2.pid"
      date +%s.%N >"$OUT/run/$tag.restart" ) &
  fi
  date +%s.%N >"$OUT/run/$tag.hp_start"
  env "${env[@]}" ${pol:+MOSAIC_ROLE=hp} bash -c "exec $(hp_cmd "$hm" "$REQUESTS" "$gap" "$OUT/run/$tag.lat")" \
    >"$OUT/run/$tag.hp.json" 2>"$OUT/run/$tag.hp.err"
  local rc=$?
  if [[ -n $pol && -z $fault ]]; then
    "$SCHED" --socket "$sock" status --json >"$OUT/run/$tag.status.json" 2>&1
    python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:${METRICS_PORT:-19464}/metrics', timeout=2).read().decode())" \
      >"$OUT/run/$tag.metrics.txt" 2>&1
  fi
  if [[ -n $bm ]]; then kill -TERM "$be_pid" 2>/dev/null; wait "$be_pid" 2>/dev/null; be_pid=""; fi
  stop_daemon
  if [[ -n $fault ]]; then wait; [[ -s $OUT/run/$tag.daemon2.pid ]] && kill -TERM "$(cat "$OUT/run/$tag.daemon2.pid")" 2>/dev/null; fi
  log "$tag rc=$rc $(cat "$OUT/run/$tag.hp.json" 2>/dev/null | tail -1 | cut -c1-160)"
}

mkdir -p "$OUT/run"
for pair in $PAIRS; do
  hm=${pair%%:*} bm=${pair##*:} gap=0
  # The load: requests 0.4 x the isolated median apart (HP busy ~70%),
  # from a first run back to back; the isolated baseline is then measured
  # at that load, as every co-run is (two runs pooled).
  if has iso; then
    corun "$hm.iso0" "" 1 "$hm" "" 0
    gap=$(python3 -c "import sys; v=sorted(float(l.split()[0]) for l in open(sys.argv[1])); print(round(0.4*v[len(v)//2],3))" "$OUT/run/$hm.iso0.lat" 2>/dev/null || echo 5)
    echo "$gap" >"$OUT/run/$hm.gap_ms"
    log "$hm: requests $gap ms apart"
    for i in 1 2; do corun "$hm.iso$i" "" 1 "$hm" "" "$gap"; done
    env bash -c "exec $(be_cmd "$bm" 15 "$OUT/run/$bm.iso.ready")" >"$OUT/run/$hm.be_iso.json" 2>"$OUT/run/$hm.be_iso.err"
    log "BE $bm alone: $(tail -1 "$OUT/run/$hm.be_iso.json" | cut -c1-120)"
  fi
  gap=$(cat "$OUT/run/$hm.gap_ms" 2>/dev/null || echo 5)
  if has overhead; then
    # The shim's cost with no BE work, in steps, interleaved over two rounds:
    # no shim; the shim observing only; as an HP client with no daemon
    # (disconnected); as an HP client of a daemon (policy none).
    for round in 1 2; do
      corun "$hm.noshim_alone$round" "" 1 "$hm" "" "$gap"
      MOSAIC_STATS=$OUT/run/$hm.observe$round.stats.json LD_PRELOAD=$SHIM corun "$hm.observe_alone$round" "" 1 "$hm" "" "$gap"
      MOSAIC_STATS=$OUT/run/$hm.disc$round.stats.json LD_PRELOAD=$SHIM MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$OUT/run/none.sock \
        corun "$hm.disconnected_alone$round" "" 1 "$hm" "" "$gap"
      MOSAIC_STATS=$OUT/run/$hm.shim$round.stats.json corun "$hm.shim_alone$round" none 1.25 "$hm" "" "$gap"
    done
  fi
  if has policies; then
    for pol in none mps-priority orion; do corun "$hm.$pol" "$pol" 1.25 "$hm" "$bm" "$gap"; done
    for p in $PS; do corun "$hm.mosaic-$p" mosaic "$p" "$hm" "$bm" "$gap"; done
  fi
  if has fault; then
    # Kill the daemon about a third of the way through the run.
    dur=$(python3 -c "import sys; v=sorted(float(l.split()[0]) for l in open(sys.argv[1])); print(round(($REQUESTS/3)*(v[len(v)//2]+$gap)/1e3,2))" "$OUT/run/$hm.iso0.lat" 2>/dev/null || echo 2)
    corun "$hm.fault" mosaic 1.25 "$hm" "$bm" "$gap" "$dur"
  fi
done

python3 "$REPO/scripts/gpu/issue15_summary.py" "$OUT/run" "$PAIRS" "$PS" | tee "$OUT/summary.txt"
cp "$OUT/run/results.json" "$OUT/results.json" 2>/dev/null
