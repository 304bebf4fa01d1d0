#!/usr/bin/env bash
# Checks what the Argus markers compile to for sm_90 (nvcc 13.0), on
# tests/argus/kernel_known.cu:
#  - enabled: one 8-byte record store per marker (as many as %clock reads,
#    which equal the marker sites), no atomics, no global loads beyond the
#    kernel's own, %globaltimer/%smid/%clock64 only at CTA begin and end;
#  - disabled (no ARGUS_ENABLE): no trace instruction, no descriptor, and
#    the same PTX (and SASS, where cuobjdump is found) as the kernel with
#    every marker line deleted.
# Prints the marker cost in SASS instructions when cuobjdump is available
# (CUOBJDUMP, or on PATH; pip package nvidia-cuda-cuobjdump).
# Warnings are errors, as in the C builds.
# usage: check_ptx.sh NVCC INCLUDE_DIR WORK_DIR
set -euo pipefail
nvcc=$1 inc=$2 work=$3
src=$(dirname "$0")/kernel_known.cu
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
sed '/ARGUS_/d' "$src" >"$work/stripped.cu"
sed -E '/ARGUS_(REGION_BEGIN|REGION_END|ROLE|ITER)\(/d' "$src" >"$work/cta_only.cu"
cp "$src" "$work/known.cu"
build() { # build NAME SRC FLAGS...: PTX and cubin
    local name=$1 file=$2; shift 2
    "$nvcc" -std=c++17 -arch=sm_90 -Werror all-warnings -I"$inc" "$@" -ptx "$file" -o "$work/$name.ptx"
    "$nvcc" -std=c++17 -arch=sm_90 -I"$inc" "$@" -cubin "$file" -o "$work/$name.cubin"
}
build on "$work/known.cu" -DARGUS_ENABLE
build off "$work/known.cu"
build stripped "$work/stripped.cu"
build cta "$work/cta_only.cu" -DARGUS_ENABLE

count() { grep -cE "$1" "$2" || true; }
on=$work/on.ptx off=$work/off.ptx
markers=$(grep -cE 'ARGUS_(REGION_BEGIN|REGION_END|ROLE|ITER)\(' "$src")
clocks=$(count '%clock;' "$on")
[[ $clocks == "$markers" ]] || fail "$clocks %clock reads for $markers marker sites"
u64=$(count 'st\.global\.u64' "$on")
v2=$(count 'st\.global\.v2\.u64' "$on")
# Four 8-byte header fields: gt_start, clk_start, clk_end, gt_end.
records=$((u64 + 2 * v2 - 4))
[[ $records == "$markers" ]] || fail "$records record stores for $markers markers"
[[ $(count '\b(atom|red)\.' "$on") == 0 ]] || fail "atomics in the enabled build"
[[ $(count 'ld\.global' "$on") == $(count 'ld\.global' "$off") ]] || fail "markers load from global memory"
for r in '%globaltimer' '%smid' '%clock64'; do
    [[ $(count "$r;" "$on") == 2 ]] || fail "$r read $(count "$r;" "$on") times, not at CTA begin and end only"
done
for r in '%clock' '%globaltimer' '%smid' 'argus_desc_v1'; do
    [[ $(count "$r" "$off") == 0 ]] || fail "disabled build contains $r"
done
grep -q 'argus_desc_v1' "$on" || fail "enabled build has no argus_desc_v1"
# The PTX header names the input file; compare the code only.
body() { grep -vE '^\s*(//|\.file)' "$1"; }
diff <(body "$off") <(body "$work/stripped.ptx") >/dev/null || fail "disabled PTX differs from the marker-free kernel"
echo "argus PTX (sm_90): $markers markers, $records 8-byte record stores, 0 atomics, timer/smid reads 2 each; disabled PTX = marker-free PTX"

# A device function with regions compiles in both builds; an END that does
# not close the innermost region does not compile in either.
cat >"$work/devfn.cu" <<'CU'
#include <argus/region.cuh>
__device__ float step(ARGUS_WARP_PARAM, float x)
{
    ARGUS_REGION_BEGIN("step");
    x = x * 2.0f;
    ARGUS_REGION_END("step");
    return x;
}
extern "C" __global__ void k(float *p)
{
    ARGUS_CTA_BEGIN();
    ARGUS_REGION_BEGIN("body");
    p[threadIdx.x] = step(ARGUS_WARP_ARG, p[threadIdx.x]);
    ARGUS_REGION_END("body");
    ARGUS_CTA_END();
}
CU
sed 's/ARGUS_REGION_END("body")/ARGUS_REGION_END("step")/' "$work/devfn.cu" >"$work/bad_end.cu"
for flags in -DARGUS_ENABLE -DARGUS_OFF; do
    "$nvcc" -std=c++17 -arch=sm_90 -I"$inc" "$flags" -ptx "$work/devfn.cu" -o "$work/devfn.ptx" ||
        fail "a device function with regions does not compile ($flags)"
    if "$nvcc" -std=c++17 -arch=sm_90 -I"$inc" "$flags" -ptx "$work/bad_end.cu" -o "$work/bad.ptx" 2>"$work/bad_end.err"; then
        fail "a mismatched ARGUS_REGION_END compiled ($flags)"
    fi
    grep -q 'does not close the innermost' "$work/bad_end.err" || fail "mismatched END: no clear message"
done
echo "argus markers: device-function regions compile; a mismatched END is a compile error in both builds"

cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
if [[ -n $cuobjdump && -x $cuobjdump ]]; then
    sass() { "$cuobjdump" -sass "$1" | grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's#^\s+/\*[0-9a-f]{4}\*/##; s#;.*#;#'; }
    sass "$work/off.cubin" >"$work/off.sass"
    sass "$work/stripped.cubin" >"$work/stripped.sass"
    sass "$work/on.cubin" >"$work/on.sass"
    sass "$work/cta.cubin" >"$work/cta.sass"
    diff "$work/off.sass" "$work/stripped.sass" >/dev/null || fail "disabled SASS differs from the marker-free kernel"
    n_off=$(grep -vc 'NOP' "$work/off.sass"); n_on=$(grep -vc 'NOP' "$work/on.sass"); n_cta=$(grep -vc 'NOP' "$work/cta.sass")
    [[ $(grep -cE '\b(ATOM|RED)' "$work/on.sass" || true) == 0 ]] || fail "atomics in the enabled SASS"
    # ptxas may unroll loops: count the marker instances by their stores.
    inst=$(( $(grep -c 'STG' "$work/on.sass") - $(grep -c 'STG' "$work/cta.sass") ))
    [[ $inst -ge $markers ]] || fail "$inst record stores in the SASS for $markers marker sites"
    extra=$((n_on - n_cta))
    echo "argus SASS (sm_90, non-NOP instructions): disabled $n_off = marker-free; CTA begin+end adds $((n_cta - n_off)); $inst marker instances ($markers sites, loops unrolled) add $extra, $((extra / inst)).$(( (extra * 10 / inst) % 10 )) per marker"
else
    echo "argus SASS: cuobjdump not found (set CUOBJDUMP); SASS not compared"
fi
