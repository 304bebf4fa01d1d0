#!/usr/bin/env bash
# Argus hardware metrics on the H200 (docs/argus.md, "Hardware metrics"):
#   OUT=/tmp/out scripts/gpu/argus_metrics.sh [--dry-run | --prepare]
#
# Runs scripts/gpu/workloads/argus_metrics_prog.cu (am_copy streams 1 GiB,
# am_fma is an FMA chain, am_chase one warp per SM following a random
# pointer chain; 3 launches each) under `argus-shim --kernels --hw-metrics`:
# run 1 is `mosaic-profile capture` (CUPTI range profiler, kernel replay),
# run 2 the recorder, joined by kernel name and launch configuration.
# Checked, from the files with python's json (not argus-shim's reader):
#   - the recording names the GPU (a "device" line: NVIDIA H200, 132 SMs)
#     and every kernel line has its grid and block;
#   - the profile has the three kernels with counters, and every kernel
#     configuration of the report is joined (none without an entry, none
#     ambiguous, none on another GPU);
#   - each kernel's label is its design's: am_copy memory-bandwidth, am_fma
#     compute-pipe fma, am_chase latency-bound; printed beside the DRAM %
#     of peak, the highest pipe and the issue activity that decided it.
# A short table is printed last; results (the recording, the profile, the
# report, the text, check.txt, env.txt) are staged outside $OUT and packed
# into $OUT/argus_metrics.tar.gz on exit (also on failure), summary.txt
# beside it.
#
# Needs an argus-shim build carried from the development machine (the GPU
# image has no cJSON or libcsv): `--prepare` makes build-gpu here (Release,
# tests off: argus-shim, libargus_inject.so, mosaic-profile,
# libmosaic_capture.so, with libcjson and libcsv copied into build-gpu/lib);
# carry build-gpu with the device call. nvcc builds the workload there.
# --dry-run (no GPU): the same checker on argus-shim's replay of the test
# fixture (tests/argus/metrics/run.jsonl with known.profile.json, in
# BUILD=build, the ctest build), once with the fixture's right answers (must
# pass) and once with a wrong one (must fail); and the workload compiled for
# sm_90 where nvcc is. Without a GPU a run says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
REPO=$PWD
mode=run
while [[ $# -gt 0 ]]; do
    case $1 in
    --dry-run) mode=dry ;;
    --prepare) mode=prepare ;;
    *) echo "argus_metrics.sh: unknown argument $1 (use --dry-run or --prepare)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $mode == prepare ]]; then
    BUILD=${BUILD:-build-gpu}
    prepare_carry "$BUILD" "argus-shim argus_inject argus mosaic-profile mosaic_capture" \
        'libcjson|libcsv' bin/argus-shim bin/mosaic-profile
    echo "prepared $BUILD: carry it to the GPU machine (bin/argus-shim, bin/mosaic-profile, lib/)"
    exit 0
fi
[[ $mode == dry ]] && BUILD=${BUILD:-build} || BUILD=${BUILD:-build-gpu}
BDIR=$REPO/$BUILD
[[ $BUILD == /* ]] && BDIR=$BUILD
OUT=${OUT:-$PWD/out-argus-metrics}
mkdir -p "$OUT"
stage_results argus_metrics argus-metrics argusmetrics "${ARGUS_STAGE:-}"
trap pack_results EXIT
SHIM=$BDIR/bin/argus-shim
[[ -x $SHIM ]] || { log "no argus-shim in $BUILD: run --prepare on the development machine and carry $BUILD"; exit 1; }

# check.py DIR KERNEL=LABEL...: the checks above on one argus-shim output
# folder; one line per check, a table last; exits 1 when one fails.
cat >"$RES/check.py" <<'PY'
import json, sys
d, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
fails = []
def check(ok, what):
    print(("pass " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
ev = [json.loads(l) for l in open(f"{d}/events.jsonl")] if d != "-" else []
if ev:
    devs = [e for e in ev[1:] if e.get("e") == "device"]
    check(any(x["name"] == "NVIDIA H200" and x["sm_count"] == 132 for x in devs),
          f"recording names the GPU: {[(x['name'], x['sm_count']) for x in devs]}")
    ks = [e for e in ev[1:] if e.get("e") == "kernel"]
    check(ks and all("grid" in e and "block" in e for e in ks), f"{len(ks)} kernel lines with grid and block")
rep = json.load(sys.stdin) if d == "-" else json.load(open(f"{d}/report.json"))
m = rep["metrics"]
check(m["state"] == "loaded", f"profile loaded ({m.get('why', m.get('profile'))})")
if m["state"] != "loaded":
    sys.exit(1)
check(m["configs_without_entry"]["value"] == 0 and m["configs_ambiguous"]["value"] == 0 and
      m["configs_other_gpu"]["value"] == 0 or d == "-",
      "every configuration joined: %s joined, %s without an entry, %s ambiguous, %s other GPU" % tuple(
          m[k]["value"] for k in ("configs_joined", "configs_without_entry", "configs_ambiguous", "configs_other_gpu")))
rows = []
for r in rep["regions"]:
    for c in r.get("hw_metrics", []):
        if c["join"]["state"] != "joined":
            continue
        b = c["bottleneck"]
        v = {i["name"]: i["value"] for i in b["inputs"]}
        pipes = {k: x for k, x in v.items() if k.startswith("pipe_") and x is not None}
        top = max(pipes, key=pipes.get) if pipes else "-"
        dram = v.get("dram_bandwidth_pct_of_peak")
        rows.append((r["name"], c["grid"][0] if "grid" in c else "-", dram, top, pipes.get(top),
                     v.get("issue_active"), b["label"]))
seen = {}
for name, grid, dram, top, tp, ia, label in rows:
    short = next((k for k in want if k in name), None)
    if short is None:
        continue
    seen[short] = label
    check(label == want[short], f"{short} (grid {grid}): {label} (wanted {want[short]})")
for k in want:
    check(k in seen, f"{k} joined and labelled")
print(f"{'kernel':<28} {'grid':>7} {'DRAM%peak':>9} {'top pipe':<22} {'pipe%':>6} {'issue':>6}  label (derived)")
for name, grid, dram, top, tp, ia, label in rows:
    f = lambda x, p: "-" if x is None else f"{x:.{p}f}"
    print(f"{name[:28]:<28} {grid:>7} {f(dram, 1):>9} {top:<22} {f(tp, 1):>6} {f(ia, 2):>6}  {label}")
sys.exit(1 if fails else 0)
PY

if [[ $mode == dry ]]; then
    log "dry run: the checker on the replay of the test fixture (BUILD=$BUILD)"
    "$SHIM" --replay "$REPO/tests/argus/metrics/run.jsonl" \
        --metrics "$REPO/tests/argus/metrics/known.profile.json" -o "$RES/dry" >"$RES/dry.txt" 2>&1 || true
    python3 "$RES/check.py" - k_fma="compute-pipe fma" k_dsmem="compute-pipe lsu" <"$RES/dry/report.json" \
        >"$RES/check.txt" || { cat "$RES/check.txt" >&2; log "FAIL: the checker refused the right answers"; exit 1; }
    if python3 "$RES/check.py" - k_fma=latency-bound <"$RES/dry/report.json" >"$RES/check_wrong.txt"; then
        log "FAIL: the checker passed a wrong answer"; exit 1
    fi
    if command -v nvcc >/dev/null; then
        nvcc -O3 -arch=sm_90 -o "$RES/argus_metrics_prog" "$REPO/scripts/gpu/workloads/argus_metrics_prog.cu" ||
            { log "FAIL: the workload does not compile"; exit 1; }
        set +e; "$RES/argus_metrics_prog" >"$RES/prog.txt" 2>&1; prc=$?; set -e
        [[ $prc == 3 ]] || { log "FAIL: the workload without a GPU exited $prc, not 3"; exit 1; }
    fi
    { echo "argus_metrics dry run: checker right on the fixture, wrong answer refused"; cat "$RES/check.txt"; } >"$RES/summary.txt"
    cat "$RES/summary.txt"
    exit 0
fi

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv 2>&1;
  nvcc --version 2>&1 | tail -2; git -C "$REPO" rev-parse HEAD 2>/dev/null; } >"$RES/env.txt" || true
if ! nvidia-smi -L >/dev/null 2>&1; then
    log "no GPU present: nothing measured"
    echo "no GPU present: nothing measured" >"$RES/summary.txt"
    exit 0
fi
CUPTI_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$BDIR/lib:$CUPTI_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log "building the workload"
nvcc -O3 -arch=sm_90 -lineinfo -o "$RES/argus_metrics_prog" "$REPO/scripts/gpu/workloads/argus_metrics_prog.cu"
log "argus-shim --hw-metrics (run 1: mosaic-profile capture, run 2: the recorder)"
set +e
timeout 300 "$SHIM" --kernels --hw-metrics -o "$RES/hw" -- "$RES/argus_metrics_prog" >"$RES/hw.txt" 2>"$RES/hw.err"
rc=$?
set -e
log "argus-shim exited $rc"
cat "$RES/hw.err" >&2
set +e
python3 "$RES/check.py" "$RES/hw" am_copy=memory-bandwidth am_fma="compute-pipe fma" \
    am_chase=latency-bound >"$RES/check.txt" 2>&1
crc=$?
set -e
{ echo "argus_metrics on $(head -2 "$RES/env.txt" | tail -1): argus-shim exit $rc, checks $([[ $crc == 0 ]] && echo passed || echo FAILED)";
  cat "$RES/check.txt"; } >"$RES/summary.txt"
cat "$RES/summary.txt"
[[ $rc == 0 && $crc == 0 ]]
