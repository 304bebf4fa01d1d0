#!/usr/bin/env bash
# Issue 3 on the H200: kernel profiles, isolated timings, co-run
# measurements, placement probes and the two-process MPS check, written as
# the dataset under $OUT/ds (packed into $OUT/issue3.tgz) with a short
# table printed last.
#
#   OUT=/tmp/r PHASES="profile placement" scripts/gpu/issue3_dataset.sh
#
# Phases (default: all, in this order): time corun_shared corun_part spread
# placement mps profile ncu resnet. Binaries come from $BUILD (default
# build-gpu, carried from the development machine; built here if missing).
# MPS is started for the mps phase only and stopped at its end. Never
# touches clocks, power, MIG; never resets the GPU.
set -uo pipefail
PHASES=${PHASES:-"time corun_shared corun_part spread placement mps profile ncu resnet"}
source "$(dirname "$0")/lib.sh"

# Deterministic pair lists (seeded) from the variant list.
"$ZOO" list -o "$DS/variants.jsonl" 2>>"$OUT/script.log"
python3 - "$DS" <<'PY'
import json, random, sys
ds = sys.argv[1]
names = [r["name"] for r in map(json.loads, open(f"{ds}/variants.jsonl")) if r.get("record") == "variant"]
rng = random.Random(20261130)
pairs = [(a, b) for i, a in enumerate(names) for b in names[i:]]
rng.shuffle(pairs)
open(f"{ds}/pairs_part.txt", "w").write("".join(f"{a} {b}\n" for a, b in pairs[:700]))
open(f"{ds}/pairs_spread.txt", "w").write("".join(f"{a} {b}\n" for a, b in pairs[700:850]))
PY

if has time; then
    log "time: every variant on the full GPU and on 32/64/96 SMs"
    "$ZOO" time --variants all --sms 132,96,64,32 --time-budget 150 -o "$DS/time.jsonl" 2>"$OUT/time.err"
    log "time rc=$?"
fi
if has corun_shared; then
    log "corun shared: all pairs, both orders"
    "$ZOO" corun --all-pairs --mode shared --order both --repeats 7 --time-budget ${SHARED_BUDGET:-140} \
        -o "$DS/corun_shared.jsonl" 2>"$OUT/corun_shared.err"
    log "corun shared rc=$?"
fi
if has corun_part; then
    for x in ${PART_SPLITS:-32 64 96}; do
        log "corun partitioned split $x: 700 sampled pairs, both orders"
        "$ZOO" corun --pairs "$DS/pairs_part.txt" --mode partitioned --split $x --order both \
            --repeats 7 --time-budget ${PART_BUDGET:-75} -o "$DS/corun_part$x.jsonl" 2>"$OUT/corun_part$x.err"
        log "corun part $x rc=$?"
    done
fi
if has spread; then
    log "spread: 150 shared pairs measured again"
    "$ZOO" corun --pairs "$DS/pairs_spread.txt" --mode shared --order ab --repeats 7 --time-budget 25 \
        -o "$DS/corun_spread_repeat.jsonl" 2>"$OUT/spread.err"
    log "spread rc=$?"
fi
if has placement; then
    log "placement probes"
    "$ZOO" placement --repeats 1 -o "$DS/placement.jsonl" 2>"$OUT/placement.err"
    log "placement rc=$?"
fi
if has mps; then
    log "mps: two processes, shared GPU, under the MPS control daemon"
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mosaic-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mosaic-mps-log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
    MPSCTL=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
    if "$MPSCTL" -d; then
        sleep 1
        for pair in "copy_1G gemm_cublas_bf16_8192" "attention_bh16_s2048_q64_k128 triad_512M_w2" \
                    "pointer_chase_256M stencil3d_448" "fma_8448_b128_c8 softmax_block_2048x65536"; do
            set -- $pair
            for who in "$1" "$2"; do   # each alone under MPS
                "$ZOO" mps-corun --variant "$who" --start-at +4 --repeats 9 -o "$DS/mps_alone_$who.jsonl" 2>>"$OUT/mps.err"
            done
            # One absolute start time for both processes: a relative one would
            # be counted from each process's own start, milliseconds apart.
            start=$(( $(date +%s%N) + 5000000000 ))
            "$ZOO" mps-corun --variant "$1" --start-at $start --repeats 9 -o "$DS/mps_pair_${1}__$2.a.jsonl" 2>>"$OUT/mps.err" &
            "$ZOO" mps-corun --variant "$2" --start-at $start --repeats 9 -o "$DS/mps_pair_${1}__$2.b.jsonl" 2>>"$OUT/mps.err"
            wait
            echo "$1 $2" >>"$DS/pairs_mps.txt"
        done
        echo quit | "$MPSCTL"
        sleep 1
        unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
        log "mps done; in-process shared co-runs of the same pairs"
        "$ZOO" corun --pairs "$DS/pairs_mps.txt" --mode shared --order both --repeats 9 \
            -o "$DS/mps_inprocess.jsonl" 2>>"$OUT/mps.err"
    else
        log "mps: could not start the MPS control daemon"
    fi
fi
if has profile; then
    log "profile: mosaic-profile capture of every zoo variant (one launch each)"
    "$PROF" capture -o "$DS/zoo.profile.json" -- "$ZOO" once --variants all -o "$DS/once.jsonl" \
        >"$OUT/profile.out" 2>"$OUT/profile.err"
    log "profile rc=$?"
fi
if has ncu; then
    log "ncu cross-check on 6 variants"
    METRICS=$("$PROF" ncu-metrics)
    V=copy_128M,softmax_warp_65536x1024,fma_264_b1024_c32,gemm_cublas_bf16_4096,pointer_chase_32M,histogram_256_skewed
    timeout 150 ncu --clock-control none --cache-control none --print-kernel-base mangled \
        --csv --page raw --metrics "$METRICS" \
        "$ZOO" once --variants "$V" >"$DS/zoo_subset.ncu.csv" 2>"$OUT/ncu.err"
    log "ncu rc=$?"
    "$PROF" import-ncu "$DS/zoo_subset.ncu.csv" -o "$DS/zoo_subset.ncu.profile.json" 2>>"$OUT/ncu.err"
    python3 tests/profiler/gpu/compare.py "$DS/zoo.profile.json" "$DS/zoo_subset.ncu.profile.json" \
        >"$DS/zoo_subset.compare.txt" 2>&1 || true
fi
if has bench; then
    log "bench: shim cost per launch, in-process A/B on the GPU"
    for r in 1 2 3; do
        LD_PRELOAD=$REPO/$BUILD/lib/libmosaic.so "$REPO/$BUILD/bin/bench_launch" 300 256 >>"$DS/bench_launch_gpu.jsonl" 2>>"$OUT/bench.err"
    done
    log "bench rc=$?"
fi
if has resnet; then
    log "resnet50 inference capture"
    "$PROF" capture -o "$DS/resnet50_b8.profile.json" -- python3 scripts/gpu/workloads/resnet50_infer.py 8 \
        >"$OUT/resnet.out" 2>"$OUT/resnet.err"
    log "resnet rc=$?"
fi

tar czf "$OUT/issue3.tgz" -C "$OUT" ds script.log $(cd "$OUT" && ls *.err *.out 2>/dev/null)
python3 - "$DS" <<'PY'
import glob, json, os, sys
ds = sys.argv[1]
def recs(path):
    out = []
    for line in open(path):
        try: out.append(json.loads(line))
        except Exception: pass
    return out
rows = []
for f in sorted(glob.glob(f"{ds}/*.jsonl")):
    r = recs(f)
    kinds = {}
    for x in r:
        k = x.get("record", "?")
        ok = x.get("ok", True)
        kinds.setdefault(k, [0, 0])[0 if ok else 1] += 1
    rows.append((os.path.basename(f), " ".join(f"{k}:{a}/{b}" for k, (a, b) in sorted(kinds.items()))))
for f in sorted(glob.glob(f"{ds}/*.profile.json")):
    try:
        p = json.load(open(f)); rows.append((os.path.basename(f), f"kernels {len(p.get('kernels', []))} complete {p.get('complete')} problems {len(p.get('problems', []))}"))
    except Exception as e:
        rows.append((os.path.basename(f), f"unreadable: {e}"))
print("\nfile                                      records ok/failed")
for a, b in rows:
    print(f"{a:42s} {b[:150]}")
PY
log "done"
