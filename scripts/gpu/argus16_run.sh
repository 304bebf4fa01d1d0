#!/usr/bin/env bash
# Issue 16 on the H200, in one device call: Argus correctness against known
# ground truth and marker overhead as the Argus paper's Fig. 14a measures it
# (docs/argus.md, "Issue 16 runs (scripts)").
#
#   OUT=/tmp/out scripts/gpu/argus16_run.sh [--build-only | --dry-run] [--rounds N]
#
# Builds, with nvcc for sm_90a and gcc (no cJSON, no CMake: the GPU image
# has neither cJSON nor a need for the full build):
#   the Argus core (profiler/argus: decoder, statistics, launch arming) and
#   the checker (tests/argus/gpu_truth_check.c) into libargus16.a;
#   tests/argus/gpu_truth_kernels.cu and gpu_overhead_kernels.cu, each twice
#   (-DARGUS_ENABLE: names *_on; without: *_off, the marker-free twin), and
#   the overhead kernels a third time with the previous marker design
#   (-DARGUS_MARKER_DESIGN=1, names *_prev: region.cuh), so that one call
#   times both designs against the same marker-free kernel; and twice more
#   with the candidate designs 3 and 4 (-DARGUS_MARKER_DESIGN=3|4
#   -DG16_TAG=d3|d4, names *_d3, *_d4) and once with the floor (design 5:
#   markers that write nothing, *_d5, timed unarmed as "floor"), all in
#   the same process;
#   tests/argus/gpu_argus16_main.cu, linked with all five into build/argus16
#   (under $OUT with --build-only and --dry-run, else in the staging directory).
# Then, on a GPU: `argus16 truth` (arms, runs and decodes the four truth
# kernels, saves truth_*.raw, checks) and `argus16 overhead` (marker-free,
# unarmed and armed builds of both marker designs interleaved, CUDA-graph
# timed). A run writes
# three files into $OUT: argus16.tar.gz (every result file under
# argus16/: results.tsv, results.json, env.txt, truth.txt, truth.tsv,
# overhead.txt, overhead.tsv, overhead_checks.tsv, *.raw, the spin logs
# truth_*_spinlog.bin, ptxas.txt,
# sass.txt, sass_overhead_{on,off,prev,d3,d4,d5}.txt, sass_loops.txt (the SASS
# gate's numbers of tests/argus/check_ptx.sh for the six overhead
# builds), summary.txt, the logs; no build
# products) and
# summary.txt and results.json beside it. The device tool brings back at
# most 8 files from $OUT, and the first run lost everything past them; the
# results are written to a directory outside $OUT (ARGUS16_STAGE, default
# a fresh mktemp directory) and packed when the script exits, also when it
# fails. A short table is printed last.
#
# --build-only: build and stop (the ctest argus_gpu_build).
# --dry-run:    build, run what needs no GPU (the program's no-GPU path and,
#               where cmocka is installed, the checker on device-model
#               buffers), measure nothing.
# Without a GPU the script says so, claims nothing measured and exits 0.
# WERROR=1 makes warnings errors (the ctest sets it; on the GPU machine a
# different compiler must not stop the run over a warning).
# Tested with nvcc 13.0 and gcc 12/13.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=run rounds=7
while [[ $# -gt 0 ]]; do
    case $1 in
    --build-only) mode=build ;;
    --dry-run) mode=dry ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    *) echo "argus16_run.sh: unknown argument $1 (use --build-only, --dry-run, --rounds N)" >&2; exit 2 ;;
    esac
    shift
done
OUT=${OUT:-$PWD/out-argus16}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CC=${CC:-gcc}
# The -gencode form: HOPPER.md saw the -arch=sm_90a shorthand run a plain
# sm_90 pass too.
ARCH=(-gencode=arch=compute_90a,code=sm_90a)
mkdir -p "$OUT"
# RES: where every result file goes. --build-only and --dry-run write into
# $OUT as before (the ctest reads them there); a run stages outside $OUT and
# packs RES into $OUT/argus16.tar.gz on exit (pack, below).
if [[ $mode == run ]]; then
    stage=${ARGUS16_STAGE:-$(mktemp -d "${TMPDIR:-/tmp}/argus16.XXXXXX")}
    RES=$stage/argus16
else
    RES=$OUT
fi
work=$RES/build
mkdir -p "$work"
T0=$SECONDS
log() { printf '[argus16 +%3ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$RES/script.log" >&2; }
# Packs the results (not the build products, only the compiler logs) into
# one tarball in $OUT, with summary.txt and results.json beside it; runs on
# every exit of a run, so that a failure still brings back what was written.
pack() {
    local rc=$?
    set +e
    if [[ -d $RES ]]; then
        tar -czf "$OUT/argus16.tar.gz" -C "$(dirname "$RES")" \
            --exclude='argus16/build/*.o' --exclude='argus16/build/*.a' \
            --exclude='argus16/build/argus16' --exclude='argus16/build/gpu_truth_model' \
            "$(basename "$RES")" &&
            echo "== argus16: results packed into $OUT/argus16.tar.gz ($(du -k "$OUT/argus16.tar.gz" | cut -f1) KiB)" >&2
        for f in summary.txt results.json; do
            [[ -f $RES/$f ]] && cp "$RES/$f" "$OUT/$f"
        done
    fi
    exit "$rc"
}
[[ $mode == run ]] && trap pack EXIT
werr=()
[[ ${WERROR:-0} == 1 ]] && werr=(-Werror)
nvwerr=()
[[ ${WERROR:-0} == 1 ]] && nvwerr=(-Werror all-warnings)

# Writes results.json and prints the target verdicts: for each body, the
# configuration whose marker-free kernel time is nearest 20 us (target: at
# most 5% added) and nearest 500 us (at most 0.1%), its armed added % with
# the rounds' range, and the A/A difference (marker-free timed twice), which
# says whether the target is resolvable at all.
summarise() {
    python3 - "$@" <<'PY'
import csv, json, sys
out, rc_truth, rc_ovh = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def rows(name, header):
    try:
        with open(f"{out}/{name}") as f:
            r = list(csv.reader(f, delimiter="\t"))
    except OSError:
        return []
    if not header:
        r = [dict(zip(["test", "what", "got", "want", "tol", "unit", "verdict"], x)) for x in r]
        return r
    return [dict(zip(r[0], x)) for x in r[1:]]
def num(d):
    for k, v in list(d.items()):
        try:
            d[k] = float(v) if v != "" else None
        except ValueError:
            pass
    return d
truth = [num(r) for r in rows("truth.tsv", False)]
buf = [num(r) for r in rows("overhead_checks.tsv", False)]
ovh = [num(r) for r in rows("overhead.tsv", True)]
for r in ovh:
    for k in ("iters", "launches_per_replay", "replays", "rounds"):
        if isinstance(r.get(k), float):
            r[k] = int(r[k])
try:
    env = open(f"{out}/env.txt").read().splitlines()
except OSError:
    env = []
targets = []
for body in ("compute", "memory"):
    free = {r["iters"]: r for r in ovh if r["body"] == body and r["variant"] == "marker_free"}
    if not free:
        continue
    for want_us, limit in ((20.0, 5.0), (500.0, 0.1)):
        it = min(free, key=lambda i: abs(free[i]["kernel_us_median"] - want_us))
        pick = {r["variant"]: r for r in ovh if r["body"] == body and r["iters"] == it}
        a, aa, un = pick["armed"], pick["marker_free_again"], pick["unarmed"]
        pa = pick.get("prev_armed")
        verdict = "met" if a["added_pct_median"] <= limit else "missed"
        noise = abs(aa["added_pct_median"])
        t = {"body": body, "iters": int(it), "near_us": want_us,
             "free_us": free[it]["kernel_us_median"], "armed_us": a["kernel_us_median"],
             "added_pct": a["added_pct_median"], "added_pct_min": a["added_pct_min"],
             "added_pct_max": a["added_pct_max"], "unarmed_added_pct": un["added_pct_median"],
             "aa_pct": aa["added_pct_median"], "target_pct": limit, "verdict": verdict,
             "resolvable": noise < limit,
             "prev_added_pct": pa["added_pct_median"] if pa else None,
             "new_over_prev": (a["added_pct_median"] / pa["added_pct_median"])
                              if pa and pa["added_pct_median"] else None}
        targets.append(t)
        note = "" if noise < limit else f" (A/A {aa['added_pct_median']:+.3f}% is at or above the target: not resolvable)"
        print(f"target {body:7s} ~{want_us:5.0f} us: iters {int(it):3d}, free {t['free_us']:9.3f} us, "
              f"armed +{t['added_pct']:.3f}% [{t['added_pct_min']:.3f}..{t['added_pct_max']:.3f}], "
              f"unarmed {t['unarmed_added_pct']:+.3f}%, A/A {t['aa_pct']:+.3f}%: {verdict} (<= {limit}%){note}"
              + (f"; previous design +{t['prev_added_pct']:.3f}%" if pa else "")
              + (f", new/previous added {t['new_over_prev']:.2f}" if t["new_over_prev"] is not None else ""))
# The designs side by side (region.cuh, ARGUS_MARKER_DESIGN): armed and
# unarmed added % (median of the rounds) per target configuration, the
# default (2) in the "armed"/"unarmed" rows, design 1 in "prev_*".
designs = (("1", "prev_"), ("2 (default)", ""), ("3", "d3_"), ("4", "d4_"))
if targets:
    print("designs, added % over the marker-free build (median of the rounds; armed / unarmed):")
    print("%-8s %6s %5s %9s %8s" % ("body", "near", "iters", "free_us", "floor") +
          "".join(" %19s" % ("design " + d) for d, _ in designs))
for t in targets:
    pick = {r["variant"]: r for r in ovh if r["body"] == t["body"] and r["iters"] == t["iters"]}
    fl = pick.get("floor")
    t["floor_pct"] = fl["added_pct_median"] if fl else None
    cells, best = [" %7.3f%%" % fl["added_pct_median"] if fl else " %8s" % "-"], None
    for d, pre in designs:
        a, u = pick.get(pre + "armed"), pick.get(pre + "unarmed")
        if a is None or u is None:
            cells.append(" %19s" % "-")
            continue
        t["design_" + d.split()[0] + "_armed_pct"] = a["added_pct_median"]
        t["design_" + d.split()[0] + "_unarmed_pct"] = u["added_pct_median"]
        cells.append(" %9.3f / %7.3f" % (a["added_pct_median"], u["added_pct_median"]))
        if best is None or a["added_pct_median"] < best[1]:
            best = (d.split()[0], a["added_pct_median"])
    t["best_design"] = best[0] if best else None
    print("%-8s %4.0fus %5d %9.3f" % (t["body"], t["near_us"], t["iters"], t["free_us"]) + "".join(cells) +
          ("  best armed: design %s (%s the %.2g%% target)" %
           (best[0], "meets" if best[1] <= t["target_pct"] else "misses", t["target_pct"]) if best else ""))
fails = [r for r in truth + buf if r.get("verdict") == "fail"]
checks = [r for r in truth + buf if r.get("verdict") in ("pass", "fail")]
print(f"checks: {len(checks)} ({len([r for r in truth if r.get('verdict') in ('pass', 'fail')])} truth), "
      f"{len(fails)} failed")
json.dump({"schema": "mosaic.argus16.results", "version": 1, "env": env,
           "exit": {"truth": rc_truth, "overhead": rc_ovh}, "truth": truth,
           "overhead_buffer": buf, "overhead": ovh, "targets": targets},
          open(f"{out}/results.json", "w"), indent=1)
PY
}

[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC): nothing built"; exit 1; }
log "building into $work with $NVCC ($("$NVCC" --version | tail -1))"
objs=()
for f in profiler/argus/common profiler/argus/decode profiler/argus/stats profiler/argus/registry \
    profiler/argus/runtime tests/argus/gpu_truth_check; do
    o=$work/$(basename "$f").o
    "$CC" -std=gnu11 -O2 -Wall -Wextra "${werr[@]}" -Iinclude -Iprofiler/argus -Itests/argus \
        -c "$f.c" -o "$o"
    objs+=("$o")
done
rm -f "$work/libargus16.a"
ar rcs "$work/libargus16.a" "${objs[@]}"
: >"$RES/ptxas.txt"
kobjs=()
for k in truth overhead; do
    vs=(on off)
    # The overhead kernels also with design 1 (prev), the candidate
    # designs 3 and 4 and the floor, design 5 (region.cuh): all timed in
    # the same process.
    [[ $k == overhead ]] && vs+=(prev d3 d4 d5)
    for v in "${vs[@]}"; do
        flags=()
        # ARGUS_FENCE=0|1|2: the markers' clock fence (region.cuh,
        # ARGUS_CLOCK_FENCE_KIND), so that one call can time each.
        [[ $v != off ]] && flags=(-DARGUS_ENABLE ${ARGUS_FENCE:+-DARGUS_CLOCK_FENCE_KIND=$ARGUS_FENCE})
        # The previous marker design (region.cuh, ARGUS_MARKER_DESIGN=1).
        [[ $v == prev ]] && flags+=(-DARGUS_MARKER_DESIGN=1 -DG16_PREV)
        [[ $v == d[0-9] ]] && flags+=(-DARGUS_MARKER_DESIGN=${v#d} -DG16_TAG=$v)
        o=$work/${k}_$v.o
        # -Xptxas -v: registers, spills and stack per kernel, kept in
        # ptxas.txt (markers must not add spills).
        "$NVCC" -std=c++17 -O3 "${ARCH[@]}" "${nvwerr[@]}" "${flags[@]}" -Xptxas -v -Iinclude \
            -Itests/argus -c "tests/argus/gpu_${k}_kernels.cu" -o "$o" >"$work/nvcc_${k}_$v.log" 2>&1 ||
            { cat "$work/nvcc_${k}_$v.log" >&2; log "nvcc failed on gpu_${k}_kernels.cu ($v)"; exit 1; }
        { echo "== gpu_${k}_kernels.cu, markers $v"; grep -E 'ptxas info|bytes stack' "$work/nvcc_${k}_$v.log" || true; } >>"$RES/ptxas.txt"
        kobjs+=("$o")
    done
done
"$NVCC" -std=c++17 -O3 "${ARCH[@]}" "${nvwerr[@]}" -Iinclude -Itests/argus \
    tests/argus/gpu_argus16_main.cu "${kobjs[@]}" -o "$work/argus16" -L"$work" -largus16 \
    -ldl -lpthread -lm >"$work/nvcc_main.log" 2>&1 ||
    { cat "$work/nvcc_main.log" >&2; log "nvcc failed on gpu_argus16_main.cu"; exit 1; }
log "built $work/argus16"
[[ $mode == build ]] && exit 0

# Non-NOP SASS instructions and 8-byte global stores per kernel, markers on
# and off, where cuobjdump (and the nvdisasm it runs) is found: the static
# cost beside the measured one.
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo "$(dirname "$NVCC")/cuobjdump")}
if [[ -x $CUOBJDUMP ]]; then
    for o in "$work"/truth_on.o "$work"/truth_off.o "$work"/overhead_{on,off,prev,d3,d4,d5}.o; do
        "$CUOBJDUMP" -sass "$o" 2>/dev/null | awk -v obj="$(basename "$o")" '
            /Function :/ { f = $3 }
            /^ +\/\*[0-9a-f]+\*\// { if ($0 !~ /NOP/) n[f]++; if ($0 ~ /STG\.E\.64/) st[f]++ }
            END { for (k in n) printf "%s\t%s\t%d instructions\t%d STG.E.64\n", obj, k, n[k], st[k] }'
    done >"$RES/sass.txt" || true
    # The whole SASS of the overhead kernels, with the control words, so
    # that a marker's instructions and stall counts can be read beside the
    # times measured below.
    for v in on off prev d3 d4 d5; do
        "$CUOBJDUMP" -sass "$work/overhead_$v.o" >"$RES/sass_overhead_$v.txt" 2>&1 || true
    done
    # The numbers tests/argus/check_ptx.sh gates (tests/argus/sass_loops.py):
    # the memory kernel's 16-load loop (loads in flight, waits) and the
    # compute kernel's region (instructions, encoded stall cycles), per
    # build, so that the times below sit beside the SASS they ran.
    if command -v python3 >/dev/null 2>&1; then
        for v in off on prev d3 d4 d5; do
            m=$(python3 tests/argus/sass_loops.py loads "$RES/sass_overhead_$v.txt" \
                "$(grep -oE '_Z[0-9]+g16_ovh_memory_'"$v"'PKfPfij' "$RES/sass_overhead_$v.txt" | head -1)" 2>&1)
            c=$(python3 tests/argus/sass_loops.py region "$RES/sass_overhead_$v.txt" \
                "$(grep -oE '_Z[0-9]+g16_ovh_compute_'"$v"'Pfi' "$RES/sass_overhead_$v.txt" | head -1)" 2>&1)
            printf '%s\tmemory %s\tcompute %s\n' "$v" "$m" "$c"
        done >"$RES/sass_loops.txt" || true
    fi
    log "SASS counts in $RES/sass.txt, overhead kernels' SASS in sass_overhead_{on,off,prev,d3,d4,d5}.txt, loop numbers in sass_loops.txt"
else
    log "no cuobjdump: SASS counts not written"
fi

gpu=0
# Read into a variable first: with pipefail, `nvidia-smi | grep -q` could
# fail on a SIGPIPE and report no GPU where there is one.
gpus=$(nvidia-smi -L 2>/dev/null || true)
[[ $gpus == *GPU* ]] && gpu=1
if [[ $mode == dry || $gpu == 0 ]]; then
    set +e
    "$work/argus16" truth "$RES" >"$RES/nogpu.txt" 2>&1
    rc=$?
    set -e
    if [[ $rc == 3 ]]; then
        log "the program's no-GPU path: $(head -1 "$RES/nogpu.txt")"
    elif [[ $rc != 0 ]]; then
        log "argus16 without a GPU exited $rc: $(tail -1 "$RES/nogpu.txt")"
    fi
    if [[ -f /usr/include/cmocka.h ]]; then
        "$CC" -std=gnu11 -O2 -Wall -Wextra "${werr[@]}" -Iinclude -Itests/argus \
            tests/argus/gpu_truth_model.c -o "$work/gpu_truth_model" -L"$work" -largus16 -lcmocka -lm \
            -ldl -lpthread
        "$work/gpu_truth_model" >"$RES/model.txt" 2>&1 && log "checker on device-model buffers: passed" ||
            { cat "$RES/model.txt" >&2; log "checker on device-model buffers: FAILED"; exit 1; }
    else
        log "no cmocka here: the checker's model test is not run (ctest argus_gpu_model runs it)"
    fi
    if [[ $gpu == 0 ]]; then
        echo "== argus16: no GPU present (nvidia-smi lists none): nothing measured; built and checked on the CPU only"
    else
        echo "== argus16: dry run: built and checked on the CPU only; nothing measured"
    fi
    exit 0
fi

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,compute_mode,persistence_mode --format=csv
    echo "nvcc: $("$NVCC" --version | tail -2 | tr '\n' ' ')"
    if rev=$(git rev-parse --short HEAD 2>/dev/null); then
        echo "git: $rev$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    else
        echo "git: not a git checkout"
    fi
    echo "build: nvcc -O3 ${ARCH[*]}; argus core and checker with $CC -O2"
    echo "method: 10 warm-up launches; a CUDA graph of n launches (n so a replay takes ~1 ms, 1..100); sample = replay event time / n; measurement = median of 20 replays; overhead: $rounds rounds, variants interleaved in rotating order; cuda_event_fallback where capture failed (per row in the TSVs)"
    echo "clocks: as found (never set)"
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt" >&2

set +e
log "truth kernels"
timeout 120 "$work/argus16" truth "$RES" >"$RES/truth.txt" 2>&1
rc_truth=$?
log "truth: exit $rc_truth"
log "overhead kernels ($rounds rounds)"
timeout 420 "$work/argus16" overhead "$RES" "$rounds" >"$RES/overhead.txt" 2>&1
rc_ovh=$?
log "overhead: exit $rc_ovh"
set -e

# results.tsv: every row of the three TSVs with its part first;
# results.json: the same, typed, with env.txt.
{
    printf 'part\ttest\twhat\tgot\twant\ttol\tunit\tverdict\n'
    [[ -f $RES/truth.tsv ]] && sed 's/^/truth\t/' "$RES/truth.tsv"
    [[ -f $RES/overhead_checks.tsv ]] && sed 's/^/overhead_buffer\t/' "$RES/overhead_checks.tsv"
} >"$RES/results.tsv"
if command -v python3 >/dev/null 2>&1; then
    summarise "$RES" "$rc_truth" "$rc_ovh" >"$RES/summary.txt" 2>&1 ||
        log "the summary failed (summary.txt says why)"
else
    log "no python3: results.json and the target verdicts are not written"
fi

echo "== argus16: $(sed -n 3p "$RES/env.txt")"
grep -E '^FAIL' "$RES/truth.txt" "$RES/overhead.txt" | head -20 || true
tail -3 "$RES/truth.txt"
grep -E '^(body|compute|memory) ' "$RES/overhead.txt" || tail -5 "$RES/overhead.txt"
[[ -f $RES/summary.txt ]] && cat "$RES/summary.txt"
echo "== result: truth exit $rc_truth, overhead exit $rc_ovh ($((SECONDS - T0)) s); full results in $OUT/argus16.tar.gz (summary.txt and results.json beside it)"
[[ $rc_truth == 0 && $rc_ovh == 0 ]]
