#!/usr/bin/env bash
# Discovery and forced-completion probes on the two async kernels
# (tests/argus/async_cpasync.cu, async_tma.cu; docs/argus-discover.md).
#
# Always (no CUDA needed): argus_discover_tool on the committed PTX and
# SASS fixtures (tests/argus/fixtures/discover/) lists the operations the
# fixtures README states, and every probe variant's PTX differs from its
# base by the inserted lines only (marked // argus-probe), with exactly one
# added wait of the operation's kind.
# Where NVCC is given: the kernels are rebuilt and their PTX compared with
# the fixtures' (so that a fixture cannot silently fall behind its
# source), and every probe variant is compiled with ptxas; with CUOBJDUMP
# (and nvdisasm on PATH or NVDISASM_DIR) too, the variants' SASS must hold
# the base's instructions plus the forced wait's only: cp.async one
# LDGDEPBAR and one DEPBAR.LE SB0, 0x0; TMA one more try_wait site (two
# SYNCS.PHASECHK.TRANS64.TRYWAIT, the first test and the retry loop, as
# ptxas compiles the kernel's own wait); wgmma one WARPGROUP.DEPBAR.LE
# gsb0, 0x0; and the issue counts (LDGSTS, UTMALDG, HGMMA) unchanged.
#
# usage: test_discover.sh TOOL SRC_DIR WORK_DIR [NVCC [CUOBJDUMP]]
#        test_discover.sh --regen NVCC CUOBJDUMP   (rewrites the fixtures)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fix=$here/fixtures/discover
inc=$here/../../include
fail() { echo "FAIL: $*" >&2; exit 1; }

# The fixtures' build: what the README states.
build() { # build NVCC OUTDIR NAME ARCH
    local nvcc=$1 out=$2 name=$3 arch=$4
    "$nvcc" -std=c++17 -arch="$arch" -DARGUS_ENABLE -I"$inc" -Werror all-warnings \
        -ptx "$here/$name.cu" -o "$out/$name.ptx"
    "$nvcc" -std=c++17 -arch="$arch" -DARGUS_ENABLE -I"$inc" -Werror all-warnings \
        -cubin "$here/$name.cu" -o "$out/$name.cubin"
}
with_nvdisasm() { # cuobjdump needs nvdisasm for -sass
    if [[ -n ${NVDISASM_DIR:-} ]]; then PATH=$NVDISASM_DIR:$PATH "$@"; else "$@"; fi
}
kernels=("async_cpasync sm_90" "async_tma sm_90a")

if [[ ${1:-} == --regen ]]; then
    nvcc=$2 cuobjdump=$3
    for k in "${kernels[@]}"; do
        set -- $k
        build "$nvcc" "$fix" "$1" "$2"
        with_nvdisasm "$cuobjdump" -sass "$fix/$1.cubin" >"$fix/$1.sass"
    done
    echo "fixtures rewritten in $fix"
    exit 0
fi

tool=$1 src=$2 work=$3 nvcc=${4:-} cuobjdump=${5:-}
rm -rf "$work" && mkdir -p "$work"

# PTX code without the compiler's comments (its build ID and version).
body() { grep -vE '^\s*(//|$)' "$1"; }
count() { grep -cE "$1" "$2" || true; }
sass_count() { grep -E '^\s+/\*[0-9a-f]{4}\*/' "$2" | grep -cE "$1" || true; }

probes=0
for k in "${kernels[@]}"; do
    set -- $k
    name=$1 arch=$2
    ptx=$fix/$name.ptx
    [[ -s $ptx && -s $fix/$name.sass && -s $fix/$name.cubin ]] || fail "fixture $name missing"
    "$tool" discover "$ptx" "$fix/$name.sass" >"$work/$name.tsv" || fail "$name: discovery failed"
    grep -q 'in SASS' "$work/$name.tsv" || fail "$name: no SASS cross-check"
    if grep -q 'ptxas unrolled' "$work/$name.tsv"; then fail "$name: SASS and PTX counts differ"; fi
    if [[ -n $nvcc ]]; then
        build "$nvcc" "$work" "$name" "$arch"
        diff <(body "$ptx") <(body "$work/$name.ptx") >/dev/null ||
            fail "$name: the committed PTX is not what $name.cu compiles to now: run test_discover.sh --regen"
    fi
    "$tool" ids "$ptx" >"$work/$name.ids"
    while IFS=$'\t' read -r id kind loop; do
        iters=0
        [[ $loop == loop ]] && iters="0 1"
        for it in $iters; do
            v=$work/$name.$id.$it.ptx
            "$tool" probe "$ptx" "$id" "$it" "$v" || fail "$name $id: probe failed"
            # Only inserted lines (and, for TMA, the arrive given a state).
            added=$(diff "$ptx" "$v" | grep -c '^>' || true)
            changed=$(diff "$ptx" "$v" | grep '^>' | grep -vc 'argus-probe' || true)
            [[ $changed == 0 ]] || fail "$name $id: $changed changed lines not marked argus-probe"
            removed=$(diff "$ptx" "$v" | grep -c '^<' || true)
            case $kind in
            cp.async) w='cp\.async\.wait_all'; want_removed=0 ;;
            tma) w='mbarrier\.try_wait'; want_removed=1 ;;
            wgmma) w='wgmma\.wait_group'; want_removed=0 ;;
            *) fail "unknown kind $kind" ;;
            esac
            [[ $removed == "$want_removed" ]] || fail "$name $id: $removed lines replaced, want $want_removed"
            [[ $(( $(count "$w" "$v") - $(count "$w" "$ptx") )) == 1 ]] ||
                fail "$name $id: not exactly one added $w"
            [[ $(count "setp\.(eq|ne)\.u32 %argus_probe_q, %argus_probe_n, $((it + 1));" "$v") == 1 ]] ||
                fail "$name $id: the wait is not selected for execution $it"
            probes=$((probes + 1))
            [[ -n $nvcc ]] || continue
            "$nvcc" -arch="$arch" -cubin "$v" -o "${v%.ptx}.cubin" 2>"$work/ptxas.log" ||
                { cat "$work/ptxas.log" >&2; fail "$name $id iter $it: ptxas rejected the variant"; }
            [[ -n $cuobjdump ]] || continue
            with_nvdisasm "$cuobjdump" -sass "${v%.ptx}.cubin" >"${v%.ptx}.sass"
            base=$work/$name.base.sass
            [[ -s $base ]] || with_nvdisasm "$cuobjdump" -sass "$work/$name.cubin" >"$base"
            for issue in LDGSTS UTMALDG HGMMA; do
                [[ $(sass_count "$issue" "$base") == $(sass_count "$issue" "${v%.ptx}.sass") ]] ||
                    fail "$name $id: the variant's $issue count changed"
            done
            delta() { echo $(( $(sass_count "$1" "${v%.ptx}.sass") - $(sass_count "$1" "$base") )); }
            case $kind in
            cp.async)
                [[ $(delta ' LDGDEPBAR ') == 1 && $(delta 'DEPBAR\.LE SB0, 0x0 ') == 1 ]] ||
                    fail "$name $id: SASS: want one more LDGDEPBAR and DEPBAR.LE SB0, 0x0" ;;
            tma)
                [[ $(delta 'SYNCS\.PHASECHK\.TRANS64\.TRYWAIT') == 2 ]] ||
                    fail "$name $id: SASS: want one more try_wait site (2 PHASECHK), got $(delta 'SYNCS\.PHASECHK')" ;;
            wgmma)
                [[ $(delta 'WARPGROUP\.DEPBAR\.LE gsb0, 0x0') == 1 ]] ||
                    fail "$name $id: SASS: want one more WARPGROUP.DEPBAR.LE gsb0, 0x0" ;;
            esac
        done
    done <"$work/$name.ids"
done
echo "argus discover: $probes probe variants checked (PTX${nvcc:+, ptxas}${cuobjdump:+, SASS})"
