#!/usr/bin/env bash
# Forced-completion probes on the H200 (issue 13/16; docs/argus-discover.md):
# the cp.async GEMM (tests/argus/async_cpasync.cu) and 1, 2, 4 and 8 probe
# variants of it, each batch built and run in one go, reporting seconds per
# probe (make the variant, compile it, run it; the base build and the
# process start are shared by the batch, as a batched plan shares them) and
# bytes per probe (variant PTX + cubin + the armed run's region buffer),
# beside the completion latency each probe measures (the "mainloop/load"
# region's cycles at the probed iteration, variant minus base) and whether
# C stayed bit-identical.
#
#   OUT=/tmp/out scripts/gpu/argus16_probes.sh [--dry-run]
#
# Builds with gcc (argus core: decoder, arming, discovery; no cJSON, no
# CMake) and nvcc (the kernel for sm_90, tests/argus/async_probe_main.cu).
# The probes are the loop's four cp.async operations at iterations 1, 5, 9,
# ... (op k at iteration 1 + 4j for the j-th probe of that op). A run
# writes ONE file into $OUT, argus16_probes.tar.gz (probes.tsv,
# batches.tsv, summary.txt, env.txt, logs; no build products), packed when
# the script exits, also on failure; summary.txt is printed last.
# --dry-run builds everything and makes and compiles the variants of every
# batch (so the build part of seconds per probe is measured here too), runs
# the program only where libcuda.so.1 loads (to see it say that there is
# no GPU), and claims nothing.
# Tested here with nvcc 13.0 and gcc 12 (dry run); not yet run on a GPU.
set -euo pipefail
# Arithmetic on seconds with awk: the GPU image has no bc.
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
cd "$(dirname "$0")/../.."
mode=run
case ${1:-} in
--dry-run) mode=dry ;;
"") ;;
*) echo "argus16_probes.sh: unknown argument $1 (use --dry-run)" >&2; exit 2 ;;
esac
OUT=${OUT:-$PWD/out-argus16-probes}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CC=${CC:-gcc}
mkdir -p "$OUT"
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
stage_results argus16_probes probes argus16p
work=$RES/build
mkdir -p "$work"
PACK_EXCLUDE=('argus16_probes/build') PACK_SAY=short PACK_COPY="" PACK_CAT=1 PACK_RM=1
trap pack_results EXIT
[[ -x $NVCC ]] || { log "no nvcc at $NVCC (set NVCC)"; exit 1; }
now() { date +%s.%N; }

log "building with $NVCC and $CC"
objs=()
for f in common decode stats registry runtime discover; do
    "$CC" -std=gnu11 -O2 -Wall -Wextra -Iinclude -Iprofiler/argus -c "profiler/argus/$f.c" \
        -o "$work/$f.o"
    objs+=("$work/$f.o")
done
"$CC" -std=gnu11 -O2 -Wall -Wextra -Iinclude tests/argus/test_discover_tool.c "${objs[@]}" \
    -o "$work/discover_tool" -ldl -lpthread -lm
"$NVCC" -std=c++17 -O2 -Iinclude tests/argus/async_probe_main.cu "${objs[@]}" \
    -o "$work/async_probe" -lcuda -ldl -lpthread -lm >"$work/nvcc_main.log" 2>&1 ||
    { cat "$work/nvcc_main.log" >&2; log "nvcc failed on async_probe_main.cu"; exit 1; }
tb=$(now)
"$NVCC" -std=c++17 -arch=sm_90 -DARGUS_ENABLE -Iinclude -ptx tests/argus/async_cpasync.cu \
    -o "$work/base.ptx"
"$NVCC" -arch=sm_90 -cubin "$work/base.ptx" -o "$work/base.cubin"
base_s=$(calc "$(now) - $tb")
"$work/discover_tool" discover "$work/base.ptx" >"$RES/discovery.tsv"
mapfile -t ops < <("$work/discover_tool" ids "$work/base.ptx" | awk -F'\t' '$3 == "loop" {print $1}')
((${#ops[@]} > 0)) || { log "no loop operation discovered"; exit 1; }
log "base built in ${base_s}s; ${#ops[@]} loop operations: ${ops[*]}"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "mode: $mode"
} >"$RES/env.txt" 2>&1

printf 'probes\tbuild_s\trun_s\tseconds_per_probe\tbytes_per_probe\tstatus\n' >"$RES/batches.tsv"
: >"$RES/probes.tsv"
for n in 1 2 4 8; do
    d=$work/batch$n
    mkdir -p "$d"
    t0=$(now)
    args=()
    bytes=0
    for ((j = 0; j < n; j++)); do
        op=${ops[$((j % ${#ops[@]}))]}
        it=$((1 + 4 * (j / ${#ops[@]})))
        v=$d/p$j
        "$work/discover_tool" probe "$work/base.ptx" "$op" "$it" "$v.ptx"
        "$NVCC" -arch=sm_90 -cubin "$v.ptx" -o "$v.cubin"
        args+=("$v.cubin" "$op" "$it")
        bytes=$((bytes + $(stat -c %s "$v.ptx") + $(stat -c %s "$v.cubin")))
    done
    t1=$(now)
    st=0
    if [[ $mode == dry && $(ldd "$work/async_probe" 2>&1) == *'libcuda.so.1 => not found'* ]]; then
        # No driver library at all here: the program cannot even start.
        echo "async_probe: libcuda.so.1 not found: no GPU driver, nothing run" >"$d/run.log"
        st=3
    else
        "$work/async_probe" "$d/probes.tsv" "$work/base.cubin" "${args[@]}" >"$d/run.log" 2>&1 ||
            st=$?
    fi
    t2=$(now)
    cat "$d/run.log" >>"$RES/script.log"
    if [[ $st == 3 ]]; then
        log "batch $n: no GPU: built only ($(calc "$t1 - $t0")s for $n variants)"
    elif [[ $st != 0 ]]; then
        log "batch $n: async_probe exit $st (see script.log)"
    fi
    if [[ -s $d/probes.tsv ]]; then
        # The raw region buffer of each variant's armed run counts too.
        raw=$(awk -F'\t' 'NR > 1 {s += $10} END {print s + 0}' "$d/probes.tsv")
        bytes=$((bytes + raw))
        awk -v n="$n" 'NR == 1 && n == 1 {print "batch\t" $0} NR > 1 {print n "\t" $0}' \
            "$d/probes.tsv" >>"$RES/probes.tsv"
    fi
    build_s=$(calc "$t1 - $t0")
    run_s=$(calc "$t2 - $t1")
    [[ $st == 3 ]] && run_s=0
    per=$(calc "($t2 - $t0) / $n")
    [[ $st == 3 ]] && per=$(calc "($t1 - $t0) / $n")
    printf '%s\t%.3f\t%.3f\t%s\t%s\t%s\n' "$n" "$build_s" "$run_s" "$per" $((bytes / n)) \
        "$([[ $st == 0 ]] && echo ok || { [[ $st == 3 ]] && echo no_gpu_built_only || echo "exit_$st"; })" \
        >>"$RES/batches.tsv"
done
# Tab-separated columns aligned (the GPU image has no column(1)).
tcol() { awk -F'\t' '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } if (NF > nf) nf = NF }
    END { for (r = 1; r <= NR; r++) { for (i = 1; i <= nf; i++) printf "%-*s%s", w[i], c[r, i], i < nf ? "  " : "\n" } }' "$@"; }
{
    echo "argus16_probes ($mode): seconds per probe = (make + compile + run of a batch) / probes;"
    echo "bytes per probe = variant PTX + cubin + armed region buffer; base build ${base_s}s (shared)"
    tcol "$RES/batches.tsv"
    if [[ -s $RES/probes.tsv ]]; then
        echo
        echo "per probe: mainloop/load cycles at the probed iteration, base and forced (observed), added (derived)"
        cut -f1,3-7,10 "$RES/probes.tsv" | tcol
    else
        echo "no GPU run: nothing measured"
    fi
} >"$RES/summary.txt"
