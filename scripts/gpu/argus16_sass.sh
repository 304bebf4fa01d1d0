#!/usr/bin/env bash
# argus-sass on the H200 (issue 13; docs/argus-backends.md, "argus-sass"):
# CUPTI's SASS metrics of a kernel with known per-PC counts, sass_loop
# (tests/argus/sass_loop.cu: 4 blocks x 128 threads = 16 warps, the loop
# run TRIP times by every thread, #pragma unroll 1), through argus-sass and
# through `argus exec run` (argus-sass as the sass_metrics collector),
# checked exactly by scripts/gpu/sass_check.py against the kernel's SASS
# listing (cuobjdump -sass): at each loop PC smsp__sass_inst_executed =
# TRIP x 16 x LAUNCHES and smsp__sass_thread_inst_executed 32 times that,
# at every other PC up to EXIT 16 x LAUNCHES.
#
#   scripts/gpu/argus16_sass.sh --prepare        here: builds $BUILD
#                                                (default build-gpu-sass)
#   OUT=/tmp/out scripts/gpu/argus16_sass.sh     on the GPU machine, with
#                                                $BUILD carried
#   scripts/gpu/argus16_sass.sh --dry-run        here, no GPU (ctest
#                                                argus_sass_dry)
#
# The GPU image has no cJSON: --prepare builds argus-sass, libargus_sass.so
# and argus (Release, tests off) and copies libcjson beside them. On the GPU
# machine: builds gpu_sass_main.cu with nvcc (sm_90), lists its SASS, runs
# it under argus-sass (120 s at most) and under argus exec (the same
# program), and checks both. Results: ONE file in $OUT, argus16_sass.tar.gz
# (sass.json, exec.json, the listing, checks, logs, env), and summary.txt
# beside it, printed last.
# --dry-run (here): builds the GPU program for sm_90 (it must say there is no
# GPU, exit 3), and runs the same argus-sass and checker on the fake CUPTI
# with the committed cubin of sass_loop.cu and its listing (the checker must
# pass, and must fail a wrong trip count). Tested here with nvcc 13.0,
# Python 3.11; not yet run on a GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
REPO=$PWD
mode=run
case ${1:-} in
--dry-run) mode=dry ;;
--prepare) mode=prepare ;;
"") ;;
*) echo "argus16_sass.sh: unknown argument $1 (use --dry-run or --prepare)" >&2; exit 2 ;;
esac
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
LAUNCHES=${LAUNCHES:-2} TRIP=${TRIP:-1000} WARPS=16
if [[ $mode == prepare ]]; then
    BUILD=${BUILD:-build-gpu-sass}
    prepare_carry "$BUILD" "argus-sass argus_sass argus" libcjson bin/argus-sass lib/libargus_sass.so bin/argus
    echo "prepared $BUILD: carry it to the GPU machine (bin/argus-sass, bin/argus, lib/libargus_sass.so, lib/libcjson.so.1)"
    exit 0
fi
[[ $mode == dry ]] && BUILD=${BUILD:-build} || BUILD=${BUILD:-build-gpu-sass}
[[ $BUILD == /* ]] || BUILD=$REPO/$BUILD
OUT=${OUT:-$PWD/out-argus16-sass}
mkdir -p "$OUT"
stage_results argus16_sass sass argus16s
work=$RES/build
mkdir -p "$work"
PACK_EXCLUDE=('argus16_sass/build') PACK_SAY=short PACK_CAT=1 PACK_RM=1
[[ $mode == run ]] || PACK_TAR=0
trap pack_results EXIT
[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC)"; exit 1; }
SASS=$BUILD/bin/argus-sass ARGUS=$BUILD/bin/argus
for f in "$SASS" "$ARGUS" "$BUILD/lib/libargus_sass.so"; do
    [[ -e $f ]] || { log "no $f: run --prepare (or build the tree) and carry $BUILD"; exit 1; }
done
export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

log "building the program with $NVCC"
"$NVCC" -std=c++17 -O2 -arch=sm_90 -Itests/argus tests/argus/gpu_sass_main.cu -o "$work/sass_prog" \
    >"$RES/nvcc.log" 2>&1 || { cat "$RES/nvcc.log" >&2; log "nvcc failed"; exit 1; }
{
    echo "date: $(date -u +%FT%TZ)"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo none)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "gpu: none"
} >"$RES/env.txt"
check=scripts/gpu/sass_check.py

if [[ $mode == dry ]]; then
    set +e
    "$work/sass_prog" 1 >"$RES/prog.log" 2>&1
    prc=$?
    set -e
    cat "$RES/prog.log" >&2
    [[ $prc == 3 ]] || { log "without a GPU the program must say so (exit 3), it exited $prc"; exit 1; }
    : "${FAKE_CUPTI:?set FAKE_CUPTI to the fake CUPTI (ctest sets it)}" "${SASS_PROG:?set SASS_PROG}"
    fix=tests/argus/fixtures/sass
    cp "$fix/sass_loop.sass" "$RES/listing.sass"
    model=$(python3 "$check" loop "$RES/listing.sass" sass_loop)
    ARGUS_SASS_CUPTI=$FAKE_CUPTI FAKE_SASS_MODEL=$model:$TRIP \
        "$SASS" --out "$RES/sass.json" -- "$SASS_PROG" "$fix/sass_loop.cubin" sass_loop "$LAUNCHES" 4 128 \
        2>"$RES/sass.log" || { cat "$RES/sass.log" >&2; log "argus-sass on the fake failed"; exit 1; }
    python3 "$check" check "$RES/listing.sass" sass_loop "$RES/sass.json" "$TRIP" $WARPS "$LAUNCHES" \
        >"$RES/checks.txt" || { cat "$RES/checks.txt" >&2; log "the checker failed the fake's counts"; exit 1; }
    if python3 "$check" check "$RES/listing.sass" sass_loop "$RES/sass.json" $((TRIP + 1)) $WARPS "$LAUNCHES" \
        >"$RES/checks_wrong.txt"; then
        log "the checker passed a wrong trip count"; exit 1
    fi
    {
        echo "argus16_sass.sh --dry-run (no GPU): nothing measured"
        printf '%-46s %s\n' "program built (sm_90), says no GPU" yes
        printf '%-46s %s\n' "checker on the fake CUPTI's counts" pass
        printf '%-46s %s\n' "checker with a wrong trip count" "fails, as it must"
        tail -n +1 "$RES/checks.txt" | grep -E '^(ok|FAIL)'
    } >"$RES/summary.txt"
    exit 0
fi

CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
"$CUOBJDUMP" -sass "$work/sass_prog" >"$RES/listing.sass" 2>"$RES/cuobjdump.log" ||
    { cat "$RES/cuobjdump.log" >&2; log "cuobjdump -sass failed"; exit 1; }
# When CUPTI's records are read (ARGUS_SASS_FLUSH:
# sass_tool.c), each in its own run; the first that passes is the one argus
# exec runs with below. (Session 9, calls 4-6: flushed at each launch's end,
# the second launch of the kernel gave no records, also with collection
# disabled and enabled again between them, or flushed with the last
# nonzero counts; read at the program's one synchronisation after both
# launches, exact. synceach: the program synchronises after each launch.)
set +e
good=
for fm in launch sync synceach; do
    t0=$SECONDS
    flush=$fm each=0
    [[ $fm == synceach ]] && flush=sync each=1
    ARGUS_SASS_FLUSH=$flush ARGUS_SASS_LOG=1 timeout 60 "$SASS" --out "$RES/sass_$fm.json" -- \
        "$work/sass_prog" "$LAUNCHES" "$TRIP" $each >"$RES/sass_$fm.log" 2>&1
    src=$?
    echo "exit $src, $((SECONDS - t0)) s" >>"$RES/sass_$fm.log"
    cat "$RES/sass_$fm.log" >&2
    [[ $src == 3 ]] && grep -q 'no GPU present' "$RES/sass_$fm.log" && { log "no GPU here: nothing measured"; exit 0; }
    python3 "$check" check "$RES/listing.sass" sass_loop "$RES/sass_$fm.json" "$TRIP" $WARPS "$LAUNCHES" \
        >"$RES/checks_$fm.txt" 2>&1
    c=$?
    echo "$fm $src $c" >>"$RES/modes.txt"
    [[ $c == 0 && -z $good ]] && good=$fm
done
c1=1
[[ -n $good ]] && c1=0
fm=${good:-launch}
cp "$RES/sass_$fm.json" "$RES/sass.json"
cp "$RES/checks_$fm.txt" "$RES/checks.txt"
export ARGUS_SASS_FLUSH=${fm%each}
# The same program through argus exec (argus-sass as its collector).
printf '{"schema": "argus.exec.program", "version": 1, "source": "%s", "include": ["%s"],
 "sm": "90", "run": ["%s", "%s", "%s"], "device": "0", "timeout_s": 120}\n' \
  "$REPO/tests/argus/sass_loop.cu" "$REPO/include" "$work/sass_prog" "$LAUNCHES" "$TRIP" >"$RES/prog.json"
ARGUS_SASS=$SASS "$ARGUS" exec run v0 sass_metrics "$RES/prog.json" "$RES/exec.json" >"$RES/exec.log" 2>&1
erc=$?
python3 - "$RES/exec.json" "$RES/listing.sass" "$TRIP" $WARPS "$LAUNCHES" >"$RES/exec_checks.txt" 2>&1 <<'PY'
import json, subprocess, sys
ev, listing, trip, warps, launches = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
lo, hi, ex = (int(x, 16) for x in subprocess.check_output(
    [sys.executable, 'scripts/gpu/sass_check.py', 'loop', listing, 'sass_loop'], text=True).split(':'))
d = json.load(open(ev))
pcs = {p['pc']: p['values'] for p in d.get('pcs', []) if p['function'] == 'sass_loop'}
loop = [pc for pc in pcs if lo <= pc <= hi]
ok = d.get('status') == 'ok' and len(loop) == (hi - lo) // 16 + 1 and all(
    pcs[pc].get('smsp__sass_inst_executed') == trip * warps * launches for pc in loop)
print(f"{'ok  ' if ok else 'FAIL'} argus exec: status {d.get('status')}, {len(loop)} loop PCs at "
      f"{sorted({pcs[pc].get('smsp__sass_inst_executed') for pc in loop})} (want {trip * warps * launches})")
sys.exit(0 if ok else 1)
PY
c2=$?
set -e
{
    echo "argus16_sass: sass_loop<<<4, 128>>> x $LAUNCHES, trip $TRIP, under argus-sass and argus exec (exit $erc, ARGUS_SASS_FLUSH=$fm)"
    echo "ARGUS_SASS_FLUSH  argus-sass exit  checks failed"
    while read -r m e c; do
        printf '%-17s %-15s %s\n' "$m" "$e" "$(grep -c '^FAIL' "$RES/checks_$m.txt")"
    done <"$RES/modes.txt"
    echo "detail for ARGUS_SASS_FLUSH=$fm:"
    grep -E '^(ok|FAIL)' "$RES/checks.txt" || cat "$RES/checks.txt"
    cat "$RES/exec_checks.txt"
    grep -E '^ *pc |^0x' "$RES/checks.txt" | head -24
} >"$RES/summary.txt"
[[ $c1 == 0 && $c2 == 0 ]]
