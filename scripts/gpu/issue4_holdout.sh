#!/usr/bin/env bash
# A hold-out check of the shipped predictor on the H200: eleven zoo variants
# added after the models were trained (the HOLDOUT section of
# profiler/zoo/zoo_variants.cu) are profiled and co-run against sixteen
# variants of the issue 3 dataset, shared (both orders) and SM-partitioned
# 64/68 (both orders), 7 repeats each. The result is a dataset directory of
# the same layout as profiler/data/h200 (zoo.profile.json, variants.jsonl,
# corun.jsonl), packed into $OUT/holdout.tgz; `mosaic-train --eval-only`
# scores the committed models on it.
#
#   OUT=/tmp/r bash scripts/gpu/issue4_holdout.sh
#
# Never touches clocks, power, MIG; never resets the GPU; no MPS.
set -uo pipefail
PHASES=holdout
source "$(dirname "$0")/lib.sh"
NEW=copy_64M,triad_64M_b128,rmsnorm_2048x16384,softmax_warp_131072x512,fma_2112_b256_c8
NEW+=,gemm_cublas_bf16_3072,attention_bh16_s1024_q128_k64,conv_n16_c64_h56_t16
NEW+=,pointer_chase_8M,histogram_1024_uniform,reduce_64M_b512_i8
OLD=copy_128M,triad_128M,rmsnorm_16384x4096,softmax_block_8192x8192,batchnorm_64x256x56x56
OLD+=,stencil3d_320,transpose_naive_8192,fma_w1_b256_c8,fma_8448_b128_c8,gemm_cublas_bf16_4096
OLD+=,attention_bh32_s512_q128_k128,conv_n32_c64_h56_t16,pointer_chase_32M
OLD+=,gemv_cublas_bf16_16384x16384,histogram_256_uniform,reduce_64M_b256_i4
H=$DS/holdout
mkdir -p "$H"
"$ZOO" list -o "$H/all_variants.jsonl" 2>>"$OUT/script.log"
python3 - "$H" "$NEW" "$OLD" <<'PY'
import json, sys
h, new, old = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
want = set(new) | set(old)
rows = [l for l in open(f"{h}/all_variants.jsonl")]
keep = [l for l in rows if json.loads(l).get("record") != "variant" or json.loads(l)["name"] in want]
open(f"{h}/variants.jsonl", "w").write("".join(keep))
names = {json.loads(l)["name"] for l in keep if json.loads(l).get("record") == "variant"}
missing = want - names
if missing:
    sys.exit(f"variants not in this mosaic-zoo: {sorted(missing)}")
open(f"{h}/pairs.txt", "w").write("".join(f"{a} {b}\n" for a in new for b in old))
PY
[[ -s $H/pairs.txt ]] || { log "no pairs"; exit 1; }
log "profile: $(wc -l <"$H/pairs.txt") pairs; capture of the 27 variants"
"$PROF" capture -o "$H/zoo.profile.json" -- "$ZOO" once --variants "$NEW,$OLD" -o "$H/once.jsonl" \
    >"$OUT/profile.out" 2>"$OUT/profile.err"
log "profile rc=$?"
log "corun shared"
"$ZOO" corun --pairs "$H/pairs.txt" --mode shared --order both --repeats 7 --time-budget 150 \
    -o "$H/corun_shared.jsonl" 2>"$OUT/corun_shared.err"
log "corun shared rc=$?"
log "corun partitioned 64/68"
"$ZOO" corun --pairs "$H/pairs.txt" --mode partitioned --split 64 --order both --repeats 7 \
    --time-budget 150 -o "$H/corun_part64.jsonl" 2>"$OUT/corun_part.err"
log "corun partitioned rc=$?"
cat "$H/corun_shared.jsonl" "$H/corun_part64.jsonl" >"$H/corun.jsonl"
cp "$DS/env.txt" "$H/env.txt"
python3 - "$H" <<'PY' | tee "$OUT/table.txt"
import json, sys, collections
h = sys.argv[1]
c = collections.Counter()
for l in open(f"{h}/corun.jsonl"):
    r = json.loads(l)
    if r.get("record") == "corun":
        c[(r["mode"], r.get("ok"))] += 1
print("corun records (mode, ok):", dict(c))
p = json.load(open(f"{h}/zoo.profile.json"))
print("profile kernels:", len(p["kernels"]), "incomplete:", sum(1 for k in p["kernels"] if k.get("missing")))
PY
tar -C "$DS" -czf "$OUT/holdout.tgz" holdout && rm -rf "$DS"
log "done"
