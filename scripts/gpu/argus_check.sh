#!/usr/bin/env bash
# Argus on a GPU (issue 12): builds the known-structure kernel
# (tests/argus/kernel_known.cu) for sm_90 with and without markers, runs it
# through the host runtime, decodes the buffers and checks region counts,
# nesting, roles, iterations, lost-record counts and clock alignment
# (tests/argus/gpu_known_main.cu); then writes the text/JSON report and the
# Perfetto trace with the argus CLI where it is built. Prints a short table
# last; full results go under $OUT.
#
#   OUT=/tmp/out scripts/gpu/argus_check.sh [--dry-run] [CTAS]
# --dry-run: build only (and run the PTX/SASS check), no GPU needed.
# Needs nvcc (13.0 tested) and gcc; the CLI is taken from $BUILD/bin/argus
# (default build-gpu, else build) when present.
set -euo pipefail
cd "$(dirname "$0")/../.."
dry=0
if [[ ${1:-} == --dry-run ]]; then dry=1; shift; fi
ctas=${1:-264}
OUT=${OUT:-$PWD/out-argus}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$OUT/build
mkdir -p "$work"
# cuobjdump (and the nvdisasm it runs) beside nvcc, for the SASS comparison.
export PATH=$(dirname "$NVCC"):$PATH
[[ -x $(dirname "$NVCC")/cuobjdump ]] && export CUOBJDUMP=${CUOBJDUMP:-$(dirname "$NVCC")/cuobjdump}
log() { printf '[argus_check] %s\n' "$*" | tee -a "$OUT/script.log" >&2; }

log "building the host runtime and the test kernel into $work"
objs=()
for f in common decode stats registry runtime; do
    # No -Werror here: another compiler on the GPU machine must not stop the
    # run over a warning (CI builds these files with -Werror).
    gcc -std=gnu11 -O2 -Wall -Wextra -fPIC -Iinclude -Iprofiler/argus \
        -c "profiler/argus/$f.c" -o "$work/$f.o"
    objs+=("$work/$f.o")
done
ar rcs "$work/libargus_core.a" "${objs[@]}"
cuda_lib=$(dirname "$NVCC")/../lib64
for v in on off; do
    flags=()
    [[ $v == on ]] && flags=(-DARGUS_ENABLE)
    "$NVCC" -std=c++17 -O3 -arch=sm_90 "${flags[@]}" -Iinclude -Itests/argus \
        tests/argus/gpu_known_main.cu -o "$work/argus_known_$v" \
        -L"$work" -largus_core -L"$cuda_lib" -L"$cuda_lib/stubs" -lcuda -ldl -lpthread \
        >"$work/nvcc_$v.log" 2>&1 || { cat "$work/nvcc_$v.log"; log "nvcc failed"; exit 1; }
done
tests/argus/check_ptx.sh "$NVCC" include "$work/ptx" | tee "$OUT/ptx_check.txt"
if [[ $dry == 1 ]]; then
    log "dry run: built $work/argus_known_on and _off; not run"
    exit 0
fi

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv;
  "$NVCC" --version | tail -2; git rev-parse --short HEAD 2>/dev/null || true; } >"$OUT/env.txt" 2>&1 || true
log "running with markers ($ctas CTAs of 128 threads)"
set +e
"$work/argus_known_on" "$OUT" "$ctas" >"$OUT/run_on.txt" 2>&1; rc_on=$?
"$work/argus_known_off" "$OUT" "$ctas" >"$OUT/run_off.txt" 2>&1; rc_off=$?
set -e
cat "$OUT/run_on.txt" "$OUT/run_off.txt" >&2

BUILD=${BUILD:-build-gpu}
[[ -x $BUILD/bin/argus ]] || BUILD=build
if [[ -x $BUILD/bin/argus && -f $OUT/known.raw ]]; then
    A=$BUILD/bin/argus
    "$A" registry tests/argus/kernel_known.cu -o "$OUT/registry.json"
    "$A" report "$OUT/known.raw" --registry "$OUT/registry.json" --kernel argus_known \
        --json "$OUT/report.json" >"$OUT/report.txt"
    "$A" trace "$OUT/known.raw" --registry "$OUT/registry.json" --kernel argus_known \
        -o "$OUT/trace.json" >/dev/null
    "$A" report "$OUT/wrap.raw" --registry "$OUT/registry.json" >"$OUT/report_wrap.txt" || true
else
    log "no argus CLI in $BUILD/bin: the JSON report and trace are not written"
fi

echo "== argus_check: $(sed -n 3p "$OUT/env.txt")"
grep -E '^(ok  |FAIL|time|info)' "$OUT/run_on.txt" "$OUT/run_off.txt" | sed 's#^.*/run_##'
[[ -f $OUT/report.txt ]] && sed -n '1,12p' "$OUT/report.txt"
echo "== result: markers build exit $rc_on, marker-free build exit $rc_off"
[[ $rc_on == 0 && $rc_off == 0 ]]
