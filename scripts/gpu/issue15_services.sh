#!/usr/bin/env bash
# Issue 15: MosaicSched against its baselines on real PyTorch services
# (docs/results/<date>-issue15). One device call:
#
#   OUT=DIR [PAIRS="resnet50:resnet18_train llama:resnet50_infer_be ..."]
#   [PS="1.1 1.25 1.6"] [PHASES="capture iso overhead policies static tune
#   replay fault bealone costs"] [PROFILES=DIR] scripts/gpu/issue15_services.sh
#
# For each HP:BE pair (models in workloads/svc_models.py), one PHASES word
# each, in this order:
#   capture   the kernel profiles, `mosaic-profile capture` (no MPS);
#   iso       HP alone (three runs: the first, back to back, sets the
#             arrival period to its median / LOAD) and BE alone;
#   overhead  the HP service under the shim and daemon with no BE work;
#   policies  HP + BE under none, BE at low MPS client priority, Orion-like
#             and MosaicSched at each p;
#   static    the static green-context partition (policy static: HP on the
#             fewest SMs that keep its isolated slowdown under 1.1x, BE on
#             the rest, no admission control), one run scored at every p;
#   tune      `mosaic-sched tune` at each p (trials of the full GPU and of
#             the splits TUNE_SPLITS on the GPU, short), then the mode it
#             wrote run as the MosaicSched row `tuned`; its JSON report (the
#             candidates table) kept;
#   replay    HP alone and BE alone recorded under the shim (`mosaic-sched
#             record`), replayed through each policy and p (`mosaic-sched
#             replay`, the simulated timeline), beside the real runs;
#   fault     a daemon SIGKILL + restart while the HP service is serving
#             (after FAULT_AT of its measured requests, from its own
#             progress file) in a MosaicSched run;
#   bealone   the BE job alone under the shim and a daemon of each policy
#             of BEALONE_POLICIES (no HP client), beside BE alone without
#             them (the iso phase's): what the gate and the policy's
#             decisions cost BE when nothing is to be protected;
#   costs     once, not per pair: the BE grant round trip and the HP launch
#             through the shim on this host, side by side in one run
#             (tests/arbiter/bench_arbiter.sh on the real driver).
# static and tune need the HP service's kernels (hp-kernels): they come from
# a recorded trace of the HP service alone (the replay phase's, or a short
# recording made for them: issue15_keys.py). Scores need the iso phase of
# the same call. All co-runs and the isolated runs are under MPS (started
# and stopped here), so isolated and shared runs differ only in the sharing.
# Each phase's wall time is logged and summarised. Prints a short table
# last; everything else lands under $OUT (summary.txt, results.json and
# run.tgz, the archive of every run's files).
#
# DRY=sim runs the same harness on the simulated GPU with the C demo
# programs (tests/simgpu) instead of PyTorch, on a machine with no GPU, so the
# harness itself is tested before device time is spent on it.
set -uo pipefail
: "${OUT:?set OUT to a results directory}"
REPO=$(pwd)
BUILD=${BUILD:-build-gpu}
# The build tree: BUILD relative to the repository root, or absolute.
B=$BUILD
[[ $B == /* ]] || B=$REPO/$BUILD
PAIRS=${PAIRS:-"resnet50:resnet18_train"}
PS=${PS:-"1.1 1.25 1.6"}
PHASES=${PHASES:-"capture iso overhead policies static tune replay fault bealone costs"}
REQUESTS=${REQUESTS:-300}
# The baselines of the policies phase (a call that repeats a pair may run fewer).
BASELINES=${BASELINES:-"none mps-priority orion"}
# More flags for every daemon of the call (config keys as --KEY VALUE,
# e.g. "--gate-ahead 1"), said in the log; the summary does not tell runs
# apart by them, so a call comparing settings runs the script once for each.
DAEMON_ARGS=${DAEMON_ARGS:-}
# The daemons of the bealone phase.
BEALONE_POLICIES=${BEALONE_POLICIES:-"none orion mosaic"}
# Every HP run (isolated, overhead, co-runs, static, tuned, tune's trials,
# the fault run, the recordings) first makes PREROLL requests at its own
# arrival schedule, after its --after wait and settle, not recorded and not
# in the measured window, then its REQUESTS measured ones (svc_hp.py and
# hp_service --preroll): the window is the steady state, past the daemon's
# learning of the request (on the H200, call 3 of 2026-12-02, 5 isolated
# and 45 overlapped requests before trust, 100-300 ms of a 1.48 s window
# with no BE step under MosaicSched). That transient is reported apart
# (issue15_summary.py: the first BE step begun after HP's first request).
PREROLL=${PREROLL:-100}
# The HP load: the share of time a request is in flight. Requests arrive
# open loop, one every (isolated median / LOAD) ms (ARRIVALS=poisson: gaps
# drawn from an exponential of that mean), so HP alone is busy LOAD of the
# time and idle between requests; the summary reports each run's measured
# busy fraction and scores no pair whose isolated runs were busy further
# than LOAD_TOL from LOAD. 0.5 leaves BE room between requests as a
# service at half its capacity has; 0.4 x the median as the period (the
# rule before) is shorter than a request, so HP ran back to back.
LOAD=${LOAD:-0.5}
ARRIVALS=${ARRIVALS:-periodic}
export LOAD_TOL=${LOAD_TOL:-0.1}
# fault: the daemon is SIGKILLed once the HP service has ended FAULT_AT
# measured requests (its --touch-after file) and restarted FAULT_GAP_S
# later; the run makes enough requests to serve through the gap and
# FAULT_TAIL_S after it (FAULT_REQUESTS, computed from the period).
FAULT_AT=${FAULT_AT:-100}
# A co-run's start: parallel (default) starts the HP service beside the BE
# job, the HP waiting once warm for the BE job's ready file; serial starts
# HP once BE is ready (the 2026-12-02 calls; always under DRY=sim, whose
# BE is ready at once).
CORUN_START=${CORUN_START:-parallel} AFTER_SETTLE_S=${AFTER_SETTLE_S:-0.5}
# overhead: rounds of the four HP-alone runs, interleaved (1 halves it).
OVERHEAD_ROUNDS=${OVERHEAD_ROUNDS:-2}
FAULT_GAP_S=${FAULT_GAP_S:-2}
FAULT_TAIL_S=${FAULT_TAIL_S:-1.5}
# tune: the splits tried beside the full GPU (each also filtered by its
# predicted HP slowdown under p), and the p's tuned (each p is one tune).
TUNE_SPLITS=${TUNE_SPLITS:-"64 96 120"}
TUNE_PS=${TUNE_PS:-$PS}
# A trial ends when the HP service has made its TUNE_REQUESTS requests
# (tune stops a trial when its HP command exits), TUNE_TRIAL_MS at most.
TUNE_REQUESTS=${TUNE_REQUESTS:-$REQUESTS}
TUNE_TRIAL_MS=${TUNE_TRIAL_MS:-60000}
# TUNE_KEEP=1: keep every trial's trace and logs (tune --keep; megabytes a
# trial for a PyTorch service, so off by default).
BE_ISO_S=${BE_ISO_S:-15}
BUDGET_S=${BUDGET_S:-560}
REC_BE_S=${REC_BE_S:-4}
# Replay starts HP this long after BE. The real runs' BE throughput is
# counted over the HP service's measured requests (issue15_summary.py), where
# BE is already running, so replay's (counted from BE's start) starts both
# together.
REPLAY_BE_LEAD_MS=${REPLAY_BE_LEAD_MS:-0}
for w in $PHASES; do
  case $w in capture|iso|overhead|policies|static|tune|replay|fault|bealone|costs) ;;
    *) echo "issue15_services: PHASES word '$w' is not a phase: use capture iso overhead policies static tune replay fault bealone costs" >&2; exit 2 ;;
  esac
done
python3 -c "import sys; l = float(sys.argv[1]); sys.exit(not 0 < l <= 1)" "$LOAD" 2>/dev/null ||
  { echo "issue15_services: LOAD=$LOAD is not a fraction in (0, 1]: the share of time an HP request is in flight, e.g. 0.5" >&2; exit 2; }
[[ $ARRIVALS == periodic || $ARRIVALS == poisson ]] ||
  { echo "issue15_services: ARRIVALS=$ARRIVALS: use periodic or poisson" >&2; exit 2; }
for e in ${PAIR_PHASES:-}; do
  [[ " $PAIRS " == *" ${e%%=*} "* ]] ||
    { echo "issue15_services: PAIR_PHASES entry '$e' names no pair of PAIRS: use HP:BE=phase,phase with HP:BE one of: $PAIRS" >&2; exit 2; }
  for w in $(tr , ' ' <<<"${e#*=}"); do
    case $w in iso|overhead|policies|static|tune|replay|fault|bealone) ;;
      *) echo "issue15_services: PAIR_PHASES word '$w' ($e) is not a per-pair phase: use iso overhead policies static tune replay fault bealone" >&2; exit 2 ;;
    esac
  done
done
[[ $PREROLL =~ ^[0-9]+$ && ${PREROLL_DRY:-0} =~ ^[0-9]+$ ]] ||
  { echo "issue15_services: PREROLL=$PREROLL${PREROLL_DRY:+ (PREROLL_DRY=$PREROLL_DRY)} is not a count of requests: give 0 or more (0: no pre-roll, the window begins with the daemon's learning)" >&2; exit 2; }
for pair in $PAIRS; do
  [[ $pair == ?*:?* ]] || { echo "issue15_services: PAIRS entry '$pair' is not HP:BE (e.g. resnet50:resnet18_train)" >&2; exit 2; }
done
DRY=${DRY:-}
mkdir -p "$OUT"
T0=$SECONDS
log() { printf '[+%4ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$OUT/script.log" >&2; }
has() { [[ " $PHASES " == *" $1 "* ]]; }
# PAIR_PHASES="HP:BE=word,word ...": phases for one pair beside PHASES
# (the fault run or the overhead for one pair of a call, not each).
pair_phases() { # pair: PHASES and that pair's own
  local e x=""
  for e in ${PAIR_PHASES:-}; do [[ ${e%%=*} == "$1" ]] && x+=" ${e#*=}"; done
  echo "$PHASES ${x//,/ }"
}
hasp() { [[ " $PP " == *" $1 "* ]]; }
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# NVLink multicast stays off on these machines (KINDS.md), in every child.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SHIM=$B/lib/libmosaic.so
# What the clients preload (ISSUE15_PRELOAD: a sanitizer build puts its
# runtime ahead of the shim).
PRELOAD=${ISSUE15_PRELOAD:-$SHIM}
SCHED=$B/bin/mosaic-sched
PROFBIN=$B/bin/mosaic-profile
MODELS=$REPO/predictor/models/h200
for f in "$SHIM" "$SCHED"; do
  [[ -e $f ]] || { log "missing $f: build $BUILD first (cmake -S . -B $BUILD -DMOSAIC_BUILD_CUDA=ON && cmake --build $BUILD)"; exit 2; }
done
WL=$REPO/scripts/gpu/workloads
export PYTHONPATH=$WL:$REPO/python${PYTHONPATH:+:$PYTHONPATH}
if [[ $DRY != sim ]]; then
  for pair in $PAIRS; do
    for m in ${pair%%:*} ${pair##*:}; do
      grep -q "^    \"$m\": (" "$WL/svc_models.py" || {
        echo "issue15_services: model '$m' (PAIRS) is not in $WL/svc_models.py: use one of $(grep -o '^    "[a-z0-9_]*": (' "$WL/svc_models.py" | tr -d '":( ' | xargs)" >&2; exit 2; }
    done
  done
fi

if [[ $DRY == sim ]]; then
  export LD_LIBRARY_PATH=$B/tests/fakecuda:$LD_LIBRARY_PATH
  export MOSAIC_SIMGPU=issue15-dry-$$ MOSAIC_SIMGPU_SCALE=${MOSAIC_SIMGPU_SCALE:-20}
  "$B/bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null || exit 2
  REQUESTS=${REQUESTS_DRY:-60} PREROLL=${PREROLL_DRY:-20}
  BE_ISO_S=${BE_ISO_S_DRY:-4} BUDGET_S=${BUDGET_S_DRY:-0} REC_BE_S=${REC_BE_S_DRY:-3} TUNE_REQUESTS=${TUNE_REQUESTS_DRY:-$REQUESTS}
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
# HP_TOUCH="N FILE" (the fault run): the service creates FILE after its
# N-th measured request (the pre-roll's not counted). The period is open
# loop in both (hp_service --period-ms, svc_hp.py --gap-ms), the pre-roll
# at the same schedule (--preroll).
hp_cmd() { # model requests period_ms latfile [svc_hp.py options, ignored by DRY=sim]
  local touch=${HP_TOUCH:+--touch-after $HP_TOUCH}
  if [[ $DRY == sim ]]; then
    local times=""
    [[ $4 == *.lat ]] && times="--times ${4%.lat}.times"
    echo "$B/bin/hp_service --requests $2 --preroll $PREROLL --warmup 3 --gap-ms 0 --period-ms $3 --latencies $4 $times $touch ${SIM_HP[*]@Q}"
  else
    echo "python3 $WL/svc_hp.py --model $1 --requests $2 --preroll $PREROLL --warmup 20 --gap-ms $3 --arrivals $ARRIVALS --latencies $4 $touch ${HP_ARGS:-} ${*:5}"
  fi
}
be_cmd() { # model seconds readyfile
  if [[ $DRY == sim ]]; then
    echo "$B/bin/be_trainer --seconds $2 --step-times ${3%.ready}.steps ${SIM_BE[*]@Q}; : $3"
  else
    echo "python3 $WL/svc_be.py --model $1 --seconds $2 --ready $3 --steps-log ${3%.ready}.steps"
  fi
}

# MPS: started for the whole run (isolated runs included), stopped at exit.
MPS_ARGS=(--mps off)
MPS_STARTED=0
MPSCTL=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mosaic15-mps-$$ CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log
daemon_pid="" be_pid="" hp_pid=""
archived=0
# Few files come back from the device, 16 MiB each: every run's files go
# into run.tgz, the recorded traces (megabytes: a training job's trace has
# three lines a kernel) and tune's kept trials into traces.tgz, which is
# dropped, and said, when over 15 MiB, so that run.tgz always comes back.
archive() {
  [[ $archived == 1 || ! -d $OUT/run ]] && return
  local big=() mib
  mapfile -t big < <(cd "$OUT" && find run -maxdepth 1 \( -name '*.trace' -o -name '*.keep' \) | sort)
  tar -C "$OUT" -czf "$OUT/run.tgz" ${big[@]/#/--exclude=} run $( [[ -d $OUT/prof ]] && echo prof) 2>/dev/null && archived=1
  if [[ ${#big[@]} -gt 0 ]]; then
    tar -C "$OUT" -czf "$OUT/traces.tgz" "${big[@]}" 2>/dev/null
    mib=$(( $(stat -c %s "$OUT/traces.tgz" 2>/dev/null || echo 0) / 1048576 ))
    if (( mib >= 15 )); then
      rm -f "$OUT/traces.tgz"
      log "traces.tgz not kept: $mib MiB, over the 16 MiB a file the device returns (shorten REC_BE_S, or TUNE_KEEP off)"
    fi
  fi
  mib=$(( $(stat -c %s "$OUT/run.tgz" 2>/dev/null || echo 0) / 1048576 ))
  (( mib < 15 )) || log "run.tgz is $mib MiB: the device returns files of at most 16 MiB"
}
cleanup() {
  [[ -n $hp_pid ]] && kill -TERM "$hp_pid" 2>/dev/null
  [[ -n $be_pid ]] && kill -TERM "$be_pid" 2>/dev/null
  [[ -n $daemon_pid ]] && kill -TERM "$daemon_pid" 2>/dev/null
  wait 2>/dev/null
  if [[ $MPS_STARTED == 1 ]]; then
    echo quit | "$MPSCTL" >/dev/null 2>&1
    for _ in $(seq 20); do pgrep -f "nvidia-cuda-mps-(control|server)" >/dev/null || break; sleep 0.5; done
    log "mps: stopped"
  fi
  [[ $DRY == sim ]] && "$B/bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null 2>&1
  # Stopped early (a timeout's TERM, a budget): the summary of what ran.
  if [[ -d $OUT/run && ! -s $OUT/summary.txt ]]; then
    TUNE_PS="$TUNE_PS" BASELINES="$BASELINES" python3 "$REPO/scripts/gpu/issue15_summary.py" "$OUT/run" "$PAIRS" "$PS" "$PHASES" "${PAIR_PHASES:-}" >"$OUT/summary.txt" 2>&1
    cp "$OUT/run/results.json" "$OUT/results.json" 2>/dev/null
    tail -40 "$OUT/summary.txt" >&2
  fi
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
if has capture && [[ -z ${ESTIMATE_ONLY:-} ]]; then
  for pair in $PAIRS; do
    for m in ${pair%%:*} ${pair##*:}; do
      [[ -s $OUT/prof/$m.profile.json ]] && continue
      if [[ $m == "${pair%%:*}" ]]; then
        cmd="python3 $WL/svc_hp.py --model $m --requests 2 --warmup 1"
      else
        cmd="python3 $WL/svc_be.py --model $m --seconds 0 --warmup 1"
      fi
      timeout "${CAPTURE_TIMEOUT:-150}" "$PROFBIN" capture -o "$OUT/prof/$m.profile.json" -- $cmd >"$OUT/prof/$m.log" 2>&1
      rc=$?
      # rc 3: an incomplete profile, kept: an HP service in a CUDA graph
      # launches some kernels only under capture (BERT 20, llama 10 on the
      # H200), which the profiler cannot count; the rest are usable. Said,
      # with the profiler's own words.
      log "capture $m rc=$rc $(grep -c '"name"' "$OUT/prof/$m.profile.json" 2>/dev/null) kernel entries$( ((rc == 3)) &&
        echo ": incomplete, kept: $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1])).get("problems", []))[:300])' "$OUT/prof/$m.profile.json" 2>/dev/null)")"
    done
  done
fi
PROFDIR=$OUT/prof
[[ $DRY == sim ]] && PROFDIR=$REPO/profiler/data/h200 && MODELS=$REPO/predictor/models/h200/lockbox
# Replay's dataset (docs/replay.md), named here rather than left to the
# source path compiled into mosaic-sched (the device's copy of the tree is
# elsewhere): the kernel durations from the services' own profiles on the
# GPU (the zoo's under DRY=sim), the measured co-runs, variants and split
# times of the repo's dataset.
DATA=$REPO/profiler/data/h200
if [[ $DRY == sim ]]; then REPLAY_PROFILES=$DATA/zoo.profile.json
else REPLAY_PROFILES=$(ls "$OUT"/prof/*.profile.json 2>/dev/null | tr '\n' ':'); REPLAY_PROFILES=${REPLAY_PROFILES%:}; fi
REPLAY_ENV=(env MOSAIC_SIMGPU_PROFILES="$REPLAY_PROFILES" MOSAIC_SIMGPU_VARIANTS="$DATA/variant_kernels.json"
  MOSAIC_SIMGPU_CORUN="$DATA/corun.jsonl" MOSAIC_SIMGPU_SPLITS="$DATA/splits/time.jsonl")

# The time budget (BUDGET_S, from the script's start; 0: none): a run that
# would not finish within it is skipped, said in the log and in
# run/skipped.txt (the summary lists it), so that a device call's limit
# never cuts a run in half and the summary and archive are still made.
# The estimates are the 2026-12-02 H200 calls': an HP service's start-up
# (torch, the model, the CUDA graph) about 12 s, then its requests at the
# period (a back-to-back run: at the median); a BE job's start-up until its
# ready file about 11 s. The medians: ResNet-50 2.44 ms and BERT 5.28 ms
# measured (sessions 7 and 8), llama's 2 ms a guess (never run on the GPU).
EST_HP_START=${EST_HP_START:-12} EST_BE_START=${EST_BE_START:-11}
[[ $DRY == sim ]] && EST_BE_START=1
est_median_ms() {
  case $1 in resnet50) echo 2.44 ;; bert) echo 5.28 ;; llama) echo 2.0 ;; *) echo 5 ;; esac
}
est_hp_run() { # model period_ms requests: seconds of one HP run, start-up and PREROLL included
  if [[ $DRY == sim ]]; then echo 3; return; fi
  awk -v s="$EST_HP_START" -v g="$2" -v n="$(($3 + PREROLL))" -v m="$(est_median_ms "$1")" -v L="$LOAD" \
    'BEGIN { if (g == "") g = m / L; if (g <= 0) g = m; printf "%d\n", s + n * g / 1e3 + 0.999 }'
}
budget_left() { # seconds-needed what
  (( BUDGET_S == 0 || SECONDS - T0 + $1 <= BUDGET_S )) && return 0
  log "skipped $2: $((BUDGET_S - SECONDS + T0)) s left of BUDGET_S=$BUDGET_S, it needs about $1 s"
  echo "$2" >>"$OUT/run/skipped.txt"
  return 1
}

# REUSE="FILE_OR_DIR ...": what a previous call of this script measured
# that does not depend on the machine's state, taken before anything runs:
# its run.tgz and traces.tgz (or an OUT directory kept with KEEP_RUN=1).
# Taken: each HP model's arrival period (gap_ms: the iso0 run is skipped;
# the isolated runs at that period are still made in this call, since
# every score divides by the same call's), its request kernels (hp.keys,
# keys.json) and, from traces.tgz, the HP and BE recordings (static, tune
# and replay need no recording then). REUSE_ISO=1 also takes the isolated
# runs (iso1/iso2, BE alone): scores then divide by another call's, maybe
# another GPU's, numbers, and the summary says so (run/reused.txt).
reuse() {
  local src tmp f n=0
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/issue15-reuse-XXXXXX")
  for src in $REUSE; do
    if [[ -d $src ]]; then cp -r "$src"/run "$tmp"/ 2>/dev/null || cp -r "$src" "$tmp/run"
    elif [[ -f $src ]]; then tar -C "$tmp" -xzf "$src" 2>/dev/null || { log "REUSE: $src is not a tar.gz of this script's run/: left out"; continue; }
    else log "REUSE: $src does not exist: left out"; continue; fi
  done
  mkdir -p "$OUT/run"
  # A period is the median / LOAD of the call that measured it: taken only
  # from a call of the same LOAD (its load.txt; none before LOAD existed).
  if [[ $(awk '$1 == "load" { print $2 }' "$tmp/run/load.txt" 2>/dev/null) != "$LOAD" ]]; then
    log "REUSE: the periods (gap_ms) not taken: that call's LOAD was $(awk '$1 == "load" { print $2 }' "$tmp/run/load.txt" 2>/dev/null || echo "not recorded (before LOAD)"), this one's $LOAD"
    rm -f "$tmp"/run/*.gap_ms
  fi
  for f in "$tmp"/run/*.gap_ms "$tmp"/run/*.hp.keys "$tmp"/run/*.keys.json "$tmp"/run/*.hp.trace "$tmp"/run/*.be.trace \
           ${REUSE_ISO:+"$tmp"/run/*.iso[012].lat "$tmp"/run/*.be_iso.json}; do
    [[ -s $f && ! -e $OUT/run/${f##*/} ]] || continue
    cp "$f" "$OUT/run/" && n=$((n + 1)) && echo "${f##*/}" >>"$OUT/run/reused.txt"
  done
  rm -rf "$tmp"
  log "REUSE: $n files from $REUSE${REUSE_ISO:+ (with the isolated runs: REUSE_ISO=1)}"
}
[[ -n ${REUSE:-} ]] && reuse

# What the phases asked for should take on the GPU, from the same
# estimates (tune: an upper bound, every split surviving its prediction;
# capture: unmeasured, 60 s a model assumed), printed before anything runs.
# What a call does once (HP alone per HP model, BE alone per BE model, a
# recording per model, costs) is counted once; what REUSE brought is not.
estimate() {
  local hp hp0 co nps nts nsp total=0 pair hm bm m w e per nf
  nps=$(wc -w <<<"$PS") nts=$(wc -w <<<"$TUNE_PS") nsp=$(wc -w <<<"$TUNE_SPLITS")
  local -A seen=()
  # The start: env.txt's torch import and MPS, ~20 s in the 2026-12-02 calls.
  total=20
  printf '  %-34s %-8s ~%4d s\n' "(all)" "start" 20
  for pair in $PAIRS; do
    hm=${pair%%:*} bm=${pair##*:}
    per=$(cat "$OUT/run/$hm.gap_ms" 2>/dev/null)
    hp=$(est_hp_run "$hm" "$per" "$REQUESTS") hp0=$(est_hp_run "$hm" 0 "$REQUESTS")
    co=$((hp + EST_BE_START))
    # parallel start-ups: the longer of the two, and the settle.
    [[ $CORUN_START == serial ]] || co=$(( (hp > EST_BE_START + 1 ? hp : EST_BE_START + 1) + 1 ))
    for w in $(pair_phases "$pair"); do
      case $w in
        capture) e=0; for m in $hm $bm; do [[ -s $OUT/prof/$m.profile.json || -n ${seen[cap$m]:-} ]] || e=$((e + 60)); seen[cap$m]=1; done ;;
        iso) e=0
          [[ -n ${seen[iso$hm]:-} || -s $OUT/run/$hm.iso2.lat ]] || { e=$((2 * hp)); [[ -s $OUT/run/$hm.gap_ms ]] || e=$((e + hp0)); }
          [[ -n ${seen[be$bm]:-} || -s $OUT/run/$bm.be_iso.json ]] || e=$((e + EST_BE_START + BE_ISO_S))
          seen[iso$hm]=1 seen[be$bm]=1 ;;
        overhead) e=0; [[ -n ${seen[ovh$hm]:-} ]] || e=$((5 * OVERHEAD_ROUNDS * hp)); seen[ovh$hm]=1 ;;
        policies) e=$(((3 + nps) * co)) ;;
        static) e=$co ;;
        tune) e=$((nts * (2 * (hp + 2) + (2 + nsp) * (co + 2) + co))) ;;
        replay) e=$((8 * nps)); [[ -n ${seen[rbe$bm]:-} ]] || e=$((e + EST_BE_START + REC_BE_S + 3)); seen[rbe$bm]=1 ;;
        fault) nf=$(awk -v r="$REQUESTS" -v a="$FAULT_AT" -v g="$FAULT_GAP_S" -v t="$FAULT_TAIL_S" -v p="${per:-$(awk -v m="$(est_median_ms "$hm")" -v L="$LOAD" 'BEGIN{print m/L}')}" \
             'BEGIN { n = a + int((g + t) * 1e3 / p + 0.999); print (n > r ? n : r) }')
           e=$(( $(est_hp_run "$hm" "$per" "$nf") + co - hp + 2 )) ;;
        bealone) e=0; [[ -n ${seen[bea$bm]:-} ]] || e=$(($(wc -w <<<"$BEALONE_POLICIES") * (EST_BE_START + BE_ISO_S + 1))); seen[bea$bm]=1 ;;
        costs) e=0; [[ -z ${seen[costs]:-} ]] && e=90; seen[costs]=1 ;;
      esac
      # The HP recording that static, tune and replay share (its keys and
      # trace), once per HP model.
      if [[ $w == static || $w == tune || $w == replay ]]; then
        [[ -n ${seen[rec$hm]:-} || ( -s $OUT/run/$hm.hp.keys && -s $OUT/run/$hm.hp.trace ) ]] || e=$((e + hp))
        seen[rec$hm]=1
      fi
      total=$((total + e))
      printf '  %-34s %-8s ~%4d s\n' "$pair" "$w" "$e"
    done
  done
  printf '  total ~%d s on the GPU (BUDGET_S=%s; LOAD=%s; PREROLL=%s requests an HP run; estimates from the 2026-12-02 H200 runs)\n' "$total" "$BUDGET_S" "$LOAD" "$PREROLL"
}
# ESTIMATE_ONLY=1: print the estimate and stop (plan device calls anywhere).
if [[ -n ${ESTIMATE_ONLY:-} ]]; then estimate; exit 0; fi
[[ $DRY == sim ]] || { estimate | tee -a "$OUT/script.log" >&2; }

# Each phase's wall time, per pair: logged, and kept for the summary.
phase_t0=0 phase_name=""
phase() { # NAME TAG: a phase begins (the one before it ends)
  phase_end
  phase_name=$1/$2 phase_t0=$SECONDS
}
phase_end() {
  [[ -z $phase_name ]] && return
  printf '%s\t%s\t%d\n' "${phase_name#*/}" "${phase_name%%/*}" $((SECONDS - phase_t0)) >>"$OUT/run/phases.tsv"
  log "phase ${phase_name%%/*} (${phase_name#*/}): $((SECONDS - phase_t0)) s"
  phase_name=""
}

if has costs; then
  # Once a call, not per pair: the HP launch through the shim (observe-only
  # against a connected HP client, paired rounds), the BE grant round trip
  # (host hold, and the device gate's host side with a spinning reader in
  # the GPU's place) and the admission decision, in one run of
  # tests/arbiter/bench_arbiter.sh, with the real driver here; then the
  # device's own part of the grant (a host write releasing a
  # cuStreamWaitValue32, scripts/gpu/issue10_gate.sh's wake probe) on the
  # same host. Under DRY=sim: the fake driver, and no device probe.
  # Before MPS is started here: issue10_gate.sh runs its probes without
  # MPS, then starts and stops an MPS control daemon of its own.
  mkdir -p "$OUT/run"
  phase costs all
  # The benchmarks are in any build of this tree (MOSAIC_BUILD_BENCH, on by
  # default, builds them with the tests off too: the carried Release tree).
  [[ -x $B/bin/bench_launch && -x $B/bin/bench_sched_grant && -x $B/bin/bench_decide ]] ||
    log "costs: $B/bin lacks bench_launch, bench_sched_grant or bench_decide: build them into it (cmake -S . -B $BUILD -DMOSAIC_BUILD_BENCH=ON && cmake --build $BUILD --target bench_launch bench_sched_grant bench_decide; a build before tests/bench/targets.cmake made them only with the tests)"
  if [[ $DRY == sim ]]; then
    # The fake driver alone (not on the simulated GPU, whose kernels take time).
    env -u MOSAIC_SIMGPU BENCH_ARBITER_PRELOAD="$PRELOAD" timeout -k 5 "${COSTS_TIMEOUT:-120}" \
      "$REPO/tests/arbiter/bench_arbiter.sh" "$B" "${COSTS_REPS:-2}" \
      >"$OUT/run/costs.bench.out" 2>"$OUT/run/costs.bench.err"
  else
    BENCH_ARBITER_DRIVER=real BENCH_ARBITER_PRELOAD="$PRELOAD" timeout -k 5 "${COSTS_TIMEOUT:-120}" \
      "$REPO/tests/arbiter/bench_arbiter.sh" "$B" "${COSTS_REPS:-5}" \
      >"$OUT/run/costs.bench.out" 2>"$OUT/run/costs.bench.err"
  fi
  log "costs: bench_arbiter rc=$? $(grep -c . "$OUT/run/costs.bench.out") lines"
  # An HP request of 280 kernels as one graph + cuCtxSynchronize, with no
  # shim, observing, as an HP client of a daemon and as the client was
  # before 2026-12-02, interleaved (tests/arbiter/bench_hp_request.sh).
  # Under DRY=sim the fake driver alone, as bench_arbiter above, and short.
  if [[ -x $B/bin/bench_request ]]; then
    env -u MOSAIC_SIMGPU BENCH_HP_DRIVER=$([[ $DRY == sim ]] && echo fake || echo real) STRACE=0 \
      REQUESTS=${COSTS_HP_REQUESTS:-$([[ $DRY == sim ]] && echo 100 || echo 1000)} \
      timeout -k 5 "${COSTS_HP_TIMEOUT:-120}" "$REPO/tests/arbiter/bench_hp_request.sh" "$B" \
      "${COSTS_HP_ROUNDS:-$([[ $DRY == sim ]] && echo 1 || echo 3)}" \
      >"$OUT/run/costs.hp_request.json" 2>"$OUT/run/costs.hp_request.out"
    log "costs: bench_hp_request rc=$?"$'\n'"$(grep -E '^(noshim|observe|hp)' "$OUT/run/costs.hp_request.out")"
  fi
  if [[ $DRY != sim ]]; then
    OUT=$OUT/run/costs_gate timeout -k 5 "${COSTS_GATE_TIMEOUT:-300}" \
      "$REPO/scripts/gpu/issue10_gate.sh" "${COSTS_WAKE_N:-300}" "${COSTS_W64_N:-5000}" \
      >"$OUT/run/costs_gate.out" 2>&1
    log "costs: issue10_gate rc=$? $(grep 'wake, host write -> wait' "$OUT/run/costs_gate.out")"
    rm -rf "$OUT/run/costs_gate/build"
  fi
  phase_end
fi


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

# The daemon of a run. DCONF (a config file, default none), DEXTRA (more
# flags: --hp-kernels for static and tuned runs) and DCMD (the subcommand
# with its arguments, default daemon; the replay phase records) are set by
# the caller for one run.
DCONF="" DEXTRA=() DCMD=()
start_daemon() { # tag policy p
  local sock=$OUT/run/$1.sock
  [[ ${#DCMD[@]} == 0 ]] && DCMD=(daemon)
  rm -f "$sock"
  "$SCHED" --config "${DCONF:-/dev/null}" --socket "$sock" --policy "$2" --slo "$3" \
    --profile-dir "$PROFDIR" --model-dir "$MODELS" --metrics-port "${METRICS_PORT:-19464}" "${MPS_ARGS[@]}" \
    ${DEXTRA[@]+"${DEXTRA[@]}"} $DAEMON_ARGS --log-level info ${DCMD[@]+"${DCMD[@]}"} 2>>"$OUT/run/$1.daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do [[ -S $sock ]] && return 0; sleep 0.05; done
  log "daemon for $1 did not start"; tail -5 "$OUT/run/$1.daemon.log" >&2; return 1
}
# The daemon's metrics page (the run's daemon serves METRICS_PORT) into $1.
scrape_metrics() {
  python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:${METRICS_PORT:-19464}/metrics', timeout=2).read().decode())" \
    >"$1" 2>&1
}
# The BE job for $3 seconds as a BE client of run $1's daemon (alone: no HP
# client), its JSON and stderr kept as $1.be.json and $1.be.err.
be_client() { # tag bm seconds
  env MOSAIC_SCHED_SOCKET="$OUT/run/$1.sock" LD_PRELOAD="$PRELOAD" MOSAIC_ROLE=be \
    bash -c "exec $(be_cmd "$2" "$3" "$OUT/run/$1.ready")" >"$OUT/run/$1.be.json" 2>"$OUT/run/$1.be.err"
}
stop_daemon() {
  [[ -n $daemon_pid ]] && kill -TERM "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; daemon_pid=""; }
# A BE job that dies before its ready file (call 3 of 2026-12-02: the
# static row's cuDNN refused a launch on 12 SMs) ends its run at once
# rather than after the 120 s wait: wait_ready and the watch of the HP
# service's --after wait return as soon as the BE process is gone.
wait_ready() { # file seconds pid: 0 ready, 1 not within seconds, 2 the BE process pid gone
  local i
  for i in $(seq $(($2 * 10))); do
    [[ -e $1 || $DRY == sim ]] && return 0
    kill -0 "$3" 2>/dev/null || return 2
    sleep 0.1
  done
  return 1
}
# The run tag's BE died: TAG.failed says so with its exit status and the
# last line of its stderr (the summary names it: "BE died: ..."); the
# caller stops the HP service and the daemon and goes on to the next run.
be_died() { # tag when
  local rc last
  wait "$be_pid" 2>/dev/null; rc=$?
  be_pid=""
  last=$(grep -v '^[[:space:]]*$' "$OUT/run/$1.be.err" 2>/dev/null | tail -1 | cut -c1-300)
  printf 'BE died %s (exit status %s): %s\n' "$2" "$rc" "${last:-(no output on stderr)}" >"$OUT/run/$1.failed"
  log "$1: $(cat "$OUT/run/$1.failed")"
}

# One co-run: $1 tag, $2 policy ("" = no daemon, no shim), $3 p, $4 hp model,
# $5 be model ("" = HP alone), $6 period ms, [$7 fault: kill the daemon
# once the HP service has ended FAULT_AT measured requests, restart it
# FAULT_GAP_S later]. CORUN_REQUESTS: the HP requests (REQUESTS).
corun() {
  local tag=$1 pol=$2 p=$3 hm=$4 bm=$5 gap=$6 fault=${7:-} sock=$OUT/run/$1.sock env=() prio=0
  local nreq=${CORUN_REQUESTS:-$REQUESTS} HP_TOUCH="" fault_pid=""
  local need
  need=$(est_hp_run "$hm" "$gap" "$nreq")
  if [[ -n $bm ]]; then
    if [[ $DRY == sim || $CORUN_START == serial ]]; then need=$((need + EST_BE_START))
    else need=$(( (need > EST_BE_START + 1 ? need : EST_BE_START + 1) + 1 )); fi
  fi
  budget_left "$need" "$tag" || return 1
  if [[ -n $pol ]]; then
    start_daemon "$tag" "$pol" "$p" || return 1
    env=(MOSAIC_SCHED_SOCKET="$sock" LD_PRELOAD="$PRELOAD")
  fi
  local hp_after=""
  if [[ -n $bm ]]; then
    [[ $pol == mps-priority ]] && prio=1
    rm -f "$OUT/run/$tag.ready"
    date +%s.%N >"$OUT/run/$tag.be_start"
    env "${env[@]}" ${pol:+MOSAIC_ROLE=be} CUDA_MPS_CLIENT_PRIORITY=$prio \
      bash -c "exec $(be_cmd "$bm" 900 "$OUT/run/$tag.ready")" >"$OUT/run/$tag.be.json" 2>"$OUT/run/$tag.be.err" &
    be_pid=$!
    if [[ $DRY == sim || $CORUN_START == serial ]]; then
      wait_ready "$OUT/run/$tag.ready" 120 "$be_pid"
      case $? in
        1) log "$tag: BE not ready after 120 s" ;;
        2) be_died "$tag" "before its ready file"; stop_daemon; return 1 ;;
      esac
      sleep 0.5
      # (DRY=sim's BE has no ready file: a BE that dies at once shows here.)
      kill -0 "$be_pid" 2>/dev/null || { be_died "$tag" "before the HP service started"; stop_daemon; return 1; }
    else
      # parallel: the HP service starts up beside the BE job's start-up and
      # waits, once warm, for its ready file (and AFTER_SETTLE_S more)
      # before its first measured request, as in tune's trials: the
      # measured window is the same, a co-run ~11 s shorter.
      hp_after="--after $OUT/run/$tag.ready --after-timeout 120 --after-settle $AFTER_SETTLE_S"
    fi
  fi
  if [[ -n $fault ]]; then
    # The cue is the HP service's own: it creates $tag.progress once its
    # FAULT_AT-th measured request has ended (--touch-after), so the kill
    # falls among requests being served, whatever the start-up took.
    HP_TOUCH="$FAULT_AT $OUT/run/$tag.progress"
    rm -f "$OUT/run/$tag.progress" "$OUT/run/$tag.kill" "$OUT/run/$tag.restart"
    # The clocks: hp_service and be_trainer (DRY=sim) stamp CLOCK_MONOTONIC
    # ms, the kill and restart are Unix time: the offset, read at once.
    python3 -c 'import time; print(repr(time.time() - time.monotonic()))' >"$OUT/run/$tag.clock"
    ( for _ in $(seq $((${FAULT_WAIT_S:-120} * 200))); do [[ -e $OUT/run/$tag.progress ]] && break; sleep 0.005; done
      if [[ ! -e $OUT/run/$tag.progress ]]; then
        echo "the HP service did not end $FAULT_AT measured requests within ${FAULT_WAIT_S:-120} s: no kill" >"$OUT/run/$tag.fault_err"
        exit 0
      fi
      kill -KILL "$daemon_pid"; date +%s.%N >"$OUT/run/$tag.kill"; sleep "$FAULT_GAP_S"
      "$SCHED" --config /dev/null --socket "$sock" --policy "$pol" --slo "$p" \
        --profile-dir "$PROFDIR" --model-dir "$MODELS" --metrics-port 0 "${MPS_ARGS[@]}" \
        $DAEMON_ARGS --log-level info daemon 2>>"$OUT/run/$tag.daemon2.log" & echo $! >"$OUT/run/$tag.daemon2.pid"
      date +%s.%N >"$OUT/run/$tag.restart" ) &
    fault_pid=$!
  fi
  date +%s.%N >"$OUT/run/$tag.hp_start"
  env "${env[@]}" ${pol:+MOSAIC_ROLE=hp} bash -c "exec $(hp_cmd "$hm" "$nreq" "$gap" "$OUT/run/$tag.lat" $hp_after)" \
    >"$OUT/run/$tag.hp.json" 2>"$OUT/run/$tag.hp.err" &
  hp_pid=$!
  # Until the BE job is ready (parallel start: the HP service's --after
  # wait), a BE that dies stops the HP service, not its 120 s wait.
  local died=""
  if [[ -n $hp_after ]]; then
    while kill -0 "$hp_pid" 2>/dev/null && [[ ! -e $OUT/run/$tag.ready ]]; do
      if ! kill -0 "$be_pid" 2>/dev/null; then
        died=1
        kill -TERM "$hp_pid" 2>/dev/null
        break
      fi
      sleep 0.1
    done
  fi
  wait "$hp_pid"
  local rc=$?
  hp_pid=""
  if [[ -n $died ]]; then
    be_died "$tag" "before its ready file"
    rm -f "$OUT/run/$tag.lat"
    # (The fault run's kill, still waiting for its cue, is not made.)
    [[ -n $fault ]] && kill -TERM "$fault_pid" 2>/dev/null && wait "$fault_pid" 2>/dev/null
    stop_daemon
    return 1
  fi
  if [[ -n $pol && -z $fault ]]; then
    "$SCHED" --socket "$sock" status --json >"$OUT/run/$tag.status.json" 2>&1
    scrape_metrics "$OUT/run/$tag.metrics.txt"
  fi
  if [[ -n $bm ]]; then
    # A BE that ended before the HP service did died during the run (its
    # job runs 900 s): the row is kept, and flagged with the reason.
    if kill -0 "$be_pid" 2>/dev/null; then kill -TERM "$be_pid" 2>/dev/null; wait "$be_pid" 2>/dev/null; be_pid=""
    else be_died "$tag" "during the HP service's run"; mv "$OUT/run/$tag.failed" "$OUT/run/$tag.be_died"; fi
  fi
  stop_daemon
  if [[ -n $fault ]]; then
    wait; [[ -s $OUT/run/$tag.daemon2.pid ]] && kill -TERM "$(cat "$OUT/run/$tag.daemon2.pid")" 2>/dev/null
    [[ -e $OUT/run/$tag.fault_err ]] && log "$tag: $(cat "$OUT/run/$tag.fault_err")"
  fi
  if [[ $rc == 0 ]]; then log "$tag rc=0 $(tail -1 "$OUT/run/$tag.hp.json" 2>/dev/null | cut -c1-160)"
  else log "$tag rc=$rc: the HP service failed: $(tail -2 "$OUT/run/$tag.hp.err" 2>/dev/null | tr '\n' ' ' | cut -c1-240)"; fi
}

mkdir -p "$OUT/run"
printf 'load %s\narrivals %s\ntolerance %s\npreroll %s\n' "$LOAD" "$ARRIVALS" "$LOAD_TOL" "$PREROLL" >"$OUT/run/load.txt"
[[ -n $DAEMON_ARGS ]] && { echo "$DAEMON_ARGS" >"$OUT/run/daemon_args.txt"; log "every daemon: $DAEMON_ARGS"; }
# The HP service alone under the shim, recorded by a daemon of policy none
# (`mosaic-sched record`), and the kernels of one request from it (the
# hp-kernels file of policy static and tune; issue15_keys.py). Once per HP
# model and call.
record_hp() { # hm gap [trace: replay needs the trace, not only the keys]
  local hm=$1 gap=$2
  [[ -s $OUT/run/$hm.hp.keys && ( -z ${3:-} || -s $OUT/run/$hm.hp.trace ) ]] && return 0
  [[ -e $OUT/run/$hm.rec_hp.failed ]] && return 1 # said once already
  rm -f "$OUT/run/$hm.hp.trace"
  DCMD=(record -o "$OUT/run/$hm.hp.trace")
  corun "$hm.rec_hp" none 1.25 "$hm" "" "$gap"
  DCMD=()
  python3 "$REPO/scripts/gpu/issue15_keys.py" "$OUT/run/$hm.hp.trace" "$REQUESTS" "$OUT/run/$hm.hp.keys" "$PREROLL" \
    >"$OUT/run/$hm.keys.json" 2>"$OUT/run/$hm.keys.err"
  local rc=$?
  log "$hm: HP kernels from the trace rc=$rc $(cat "$OUT/run/$hm.keys.json") $(head -c 300 "$OUT/run/$hm.keys.err")"
  [[ $rc == 0 ]] || : >"$OUT/run/$hm.rec_hp.failed"
  return $rc
}
# The BE job alone under the shim, recorded the same way: once per BE model.
record_be() { # bm
  local bm=$1 tag=$1.rec_be
  [[ -s $OUT/run/$bm.be.trace ]] && return 0
  budget_left $((EST_BE_START + REC_BE_S + 3)) "$tag" || return 1
  DCMD=(record -o "$OUT/run/$bm.be.trace")
  start_daemon "$tag" none 1.25 || { DCMD=(); return 1; }
  DCMD=()
  be_client "$tag" "$bm" "$REC_BE_S"
  stop_daemon
  log "$tag: $(tail -1 "$OUT/run/$tag.be.json" | cut -c1-140)"
}
# The commands mosaic-sched tune runs (each under /bin/sh -c, MOSAIC_ROLE
# and MOSAIC_SCHED_SOCKET set by tune). tune starts BE 0.3 s before HP, and
# a PyTorch job takes seconds to load, so on the GPU the HP service waits,
# once warm, for the BE job's --ready file; the BE command first leaves a
# "BE started" mark, which tells the HP command of the same trial that a BE
# job is coming (the isolated trials have none).
tune_cmds() { # hm bm gap: sets thp and tbe
  local hm=$1 bm=$2 gap=$3 mark=$OUT/run/$1+$2.tune_be.started ready=$OUT/run/$1+$2.tune_be.ready
  if [[ $DRY == sim ]]; then
    thp="exec env LD_PRELOAD=${PRELOAD@Q} $(hp_cmd "$hm" "$TUNE_REQUESTS" "$gap" /dev/null)"
    tbe="exec env LD_PRELOAD=${PRELOAD@Q} $(be_cmd "$bm" 900 "$ready")"
  else
    thp="if [ -e ${mark@Q} ]; then rm -f ${mark@Q}; a='--after ${ready}'; else a=; fi; exec env LD_PRELOAD=${PRELOAD@Q} $(hp_cmd "$hm" "$TUNE_REQUESTS" "$gap" /dev/null) \$a"
    tbe="touch ${mark@Q}; rm -f ${ready@Q}; exec env LD_PRELOAD=${PRELOAD@Q} $(be_cmd "$bm" 900 "$ready")"
  fi
}

for pair in $PAIRS; do
  hm=${pair%%:*} bm=${pair##*:} gap=0 T=${pair/:/+} PP=$(pair_phases "$pair")
  # The load: requests (isolated median / LOAD) apart, open loop, from a
  # first run back to back, so that HP alone is in flight LOAD of the time;
  # the isolated baseline is then measured at that load, as every co-run is
  # (two runs pooled). HP alone once per HP model, BE alone once per BE
  # model. run/load.txt says the load for the summary's check.
  if hasp iso; then
    phase iso "$T"
    if [[ ! -s $OUT/run/$hm.iso2.lat ]]; then
      [[ -s $OUT/run/$hm.gap_ms ]] && log "$hm: the arrival period from REUSE: $(cat "$OUT/run/$hm.gap_ms") ms (no back-to-back run)"
    fi
    if [[ ! -s $OUT/run/$hm.iso2.lat && ! -s $OUT/run/$hm.gap_ms ]]; then
      corun "$hm.iso0" "" 1 "$hm" "" 0
      gap=$(python3 -c "import sys; v=sorted(float(l.split()[0]) for l in open(sys.argv[1])); print(round(v[len(v)//2]/float(sys.argv[2]),3))" "$OUT/run/$hm.iso0.lat" "$LOAD" 2>/dev/null || echo 5)
      echo "$gap" >"$OUT/run/$hm.gap_ms"
      log "$hm: requests arrive every $gap ms ($ARRIVALS; the isolated median / LOAD $LOAD)"
    fi
    if [[ ! -s $OUT/run/$hm.iso2.lat ]]; then
      gap=$(cat "$OUT/run/$hm.gap_ms")
      for i in 1 2; do corun "$hm.iso$i" "" 1 "$hm" "" "$gap"; done
    fi
    if [[ ! -s $OUT/run/$bm.be_iso.json ]]; then
      env bash -c "exec $(be_cmd "$bm" "$BE_ISO_S" "$OUT/run/$bm.iso.ready")" >"$OUT/run/$bm.be_iso.json" 2>"$OUT/run/$bm.be_iso.err"
      log "BE $bm alone: $(tail -1 "$OUT/run/$bm.be_iso.json" | cut -c1-120)$([[ -s $OUT/run/$bm.be_iso.json ]] || tail -2 "$OUT/run/$bm.be_iso.err" | tr '\n' ' ' | cut -c1-240)"
    fi
  fi
  gap=$(cat "$OUT/run/$hm.gap_ms" 2>/dev/null || echo 5)
  if hasp overhead && [[ ! -s $OUT/run/$hm.shim_alone1.lat ]]; then
    phase overhead "$T"
    # The shim's cost with no BE work, in steps, interleaved over two rounds:
    # no shim; the shim observing only; as an HP client with no daemon
    # (disconnected); as an HP client of a daemon (policy none).
    for round in $(seq "$OVERHEAD_ROUNDS"); do
      corun "$hm.noshim_alone$round" "" 1 "$hm" "" "$gap"
      MOSAIC_STATS=$OUT/run/$hm.observe$round.stats.json LD_PRELOAD=$PRELOAD corun "$hm.observe_alone$round" "" 1 "$hm" "" "$gap"
      MOSAIC_STATS=$OUT/run/$hm.disc$round.stats.json LD_PRELOAD=$PRELOAD MOSAIC_ROLE=hp MOSAIC_SCHED_SOCKET=$OUT/run/none.sock \
        corun "$hm.disconnected_alone$round" "" 1 "$hm" "" "$gap"
      MOSAIC_STATS=$OUT/run/$hm.shim$round.stats.json corun "$hm.shim_alone$round" none 1.25 "$hm" "" "$gap"
      # The HP client as it was before 2026-12-02 (a completion write behind
      # every graph launch, a doorbell at every request end), beside it.
      MOSAIC_STATS=$OUT/run/$hm.oldmode$round.stats.json MOSAIC_HP_COMPLETION=graph MOSAIC_HP_END_DOORBELL=always \
        corun "$hm.shim_oldmode_alone$round" none 1.25 "$hm" "" "$gap"
    done
  fi
  if hasp policies; then
    phase policies "$T"
    # MosaicSched's rows first: BUDGET_S skips what does not fit, and a
    # call that ran out (session 12's third, BUDGET_S=140) lost exactly the
    # rows it was made for when they came last. The baselines are
    # p-independent (one run each, scored at every p).
    for p in $PS; do corun "$T.mosaic-$p" mosaic "$p" "$hm" "$bm" "$gap"; done
    for pol in $BASELINES; do corun "$T.$pol" "$pol" 1.25 "$hm" "$bm" "$gap"; done
  fi
  keys=$OUT/run/$hm.hp.keys
  if hasp static; then
    phase static "$T"
    # p-independent (no admission control): one run, scored at every p.
    if record_hp "$hm" "$gap"; then
      DEXTRA=(--hp-kernels "$keys")
      corun "$T.static" static 1.25 "$hm" "$bm" "$gap"
      DEXTRA=()
      log "$T.static: $(grep -o 'policy static: HP on [0-9]* SMs, BE on [0-9]*[^(]*' "$OUT/run/$T.static.daemon.log" | head -1)"
    else
      log "$T: static not run: no HP kernels (see $hm.keys.err)"
    fi
  fi
  if hasp tune; then
    phase tune "$T"
    if record_hp "$hm" "$gap"; then
      tune_cmds "$hm" "$bm" "$gap"
      for p in $TUNE_PS; do
        conf=$OUT/run/$T.tune-$p.conf
        printf '# issue15_services.sh: %s + %s at p = %s; mosaic-sched tune writes its pick below\n' "$hm" "$bm" "$p" >"$conf"
        # Two isolated trials, one a candidate (at most the full GPU with
        # BE beside requests and held, and each split), then the tuned run.
        thp_s=$(est_hp_run "$hm" "$gap" "$TUNE_REQUESTS")
        budget_left $(( (2 + 2 + $(wc -w <<<"$TUNE_SPLITS")) * (thp_s + 2) + EST_BE_START * (2 + $(wc -w <<<"$TUNE_SPLITS")) + EST_BE_START + thp_s )) "$T.tune-$p" || continue
        t_tune=$SECONDS
        "$SCHED" --config "$conf" --slo "$p" --hp-kernels "$keys" --profile-dir "$PROFDIR" --model-dir "$MODELS" \
          "${MPS_ARGS[@]}" --log-level warn --tune-splits "$TUNE_SPLITS" --tune-trial-ms "$TUNE_TRIAL_MS" \
          tune --hp-command "$thp" --be-command "$tbe" --json ${TUNE_KEEP:+--keep "$OUT/run/$T.tune-$p.keep"} \
          >"$OUT/run/$T.tune-$p.json" 2>"$OUT/run/$T.tune-$p.err"
        rc=$?
        log "$T tune p=$p rc=$rc $((SECONDS - t_tune)) s: $(grep -v '^ *$' "$OUT/run/$T.tune-$p.err" | tail -2 | tr '\n' ' ' | cut -c1-300)"
        if [[ $rc == 0 ]]; then
          # The pick, run as the MosaicSched row: the config tune wrote
          # (policy mosaic, slo, sm-mode, hp-sms, beside-hp), the same load as the rest.
          DCONF=$conf DEXTRA=(--hp-kernels "$keys")
          corun "$T.tuned-$p" mosaic "$p" "$hm" "$bm" "$gap"
          DCONF="" DEXTRA=()
        fi
      done
    else
      log "$T: tune not run: no HP kernels (see $hm.keys.err)"
    fi
  fi
  if hasp replay; then
    phase replay "$T"
    if record_hp "$hm" "$gap" trace && record_be "$bm"; then
      warm=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['startup_requests'])" "$OUT/run/$hm.keys.json" 2>/dev/null || echo 3)
      t_rep=$SECONDS n_rep=0
      for p in $PS; do
        for pol in none mps-priority orion mosaic; do
          budget_left 10 "$T.replay-$pol-$p" || continue
          "${REPLAY_ENV[@]}" "$SCHED" --config /dev/null --policy "$pol" --slo "$p" --profile-dir "$PROFDIR" \
            --model-dir "$MODELS" --log-level error replay --mode full --warmup "$warm" --be-lead-ms "$REPLAY_BE_LEAD_MS" --json \
            "$OUT/run/$hm.hp.trace" "$OUT/run/$bm.be.trace" >"$OUT/run/$T.replay-$pol-$p.json" 2>"$OUT/run/$T.replay-$pol-$p.err" ||
            log "$T replay $pol p=$p failed: $(head -c 300 "$OUT/run/$T.replay-$pol-$p.err")"
          n_rep=$((n_rep + 1))
        done
      done
      log "$T: $n_rep replays (warm-up $warm requests) took $((SECONDS - t_rep)) s"
    else
      log "$T: replay not run: a recording failed"
    fi
  fi
  if hasp bealone; then
    phase bealone "$T"
    # Once per BE model: BE_ISO_S of the BE job as a BE client of a daemon
    # of each policy, no HP client, as BE alone (iso phase) runs it.
    for pol in $BEALONE_POLICIES; do
      tag=$bm.bealone-$pol
      [[ -s $OUT/run/$tag.be.json ]] && continue
      budget_left $((EST_BE_START + BE_ISO_S + 1)) "$tag" || continue
      start_daemon "$tag" "$pol" 1.25 || continue
      be_client "$tag" "$bm" "$BE_ISO_S"
      scrape_metrics "$OUT/run/$tag.metrics.txt"
      stop_daemon
      log "$tag: $(tail -1 "$OUT/run/$tag.be.json" | cut -c1-120)$([[ -s $OUT/run/$tag.be.json ]] || tail -2 "$OUT/run/$tag.be.err" | tr '\n' ' ' | cut -c1-240)"
    done
  fi
  if hasp fault; then
    phase fault "$T"
    # Enough requests to serve through the kill-restart gap and FAULT_TAIL_S
    # after it at the period (a late request only lengthens the run).
    nf=${FAULT_REQUESTS:-$(python3 -c "import math,sys; print(max(int(sys.argv[1]), int(sys.argv[2]) + math.ceil((float(sys.argv[3]) + float(sys.argv[4])) * 1e3 / max(float(sys.argv[5]), 0.1))))" \
      "$REQUESTS" "$FAULT_AT" "$FAULT_GAP_S" "$FAULT_TAIL_S" "$gap")}
    log "$T.fault: $nf requests, the daemon killed after request $FAULT_AT, restarted $FAULT_GAP_S s later"
    CORUN_REQUESTS=$nf corun "$T.fault" mosaic 1.25 "$hm" "$bm" "$gap" 1
  fi
  phase_end
done

TUNE_PS="$TUNE_PS" BASELINES="$BASELINES" python3 "$REPO/scripts/gpu/issue15_summary.py" "$OUT/run" "$PAIRS" "$PS" "$PHASES" "${PAIR_PHASES:-}" | tee "$OUT/summary.txt"
cp "$OUT/run/results.json" "$OUT/results.json" 2>/dev/null
