#!/usr/bin/env bash
# Mosaic issue 2 on a GPU machine: does libmosaic.so see every kernel launch,
# and what does it cost per launch?
#
#   OUT=/path/to/results scripts/gpu/issue2_launch_coverage.sh
#
# Run from the repository root. Builds the project and the validation assets
# (CUPTI counter, workloads, benchmark) into a temp dir, runs every workload
# with and without the shim under the CUPTI counter, one debug-log run, two
# passthrough runs, then the launch-overhead benchmark (7 interleaved rounds),
# and finally scripts/gpu/compare_counts.py, whose short table is printed
# last. Results, logs and summary.md/results.json go to $OUT.
# docs/gpu-validation.md explains the output.
#
# Tunables (env): PYTHON (python3), CUDA_HOME (/usr/local/cuda), CUPTI_DIR,
# WL_TIMEOUT (s per workload run, 120), BENCH_ROUNDS (7), BENCH_LAUNCHES
# (100000), BENCH_REPS (in-process repetitions, best taken; 5), DEADLINE_S
# (stop starting workload runs after this many seconds, 270),
# BENCH_DEADLINE_S (stop starting bench rounds, 340).
# It never starts MPS and never touches clocks, power limits, MIG or resets.
set -euo pipefail

: "${OUT:?set OUT to the results directory}"
if [[ ! -f CMakeLists.txt || ! -d scripts/gpu/workloads ]]; then
    echo "run this from the Mosaic repository root" >&2
    exit 2
fi
REPO=$(pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
mkdir -p "$OUT/wl" "$OUT/bench"

PY=${PYTHON:-python3}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA_HOME/bin/nvcc
WL_TIMEOUT=${WL_TIMEOUT:-120}
BENCH_ROUNDS=${BENCH_ROUNDS:-7}
BENCH_LAUNCHES=${BENCH_LAUNCHES:-100000}
BENCH_REPS=${BENCH_REPS:-5}
DEADLINE_S=${DEADLINE_S:-270}
BENCH_DEADLINE_S=${BENCH_DEADLINE_S:-340}
SRC=$REPO/scripts/gpu
SHIM=$REPO/build/lib/libmosaic.so
WORK=$(mktemp -d /tmp/mosaic-issue2.XXXXXX)
T0=$SECONDS

# Nothing inherited may leak into the runs.
unset LD_PRELOAD MOSAIC_STATS MOSAIC_LOG MOSAIC_MODE CUDA_INJECTION64_PATH \
      CUPTI_COUNT_OUT CUDA_LAUNCH_BLOCKING 2>/dev/null || true
export TRITON_CACHE_DIR=$WORK/triton-cache
export PYTHONDONTWRITEBYTECODE=1

log() {
    printf '[%s +%3ds] %s\n' "$(date +%T)" $((SECONDS - T0)) "$*" |
        tee -a "$OUT/script.log" >&2
}

printf 'name\tvariant\trc\tseconds\tnote\n' >"$OUT/runs.tsv"
printf 'round\tvariant\trc\tseconds\n' >"$OUT/bench/bench.tsv"
log "results in $OUT, build dir $WORK"

# --------------------------------------------------------------- environment
{
    echo "== date"; date -u
    echo "== uname"; uname -a
    echo "== nvidia-smi"; nvidia-smi || true
    echo "== gpu query"
    nvidia-smi --query-gpu=name,driver_version,pci.bus_id,compute_mode,mig.mode.current,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode \
        --format=csv || true
    echo "== /proc/driver/nvidia/version"; cat /proc/driver/nvidia/version || true
    echo "== MPS daemons (not started by this script)"
    pgrep -a nvidia-cuda-mps || echo none
    echo "== nvcc"; "$NVCC" --version || true
    echo "== cmake"; cmake --version | head -1 || true
    echo "== gcc"; gcc --version | head -1 || true
    echo "== python"
    "$PY" -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' || true
    echo "== git"; git rev-parse HEAD 2>/dev/null || echo "no commit"
    git status --short 2>/dev/null | head -50 || true
    echo "== cpu"; nproc; grep -m1 'model name' /proc/cpuinfo || true
} >"$OUT/env.txt" 2>&1
log "environment recorded in env.txt"

# ---------------------------------------------------------------- build shim
SHIM_OK=0
if { cmake -S . -B build -DMOSAIC_BUILD_TESTS=OFF &&
     cmake --build build -j; } >"$OUT/build_mosaic.log" 2>&1 && [[ -f $SHIM ]]; then
    SHIM_OK=1
    log "built $SHIM"
else
    log "ERROR: building libmosaic.so failed (see build_mosaic.log); shim runs are skipped"
fi

# -------------------------------------------------------------- build assets
CUPTI_LIBDIR=""
for d in ${CUPTI_DIR:-} "$CUDA_HOME/targets/x86_64-linux/lib" \
         /usr/local/cuda-13.0/targets/x86_64-linux/lib \
         "$CUDA_HOME/extras/CUPTI/lib64" "$CUDA_HOME/lib64"; do
    if [[ -n $d && ( -e $d/libcupti.so || -e $d/libcupti.so.13 ) ]]; then
        CUPTI_LIBDIR=$d
        break
    fi
done
CUPTI_LINK=-lcupti
if [[ -n $CUPTI_LIBDIR && ! -e $CUPTI_LIBDIR/libcupti.so ]]; then
    CUPTI_LINK=-l:libcupti.so.13
fi
CUDA_STUBS=$CUDA_HOME/lib64/stubs
[[ -d $CUDA_STUBS ]] || CUDA_STUBS=$CUDA_HOME/targets/x86_64-linux/lib/stubs

declare -A BUILD_PID=()
build_bg() { # name cmd...
    local name=$1
    shift
    ( "$@" ) >"$OUT/build_$name.log" 2>&1 &
    BUILD_PID[$name]=$!
}
NV=("$NVCC" -arch=sm_90 -O2)
W=$SRC/workloads
build_bg cupti_count gcc -shared -fPIC -O2 -Wall -Wextra \
    -I"$CUDA_HOME/include" -I"$REPO/core" -I"$REPO/include" -o "$WORK/libcupti_count.so" \
    "$SRC/cupti_count/cupti_count.c" "$REPO/core/json.c" -L"$CUPTI_LIBDIR" $CUPTI_LINK \
    -Wl,-rpath,"$CUPTI_LIBDIR" -lpthread
build_bg cuda_runtime "${NV[@]}" -o "$WORK/cuda_runtime_prog" "$W/cuda_runtime_prog.cu"
build_bg cuda_runtime_ptds "${NV[@]}" --default-stream per-thread \
    -o "$WORK/cuda_runtime_prog_ptds" "$W/cuda_runtime_prog.cu"
build_bg cuda_runtime_shared "${NV[@]}" -cudart shared \
    -Xlinker -rpath="$CUDA_HOME/lib64" \
    -o "$WORK/cuda_runtime_prog_shared" "$W/cuda_runtime_prog.cu"
build_bg driver_kernel "$NVCC" -arch=sm_90 -cubin -o "$WORK/driver_kernel.cubin" \
    "$W/driver_kernel.cu"
build_bg driver_api gcc -std=gnu11 -O2 -Wall -Wextra -I"$CUDA_HOME/include" \
    -o "$WORK/driver_api_prog" "$W/driver_api_prog.c" -L"$CUDA_STUBS" -lcuda -ldl
build_bg launch_bench "${NV[@]}" -o "$WORK/launch_bench" "$W/launch_bench.cu"
declare -A BUILT=()
for name in "${!BUILD_PID[@]}"; do
    if wait "${BUILD_PID[$name]}"; then
        BUILT[$name]=1
    else
        BUILT[$name]=0
        log "ERROR: building $name failed (see build_$name.log)"
    fi
done
[[ -n $CUPTI_LIBDIR ]] || { log "ERROR: no libcupti found"; BUILT[cupti_count]=0; }
CUPTI_LIB=$WORK/libcupti_count.so
log "assets built (cupti from ${CUPTI_LIBDIR:-nowhere}) after $((SECONDS - T0))s"

# ------------------------------------------------------------------ workloads
# wl_cmd NAME: sets CMD (array) and NEEDS (the asset it needs built).
wl_cmd() {
    NEEDS=""
    case $1 in
    torch_eager)         CMD=("$PY" "$W/torch_eager.py") ;;
    torch_graph)         CMD=("$PY" "$W/torch_graph.py") ;;
    triton_kernel)       CMD=("$PY" "$W/triton_kernel.py") ;;
    cuda_runtime)        CMD=("$WORK/cuda_runtime_prog"); NEEDS=cuda_runtime ;;
    cuda_runtime_ptds)   CMD=("$WORK/cuda_runtime_prog_ptds"); NEEDS=cuda_runtime_ptds ;;
    cuda_runtime_shared) CMD=("$WORK/cuda_runtime_prog_shared"); NEEDS=cuda_runtime_shared ;;
    driver_api)          CMD=("$WORK/driver_api_prog" "$WORK/driver_kernel.cubin")
                         NEEDS=driver_api
                         [[ ${BUILT[driver_kernel]:-0} == 1 ]] || NEEDS=driver_kernel ;;
    *) return 1 ;;
    esac
}

record() { # name variant rc seconds note
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$OUT/runs.tsv"
}

# run_case NAME VARIANT [VAR=value ...] : runs the workload under `env`.
run_case() {
    local name=$1 variant=$2
    shift 2
    local base=$OUT/wl/$name.$variant
    if (( SECONDS - T0 > DEADLINE_S )); then
        record "$name" "$variant" skip 0 "time budget spent"
        log "$name/$variant: skipped (time budget)"
        return 0
    fi
    wl_cmd "$name"
    if [[ -n $NEEDS && ${BUILT[$NEEDS]:-0} != 1 ]]; then
        record "$name" "$variant" build-failed 0 "$NEEDS did not build"
        log "$name/$variant: skipped ($NEEDS did not build)"
        return 0
    fi
    # Cap each run so the whole script stays near its time budget.
    local limit=$((DEADLINE_S + 60 - (SECONDS - T0)))
    (( limit <= WL_TIMEOUT )) || limit=$WL_TIMEOUT
    (( limit >= 15 )) || limit=15
    local t=$SECONDS rc=0
    timeout -k 10 "$limit" env "$@" "${CMD[@]}" \
        >"$base.stdout" 2>"$base.stderr" </dev/null || rc=$?
    local note=""
    (( rc != 124 && rc != 137 )) || note="timeout after ${limit}s"
    record "$name" "$variant" "$rc" $((SECONDS - t)) "$note"
    log "$name/$variant: rc=$rc $((SECONDS - t))s $(grep -m1 '^RESULT:' "$base.stdout" || true)"
}

WORKLOADS=(cuda_runtime cuda_runtime_ptds cuda_runtime_shared driver_api
           triton_kernel torch_eager torch_graph)
CUPTI_ENV_OK=${BUILT[cupti_count]:-0}
for w in "${WORKLOADS[@]}"; do
    cupti_base=() cupti_shim=()
    if [[ $CUPTI_ENV_OK == 1 ]]; then
        cupti_base=(CUDA_INJECTION64_PATH="$CUPTI_LIB"
                    CUPTI_COUNT_OUT="$OUT/wl/$w.base.cupti.%p.json")
        cupti_shim=(CUDA_INJECTION64_PATH="$CUPTI_LIB"
                    CUPTI_COUNT_OUT="$OUT/wl/$w.cupti.%p.json")
    fi
    run_case "$w" base "${cupti_base[@]}"
    if [[ $SHIM_OK == 1 ]]; then
        run_case "$w" shim "${cupti_shim[@]}" LD_PRELOAD="$SHIM" \
            MOSAIC_MODE=observe MOSAIC_STATS="$OUT/wl/$w.mosaic.%p.json"
    else
        record "$w" shim build-failed 0 "libmosaic.so did not build"
    fi
done

if [[ $SHIM_OK == 1 ]]; then
    # One debug-log run (no CUPTI, so the log shows only the program's own
    # driver lookups); its stderr is kept in $OUT.
    run_case torch_eager debug LD_PRELOAD="$SHIM" MOSAIC_LOG=debug \
        MOSAIC_STATS="$OUT/wl/torch_eager.debug.mosaic.%p.json"
    if [[ -f $OUT/wl/torch_eager.debug.stderr ]]; then
        mv "$OUT/wl/torch_eager.debug.stderr" "$OUT/torch_eager.debug.stderr"
        if [[ $(stat -c %s "$OUT/torch_eager.debug.stderr") -gt 50000000 ]]; then
            gzip -f "$OUT/torch_eager.debug.stderr" || true
        fi
    fi
    # Passthrough must forward everything (workloads pass) and count nothing.
    for w in cuda_runtime torch_graph; do
        run_case "$w" passthrough LD_PRELOAD="$SHIM" MOSAIC_MODE=passthrough \
            MOSAIC_STATS="$OUT/wl/$w.passthrough.mosaic.%p.json"
    done
fi

# ------------------------------------------------------------ overhead bench
bench_one() { # round variant
    local r=$1 v=$2 rc=0 t=$SECONDS
    local envs=()
    case $v in
    none) ;;
    observe) envs=(LD_PRELOAD="$SHIM" MOSAIC_MODE=observe
                   MOSAIC_STATS="$OUT/bench/r$r.observe.mosaic.%p.json") ;;
    passthrough) envs=(LD_PRELOAD="$SHIM" MOSAIC_MODE=passthrough
                       MOSAIC_STATS="$OUT/bench/r$r.passthrough.mosaic.%p.json") ;;
    esac
    timeout -k 5 60 env "${envs[@]}" "$WORK/launch_bench" \
        --launches "$BENCH_LAUNCHES" --chunk 1000 --reps "$BENCH_REPS" --mode both \
        >"$OUT/bench/r$r.$v.json" 2>"$OUT/bench/r$r.$v.stderr" </dev/null || rc=$?
    printf '%s\t%s\t%s\t%s\n' "$r" "$v" "$rc" $((SECONDS - t)) >>"$OUT/bench/bench.tsv"
}

if [[ ${BUILT[launch_bench]:-0} == 1 ]]; then
    VARIANTS=(none)
    [[ $SHIM_OK == 1 ]] && VARIANTS+=(observe passthrough)
    # Untimed warm-up run (context creation, clocks ramp).
    timeout -k 5 60 "$WORK/launch_bench" --launches 20000 --reps 1 >/dev/null 2>&1 || true
    log "bench: $BENCH_ROUNDS rounds x ${#VARIANTS[@]} variants, best of $BENCH_REPS x $BENCH_LAUNCHES launches"
    for ((r = 1; r <= BENCH_ROUNDS; r++)); do
        if (( SECONDS - T0 > BENCH_DEADLINE_S )); then
            log "bench: stopping after $((r - 1)) rounds (time budget)"
            break
        fi
        # Rotate the order each round so drift and order effects cancel.
        n=${#VARIANTS[@]}
        for ((i = 0; i < n; i++)); do
            bench_one "$r" "${VARIANTS[(i + r) % n]}"
        done
    done
    log "bench done"
else
    log "ERROR: launch_bench did not build; no overhead numbers"
fi

# Post-run GPU state, for spotting throttling.
{
    echo "== gpu query after the runs"
    nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
        --format=csv || true
} >>"$OUT/env.txt" 2>&1

# ------------------------------------------------------------------- compare
log "total $((SECONDS - T0))s; build dir $WORK kept"
rc=0
python3 "$SRC/compare_counts.py" "$OUT" || rc=$?
exit "$rc"
