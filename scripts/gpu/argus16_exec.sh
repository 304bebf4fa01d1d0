#!/usr/bin/env bash
# Issue 13, `argus exec` runs every backend, on the H200: one marked variant
# of the cp.async K-loop GEMM (tests/argus/async_cpasync.cu, sm_90, run by
# tests/argus/async_run_main.cu) through `argus exec run` with CUPTI
# activity (argus-shim), the range profiler (mosaic-profile capture), the
# Sanitizer PC-to-region map (libargus_pcmap.so), BPF (argus-bpf) and SASS
# metrics (argus-sass, where it is built): five evidence files, each
# collector in a run of its own on CUDA_VISIBLE_DEVICES=0.
#
#   scripts/gpu/argus16_exec.sh --prepare          (here: BUILD=gpu-carry, carry it)
#   OUT=/tmp/out scripts/gpu/argus16_exec.sh       (on the H200, gpu-carry carried)
#   OUT=/tmp/out scripts/gpu/argus16_exec.sh --dry-run   (here, BUILD=build, no GPU)
#
# Checked on the GPU: cupti_activity ok with the kernel; range_profiler ok
# with kernel _Z..gemm.. and a dram_read_bytes value > 0 in bytes;
# sanitizer_patch ok with executions under a mainloop region path; bpf ok
# with cuLaunchKernel events, or unavailable saying why (no CAP_BPF);
# sass_metrics ok, or unavailable saying argus-sass is not installed.
# The --dry-run checks only that every evidence file is written with a
# status and a why (the runs fail: no GPU). Results: $OUT/argus16_exec.tar.gz
# and $OUT/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
mode=run
for a in "$@"; do
    case $a in
    --dry-run) mode=dry ;;
    --prepare) mode=prepare ;;
    *) echo "argus16_exec.sh: unknown argument $a (use --dry-run or --prepare)" >&2; exit 2 ;;
    esac
done
[[ $mode == dry ]] && BUILD=${BUILD:-build} || BUILD=${BUILD:-gpu-carry}
BDIR=$REPO/$BUILD
[[ $BUILD == /* ]] && BDIR=$BUILD
if [[ $mode == prepare ]]; then
    cmake -S . -B "$BDIR" -DCMAKE_BUILD_TYPE=Release -DMOSAIC_BUILD_TESTS=OFF >/dev/null
    cmake --build "$BDIR" -j"${JOBS:-2}" --target argus argus-shim argus_inject argus-bpf \
        mosaic-profile mosaic_capture argus_pcmap argus_pcmap_patch
    cjson=$(ldd "$BDIR/bin/argus" | awk '/libcjson/ { print $3 }')
    [[ -n $cjson ]] && cp -L "$cjson" "$BDIR/lib/"
    echo "prepared $BUILD: carry it to the GPU machine"
    exit 0
fi
OUT=${OUT:-$PWD/out-argus16-exec}
mkdir -p "$OUT"
stage=$(mktemp -d "${TMPDIR:-/tmp}/argus16e.XXXXXX")
RES=$stage/argus16_exec
work=$RES/work
mkdir -p "$work"
T0=$SECONDS
log() { printf '[exec +%3ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$RES/script.log" >&2; }
pack() {
    local rc=$?
    set +e
    tar -czf "$OUT/argus16_exec.tar.gz" -C "$stage" --exclude='argus16_exec/work/*.art' \
        --exclude='argus16_exec/work/async_run' argus16_exec &&
        echo "== argus16_exec: results packed into $OUT/argus16_exec.tar.gz" >&2
    [[ -f $RES/summary.txt ]] && cp "$RES/summary.txt" "$OUT/summary.txt" && cat "$RES/summary.txt"
    rm -rf "$stage"
    exit "$rc"
}
trap pack EXIT
ARGUS=$BDIR/bin/argus
for f in bin/argus bin/argus-shim lib/libargus_inject.so; do
    [[ -e $BDIR/$f ]] || { log "no $f in $BUILD: run --prepare here and carry $BUILD"; exit 1; }
done
CUPTI_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$BDIR/lib:$CUPTI_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC)"; exit 1; }
export ARGUS_NVCC=$NVCC
{
    echo "date: $(date -u +%FT%TZ)"; echo "mode: $mode"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "id: $(id)"
} >"$RES/env.txt" 2>&1
log "building the host program"
"$NVCC" -std=c++17 -O2 tests/argus/async_run_main.cu -o "$work/async_run" -lcuda \
    -L/usr/local/cuda/lib64/stubs >"$work/nvcc_host.log" 2>&1 ||
    { cat "$work/nvcc_host.log" >&2; log "nvcc failed on async_run_main.cu"; exit 1; }
cat >"$work/prog.json" <<EOF2
{"schema": "argus.exec.program", "version": 1,
 "source": "$REPO/tests/argus/async_cpasync.cu", "include": ["$REPO/include"], "sm": "90",
 "run": ["$work/async_run", "{cubin}", "5"], "device": "0",
 "env": {"ARGUS_SHIM_ARM_MAX": "1", "ARGUS_SHIM_ARM_CAP": "256"},
 "timeout_s": 120}
EOF2
"$ARGUS" exec transform markers_on v1 "$work/prog.json" 0 -1 "$work/v1.art" 2>>"$RES/script.log"
be=cupti_activity,range_profiler,sanitizer_patch,bpf,sass_metrics
log "argus exec run v1 $be"
t=$(date +%s.%N)
set +e
# The SASS metrics named per backend, as the planner passes them (the
# environment's ARGUS_EXEC_METRICS would reach the range profiler too).
"$ARGUS" exec run --metrics sass_metrics=smsp__sass_inst_executed,smsp__sass_thread_inst_executed \
    v1 $be "$work/v1.art" \
    "$work"/{cupti,range,pcmap,bpf,sass}.json >"$work/run.log" 2>&1
rc=$?
set -e
wall=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
log "exit $rc after $wall s"
python3 - "$work" "$mode" "$wall" "$rc" >"$RES/summary.txt" <<'PY'
import json, sys
w, mode, wall, rc = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
ev = {n: json.load(open(f"{w}/{n}.json")) for n in ("cupti", "range", "pcmap", "bpf", "sass")}
print(f"argus16_exec ({mode}): argus exec run of 5 backends, exit {rc}, {wall} s wall (date +%s.%N)")
checks = []
def check(name, ok):
    checks.append(ok)
    print(f"  {'PASS' if ok else 'FAIL'} {name}")
for n, e in ev.items():
    print(f"  {n}: {e['status']}{' (' + e.get('why', '')[:300] + ')' if e['status'] != 'ok' else ''}"
          f"{'; collector %.2f s' % e['collector_s'] if 'collector_s' in e else ''}")
if mode == "dry":
    check("every evidence file has a status, and a why unless ok",
          all(e["status"] == "ok" or e.get("why") for e in ev.values()))
else:
    check("cupti_activity ok", ev["cupti"]["status"] == "ok")
    r = ev["range"]
    check("range_profiler ok with dram_read_bytes > 0 bytes", r["status"] == "ok" and any(
        k["metrics"].get("dram_read_bytes", {}).get("value", 0) > 0 and
        k["metrics"]["dram_read_bytes"]["unit"] == "bytes" for k in r.get("kernels", [])))
    m = ev["pcmap"]
    check("sanitizer_patch ok with executions under mainloop", m["status"] == "ok" and any(
        x["region"].startswith("mainloop") and x["count"] > 0 for x in m.get("map", [])))
    b = ev["bpf"]
    check("bpf ok with cuLaunchKernel events, or unavailable saying why",
          (b["status"] == "ok" and any(x.get("call") == "cuLaunchKernel" for x in b.get("events", [])))
          or (b["status"] == "unavailable" and "CAP_BPF" in b.get("why", "")))
    s = ev["sass"]
    check("sass_metrics ok with smsp__sass_inst_executed, or unavailable (argus-sass not installed)",
          (s["status"] == "ok" and "smsp__sass_inst_executed" in s.get("metrics", []))
          or (s["status"] == "unavailable" and "not installed" in s.get("why", "")))
print(f"  {sum(checks)} of {len(checks)} checks passed")
sys.exit(0 if all(checks) else 1)
PY
