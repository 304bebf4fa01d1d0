#!/usr/bin/env bash
# Out-of-sample checks of the shipped predictor at SM splits the dataset
# never measured (it has 32/100, 64/68, 96/36), on the H200:
#   time   every zoo variant alone on 16, 48, 80, 112 SMs and the full GPU
#          (CUDA graph, 100 replays): the isolated-duration estimate
#          (mosaic_place_iso_on) against measurement
#   corun  40 seeded random pairs of dataset variants, SM-partitioned
#          16/116 and 48/84, both orders, 7 repeats: co-run error with
#          measured and with estimated isolated durations
#   chase  pointer_chase_1M and _32M on 32 SMs beside six kernels on the
#          other 100, one invocation per pair, SM/memory clocks sampled
#          every 10 ms (nvidia-smi) to see whether a co-runner on other SMs
#          changes the clocks a latency-bound chain runs at
# Results go to $OUT/$NAME.tgz (a dataset directory for `mosaic-train
# --eval-only`, time.jsonl, chase/).
#
#   OUT=/tmp/r bash scripts/gpu/issue4_splits.sh [time corun chase]
#
# Overrides (defaults: the first run, profiler/data/h200/splits): NAME
# (splits), TIME_SMS (16,48,80,112), SPLITS ("16 48"), VARIANTS (the
# variants.jsonl the pairs are drawn from), NPAIRS (40), SEED (20261130);
# for chase: CHASE_A and CHASE_B (variant lists), CHASE_SPLIT (A's SMs).
#
# Never touches clocks, power, MIG; never resets the GPU; no MPS.
set -uo pipefail
PHASES=${*:-time corun chase}
source "$(dirname "$0")/lib.sh"
NAME=${NAME:-splits}
TIME_SMS=${TIME_SMS:-16,48,80,112}
SPLITS=${SPLITS:-16 48}
VARIANTS=${VARIANTS:-profiler/data/h200/variants.jsonl}
CHASE_A=${CHASE_A:-pointer_chase_1M pointer_chase_32M}
CHASE_B=${CHASE_B:-fma_66_b64_c32 fma_8448_b128_c8 attention_bh8_s4096_q256_k64 copy_1G transpose_naive_8192 gemm_cublas_bf16_4096}
CHASE_SPLIT=${CHASE_SPLIT:-32}
S=$DS/$NAME
mkdir -p "$S"
"$ZOO" list -o "$S/all_variants.jsonl" 2>>"$OUT/script.log"

if has time; then
    log "time: all variants on $TIME_SMS,132 SMs"
    "$ZOO" time --variants all --sms $TIME_SMS,132 --time-budget 200 \
        -o "$S/time.jsonl" 2>"$OUT/time.err"
    log "time rc=$?"
fi

if has corun; then
    python3 - "$S" "$VARIANTS" "${NPAIRS:-40}" "${SEED:-20261130}" <<'PY'
import json, random, sys
s, vf, npairs, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
names = [json.loads(l)["name"] for l in open(vf) if json.loads(l).get("record") == "variant"]
rng = random.Random(seed)
pairs = set()
while len(pairs) < npairs:
    a, b = rng.sample(names, 2)
    pairs.add((a, b))
open(f"{s}/pairs.txt", "w").write("".join(f"{a} {b}\n" for a, b in sorted(pairs)))
PY
    for split in $SPLITS; do
        log "corun partitioned $split/$((132 - split))"
        "$ZOO" corun --pairs "$S/pairs.txt" --mode partitioned --split $split --order both \
            --repeats 7 --time-budget 150 -o "$S/corun_part$split.jsonl" 2>"$OUT/corun_$split.err"
        log "corun $split rc=$?"
    done
    cat "$S"/corun_part*.jsonl >"$S/corun.jsonl" 2>/dev/null
fi

if has chase; then
    C=$S/chase
    mkdir -p "$C"
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader \
        -lms 10 >"$C/clocks.csv" 2>/dev/null &
    SMI=$!
    sleep 1
    for a in $CHASE_A; do
        echo "$(date -u +%FT%T.%N) alone $a" >>"$C/marks.txt"
        "$ZOO" time --variants $a --sms $CHASE_SPLIT --replays 400 -o "$C/alone_$a.jsonl" 2>>"$C/err.txt"
        for b in $CHASE_B; do
            echo "$(date -u +%FT%T.%N) begin $a $b" >>"$C/marks.txt"
            echo "$a $b" >"$C/pair.txt"
            "$ZOO" corun --pairs "$C/pair.txt" --mode partitioned --split $CHASE_SPLIT --order ab \
                --repeats 15 -o "$C/corun_${a}_$b.jsonl" 2>>"$C/err.txt"
            echo "$(date -u +%FT%T.%N) end $a $b" >>"$C/marks.txt"
        done
    done
    sleep 1
    kill $SMI 2>/dev/null
    wait $SMI 2>/dev/null
fi

cp "$DS/env.txt" "$S/env.txt"
tar -C "$DS" -czf "$OUT/$NAME.tgz" "$NAME"
python3 - "$S" <<'PY' | tee "$OUT/table.txt"
import json, os, sys
s = sys.argv[1]
def rows(f):
    return [json.loads(l) for l in open(f)] if os.path.exists(f) else []
t = [r for r in rows(f"{s}/time.jsonl") if r.get("record") == "time"]
print(f"time: {len(t)} records, {sum(1 for r in t if r.get('ok'))} ok")
for f in sorted(os.listdir(s)):
    if f.startswith("corun_part"):
        c = [r for r in rows(f"{s}/{f}") if r.get("record") == "corun"]
        print(f"{f}: {len(c)} records, {sum(1 for r in c if r.get('ok'))} ok")
for f in sorted(os.listdir(f"{s}/chase")) if os.path.isdir(f"{s}/chase") else []:
    if not f.startswith("corun_"):
        continue
    for r in rows(f"{s}/chase/{f}"):
        if r.get("record") == "corun" and r.get("ok"):
            print(f"chase {r['a']:>18} beside {r['b']:<30} {r['slowdown_gated_a'] if 'slowdown_gated_a' in r else r['corun_a_us'] / r['iso_gated_a_us']:.3f}")
PY
