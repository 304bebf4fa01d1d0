#!/usr/bin/env bash
# Issue 14 on the H200: re-measures only what the run of 2026-12-01 lacks in
# its one-process offset files (profiler/data/h200/offsets/offset_*.jsonl):
# the rows that failed (the pair fma_66_b64_c32 + conv_n8_c256_h14_t16, whose
# first rounds deadlocked on a lazy kernel load, offset.h, zoo_sync_preload)
# and the iso_sync baselines that the failure left out. The pairs come from
# the committed files (scripts/gpu/issue14_merge.py pairs): for that run,
# the one failed pair in each of the three phases (shared, A on 32 SMs, A on
# 64), which measures every missing baseline too. Each phase is one
# mosaic-zoo corun-offset with the same delays, repeats, gate and timeouts
# as issue14_offsets.sh; then issue14_merge.py merges each re-run into a
# copy of its committed file (the copies come back in the pack; committing
# them is the lead's step, with docs/offset-eval.md regenerated on the
# development machine: build/bin/mosaic-offset-eval --doc docs/offset-eval.md,
# which the ctest predictor_offset_eval_doc checks). About 1-2 minutes of
# device time with the build.
#
#   OUT=/tmp/r scripts/gpu/issue14_rerun.sh        on the GPU machine
#   scripts/gpu/issue14_rerun.sh --dry-run         no GPU: builds mosaic-zoo
#       as on the GPU image (without cJSON or libcsv), checks the command
#       lines with --check-args, runs the merge's test, prints the plan
#
# $OUT receives: issue14_rerun.tgz (ds/rerun_*.jsonl, merged/offset_*.jsonl,
# the pair lists, logs), merge.txt (the merge report), env.txt, script.log.
# Never touches clocks, power, MIG or MPS; never resets the GPU.
set -uo pipefail
MODE=full
for arg in "$@"; do
    case $arg in
    --dry-run) MODE=dry ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "issue14_rerun.sh: unknown argument '$arg' (--dry-run)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
if [[ $MODE == dry ]]; then
    OUT=${OUT:-$(mktemp -d /tmp/issue14-rerun-dry.XXXXXX)}
fi
: "${OUT:?set OUT to a results directory}"
mkdir -p "$OUT"
RESULTS=$(cd "$OUT" && pwd)
WORK=${WORK:-/tmp/issue14-rerun.$$}
DS=$WORK/ds
mkdir -p "$DS" "$WORK/merged"
: >"$WORK/script.log"
T0=$SECONDS
log() { printf '[+%4ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$WORK/script.log" >&2; }
COMMITTED=profiler/data/h200/offsets
# The run's settings (issue14_offsets.sh's defaults; the merge matches rows
# by pair, order and delay_spec, so the delays must be these).
DELAYS=0,2,5,10,20,50,0.5x,1x,1.5x
COMMON=(--delays "$DELAYS" --repeats 5 --gate-us 30 --sync-timeout 60
        --order both --peer-timeout-ms 2000 --time-budget 60)
PHASES=(shared part32 part64)
phase_args() {
    case $1 in
    shared) echo "--mode shared" ;;
    part32) echo "--mode partitioned --split 32" ;;
    part64) echo "--mode partitioned --split 64" ;;
    esac
}

# mosaic-zoo with the fix, built as on the GPU image: nvcc 13.0, no cJSON,
# no libcsv (PKG_CONFIG_LIBDIR empty hides them here too); only the
# mosaic-zoo target, which needs CUDA, cuBLAS and the libc-only core.
BUILD=${BUILD:-build-issue14r}
JOBS=$(( $(nproc) > 16 ? 16 : $(nproc) ))
[[ $MODE == dry ]] && JOBS=2
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
log "building mosaic-zoo into $BUILD (-j$JOBS, $NVCC)"
mkdir -p "$WORK/no-pkgconfig"
{ PKG_CONFIG_LIBDIR=$WORK/no-pkgconfig PKG_CONFIG_PATH= \
      cmake -S . -B "$BUILD" -DMOSAIC_BUILD_TESTS=OFF -DMOSAIC_BUILD_CUDA=ON \
      -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  nice -n5 cmake --build "$BUILD" -j "$JOBS" --target mosaic-zoo; } >"$WORK/build.log" 2>&1 ||
    { log "build failed:"; tail -30 "$WORK/build.log" >&2;
      cp "$WORK/build.log" "$WORK/script.log" "$RESULTS/" 2>/dev/null; exit 1; }
ZOO=$REPO/$BUILD/bin/mosaic-zoo
# A zoo without the fix would fail the same rounds again.
if ! grep -q "isolated protocol rounds of" "$ZOO"; then
    log "$ZOO lacks the lazy-load fix (zoo_sync_preload): stale build directory?"
    exit 1
fi
# The development machine has no libcuda.so.1: the dry run loads the
# toolkit's stub, which fails every call, and never gets past --check-args.
if [[ $MODE == dry ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
    mkdir -p "$WORK/stub"
    ln -sf /usr/local/cuda/lib64/stubs/libcuda.so "$WORK/stub/libcuda.so.1"
    export LD_LIBRARY_PATH=$WORK/stub:${LD_LIBRARY_PATH:-}
fi

N_PAIRS=0
for ph in "${PHASES[@]}"; do
    python3 scripts/gpu/issue14_merge.py pairs "$COMMITTED/offset_$ph.jsonl" \
        >"$DS/pairs_$ph.txt" 2>>"$WORK/script.log" ||
        { log "cannot read $COMMITTED/offset_$ph.jsonl"; exit 1; }
    N_PAIRS=$((N_PAIRS + $(wc -l <"$DS/pairs_$ph.txt")))
    log "$ph: $(wc -l <"$DS/pairs_$ph.txt") pairs to re-run: $(tr '\n' ';' <"$DS/pairs_$ph.txt")"
done

pack() {
    [[ $MODE == dry ]] && return 0
    tar czf "$RESULTS/issue14_rerun.tgz.tmp" -C "$WORK" ds merged script.log build.log \
        $(cd "$WORK" && ls ./*.err 2>/dev/null) 2>/dev/null &&
        mv "$RESULTS/issue14_rerun.tgz.tmp" "$RESULTS/issue14_rerun.tgz"
    cp "$DS/env.txt" "$WORK/script.log" "$RESULTS/" 2>/dev/null
    [[ -f $WORK/merge.txt ]] && cp "$WORK/merge.txt" "$RESULTS/"
    return 0
}

if [[ $MODE == dry ]]; then
    n_bad=0 n=0
    for ph in "${PHASES[@]}"; do
        [[ -s $DS/pairs_$ph.txt ]] || continue
        n=$((n + 1))
        # shellcheck disable=SC2046
        if ! "$ZOO" corun-offset --pairs "$DS/pairs_$ph.txt" $(phase_args "$ph") \
                "${COMMON[@]}" -o "$DS/rerun_$ph.jsonl" --check-args 2>>"$WORK/check.log"; then
            n_bad=$((n_bad + 1))
            log "refused: corun-offset for $ph (see $WORK/check.log)"
        fi
    done
    python3 scripts/gpu/issue14_merge_test.py || n_bad=$((n_bad + 1))
    echo
    echo "dry run: $n mosaic-zoo command lines checked, $n_bad wrong; $N_PAIRS pairs over ${#PHASES[@]} phases"
    echo "zoo: $ZOO (built without cJSON/libcsv; log $WORK/build.log)"
    [[ $n_bad == 0 ]] || exit 1
    exit 0
fi

{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,compute_mode,mig.mode.current,clocks.sm,clocks.max.sm --format=csv;
  nvcc --version | tail -2; echo "git $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"; } >"$DS/env.txt" 2>&1
for ph in "${PHASES[@]}"; do
    if [[ ! -s $DS/pairs_$ph.txt ]]; then
        log "$ph: nothing to re-run"
        continue
    fi
    log "$ph: corun-offset $(phase_args "$ph")"
    # shellcheck disable=SC2046
    timeout -k 10 150 "$ZOO" corun-offset --pairs "$DS/pairs_$ph.txt" $(phase_args "$ph") \
        "${COMMON[@]}" -o "$DS/rerun_$ph.jsonl" 2>"$WORK/rerun_$ph.err"
    log "$ph rc=$? ($(grep -c '"record":"corun_offset","ok":true' "$DS/rerun_$ph.jsonl" 2>/dev/null || true) ok rows)"
    python3 scripts/gpu/issue14_merge.py "$COMMITTED/offset_$ph.jsonl" "$DS/rerun_$ph.jsonl" \
        -o "$WORK/merged/offset_$ph.jsonl" >>"$WORK/merge.txt" 2>&1 ||
        log "$ph: merge failed (merge.txt)"
    pack
done
cat "$WORK/merge.txt" >&2
log "done; results in $RESULTS (issue14_rerun.tgz, merge.txt, env.txt, script.log)"
pack
