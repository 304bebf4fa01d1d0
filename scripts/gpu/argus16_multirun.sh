#!/usr/bin/env bash
# Issue 16, "Multi-run queries": forced-completion probes batched in one
# runtime through `argus query --run` with the real executor (`argus exec`,
# docs/argus-plan.md "The executor"), on the H200.
#
#   BUILD=gpu-carry scripts/gpu/argus16_multirun.sh --prepare     (here, once)
#   OUT=/tmp/out BUILD=gpu-carry scripts/gpu/argus16_multirun.sh   (on the H200)
#   OUT=/tmp/out scripts/gpu/argus16_multirun.sh --dry-run        (here, BUILD=build)
#
# The kernel: the cp.async K-loop GEMM (tests/argus/async_cpasync.cu, sm_90),
# run by tests/argus/async_run_main.cu (a plain CUDA program: argus-shim arms
# its kernel, the executor's markers_on build embeds the registry). For 1,
# 2, 4 and 8 probes (the loop's cp.async operations of region
# mainloop/load at iteration 1, and at 1 and 2 for 8), each batch is ONE
# `argus query --signal async_latency,region_time --run` on a fresh
# workspace: the marked variant, one probe variant per (operation,
# iteration) built by PTX rewriting and ptxas, each run alone under
# argus-shim on the GPU (the runtime's "gpu" class serialises them), the
# evidence stored content-addressed. Measured per batch: wall seconds of the
# whole query (planning, builds, runs, workspace), per probe, and the
# marginal cost of a probe ((T8 - T1) / 7); workspace bytes (du -sb) per
# probe and marginal; against Argus's 1.00 s/probe at 8 and 2.08 MiB/probe.
# The probe latencies: per probe, region mainloop/load's mean cycles at the
# probed iteration in the probe run minus the base run's (iteration i to
# iteration i, from the stored region buffers decoded by `argus report
# --iter I:I`), and a 0-probe floor (the base's own iteration i+1 minus i,
# the difference with nothing forced) beside them.
#
# BUILD: a Release build carried to the GPU machine, holding bin/argus,
# bin/argus-shim, lib/libargus_inject.so and lib/libcjson.so.1 (the GPU
# image has no cJSON): `--prepare` makes it here (default gpu-carry).
# nvcc builds the host program and the variants on the GPU machine.
# Results: $OUT/argus16_multirun.tar.gz (batches.tsv, probes.tsv, the query
# reports and logs, env.txt), $OUT/summary.txt and $OUT/results.json; the
# table is printed last. --dry-run (no GPU): builds, plans and runs the
# queries, so the executor's transforms all run; the runs fail (no GPU) and
# nothing is measured, which the summary says. Tested here in --dry-run
# (nvcc 13.0, no GPU); not yet run on the H200.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
REPO=$PWD
mode=run
for a in "$@"; do
    case $a in
    --dry-run) mode=dry ;;
    --prepare) mode=prepare ;;
    *) echo "argus16_multirun.sh: unknown argument $a (use --dry-run or --prepare)" >&2; exit 2 ;;
    esac
done
[[ $mode == dry ]] && BUILD=${BUILD:-build} || BUILD=${BUILD:-gpu-carry}
BDIR=$REPO/$BUILD
[[ $BUILD == /* ]] && BDIR=$BUILD
if [[ $mode == prepare ]]; then
    prepare_carry "$BDIR" "argus argus-shim argus_inject" libcjson bin/argus
    echo "prepared $BUILD: carry it to the GPU machine (bin/argus, bin/argus-shim, lib/)"
    exit 0
fi
OUT=${OUT:-$PWD/out-argus16-multirun}
mkdir -p "$OUT"
stage_results argus16_multirun multirun argus16m
work=$RES/work
mkdir -p "$work"
# The workspaces' objects are measured, not kept (they are the bulk).
PACK_EXCLUDE=('argus16_multirun/work/ws*' 'argus16_multirun/work/*.art' 'argus16_multirun/work/async_run')
PACK_COPY="results.json summary.txt" PACK_CAT=1 PACK_RM=1
trap pack_results EXIT

ARGUS=$BDIR/bin/argus
[[ -x $ARGUS && -x $BDIR/bin/argus-shim && -f $BDIR/lib/libargus_inject.so ]] ||
    { log "no argus build in $BUILD (bin/argus, bin/argus-shim, lib/libargus_inject.so): run --prepare here and carry $BUILD"; exit 1; }
CUPTI_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$BDIR/lib:$CUPTI_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ARGUS_RECIPES=$REPO/profiler/argus/recipes
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC)"; exit 1; }
export ARGUS_NVCC=$NVCC
now() { date +%s.%N; }

{
    echo "date: $(date -u +%FT%TZ)"
    echo "mode: $mode"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    command -v nvidia-smi >/dev/null &&
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "build: $BUILD ($(stat -c %y "$ARGUS" 2>/dev/null))"
    echo "method: one argus query --run per batch on a fresh workspace, wall time by date +%s.%N;"
    echo "        bytes by du -sb of the workspace; latencies from the stored region buffers"
} >"$RES/env.txt" 2>&1

log "building the host program with $NVCC"
"$NVCC" -std=c++17 -O2 tests/argus/async_run_main.cu -o "$work/async_run" -lcuda \
    -L/usr/local/cuda/lib64/stubs >"$work/nvcc_host.log" 2>&1 ||
    { cat "$work/nvcc_host.log" >&2; log "nvcc failed on async_run_main.cu"; exit 1; }
"$ARGUS" registry tests/argus/async_cpasync.cu -o "$work/reg.json" >/dev/null
cat >"$work/prog.json" <<EOF
{"schema": "argus.exec.program", "version": 1,
 "source": "$REPO/tests/argus/async_cpasync.cu", "include": ["$REPO/include"], "sm": "90",
 "run": ["$work/async_run", "{cubin}", "5"],
 "env": {"ARGUS_SHIM_ARM_MAX": "1", "ARGUS_SHIM_ARM_CAP": "256"},
 "timeout_s": 120}
EOF
# The loop's operations, from the marked variant as the executor builds it.
"$ARGUS" exec transform markers_on v1 "$work/prog.json" 0 -1 "$work/v1.art" 2>>"$RES/script.log"
"$ARGUS" exec discover "$work/v1.art" >"$work/ops_all.json"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
ops = [o for o in json.load(open(f"{w}/ops_all.json")) if o["in_loop"] and o["id"].startswith("0xe693e43.")]
assert len(ops) == 4, ("expected the 4 cp.async of mainloop/load", ops)
for n in (1, 2, 4, 8):
    json.dump(ops[:min(n, 4)], open(f"{w}/ops{n}.json", "w"))
PY

# Where this argus writes each signal's synthesis (argus query --results),
# keep them too: the probe_latency synthesis beside this script's own.
results=()
qhelp=$("$ARGUS" query --help 2>&1 || true)
[[ $qhelp == *--results* ]] && results=(--results)
printf 'probes\twall_s\ts_per_probe\tws_bytes\tbytes_per_probe\tws_files\ttransforms_done\truns_done\truns_failed\texit\n' \
    >"$RES/batches.tsv"
for n in 1 2 4 8; do
    it=1:1
    [[ $n == 8 ]] && it=1:2
    ws=$work/ws$n
    rm -rf "$ws"
    t0=$(now)
    set +e
    "$ARGUS" query --program "$work/prog.json" --registry "$work/reg.json" --region mainloop/load \
        --signal region_time,async_latency --iter "$it" --target-sm 90 --assume-all \
        --discovered "$work/ops$n.json" --executor "$ARGUS exec" --ws "$ws" --run \
        ${results[@]:+"${results[@]}" "$RES/synthesis$n"} \
        >"$RES/query$n.txt" 2>"$RES/query$n.log"
    st=$?
    set -e
    t1=$(now)
    # awk, not bc: the GPU image has no bc (the first H200 run stopped here).
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    bytes=$(du -sb "$ws" | cut -f1)
    files=$(find "$ws" -type f | wc -l)
    td=$(grep -cE '^done +t[0-9]+ +transform' "$RES/query$n.txt" || true)
    rd=$(grep -cE '^done +run[0-9]+ ' "$RES/query$n.txt" || true)
    rf=$(grep -cE '^failed +run[0-9]+ ' "$RES/query$n.txt" || true)
    printf '%s\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$wall" "$(awk -v w="$wall" -v n="$n" 'BEGIN { printf "%.6f", w / n }')" \
        "$bytes" $((bytes / n)) "$files" "$td" "$rd" "$rf" "$st" >>"$RES/batches.tsv"
    log "batch $n: exit $st, ${wall}s, $bytes bytes, transforms done $td, runs done $rd, failed $rf"
done

# Probe latencies from the stored evidence (the largest batch), results.json
# and summary.txt (argus16_multirun.py; its test: argus16_multirun_test.py).
python3 scripts/gpu/argus16_multirun.py "$RES" "$work" "$ARGUS" "$mode" mainloop/load load
if [[ $mode == dry ]]; then
    # The dry run's own check: every batch built all its probe variants.
    awk -F'\t' 'NR > 1 && $7 != $1 + 1 { print "batch " $1 ": " $7 " transforms done, want " $1 + 1; bad = 1 }
                END { exit bad }' "$RES/batches.tsv" || { log "dry run: transforms missing"; exit 1; }
    log "dry run: every batch's variants built; runs need a GPU: nothing measured"
fi
