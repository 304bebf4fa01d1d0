#!/usr/bin/env bash
# Gated single launches against graph replay, per kernel and SM count: the
# dataset's baselines are gated (`iso_gated_*_us` of corun records), the
# `time` runs graph-timed; for tensor-core GEMMs the two disagree by 10-18%
# at nearby SM counts (docs/predictor.md). Each kernel is timed with
# `mosaic-zoo time` (CUDA graph, 100 replays) on 64 SMs and the full GPU,
# and gated through `corun` beside fma_66_b64_c32 (66 blocks on the other
# side, the smallest co-runner of the zoo) at split 64 and shared.
#
#   OUT=/tmp/r bash scripts/gpu/issue4_methods.sh
#
# Never touches clocks, power, MIG; never resets the GPU; no MPS.
set -uo pipefail
PHASES=methods
source "$(dirname "$0")/lib.sh"
M=$DS/methods
mkdir -p "$M"
K=${KERNELS:-gemm_cublas_bf16_4096 gemm_cublas_bf16_8192 gemm_cublas_f32_4096 fma_8448_b128_c8 copy_1G attention_bh8_s4096_q256_k64}
log "time: $K on 64 and 132 SMs"
"$ZOO" time --variants "$(echo $K | tr ' ' ,)" --sms 64,132 -o "$M/time.jsonl" 2>"$OUT/time.err"
: >"$M/pairs.txt"
for k in $K; do echo "$k fma_66_b64_c32" >>"$M/pairs.txt"; done
log "corun partitioned 64 and shared, gated"
"$ZOO" corun --pairs "$M/pairs.txt" --mode partitioned --split 64 --repeats 7 \
    -o "$M/corun_part64.jsonl" 2>"$OUT/corun_part.err"
"$ZOO" corun --pairs "$M/pairs.txt" --mode shared --repeats 7 \
    -o "$M/corun_shared.jsonl" 2>"$OUT/corun_shared.err"
cp "$DS/env.txt" "$M/env.txt"
tar -C "$DS" -czf "$OUT/methods.tgz" methods
python3 - "$M" <<'PY' | tee "$OUT/table.txt"
import json, sys
m = sys.argv[1]
t, g = {}, {}
for l in open(f"{m}/time.jsonl"):
    r = json.loads(l)
    if r.get("record") == "time" and r.get("ok"):
        t[(r["variant"], min(r["sms"], 132))] = r["median_us"]
for f, sms in (("corun_part64.jsonl", 64), ("corun_shared.jsonl", 132)):
    for l in open(f"{m}/{f}"):
        r = json.loads(l)
        if r.get("record") == "corun" and r.get("ok"):
            g[(r["a"], sms)] = (r["iso_gated_a_us"], r["iso_a_us"])
print(f"{'kernel':34} {'SMs':>4} {'graph us':>10} {'gated us':>10} {'gated/graph':>12}")
for (k, s), (gated, graph_in_corun) in sorted(g.items()):
    gr = t.get((k, s))
    if gr:
        print(f"{k:34} {s:4d} {gr:10.1f} {gated:10.1f} {gated / gr:12.3f}")
PY
