#!/usr/bin/env bash
# Issue 4 on the H200: two measurements the predictor's shared-mode tail
# asks for, written under $OUT/ds with a short table printed last.
#
#   OUT=/tmp/r scripts/gpu/issue4_probes.sh
#
# behind:  where a single-wave second kernel's blocks land when it arrives
#          while a real zoo kernel holds the SMs (`mosaic-zoo behind`: the
#          placement probe in the shapes of the tail's second kernels, behind
#          single- and multi-wave first kernels; blocks per SM per run).
# residency: (PHASES=residency) multi-wave kernels beside a blocker that
#          leaves part of every SM free: their speed at low residency.
# profile: a separate capture for each variant whose launch configuration
#          equals another variant's (the first-launch-per-key capture of
#          issue 3 gave them the other's profile).
# Binaries come from $BUILD (default build-gpu, carried; built if missing).
# Results: $OUT/issue4.tgz (ds/, table.txt, script.log).
# Never touches clocks, power, MIG; never resets the GPU; no MPS.
set -uo pipefail
PHASES=${PHASES:-"behind profile"}
source "$(dirname "$0")/lib.sh"

# First kernels: single-wave ones that leave room beside their blocks, and
# multi-wave ones whose last wave the second kernel meets.
FIRST=attention_bh8_s4096_q256_k64,gemm_cublas_f32_2048,attention_bh32_s512_q128_k128
FIRST+=,rmsnorm_128x262144,conv_n8_c256_h14_t16,copy_512M_w1,triad_512M_w2,copy_256M_half
FIRST+=,copy_128M,triad_128M,copy_1G,conv_n8_c64_h112_t32,conv_n32_c64_h56_t16
FIRST+=,softmax_block_2048x65536,batchnorm_64x128x112x112,batchnorm_256x512x14x14
FIRST+=,transpose_tiled_8192,scan_64M_b256_i8,gemm_cublas_f32_4096,fma_8448_b128_c8
FIRST+=,rmsnorm_16384x4096,silu_and_mul_bf16_4096x11008,stencil3d_320,transpose_naive_8192
# Probe shapes (default): fma_w1_b256_c8, fma_66_b64_c32, histogram_256_*,
# pointer_chase_1M, pointer_chase_32M, pointer_chase_1G. PROBES and
# BEHIND_OUT override them (an out-of-sample check of the carveout rule uses
# other shapes).
PROBES=${PROBES:-132x256,66x64,264x256+8192,132x64,132x128,66x256}
BEHIND_OUT=${BEHIND_OUT:-behind.jsonl}

if has behind; then
    log "behind: probe shapes behind $(tr ',' '\n' <<<"$FIRST" | wc -l) first kernels"
    "$ZOO" behind --variants "$FIRST" --probes "$PROBES" --repeats 3 --spin-us 150 \
        --time-budget 240 -o "$DS/$BEHIND_OUT" 2>"$OUT/behind.err"
    log "behind rc=$?"
fi
# residency: multi-wave kernels of the shared tail beside a blocker that
# leaves 256/512/1024 threads of every SM free (sleeping and issue-bound).
RES_VARIANTS=copy_128M,triad_128M,copy_1G,scan_128M_b128_i4,softmax_warp_262144x256
RES_VARIANTS+=,silu_and_mul_bf16_4096x11008,reduce_128M_b64_i8,batchnorm_64x256x56x56
RES_VARIANTS+=,gemv_cublas_f32_16384x16384,fma_8448_b128_c8,transpose_naive_8192,rmsnorm_16384x4096
if has residency; then
    log "residency: $(tr ',' '\n' <<<"$RES_VARIANTS" | wc -l) variants"
    "$ZOO" residency --variants "$RES_VARIANTS" --free-threads 256,512,1024 --repeats 3 \
        --time-budget 240 -o "$DS/residency.jsonl" 2>"$OUT/residency.err"
    log "residency rc=$?"
fi
if has profile; then
    for v in histogram_256_skewed transpose_tiled_nopad_8192 pointer_chase_256M; do
        log "profile: $v in its own capture"
        timeout 120 "$PROF" capture -o "$DS/$v.profile.json" -- "$ZOO" once --variants "$v" \
            -o "$DS/once_$v.jsonl" >"$OUT/profile_$v.out" 2>"$OUT/profile_$v.err"
        log "profile $v rc=$?"
    done
fi

# Short table: per (first kernel, probe shape), blocks per SM over the runs.
python3 - "$DS" <<'PY' | tee "$OUT/table.txt"
import json, sys, collections, glob
ds = sys.argv[1]
rows = collections.defaultdict(list)
bad = 0
try:
    for l in open(glob.glob(f"{ds}/behind*.jsonl")[0]):
        r = json.loads(l)
        if r.get("record") != "behind":
            continue
        if not r.get("ok"):
            bad += 1
            continue
        shape = f'{r["probe_grid"]}x{r["probe_threads"]}+{r["probe_smem_bytes"]}'
        rows[(r["first"], shape)].append((r["max_blocks_per_sm"], r["sms_used"], r["started_before_first_end"]))
except (FileNotFoundError, IndexError):
    print("no behind*.jsonl")
print(f"{'first kernel':34s} {'probe':14s} max/SM (runs)  SMs used  started before end")
for (f, s), v in sorted(rows.items()):
    print(f"{f:34s} {s:14s} {str([x[0] for x in v]):14s} {str([x[1] for x in v]):14s} {[x[2] for x in v]}")
print("failed runs:", bad)
for p in glob.glob(f"{ds}/residency.jsonl"):
    print(f"{'variant':32s} {'free':>5s} {'blocker':7s} {'alone us':>9s} {'slowdown':>8s} ended-first")
    for l in open(p):
        r = json.loads(l)
        if r.get("record") == "residency":
            print(f"{r['variant']:32s} {r['free_threads']:5d} {r['blocker']:7s} "
                  f"{r['alone_us']:9.1f} {r.get('slowdown', float('nan')):8.2f} {r['blocker_ended_first']}")
for p in sorted(glob.glob(f"{ds}/*.profile.json")):
    try:
        d = json.load(open(p))
        print(p.split("/")[-1], "kernels:", len(d.get("kernels", [])),
              "complete:", all(not k.get("missing") for k in d.get("kernels", [])))
    except Exception as e:
        print(p, "unreadable:", e)
PY
# One archive comes back (the device tool returns a few files only).
tar -C "$OUT" -czf "$OUT/issue4.tgz" ds table.txt script.log && rm -rf "$DS"
log "done"
