#!/usr/bin/env bash
# Issue 14 on the H200: co-runs as the scheduler will meet them. B starts a
# chosen delay after A has dispatched (GPU-side, mosaic-zoo corun-offset),
# shared and at two SM splits, both orders; then the same pairs as two
# processes under MPS (mosaic-zoo mps-offset), launches aligned and offset,
# and a subset with B's process at low MPS client priority. Isolated
# baselines are measured under the same protocol in the same arrangement.
# Works in $WORK (default /tmp/issue14.PID); $OUT receives four files, as
# the device tool brings back at most eight: issue14.tgz (ds/ with every
# JSONL, pair list, plan and env.txt, the logs and the MPS log; refreshed
# after each phase, so a run cut short still returns what it measured),
# summary.txt (the table printed last, scripts/gpu/issue14_summary.py),
# env.txt and script.log.
#
#   OUT=/tmp/r scripts/gpu/issue14_offsets.sh            all phases, ~7 min
#   OUT=/tmp/r scripts/gpu/issue14_offsets.sh --quick    smoke test, ~1.5 min
#   scripts/gpu/issue14_offsets.sh --dry-run             no GPU: builds the
#       zoo, checks that every mosaic-zoo command line below parses (and that
#       bad ones are refused with exit 2), prints the plan
#
# Phases (PHASES overrides; default all, in this order): off_shared
# off_part mps mps_lowprio. Per-phase time budgets (seconds, passed to
# mosaic-zoo --time-budget, which stops starting pairs once spent):
# BUDGET_SHARED (80), BUDGET_PART (110 per split), BUDGET_MPS (90),
# BUDGET_LOW (40); with the build (~40 s when build-gpu is missing or
# stale) the whole run stays inside one 600 s device call. SPLITS (A's SMs,
# default "32 64": the dataset has in-process co-runs of the same pairs at
# those splits). Pairs: scripts/gpu/issue14_pairs.py (seeded, SEED), from
# profiler/data/h200/pairs_part.txt, spread over the ten category pairs.
#
# MPS: the control daemon is started by this script for the MPS phases only,
# with CUDA_MPS_PIPE_DIRECTORY in /tmp (a socket path must be short) and
# CUDA_MPS_LOG_DIRECTORY under $WORK, and stopped at the end of those phases
# and, by a trap, on any exit. Never touches clocks, power, MIG; never
# resets the GPU.
set -uo pipefail
MODE=full QUICK=0
for arg in "$@"; do
    case $arg in
    --dry-run) MODE=dry ;;
    --quick) QUICK=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "issue14_offsets.sh: unknown argument '$arg' (--dry-run, --quick)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/../.." || exit 1
if [[ $MODE == dry ]]; then
    OUT=${OUT:-$(mktemp -d /tmp/issue14-dry.XXXXXX)}
fi
: "${OUT:?set OUT to a results directory}"
mkdir -p "$OUT"
RESULTS=$(cd "$OUT" && pwd)
# Everything below writes under $WORK (lib.sh's OUT); $RESULTS gets the pack.
OUT=${WORK:-/tmp/issue14.$$}
mkdir -p "$OUT"
PHASES=${PHASES:-"off_shared off_part mps mps_lowprio"}
SPLITS=${SPLITS:-32 64}
SEED=${SEED:-20261201}
BUDGET_SHARED=${BUDGET_SHARED:-80}
BUDGET_PART=${BUDGET_PART:-110}
BUDGET_MPS=${BUDGET_MPS:-90}
BUDGET_LOW=${BUDGET_LOW:-40}
REPEATS=5
GATE_US=30
DELAYS=0,2,5,10,20,50,0.5x,1x,1.5x
LOW_DELAYS=0,20,0.5x,1x
NPAIRS="--n-offset 150 --n-mps 100 --n-lowprio 30"
if [[ $QUICK == 1 ]]; then
    BUDGET_SHARED=25 BUDGET_PART=25 BUDGET_MPS=25 BUDGET_LOW=15
    REPEATS=3 DELAYS=0,20,1x LOW_DELAYS=0,1x SPLITS=64
    NPAIRS="--n-offset 10 --n-mps 6 --n-lowprio 3"
fi

# The zoo must have this issue's subcommands: a build-gpu carried from a
# checkout before them is rebuilt (only the mosaic-zoo target, which needs
# nothing but CUDA) into a directory of its own.
BUILD=${BUILD:-build-gpu}
JOBS=$(( $(nproc) > 16 ? 16 : $(nproc) ))
[[ $MODE == dry ]] && JOBS=2
# The development machine has no libcuda.so.1 (a GPU-free container): the
# dry run loads the toolkit's stub, which fails every call, and never gets
# past argument checks.
if [[ $MODE == dry ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
    mkdir -p "$OUT/stub"
    ln -sf /usr/local/cuda/lib64/stubs/libcuda.so "$OUT/stub/libcuda.so.1"
    export LD_LIBRARY_PATH=$OUT/stub:${LD_LIBRARY_PATH:-}
fi
# (grep reads all of the help: with pipefail, grep -q would make it a
# SIGPIPE failure.)
zoo_ok() { [[ -x $1/bin/mosaic-zoo ]] && "$1/bin/mosaic-zoo" --help 2>/dev/null | grep mps-offset >/dev/null; }
if ! zoo_ok "$BUILD"; then
    BUILD=build-issue14
    if ! zoo_ok "$BUILD"; then
        echo "[issue14] building mosaic-zoo into $BUILD (-j$JOBS)" >&2
        NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
        { cmake -S . -B "$BUILD" -DMOSAIC_BUILD_TESTS=OFF -DMOSAIC_BUILD_CUDA=ON \
              -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
          cmake --build "$BUILD" -j "$JOBS" --target mosaic-zoo; } >"$OUT/build.log" 2>&1 ||
            { echo "[issue14] build failed:" >&2; tail -30 "$OUT/build.log" >&2;
              cp "$OUT/build.log" "$RESULTS/" 2>/dev/null; exit 1; }
    fi
fi
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh   # OUT, PHASES -> REPO, DS, ZOO, log, has, env.txt

# shellcheck disable=SC2086
python3 scripts/gpu/issue14_pairs.py "$DS" --seed "$SEED" $NPAIRS \
    --splits "$(wc -w <<<"$SPLITS")" --one-delays "$DELAYS" --mps-delays "$DELAYS" \
    --low-delays "$LOW_DELAYS" --repeats "$REPEATS" --gate-us "$GATE_US" \
    >"$DS/plan.txt" 2>>"$OUT/script.log" ||
    { log "pair selection failed"; exit 1; }

# The results so far into $RESULTS (after every phase and at the end).
pack() {
    [[ $MODE == dry ]] && return 0
    local items=(ds script.log) f
    for f in "$OUT"/*.err "$OUT"/build.log "$OUT"/mps-log; do
        [[ -e $f ]] && items+=("${f#"$OUT"/}")
    done
    tar czf "$RESULTS/issue14.tgz.tmp" -C "$OUT" "${items[@]}" 2>/dev/null &&
        mv "$RESULTS/issue14.tgz.tmp" "$RESULTS/issue14.tgz"
    cp "$DS/env.txt" "$OUT/script.log" "$RESULTS/" 2>/dev/null
    return 0
}

# Every mosaic-zoo command goes through zoo(): in a dry run it only checks
# the arguments (--check-args: exit 0 when the run would start, 2 when not),
# so that the dry run checks the very command lines the GPU run uses.
N_CHECKED=0 N_BAD=0
zoo() {
    if [[ $MODE == dry ]]; then
        N_CHECKED=$((N_CHECKED + 1))
        if ! "$ZOO" "$@" --check-args 2>>"$OUT/check.log"; then
            N_BAD=$((N_BAD + 1))
            echo "[issue14] refused: mosaic-zoo $*" >&2
        fi
        return 0
    fi
    timeout -k 10 "$ZOO_TIMEOUT" "$ZOO" "$@"
}
COMMON=(--repeats "$REPEATS" --gate-us "$GATE_US" --sync-timeout 60 --order both)

if [[ $MODE != dry ]]; then
    { echo "== nvidia-smi"; nvidia-smi; echo "== compute mode, MIG"; 
      nvidia-smi --query-gpu=compute_mode,mig.mode.current,clocks.sm,clocks.max.sm,power.limit --format=csv;
      echo "== git"; echo "$MOSAIC_GIT"; echo "== plan"; cat "$DS/plan.txt"; } >>"$DS/env.txt" 2>&1
fi

if has off_shared; then
    log "off_shared: one process, all SMs, $(wc -l <"$DS/pairs_offset.txt") pairs, delays $DELAYS"
    ZOO_TIMEOUT=$((BUDGET_SHARED + 90))
    zoo corun-offset --peer-timeout-ms "${PEER_TIMEOUT_MS:-2000}" --pairs "$DS/pairs_offset.txt" --mode shared --delays "$DELAYS" \
        "${COMMON[@]}" --time-budget "$BUDGET_SHARED" -o "$DS/offset_shared.jsonl" 2>"$OUT/off_shared.err"
    log "off_shared rc=$?"
    pack
fi
if has off_part; then
    for x in $SPLITS; do
        log "off_part: one process, A on $x SMs, B on the rest"
        ZOO_TIMEOUT=$((BUDGET_PART + 90))
        zoo corun-offset --peer-timeout-ms "${PEER_TIMEOUT_MS:-2000}" --pairs "$DS/pairs_offset.txt" --mode partitioned --split "$x" \
            --delays "$DELAYS" "${COMMON[@]}" --time-budget "$BUDGET_PART" \
            -o "$DS/offset_part$x.jsonl" 2>"$OUT/off_part$x.err"
        log "off_part $x rc=$?"
        pack
    done
fi

MPS_STARTED=0
MPSCTL=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
MPS_PIPE=/tmp/mosaic14-mps-$$
MPS_LOG=$OUT/mps-log
stop_mps() {
    if [[ $MPS_STARTED == 1 ]]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG "$MPSCTL" >/dev/null 2>&1
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            pgrep -u "$(id -u)" -f "nvidia-cuda-mps-(control|server)" >/dev/null || break
            sleep 0.5
        done
        MPS_STARTED=0
        log "mps: control daemon stopped"
    fi
}
trap stop_mps EXIT
trap 'stop_mps; exit 130' INT TERM

# Two processes, one pair list: process a leads the protocol and writes the
# sync block's IPC handle; b opens it. $4: B's MPS client priority.
mps_run() {
    local name=$1 pairs=$2 delays=$3 prio=$4 budget=$5 h=$OUT/$1.handle ra rb pa
    local args=(--ipc-file "$h" --pairs "$pairs" --delays "$delays" "${COMMON[@]}" --handle-wait-s 30)
    local env=(CUDA_MPS_PIPE_DIRECTORY="$MPS_PIPE" CUDA_MPS_LOG_DIRECTORY="$MPS_LOG")
    rm -f "$h"
    ZOO_TIMEOUT=$((budget + 90))
    if [[ $MODE == dry ]]; then
        zoo mps-offset --role a "${args[@]}" --time-budget "$budget" -o "$DS/${name}_a.jsonl"
        zoo mps-offset --role b "${args[@]}" -o "$DS/${name}_b.jsonl"
        return
    fi
    # Process b has no budget of its own: a's control round before each
    # pair tells it to go on or stop.
    env "${env[@]}" timeout -k 10 "$ZOO_TIMEOUT" "$ZOO" \
        mps-offset --role a "${args[@]}" --time-budget "$budget" \
        -o "$DS/${name}_a.jsonl" 2>"$OUT/${name}_a.err" &
    pa=$!
    env "${env[@]}" CUDA_MPS_CLIENT_PRIORITY="$prio" timeout -k 10 "$ZOO_TIMEOUT" "$ZOO" \
        mps-offset --role b "${args[@]}" -o "$DS/${name}_b.jsonl" 2>"$OUT/${name}_b.err"
    rb=$?
    wait "$pa"
    ra=$?
    log "$name rc a=$ra b=$rb"
    pack
}

if has mps || has mps_lowprio; then
    if [[ $MODE == dry ]]; then
        log "mps: (dry run) the control daemon would start with CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE"
    else
        mkdir -p "$MPS_PIPE" "$MPS_LOG"
        if CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG "$MPSCTL" -d; then
            MPS_STARTED=1
            sleep 1
            log "mps: control daemon started ($MPSCTL, pipe $MPS_PIPE)"
        else
            log "mps: could not start the MPS control daemon: the two-process phases are skipped"
        fi
    fi
    if [[ $MPS_STARTED == 1 || $MODE == dry ]]; then
        if has mps; then
            log "mps: two processes, $(wc -l <"$DS/pairs_mps.txt") pairs, delays $DELAYS"
            mps_run mps "$DS/pairs_mps.txt" "$DELAYS" 0 "$BUDGET_MPS"
        fi
        if has mps_lowprio; then
            log "mps_lowprio: B at CUDA_MPS_CLIENT_PRIORITY=1, $(wc -l <"$DS/pairs_lowprio.txt") pairs"
            mps_run mps_lowprio "$DS/pairs_lowprio.txt" "$LOW_DELAYS" 1 "$BUDGET_LOW"
        fi
    fi
    stop_mps
fi

if [[ $MODE == dry ]]; then
    # Bad command lines must be refused before the GPU is touched.
    for bad in "corun-offset --pairs $DS/pairs_offset.txt --delays 1y" \
               "corun-offset --pairs $DS/pairs_offset.txt --bogus-flag" \
               "corun-offset --pairs $DS/pairs_offset.txt --repeats 51" \
               "mps-offset --role c --ipc-file $OUT/h --pairs $DS/pairs_mps.txt" \
               "mps-offset --role a --pairs $DS/pairs_mps.txt" \
               "corun-offset"; do
        N_CHECKED=$((N_CHECKED + 1))
        # shellcheck disable=SC2086
        "$ZOO" $bad --check-args >/dev/null 2>&1
        rc=$?
        if [[ $rc != 2 ]]; then
            N_BAD=$((N_BAD + 1))
            echo "[issue14] not refused with exit 2 (rc $rc): mosaic-zoo $bad" >&2
        fi
    done
    echo
    echo "dry run: $N_CHECKED mosaic-zoo command lines checked, $N_BAD wrong (details: $OUT/check.log)"
    echo "zoo: $ZOO"
    echo "phases: $PHASES; splits: $SPLITS; repeats $REPEATS; gate $GATE_US us"
    python3 - "$DS/plan.json" "$BUDGET_SHARED" "$BUDGET_PART" "$BUDGET_MPS" "$BUDGET_LOW" "$SPLITS" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
bs, bp, bm, bl = map(float, sys.argv[2:6])
splits = sys.argv[6].split()
print(f"pairs: one-process {p['pairs_offset']} ({p['variants_offset']} variants), "
      f"two-process {p['pairs_mps']}, low priority {p['pairs_lowprio']}")
print("per category pair (one-process):", ", ".join(f"{k} {v}" for k, v in p["categories_offset"].items()))
est = p["estimate_s"]
rows = [("off_shared", est["off_shared"], bs)]
rows += [(f"off_part{x}", est[f"off_part{i}"], bp) for i, x in enumerate(splits)]
rows += [("mps", est["mps"], bm), ("mps_lowprio", est["mps_lowprio"], bl)]
print(f"{'phase':14s} {'estimate s':>10s} {'budget s':>9s}")
for n, e, b in rows:
    print(f"{n:14s} {e:10.1f} {b:9.0f}")
tot_e = sum(r[1] for r in rows); tot_b = sum(r[2] for r in rows)
print(f"{'total':14s} {tot_e:10.1f} {tot_b:9.0f}   (+ build ~40 s when build-gpu is missing, "
      f"+ ~10 s MPS start/stop, process starts)")
PY
    [[ $N_BAD == 0 ]] || exit 1
    exit 0
fi

python3 scripts/gpu/issue14_summary.py "$DS" | tee "$DS/summary.txt" "$RESULTS/summary.txt"
log "done; results in $RESULTS (issue14.tgz, summary.txt, env.txt, script.log)"
pack
