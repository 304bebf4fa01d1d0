#!/usr/bin/env bash
# Issue 16's optimisation question on the H200, in one device call: a tiled
# fp32 GEMM with Argus regions (tests/argus/gpu_gemm_kernels.cu: base, and
# the two changes a report can point at, dbuf and reg), correctness against
# a reference GEMM first, the region report of each variant, then
# AgentKernelArena-style timing of the marker-free builds, and which region
# dominated, which variant that chooses and its speed-up
# (docs/argus.md, "The optimisation question").
#
#   OUT=/tmp/out scripts/gpu/argus16_gemm.sh [--build-only | --dry-run] [--size N]
#
# Builds standalone like argus16_run.sh (the GPU image has no cJSON): the
# Argus core (decoder, statistics, registry scan, arming) with gcc into
# libargus16gemm.a, the kernels with nvcc -gencode=arch=compute_90a,code=sm_90a
# twice (-DARGUS_ENABLE: *_on; without: *_off), and gpu_gemm_main.cu.
# A run writes $OUT/argus16_gemm.tar.gz (gemm.tsv, gemm.txt, the three
# region reports, ptxas.txt, env.txt, the logs) and summary.txt beside it,
# staged outside $OUT and packed on exit, also on failure (the device tool
# brings back at most 8 files). A short table is printed last.
# --build-only: build and stop. --dry-run: build and run the program's
# no-GPU path. Without a GPU: says so, measures nothing, exits 0.
# Tested with nvcc 13.0 and gcc 12.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=run size=2048
while [[ $# -gt 0 ]]; do
    case $1 in
    --build-only) mode=build ;;
    --dry-run) mode=dry ;;
    --size) size=${2:?--size needs a number}; shift ;;
    *) echo "argus16_gemm.sh: unknown argument $1 (use --build-only, --dry-run, --size N)" >&2; exit 2 ;;
    esac
    shift
done
OUT=${OUT:-$PWD/out-argus16-gemm}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CC=${CC:-gcc}
ARCH=(-gencode=arch=compute_90a,code=sm_90a)
mkdir -p "$OUT"
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
stage_results argus16_gemm gemm argus16gemm "${ARGUS16_STAGE:-}"
work=$RES/build
mkdir -p "$work"
PACK_EXCLUDE=('argus16_gemm/build/*.o' 'argus16_gemm/build/*.a' 'argus16_gemm/build/argus16_gemm')
trap pack_results EXIT
werr=()
nvwerr=()
[[ ${WERROR:-0} == 1 ]] && werr=(-Werror) && nvwerr=(-Werror all-warnings)

[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC): nothing built"; exit 1; }
log "building into $work with $NVCC ($("$NVCC" --version | tail -1))"
objs=()
for f in common decode stats registry runtime; do
    o=$work/$f.o
    "$CC" -std=gnu11 -O2 -Wall -Wextra "${werr[@]}" -Iinclude -Iprofiler/argus \
        -c "profiler/argus/$f.c" -o "$o"
    objs+=("$o")
done
rm -f "$work/libargus16gemm.a"
ar rcs "$work/libargus16gemm.a" "${objs[@]}"
: >"$RES/ptxas.txt"
kobjs=()
for v in on off; do
    flags=()
    [[ $v == on ]] && flags=(-DARGUS_ENABLE)
    "$NVCC" -std=c++17 -O3 "${ARCH[@]}" "${nvwerr[@]}" "${flags[@]}" -Xptxas -v -Iinclude \
        -c tests/argus/gpu_gemm_kernels.cu -o "$work/gemm_$v.o" >"$work/nvcc_$v.log" 2>&1 ||
        { cat "$work/nvcc_$v.log" >&2; log "nvcc failed on gpu_gemm_kernels.cu ($v)"; exit 1; }
    { echo "== gpu_gemm_kernels.cu, markers $v"; grep -E 'ptxas info|bytes stack' "$work/nvcc_$v.log" || true; } >>"$RES/ptxas.txt"
    kobjs+=("$work/gemm_$v.o")
done
"$NVCC" -std=c++17 -O3 "${ARCH[@]}" "${nvwerr[@]}" -Iinclude tests/argus/gpu_gemm_main.cu \
    "${kobjs[@]}" -o "$work/argus16_gemm" -L"$work" -largus16gemm -ldl -lpthread -lm \
    >"$work/nvcc_main.log" 2>&1 ||
    { cat "$work/nvcc_main.log" >&2; log "nvcc failed on gpu_gemm_main.cu"; exit 1; }
log "built $work/argus16_gemm"
[[ $mode == build ]] && exit 0

gpus=$(nvidia-smi -L 2>/dev/null || true)
if [[ $mode == dry || $gpus != *GPU* ]]; then
    set +e
    "$work/argus16_gemm" "$RES" tests/argus/gpu_gemm_kernels.cu >"$RES/nogpu.txt" 2>&1
    rc=$?
    set -e
    log "the program without a GPU: exit $rc: $(head -1 "$RES/nogpu.txt")"
    [[ $rc == 3 || $gpus == *GPU* ]] || { log "expected exit 3 (no GPU)"; exit 1; }
    if [[ $gpus == *GPU* ]]; then
        echo "== argus16_gemm: dry run: built; nothing measured"
    else
        echo "== argus16_gemm: no GPU present (nvidia-smi lists none): nothing measured; built on the CPU only"
    fi
    exit 0
fi

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
    echo "nvcc: $("$NVCC" --version | tail -2 | tr '\n' ' ')"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')"
    echo "build: nvcc -O3 ${ARCH[*]}; argus core with $CC -O2"
    echo "method: correctness vs a double-accumulating reference GEMM first; 10 warm-up launches; a CUDA graph of n launches (a replay ~1 ms, n 1..100); sample = replay event time / n; median of 20 samples (min, max kept); marker-free builds timed; regions from one armed launch of the marker build at 1024^3 (1024 records per warp)"
    echo "clocks: as found (never set)"
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt" >&2
set +e
timeout 300 "$work/argus16_gemm" "$RES" tests/argus/gpu_gemm_kernels.cu "$size" >"$RES/gemm.txt" 2>&1
rc=$?
set -e
log "argus16_gemm: exit $rc"
{
    sed -n 1p "$RES/env.txt"
    sed -n 3p "$RES/env.txt"
    grep -E '^(dominant|chosen|speedup|checks|FAIL|argus16_gemm)' "$RES/gemm.txt" || tail -5 "$RES/gemm.txt"
    echo "variant	what	value	unit"
    awk -F'\t' '$7 == "info" && ($2 ~ /^share of warp time in mainloop\// || $2 ~ /^marker-free kernel time/) { printf "%s\t%s\t%s\t%s\n", $1, $2, $3, $6 }' "$RES/gemm.tsv" 2>/dev/null
} >"$RES/summary.txt"
cat "$RES/summary.txt"
echo "== result: exit $rc ($((SECONDS - T0)) s); full results in $OUT/argus16_gemm.tar.gz"
[[ $rc == 0 ]]
