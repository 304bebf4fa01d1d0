#!/usr/bin/env bash
# Robustness checks on the H200 that CI cannot do (no GPU there): the shim
# and the capture library inside programs that fault or that run under
# another CUPTI tool. Prints one line per case and a table last; full
# outputs under $OUT.
#
#   OUT=/tmp/r bash scripts/gpu/robustness.sh
#
# Cases:
#   fault_plain      fault_prog alone: rc 3, its own error message
#   fault_shim       fault_prog under LD_PRELOAD=libmosaic.so (observe, stats):
#                    same rc and message, stats written, 2 launches counted
#   fault_capture    mosaic-profile capture -- fault_prog: the capture exits
#                    with a clear code and message, no hang, the good
#                    kernel's profile kept
#   ncu_shim         ncu over cuda_runtime_prog with libmosaic.so preloaded
#                    (HAMi-core hangs here): completes, program checks pass
#   capture_under_ncu  mosaic-profile capture run under ncu (two CUPTI
#                    users): a clear error, no hang
# Binaries come from $BUILD (default build-gpu, carried; scripts/gpu/lib.sh
# builds it if missing). Never touches clocks, power or MIG; never resets
# the GPU.
set -uo pipefail
PHASES=robustness
source "$(dirname "$0")/lib.sh"
W=$OUT/work
mkdir -p "$W"
SHIM=$REPO/$BUILD/lib/libmosaic.so
T=120
declare -a ROWS
row() { ROWS+=("$(printf '%-18s rc=%-4s %6ss  %s' "$1" "$2" "$3" "$4")"); echo "${ROWS[-1]}"; }
run() { # name cmd...: runs with a timeout, keeps stdout/stderr
    local name=$1; shift
    local t0=$SECONDS
    timeout -k 10 $T "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    RC=$?; DT=$((SECONDS - t0))
}
nvcc -arch=sm_90 -O2 -o "$W/fault_prog" scripts/gpu/workloads/fault_prog.cu 2>"$OUT/build.err" &&
nvcc -arch=sm_90 -O2 -o "$W/cuda_runtime_prog" scripts/gpu/workloads/cuda_runtime_prog.cu 2>>"$OUT/build.err" ||
    { echo "build failed"; cat "$OUT/build.err"; exit 1; }

run fault_plain "$W/fault_prog"
row fault_plain $RC $DT "$(tail -1 "$OUT/fault_plain.out")"

run fault_shim env LD_PRELOAD="$SHIM" MOSAIC_MODE=observe MOSAIC_STATS="$OUT/fault_shim.stats.json" "$W/fault_prog"
n=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('launches',{}).get('total', d.get('launches_total','?')))" "$OUT/fault_shim.stats.json" 2>/dev/null || echo "no stats")
row fault_shim $RC $DT "$(tail -1 "$OUT/fault_shim.out"); stats launches: $n; stderr lines: $(wc -l <"$OUT/fault_shim.err")"

run fault_capture "$PROF" capture -o "$OUT/fault_capture.json" -- "$W/fault_prog"
k=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['kernels']), [x['name'][:12] for x in d['kernels']])" "$OUT/fault_capture.json" 2>/dev/null || echo "no profile")
row fault_capture $RC $DT "kernels: $k; $(grep -m1 -i 'mosaic-profile' "$OUT/fault_capture.err" | cut -c1-150)"

run ncu_shim ncu --metrics sm__cycles_active.avg env LD_PRELOAD="$SHIM" MOSAIC_MODE=observe \
    MOSAIC_STATS="$OUT/ncu_shim.stats.%p.json" "$W/cuda_runtime_prog"
row ncu_shim $RC $DT "$(grep -m1 '^RESULT' "$OUT/ncu_shim.out" || grep -c 'sm__cycles_active.avg' "$OUT/ncu_shim.out") stats files: $(ls "$OUT"/ncu_shim.stats.*.json 2>/dev/null | wc -l)"

run capture_under_ncu ncu --metrics sm__cycles_active.avg "$PROF" capture -o "$OUT/cun.json" -- "$W/cuda_runtime_prog"
row capture_under_ncu $RC $DT "$(grep -m1 -i 'mosaic-profile\|mosaic_capture' "$OUT/capture_under_ncu.err" "$OUT/capture_under_ncu.out" | cut -c1-160)"

{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ncu --version | tail -1; } >"$OUT/env.txt" 2>&1
echo
printf '%s\n' "${ROWS[@]}" | tee "$OUT/table.txt"
