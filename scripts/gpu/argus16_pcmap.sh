#!/usr/bin/env bash
# argus-pcmap on the H200 (issue 13; docs/argus-backends.md), built to find
# out in ONE device call why session 8's run hung (LD_PRELOAD, 2 launches,
# no output, killed at 55 s). Four runs, in this order, each under its own
# short limit (RUN_TIMEOUT, default 15 s), each with the tool's step trace
# (ARGUS_PCMAP_LOG, one line per step, written before the step's call):
#
#   1 injection trivial   CUDA_INJECTION64_PATH, tests/argus/gpu_pcmap_trivial.cu
#                         (one kernel, no regions: the tool subscribes and sees
#                         the callbacks but patches nothing)
#   2 injection regions   the known-ratio kernel g16_calls (gpu_pcmap_main.cu,
#                         -DARGUS_ENABLE): patched, armed, mapped
#   3 preload   trivial   LD_PRELOAD into the program alone (not into timeout
#   4 preload   regions   or a shell: session 8 preloaded `timeout` too)
#
# A run past its limit is not just killed: its threads' stacks are dumped
# first (gdb -batch "thread apply all bt" when gdb is on the image and may
# attach; always /proc/PID/task/*/{comm,stat,wchan,syscall,stack}, with each
# task's user PC placed in /proc/PID/maps; and a scan of each thread's
# stack for code addresses, with a futex wait's lock word placed in its
# library, scripts/gpu/pcmap_stackscan.py) into stack_<run>.txt, and the
# table says which it got (gdb, proc, scan). The lead's 15:20 probe: no gdb
# on the image, /proc readable, the region program stuck in a futex wait. The trace's last line names the step
# the tool was in; a trace that ends at "init: constructor done" or
# "subscribe: subscribed" with the program stuck says the hang is not in the
# tool's callbacks. The regions map of the first run that mapped a launch is
# then checked exactly by scripts/gpu/pcmap_check.py (work()'s once-per-call
# PCs 3072 x L times under callA and 1024 x L under callB, 12 marker records
# per warp and iteration, nothing dropped). Last, a table:
#   run  mode  program  rc  seconds  launches_mapped  stack  last trace step
#
#   scripts/gpu/argus16_pcmap.sh --prepare     here: builds $BUILD (default
#                                              build-gpu-pcmap) to carry
#   OUT=/tmp/out scripts/gpu/argus16_pcmap.sh  on the GPU machine
#   scripts/gpu/argus16_pcmap.sh --dry-run     here, no GPU (ctest
#                                              argus_pcmap_dry)
#
# Device time: two nvcc builds (about 2 s each), the ABI check (under 1 s),
# four runs of at most RUN_TIMEOUT + the dump (gdb under a 10 s limit) + 2 s
# of killing; runs are skipped, and said, once the next could end past
# BUDGET (default 110 s) from the start. Worst case (every run hangs) about
# 110 s; when nothing hangs, under 30 s.
#
# The GPU image has no cJSON, so libargus_pcmap.so (which writes the map
# with it) is built here by --prepare (Release, tests off) with its patch
# fatbin, and libcjson.so.1 copied beside them. On the GPU machine the
# script checks san_abi.h against that machine's compute-sanitizer/include
# first (a mismatch stops it). Results: ONE file in $OUT,
# argus16_pcmap.tar.gz (summary.txt, table.txt, env.txt, each run's
# trace_*.log, run_*.log, map_*.json, stack_*.txt, checks.tsv), and
# summary.txt beside it, printed last.
#
# --dry-run (here) runs the same ladder against the fake Sanitizer
# (tests/argus/fake_sanitizer.c) with test_argus_pcmap --prog as the
# program, then a fifth run that hangs on purpose (FAKE_SAN_HANG=
# sanitizerMemcpyDeviceToHost, or DRY_HANG_AT: the fake blocks there) to
# show the limit,
# the gdb dump and the trace's last step working, and a sixth like it with
# gdb off (the /proc dump alone); it also builds both CUDA programs for
# sm_90 (each must say there is no GPU), runs the ABI check where the
# Sanitizer headers are found, and runs the checker on the model's map
# (must pass) and on a 2:1 one (must fail). Tested here with nvcc 13.0,
# gcc 12, bash 5.2, Python 3.11, gdb 13; not yet run on a GPU.
set -euo pipefail
# Arithmetic on seconds with awk: the GPU image has no bc.
calc() { awk "BEGIN { printf \"%.1f\", $1 }"; }
past() { awk "BEGIN { exit !($1) }"; } # past "EXPR > N": true when it holds
now() { date +%s.%N; }
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
if [[ $mode == dry ]]; then
    BUILD=${BUILD:-build}
    RUN_TIMEOUT=${RUN_TIMEOUT:-5}
else
    BUILD=${BUILD:-build-gpu-pcmap}
    RUN_TIMEOUT=${RUN_TIMEOUT:-15}
fi
BUDGET=${BUDGET:-110}
GDB_TIMEOUT=${GDB_TIMEOUT:-10}
[[ $BUILD == /* ]] || BUILD=$REPO/$BUILD
OUT=${OUT:-$PWD/out-argus16-pcmap}
mkdir -p "$OUT"
stage_results argus16_pcmap pcmap argus16m
work=$RES/build
mkdir -p "$work"
PACK_EXCLUDE=('argus16_pcmap/build') PACK_SAY=short PACK_CAT=1 PACK_RM=1
# The dry run packs its results too (into the ctest tree), to be read.
trap pack_results EXIT
[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC)"; exit 1; }
t_start=$(now)
elapsed() { calc "$(now) - $t_start"; }

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

log "building the programs with $NVCC"
"$NVCC" -std=c++17 -O2 -arch=sm_90 tests/argus/gpu_pcmap_trivial.cu -o "$work/pcmap_trivial" \
    >"$RES/nvcc.log" 2>&1 || { cat "$RES/nvcc.log" >&2; log "nvcc failed (trivial)"; exit 1; }
"$NVCC" -std=c++17 -O2 -arch=sm_90 -DARGUS_ENABLE -Iinclude -Itests/argus \
    tests/argus/gpu_truth_kernels.cu tests/argus/gpu_pcmap_main.cu -o "$work/pcmap_prog" \
    >>"$RES/nvcc.log" 2>&1 || { cat "$RES/nvcc.log" >&2; log "nvcc failed (regions)"; exit 1; }
has_gdb=no
command -v gdb >/dev/null 2>&1 && has_gdb=yes
{
    echo "date: $(date -u +%FT%TZ)"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo none)"
    echo "abi: $abi"
    echo "gdb: $has_gdb; ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)"
    echo "CUDA_MODULE_LOADING: ${CUDA_MODULE_LOADING:-unset (driver default)}"
    echo "RUN_TIMEOUT: $RUN_TIMEOUT s, BUDGET: $BUDGET s, LAUNCHES: $LAUNCHES"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "gpu: none"
} >"$RES/env.txt"

# Both programs must say there is no GPU here (exit 3).
if [[ $mode == dry ]]; then
    for p in pcmap_trivial pcmap_prog; do
        set +e
        "$work/$p" 1 >"$RES/$p.nogpu.log" 2>&1
        prc=$?
        set -e
        [[ $prc == 3 ]] || { cat "$RES/$p.nogpu.log" >&2; log "without a GPU $p must say so (exit 3), it exited $prc"; exit 1; }
    done
fi

LIB=$BUILD/lib
for f in libargus_pcmap.so argus_pcmap_patch.fatbin; do
    [[ -f $LIB/$f ]] || { log "no $LIB/$f: run --prepare on the development machine and carry $BUILD"; exit 1; }
done
TOOL=$LIB/libargus_pcmap.so
# A sanitizer build of the tool (the ctest of build-asan) preloads its
# runtime first, as ASan requires.
PRELOAD=$TOOL
asan_rt=$(ldd "$TOOL" 2>/dev/null | awk '/libasan\.so/ { print $3 }' | head -1)
[[ -n $asan_rt ]] && PRELOAD=$asan_rt:$TOOL
if [[ $mode == dry ]]; then
    T=$BUILD/bin/test_argus_pcmap
    FAKE=$LIB/libargus_fake_sanitizer.so
    [[ -x $T && -f $FAKE ]] || { log "no $T or $FAKE: build the ctest tree first"; exit 1; }
fi

# The stacks of a hung process: gdb where it may attach, and /proc always.
# Prints what it got: "gdb+proc", "proc" or "none".
dump_stacks() {
    local pid=$1 to=$2 got=none t pc lib
    {
        echo "== stacks of pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)) at $(elapsed) s"
        if [[ $has_gdb == yes && ${NO_GDB:-0} != 1 ]]; then
            echo "== gdb -batch -p $pid: thread apply all bt"
            timeout "$GDB_TIMEOUT" gdb -batch -nx -p "$pid" -ex "set pagination off" \
                -ex "info threads" -ex "thread apply all bt" </dev/null 2>&1 || echo "(gdb exited $?)"
        fi
        echo "== /proc/$pid/task/*: comm, state, wchan, syscall (nr args sp pc), kernel stack"
        for t in /proc/"$pid"/task/*; do
            [[ -d $t ]] || continue
            echo "-- task ${t##*/} $(cat "$t/comm" 2>/dev/null) state $(awk '{ print $3 }' "$t/stat" 2>/dev/null)" \
                "wchan $(cat "$t/wchan" 2>/dev/null || echo '?')"
            echo "   syscall: $(cat "$t/syscall" 2>/dev/null || echo unreadable)"
            pc=$(awk '{ print $NF }' "$t/syscall" 2>/dev/null || true)
            if [[ $pc == 0x* ]]; then
                # The library the task's user PC is in (python3: the image's
                # awk may have no strtonum).
                lib=$(python3 - "$pc" "/proc/$pid/maps" <<'PY' 2>/dev/null || true
import sys
pc = int(sys.argv[1], 16)
for line in open(sys.argv[2]):
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    if lo <= pc < hi:
        print("%s+0x%x" % (f[5] if len(f) > 5 else "[anon]", pc - lo + int(f[2], 16)))
        break
PY
)
                echo "   user pc: $pc in ${lib:-?}"
            fi
            if [[ -r $t/stack ]]; then
                sed 's/^/   kstack: /' "$t/stack" 2>/dev/null || true
            fi
        done
        echo "== stack scan (scripts/gpu/pcmap_stackscan.py: code addresses on each thread's stack)"
        timeout 10 python3 scripts/gpu/pcmap_stackscan.py "$pid" || echo "(stack scan exited $?)"
    } >"$to" 2>&1
    local parts=()
    grep -q '^#[0-9]' "$to" && parts+=(gdb)
    grep -q 'syscall: [0-9-]' "$to" && parts+=(proc)
    grep -q '^   sp+0x' "$to" && parts+=(scan)
    [[ ${#parts[@]} == 0 ]] && { echo none; return; }
    (IFS=+; echo "${parts[*]}")
}

# The last trace line's step and what, short: "launch: sanitizerMemcpy...".
last_step() {
    [[ -s $1 ]] || { echo "(no trace)"; return; }
    tail -1 "$1" | sed -E 's/^argus-pcmap \+[0-9.]+ tid [0-9]+ //' | cut -c1-72
}

launches_of() {
    [[ -s $1 ]] || { echo "-"; return; }
    python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['launches']))" "$1" 2>/dev/null || echo "bad map"
}

# One run: NAME MODE PROGRAM [EXTRA ENV...]; appends a row to table.txt.
printf '%-22s %-9s %-8s %-7s %7s  %-8s %-14s %s\n' run mode program rc seconds launches stack \
    "last trace step" >"$RES/table.txt"
regions_map=
one_run() {
    local name=$1 how=$2 prog=$3 pid rc t0 t1 secs state stack=- tr=$RES/trace_$1.log
    local map=$RES/map_$1.json cmd
    shift 3
    rm -f "$map" "$tr"
    if past "$(now) - $t_start + $RUN_TIMEOUT + $GDB_TIMEOUT + 2 > $BUDGET"; then
        log "run $name: skipped, it could end past the budget of $BUDGET s"
        printf '%-22s %-9s %-8s %-7s %7s  %-8s %-14s %s\n' "$name" "$how" "$prog" skipped - - - \
            "(over the ${BUDGET}s budget)" >>"$RES/table.txt"
        return 0
    fi
    if [[ $mode == dry ]]; then
        cmd=("$T" --prog "$([[ $prog == trivial ]] && echo trivial || echo regions)" "$LAUNCHES")
    else
        cmd=("$work/$([[ $prog == trivial ]] && echo pcmap_trivial || echo pcmap_prog)" "$LAUNCHES")
    fi
    local envs=(ARGUS_PCMAP_OUT="$map" ARGUS_PCMAP_LOG="$tr"
        LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@")
    [[ $mode == dry ]] && envs+=(ARGUS_SANITIZER_LIB="$FAKE" ARGUS_PCMAP_CUDA_LIB="$FAKE")
    log "run $name ($how, $prog, $LAUNCHES launches, limit $RUN_TIMEOUT s)"
    t0=$(now)
    set +e
    if [[ $how == injection ]]; then
        env "${envs[@]}" CUDA_INJECTION64_PATH="$TOOL" "${cmd[@]}" >"$RES/run_$name.log" 2>&1 &
    else
        # The shell execs the program with LD_PRELOAD set for it alone.
        env "${envs[@]}" sh -c 'LD_PRELOAD="$0" exec "$@"' "$PRELOAD" "${cmd[@]}" \
            >"$RES/run_$name.log" 2>&1 &
    fi
    pid=$!
    while :; do
        state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || echo gone)
        [[ $state == gone || $state == Z ]] && break
        if past "$(now) - $t0 > $RUN_TIMEOUT"; then
            stack=$(dump_stacks "$pid" "$RES/stack_$name.txt")
            kill -TERM "$pid" 2>/dev/null
            sleep 1
            kill -KILL "$pid" 2>/dev/null
            break
        fi
        sleep 0.2
    done
    # A process in uninterruptible sleep inside the driver outlives
    # SIGKILL for a while: 5 s, then it is left (and said), not waited for.
    local k
    for k in $(seq 25); do
        state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || echo gone)
        [[ $state == gone || $state == Z ]] && break
        sleep 0.2
    done
    if [[ $state == gone || $state == Z ]]; then
        wait "$pid"
        rc=$?
    else
        rc=$state
        log "run $name: pid $pid is still there in state $state after SIGKILL: left running"
    fi
    set -e
    t1=$(now)
    secs=$(calc "$t1 - $t0")
    [[ $stack != - && $rc =~ ^[0-9]+$ ]] && rc="timeout"
    echo "exit $rc, $secs s" >>"$RES/run_$name.log"
    log "run $name: exit $rc after $secs s; trace: $(last_step "$tr")"
    printf '%-22s %-9s %-8s %-7s %7s  %-8s %-14s %s\n' "$name" "$how" "$prog" "$rc" "$secs" \
        "$(launches_of "$map")" "$stack" "$(last_step "$tr")" >>"$RES/table.txt"
    if [[ $rc == 0 && $prog == regions && -z $regions_map && $(launches_of "$map") =~ ^[1-9] ]]; then
        regions_map=$map
    fi
    [[ $rc == 3 ]] && nogpu=1
    return 0
}

nogpu=0
one_run 1_injection_trivial injection trivial
one_run 2_injection_regions injection regions
one_run 3_preload_trivial preload trivial
one_run 4_preload_regions preload regions
if [[ $mode == dry ]]; then
    # A simulated hang: the fake's device-to-host copy blocks for ever.
    # DRY_HANG_AT=none (ctest argus_pcmap_dry_bad): nothing hangs, and the
    # dry run must fail.
    hang_at=${DRY_HANG_AT:-sanitizerMemcpyDeviceToHost}
    one_run 5_preload_hang_gdb preload regions FAKE_SAN_HANG="$hang_at"
    NO_GDB=1 one_run 6_preload_hang_proc preload regions FAKE_SAN_HANG="$hang_at"
fi
[[ $nogpu == 1 ]] && { log "no GPU here: nothing measured"; cat "$RES/table.txt" >"$RES/summary.txt"; exit 0; }

crc=1
checked="no regions run mapped a launch: nothing to check"
if [[ -n $regions_map ]]; then
    cp "$regions_map" "$RES/map.json"
    set +e
    python3 scripts/gpu/pcmap_check.py "$RES/map.json" "$LAUNCHES" "$RES/checks.tsv" >"$RES/checks.txt" 2>&1
    crc=$?
    set -e
    checked="$(basename "$regions_map"): $(tail -1 "$RES/checks.txt")"
fi

if [[ $mode == dry ]]; then
    # The dry run's own checks: the ladder ran clean on the fake, the hang
    # was caught with its stacks and its step, and the checker gates.
    fail=0
    want() { grep -qE "$2" "$RES/table.txt" || { log "dry run: $1 (table.txt)"; fail=1; }; }
    want "run 1 must exit 0" '^1_injection_trivial +injection +trivial +0 '
    want "run 2 must exit 0 and map 2 launches" '^2_injection_regions +injection +regions +0 +[0-9.]+ +2 '
    want "run 3 must exit 0" '^3_preload_trivial +preload +trivial +0 '
    want "run 4 must exit 0 and map 2 launches" '^4_preload_regions +preload +regions +0 +[0-9.]+ +2 '
    want "run 5 must time out with a gdb stack and name its step" \
        '^5_preload_hang_gdb +preload +regions +timeout .* gdb\+proc\+scan +launch: sanitizerMemcpyDeviceToHost\(descriptor'
    want "run 6 must time out with the /proc dump and name its step" \
        '^6_preload_hang_proc +preload +regions +timeout .* proc\+scan +launch: sanitizerMemcpyDeviceToHost\(descriptor'
    grep -q 'sp+0x.*libargus_fake_sanitizer.so' "$RES/stack_6_preload_hang_proc.txt" 2>/dev/null &&
        grep -q 'sp+0x.*libargus_pcmap.so' "$RES/stack_6_preload_hang_proc.txt" 2>/dev/null ||
        { log "dry run: the stack scan of run 6 does not show the fake's and the tool's code"; fail=1; }
    grep -q 'maybe_hang' "$RES/stack_5_preload_hang_gdb.txt" 2>/dev/null ||
        { log "dry run: the gdb stack of run 5 does not show the fake's blocking call"; fail=1; }
    grep -q 'no launch of an instrumented kernel' "$RES/map_1_injection_trivial.json" 2>/dev/null ||
        { log "dry run: the trivial run's map must say no instrumented launch was mapped"; fail=1; }
    [[ $crc == 0 ]] || { log "dry run: the checker failed the model's map"; fail=1; }
    "$T" --map "$RES/wrong.json" wrong
    if python3 scripts/gpu/pcmap_check.py "$RES/wrong.json" 1 "$RES/checks_wrong.tsv" >&2; then
        log "dry run: the checker passed a map whose callB calls work() twice"; fail=1
    fi
    {
        echo "argus16_pcmap.sh --dry-run (fake Sanitizer, no GPU): nothing measured; $abi"
        cat "$RES/table.txt"
        echo "checker on the fake's map: $checked"
        echo "checker on a map of a 2:1 kernel: fails, as it must"
        echo "dry-run checks: $([[ $fail == 0 ]] && echo pass || echo FAILED)"
    } >"$RES/summary.txt"
    exit "$fail"
fi

{
    echo "argus16_pcmap: argus-pcmap on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $abi"
    echo "each run under ${RUN_TIMEOUT}s; a timeout dumps stack_<run>.txt (gdb and/or /proc) first; trace_<run>.log is the tool's step trace"
    cat "$RES/table.txt"
    echo "exact check (pcmap_check.py, $LAUNCHES launches): $checked"
    [[ $crc == 0 ]] || tail -20 "$RES/checks.txt" 2>/dev/null | grep -v '^pcmap_check:' || true
} >"$RES/summary.txt"
exit $crc
