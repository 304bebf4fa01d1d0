#!/usr/bin/env bash
# argus-pcmap on the H200 (issue 13; docs/argus-backends.md): the CUDA
# Sanitizer PC-to-region backend on the known-ratio kernel g16_calls
# (tests/argus/gpu_truth_kernels.cu: work() called 3 times under callA and
# once under callB, 8 iterations, 32 CTAs x 4 warps), checked exactly by
# scripts/gpu/pcmap_check.py: each of work()'s once-per-call PCs 3072 x L
# times under callA and 1024 x L under callB (L launches), 12 marker records
# per warp and iteration, nothing dropped.
#
#   scripts/gpu/argus16_pcmap.sh --prepare          here: builds $BUILD
#                                                   (default build-gpu-pcmap)
#   OUT=/tmp/out scripts/gpu/argus16_pcmap.sh       on the GPU machine, with
#                                                   $BUILD carried
#   scripts/gpu/argus16_pcmap.sh --dry-run          here, no GPU (ctest
#                                                   argus_pcmap_dry)
#
# The GPU image has no cJSON, so libargus_pcmap.so (which writes the map
# with it) is built here by --prepare (Release, tests off) with its patch
# fatbin, and libcjson.so.1 copied beside them; carry $BUILD with the
# device call. On the GPU machine the script then: checks san_abi.h against
# that machine's compute-sanitizer/include (pcmap_abi_check, compiled with
# gcc; a mismatch stops the run), builds the kernel (-DARGUS_ENABLE, sm_90)
# and tests/argus/gpu_pcmap_main.cu with nvcc, runs it with the tool
# preloaded (LD_PRELOAD, as NVIDIA's Sanitizer samples start their tools
# at load), and, when that maps nothing, once more as its CUDA injection
# library (CUDA_INJECTION64_PATH; which of the two the Sanitizer API needs
# is not verified), each under a 120 s timeout, then checks the map. Results: ONE file in $OUT,
# argus16_pcmap.tar.gz (map.json, checks.tsv, summary.txt, env.txt, the
# runs' logs), and summary.txt beside it, printed last.
# --dry-run (here) builds the program for sm_90, runs it (it must say there
# is no GPU), runs the ABI check where the Sanitizer headers are found, and
# runs the checker on two maps made by the tool on the fake Sanitizer
# (test_argus_pcmap --map): the model of the kernel (must pass) and one
# whose callB calls work() twice (must fail). Tested here with nvcc 13.0,
# gcc 12, Python 3.11 (dry run); not yet run on a GPU.
set -euo pipefail
# Arithmetic on seconds with awk: the GPU image has no bc.
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
REPO=$PWD
mode=run
case ${1:-} in
--dry-run) mode=dry ;;
--prepare) mode=prepare ;;
"") ;;
*) echo "argus16_pcmap.sh: unknown argument $1 (use --dry-run or --prepare)" >&2; exit 2 ;;
esac
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CC=${CC:-gcc}
LAUNCHES=${LAUNCHES:-2}
if [[ $mode == prepare ]]; then
    BUILD=${BUILD:-build-gpu-pcmap}
    prepare_carry "$BUILD" "argus_pcmap argus_pcmap_patch" libcjson lib/libargus_pcmap.so
    echo "prepared $BUILD: carry it to the GPU machine (lib/libargus_pcmap.so, lib/argus_pcmap_patch.fatbin, lib/libcjson.so.1)"
    exit 0
fi
[[ $mode == dry ]] && BUILD=${BUILD:-build} || BUILD=${BUILD:-build-gpu-pcmap}
[[ $BUILD == /* ]] || BUILD=$REPO/$BUILD
OUT=${OUT:-$PWD/out-argus16-pcmap}
mkdir -p "$OUT"
stage_results argus16_pcmap pcmap argus16m
work=$RES/build
mkdir -p "$work"
PACK_EXCLUDE=('argus16_pcmap/build') PACK_SAY=short PACK_CAT=1 PACK_RM=1
[[ $mode == run ]] || PACK_TAR=0
trap pack_results EXIT
[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC)"; exit 1; }

# The Sanitizer headers: the toolkit's, or ARGUS_SANITIZER_INCLUDE.
san_inc=${ARGUS_SANITIZER_INCLUDE:-}
for d in /usr/local/cuda/compute-sanitizer/include /usr/local/cuda/extras/Sanitizer/include; do
    [[ -z $san_inc && -f $d/sanitizer.h ]] && san_inc=$d
done
abi=skipped
if [[ -n $san_inc ]]; then
    "$CC" -std=gnu11 -Wall -Wextra -Werror -I/usr/local/cuda/include -I"$san_inc" \
        -Iprofiler/argus/sanitizer tests/argus/pcmap_abi_check.c -o "$work/abi_check" \
        >"$RES/abi_check.log" 2>&1 ||
        { cat "$RES/abi_check.log" >&2; log "san_abi.h does not match $san_inc: fix san_abi.h first"; exit 1; }
    "$work/abi_check" | tee -a "$RES/abi_check.log" >&2
    abi="matches $san_inc"
else
    log "no Sanitizer headers found (set ARGUS_SANITIZER_INCLUDE): the ABI check is skipped"
    [[ $mode == run ]] && { log "the GPU run needs the check: stop"; exit 1; }
fi

log "building the program with $NVCC"
"$NVCC" -std=c++17 -O2 -arch=sm_90 -DARGUS_ENABLE -Iinclude -Itests/argus \
    tests/argus/gpu_truth_kernels.cu tests/argus/gpu_pcmap_main.cu -o "$work/pcmap_prog" \
    >"$RES/nvcc.log" 2>&1 || { cat "$RES/nvcc.log" >&2; log "nvcc failed"; exit 1; }
{
    echo "date: $(date -u +%FT%TZ)"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo none)"
    echo "abi: $abi"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "gpu: none"
} >"$RES/env.txt"

if [[ $mode == dry ]]; then
    set +e
    "$work/pcmap_prog" 1 >"$RES/prog.log" 2>&1
    prc=$?
    set -e
    cat "$RES/prog.log" >&2
    [[ $prc == 3 ]] || { log "without a GPU the program must say so (exit 3), it exited $prc"; exit 1; }
    T=$BUILD/bin/test_argus_pcmap
    [[ -x $T ]] || { log "no $T: build the ctest tree first"; exit 1; }
    "$T" --map "$RES/good.json" && "$T" --map "$RES/wrong.json" wrong
    python3 scripts/gpu/pcmap_check.py "$RES/good.json" 1 "$RES/checks_good.tsv" >&2 ||
        { log "the checker failed the model's map"; exit 1; }
    if python3 scripts/gpu/pcmap_check.py "$RES/wrong.json" 1 "$RES/checks_wrong.tsv" >&2; then
        log "the checker passed a map whose callB calls work() twice"; exit 1
    fi
    {
        echo "argus16_pcmap.sh --dry-run (no GPU): nothing measured"
        printf '%-44s %s\n' "program built (sm_90), says no GPU" yes
        printf '%-44s %s\n' "san_abi.h against the Sanitizer headers" "$abi"
        printf '%-44s %s\n' "checker on the fake Sanitizer's map" pass
        printf '%-44s %s\n' "checker on a map of a 2:1 kernel" "fails, as it must"
    } >"$RES/summary.txt"
    exit 0
fi

LIB=$BUILD/lib
for f in libargus_pcmap.so argus_pcmap_patch.fatbin; do
    [[ -f $LIB/$f ]] || { log "no $LIB/$f: run --prepare on the development machine and carry $BUILD"; exit 1; }
done
ok=0
for how in preload injection; do
    map=$RES/map_$how.json
    rm -f "$map"
    envs=(ARGUS_PCMAP_OUT="$map" LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    if [[ $how == injection ]]; then
        envs+=(CUDA_INJECTION64_PATH="$LIB/libargus_pcmap.so")
    else
        envs+=(LD_PRELOAD="$LIB/libargus_pcmap.so")
    fi
    log "run ($how): $LAUNCHES launches"
    set +e
    t0=$(date +%s.%N)
    env "${envs[@]}" timeout 120 "$work/pcmap_prog" "$LAUNCHES" >"$RES/run_$how.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    set -e
    echo "exit $rc, $(calc "$t1 - $t0") s" >>"$RES/run_$how.log"
    cat "$RES/run_$how.log" >&2
    [[ $rc == 3 ]] && { log "no GPU here: nothing measured"; exit 0; }
    if [[ $rc == 0 && -f $map ]] && python3 -c "import json,sys; m=json.load(open(sys.argv[1])); sys.exit(0 if m['launches'] else 1)" "$map"; then
        ok=1
        cp "$map" "$RES/map.json"
        echo "$how" >"$RES/loaded_by.txt"
        break
    fi
    log "the $how run mapped no launch"
done
if [[ $ok != 1 ]]; then
    { echo "argus16_pcmap: no run mapped a launch (see run_*.log and map_*.json problems)"; } >"$RES/summary.txt"
    exit 1
fi
set +e
python3 scripts/gpu/pcmap_check.py "$RES/map.json" "$LAUNCHES" "$RES/checks.tsv" >"$RES/checks.txt" 2>&1
crc=$?
set -e
{
    echo "argus16_pcmap: g16_calls x $LAUNCHES under argus-pcmap (loaded by $(cat "$RES/loaded_by.txt")); $abi"
    echo "what | got | want | verdict"
    grep -v '^pcmap_check:' "$RES/checks.txt" | tail -20
    tail -1 "$RES/checks.txt"
} >"$RES/summary.txt"
exit $crc
