#!/usr/bin/env bash
# Issue 16's "argus-shim on a PyTorch program", in one device call
# (docs/argus.md, "argus-shim on PyTorch"):
#
#   OUT=/tmp/out scripts/gpu/argus_shim_torch.sh [--dry-run | --prepare] [--reps N] [--steps N]
#
# Runs scripts/gpu/workloads/argus_torch_prog.py (a small CNN's training
# steps in NVTX ranges step/forward, step/backward, step/optimizer) under
# argus-shim, and checks, independently of argus-shim's own code, from its
# recording (events.jsonl):
#   - each range's kernels are under it: per kernel path, the kernels whose
#     launch happened inside that range on the launching thread (the push
#     and pop lines, replayed here) against the report's counts, exactly;
#   - kernel times equal CUPTI's activity records: per kernel path, the sum
#     of the recording's kernel end - start against the report's total, to
#     the ns;
#   - the trace is valid trace-event JSON (python json) with the structure
#     the CPU tests check: X events with name, ts, dur >= 0, pid and tid,
#     every track nesting (except "(overlap)" sub-tracks), named tracks;
#   - the program's own ranges are in the report with kernels inside.
# Part B, an instrumented program under argus-shim (its arming, shim_arm.c,
# on a GPU): tests/argus/gpu_gemm_kernels.cu built with markers and the
# registry embedded (argus registry --embed), launched by
# tests/argus/gpu_gemm_shim_main.cu (base twice, reg once, in the NVTX
# range "gemm"); checked: the three launches decoded, device region counts
# per kernel exactly the warps x iterations the kernels run, every device
# occurrence inside its kernel's CUPTI span (the largest excess printed),
# and part A's checks on that run too.
# And argus-shim's overhead on the program's wall time: the program alone,
# under argus-shim, and under argus-shim with arming off (ARGUS_SHIM_ARM=0),
# interleaved in rotating order, --reps times each (default 5); the
# process's wall time and the program's timed loop (20 steps after 3
# warm-ups) are both reported, medians and ranges.
#
# Needs an argus-shim build carried from the development machine (the GPU
# image has no cJSON): $BUILD (default build-gpu) with bin/argus-shim,
# lib/libargus_inject.so and lib/libcjson.so.1; `--prepare` makes it here
# (Release, tests off, libcjson copied in). Everything is staged outside
# $OUT and packed into $OUT/argus_shim_torch.tar.gz on exit (also on
# failure), summary.txt beside it; a short table is printed last.
# --dry-run: no torch, no GPU: the same checks on a run of the fake CUPTI
# (tests/argus/fake_cupti.c, driven by argus_shim_prog) in BUILD=build
# (the ctest build), so that the checker itself is run; measures nothing.
# Without torch or a GPU a run says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh --staged
REPO=$PWD
mode=run reps=5 steps=20
while [[ $# -gt 0 ]]; do
    case $1 in
    --dry-run) mode=dry ;;
    --prepare) mode=prepare ;;
    --reps) reps=${2:?--reps needs a number}; shift ;;
    --steps) steps=${2:?--steps needs a number}; shift ;;
    *) echo "argus_shim_torch.sh: unknown argument $1 (use --dry-run, --prepare, --reps N, --steps N)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $mode == prepare ]]; then
    BUILD=${BUILD:-build-gpu}
    prepare_carry "$BUILD" "argus-shim argus_inject argus" libcjson bin/argus-shim
    echo "prepared $BUILD: carry it to the GPU machine (bin/argus-shim, lib/)"
    exit 0
fi
[[ $mode == dry ]] && BUILD=${BUILD:-build} || BUILD=${BUILD:-build-gpu}
# BUILD may be absolute (the ctest passes its build tree).
BDIR=$REPO/$BUILD
[[ $BUILD == /* ]] && BDIR=$BUILD
OUT=${OUT:-$PWD/out-argus-shim-torch}
mkdir -p "$OUT"
stage_results argus_shim_torch shim-torch argusshim "${ARGUS_STAGE:-}"
# The recordings are kept for the first repetition only (they are large).
PACK_SAY=size
trap pack_results EXIT
SHIM=$BDIR/bin/argus-shim
[[ -x $SHIM && -f $BDIR/lib/libargus_inject.so ]] ||
    { log "no argus-shim in $BUILD (bin/argus-shim, lib/libargus_inject.so): run --prepare on the development machine and carry $BUILD"; exit 1; }
CUPTI_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=$BDIR/lib:$CUPTI_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# check.py DIR RANGES...: the checks above on one argus-shim output folder;
# prints one line per check and exits 1 when one fails.
cat >"$RES/check.py" <<'PY'
import json, sys
from collections import defaultdict
d, want_ranges = sys.argv[1], sys.argv[2:]
fails = []
def check(ok, what):
    print(("pass " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
# The recording, read here with python's json (not argus-shim's reader).
ev = [json.loads(l) for l in open(f"{d}/events.jsonl")]
hdr, ev = ev[0], ev[1:]
check(hdr.get("schema") == "argus.shim.events", "recording header")
states = [e["state"] for e in ev if e.get("e") == "cupti"]
check(states[-1:] == ["subscribed"], f"CUPTI subscribed ({states})")
# Each thread's open push ranges at each launch, replaying push/pop in
# timestamp order (ties in file order), as NVTX defines them.
host = sorted(((e["ts"], i, e) for i, e in enumerate(ev) if e.get("e") in ("push", "pop", "launch")),
              key=lambda x: (x[0], x[1]))
open_ = defaultdict(list)
launch_path = {}
for _, _, e in host:
    if e["e"] == "push":
        open_[e["tid"]].append(e["name"])
    elif e["e"] == "pop":
        if open_[e["tid"]]:
            open_[e["tid"]].pop()
    else:
        launch_path[e["corr"]] = "/".join(open_[e["tid"]])
count, total = defaultdict(int), defaultdict(int)
nk = 0
for e in ev:
    if e.get("e") != "kernel":
        continue
    nk += 1
    base = launch_path.get(e["corr"])
    path = ("(launch not recorded)" if base is None else base)
    path = f"{path}/{e['name']}" if path else e["name"]
    count[path] += 1
    total[path] += e["end"] - e["start"]
check(nk > 0, f"CUPTI activity kernel records: {nk}")
rep = json.load(open(f"{d}/report.json"))
regs = {r["path"]: r for r in rep["regions"]}
kern = {p: r for p, r in regs.items() if r.get("kind") == "kernel"}
check(set(kern) == set(count), f"kernel paths: report {len(kern)}, recording {len(count)}"
      + ("" if set(kern) == set(count) else f" (only report: {sorted(set(kern) - set(count))[:3]}, only recording: {sorted(set(count) - set(kern))[:3]})"))
bad_n = [p for p in count if p in kern and kern[p]["count"]["value"] != count[p]]
check(not bad_n, f"kernels under their ranges: counts of {len(count)} kernel paths equal the launches replayed in their ranges" + (f" (differ: {bad_n[:3]})" if bad_n else ""))
bad_t = [p for p in count if p in kern and kern[p]["time"].get("total", {}).get("value") != total[p]]
check(not bad_t, f"kernel times: totals of {len(count)} kernel paths equal the sums of CUPTI's activity records to the ns" + (f" (differ: {[(p, kern[p]['time'].get('total'), total[p]) for p in bad_t[:3]]})" if bad_t else ""))
check(all(kern[p]["time"]["method"] == "cupti_activity" for p in kern), "kernel time method cupti_activity")
for r in want_ranges:
    x = regs.get(r)
    check(x is not None and x.get("kind") == "nvtx_range" and x["kernels_inside"]["value"] > 0,
          f"range {r} in the report with kernels inside ({x['kernels_inside']['value'] if x else 'missing'})")
inside = sum(c for p, c in count.items() if "/" in p and not p.startswith("(launch"))
check(rep["run"]["kernels_in_ranges"]["value"] == inside, f"kernels in ranges: {inside}")
check(rep["run"]["activity_records_dropped"]["value"] == 0, "no activity records dropped")
# The trace: JSON, event fields, tracks nest.
t = json.load(open(f"{d}/trace.json"))
te = t.get("traceEvents")
check(isinstance(te, list) and te, "trace: traceEvents is a non-empty list")
xs = [e for e in te if e.get("ph") == "X"]
ok_fields = all(isinstance(e.get("name"), str) and e["ts"] >= 0 and e["dur"] >= 0
                and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int) for e in xs)
check(ok_fields, f"trace: {len(xs)} X events with name, ts >= 0, dur >= 0, pid, tid")
tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in te if e.get("ph") == "M" and e.get("name") == "thread_name"}
check(all((e["pid"], e["tid"]) in tname for e in xs), "trace: every track named")
tracks = defaultdict(list)
for e in xs:
    tracks[(e["pid"], e["tid"])].append(e)
bad = 0
for k, v in tracks.items():
    if tname.get(k, "").endswith("(overlap)"):
        continue
    stack = []
    for e in sorted(v, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1] <= e["ts"] + 1e-6:
            stack.pop()
        if stack and e["ts"] + e["dur"] > stack[-1] + 1e-6:
            bad += 1
        stack.append(e["ts"] + e["dur"])
check(bad == 0, f"trace: every track nests ({len(tracks)} tracks, {bad} crossings)")
import re
kt = sum(1 for e in xs if re.fullmatch(r"stream \d+", tname.get((e["pid"], e["tid"]), "")))
check(kt == nk, f"trace: one X event per kernel record ({kt} of {nk})")
print(f"checks: {len(fails)} failed")
sys.exit(1 if fails else 0)
PY

# check_armed.py DIR SIZE: part B's device-region checks.
cat >"$RES/check_armed.py" <<'PY'
import json, sys
from collections import defaultdict
d, n = sys.argv[1], int(sys.argv[2])
fails = []
def check(ok, what):
    print(("pass " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
rep = json.load(open(f"{d}/report.json"))
run = rep["run"]
check(run["armed_launches_decoded"]["value"] == 3 and run["armed_launches_missing"]["value"] == 0,
      f"3 armed launches decoded ({run['armed_launches_decoded']['value']} decoded, {run['armed_launches_missing']['value']} missing)")
regs = {r["path"]: r for r in rep["regions"]}
def find(kernel_part, sub):
    for p, r in regs.items():
        parts = p.split("/")
        if len(parts) >= 2 and parts[0] == "gemm" and kernel_part in parts[1] and "/".join(parts[2:]) == sub:
            return r
    return None
# base: (n/16)^2 CTAs x 8 warps, n/16 K-tiles; reg: (n/64)^2 CTAs x 8 warps, n/8 K-tiles.
wb, wr = (n // 16) ** 2 * 8, (n // 64) ** 2 * 8
for kern, launches, warps, tiles in (("gemm_base_on", 2, wb, n // 16), ("gemm_reg_on", 1, wr, n // 8)):
    for sub, per in (("mainloop", 1), ("mainloop/load", tiles), ("mainloop/compute", tiles),
                     ("mainloop/sync", 2 * tiles), ("store", 1)):
        r = find(kern, sub)
        want = launches * warps * per
        got = r["count"]["value"] if r else None
        check(r is not None and r.get("kind") == "device_region" and got == want and r["partial"]["value"] == 0,
              f"{kern}/{sub}: {got} occurrences, want {want} ({launches} launches x {warps} warps x {per})")
ev = [json.loads(l) for l in open(f"{d}/events.jsonl")][1:]
kdur = {e["corr"]: e["end"] - e["start"] for e in ev if e.get("e") == "kernel"}
worst = 0
for e in ev:
    if e.get("e") == "region" and e["corr"] in kdur:
        worst = max(worst, e["off"] + e["dur"] - kdur[e["corr"]])
check(worst <= 2000, f"device occurrences inside their kernel's CUPTI span (largest excess {worst} ns, allowed 2000)")
armed = [e for e in ev if e.get("e") == "armed"]
for a in armed:
    print(f"info armed corr {a['corr']}: {a['state']}: {a.get('why', '')}")
print(f"checks: {len(fails)} failed")
sys.exit(1 if fails else 0)
PY
# overhead.py RES REPS: the wall-time table from the runs' times.
cat >"$RES/overhead.py" <<'PY'
import json, statistics, sys
res, reps = sys.argv[1], int(sys.argv[2])
rows = [l.split("\t") for l in open(f"{res}/runs.tsv").read().splitlines()[1:]]
out = {}
for v in ("plain", "shim", "shim_arm_off"):
    wall = [float(r[2]) for r in rows if r[0] == v and r[3] == "0"]
    loop = [float(r[4]) for r in rows if r[0] == v and r[3] == "0" and r[4] != ""]
    out[v] = (wall, loop)
print("variant\truns\twall_s_median\twall_s_min\twall_s_max\tloop_ms_median\tadded_wall_%\tadded_loop_%")
pw, pl = out["plain"]
for v, (w, l) in out.items():
    if not w:
        print(f"{v}\t0\t-\t-\t-\t-\t-\t-")
        continue
    aw = (statistics.median(w) / statistics.median(pw) - 1) * 100 if pw else float("nan")
    al = (statistics.median(l) / statistics.median(pl) - 1) * 100 if pl and l else float("nan")
    lm = statistics.median(l) * 1e3 if l else float("nan")
    print(f"{v}\t{len(w)}\t{statistics.median(w):.3f}\t{min(w):.3f}\t{max(w):.3f}\t{lm:.2f}\t{aw:+.1f}\t{al:+.1f}")
PY

# One run of a variant: wall time of the process, the program's loop time.
# run VARIANT REP CMD...
run() {
    local v=$1 rep=$2; shift 2
    local t0 t1 rc loop=""
    t0=$(date +%s%N)
    set +e
    timeout 300 "$@" >"$RES/${v}_$rep.out" 2>"$RES/${v}_$rep.err"
    rc=$?
    set -e
    t1=$(date +%s%N)
    [[ -f $RES/${v}_$rep.json ]] && loop=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["loop_s"])' "$RES/${v}_$rep.json")
    printf '%s\t%s\t%s\t%s\t%s\n' "$v" "$rep" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')" "$rc" "$loop" >>"$RES/runs.tsv"
    [[ $rc == 0 ]] || log "$v run $rep exited $rc: $(tail -2 "$RES/${v}_$rep.err" | tr '\n' ' ')"
}
printf 'variant\trep\twall_s\texit\tloop_s\n' >"$RES/runs.tsv"

if [[ $mode == dry ]]; then
    fake=$BDIR/tests/argus/fakecupti
    prog=$BDIR/bin/argus_shim_prog
    [[ -x $prog && -f $fake/libcupti.so.13 ]] || { log "no fake CUPTI or argus_shim_prog in $BUILD (the ctest build)"; exit 1; }
    step=(push:step push:forward conv:7:300 bn:7:100 pop push:backward conv_bwd:7:500 pop push:optimizer sgd:7:40 pop pop)
    args=(0 warm:7:50 "${step[@]}" "${step[@]}" "${step[@]}")
    export LD_LIBRARY_PATH=$fake:$LD_LIBRARY_PATH
    for rep in $(seq 1 "$reps"); do
        run plain "$rep" "$prog" "${args[@]}"
        run shim "$rep" "$SHIM" -o "$RES/shim_$rep" -- "$prog" "${args[@]}"
        ARGUS_SHIM_ARM=0 run shim_arm_off "$rep" "$SHIM" -o "$RES/shimoff_$rep" -- "$prog" "${args[@]}"
    done
    python3 "$RES/check.py" "$RES/shim_1" step step/forward step/backward step/optimizer | tee "$RES/checks.txt"
    crc=${PIPESTATUS[0]}
    python3 "$RES/overhead.py" "$RES" "$reps" >"$RES/overhead.tsv"
    for r in $(seq 2 "$reps"); do rm -rf "$RES/shim_$r" "$RES/shimoff_$r"; done
    # Part B's checker on a recording written here with the counts a 64^3
    # run must have (through argus-shim --replay, the real builder), once
    # right and once with one occurrence missing, which must fail.
    for variant in right short; do
        python3 - "$RES/partb_$variant.jsonl" "$variant" <<'GEN'
import json, sys
path, variant = sys.argv[1], sys.argv[2]
L = [{"schema": "argus.shim.events", "version": 1, "cupti": "subscribed", "t0": "1000", "pid": 1},
     {"e": "push", "tid": 1, "ts": 0, "name": "gemm"}]
launches = [(1, "_Z12gemm_base_onPKfS0_Pfii", 128, 4), (2, "_Z12gemm_base_onPKfS0_Pfii", 128, 4),
            (3, "_Z11gemm_reg_onPKfS0_Pfii", 8, 8)]
for corr, name, warps, tiles in launches:
    L.append({"e": "launch", "tid": 1, "ts": corr, "corr": corr})
    L.append({"e": "kernel", "corr": corr, "name": name, "start": 100000 * corr, "end": 100000 * corr + 50000, "stream": 7})
    for i, (nm, par) in enumerate((("mainloop", None), ("load", 0), ("sync", 0), ("compute", 0), ("store", None))):
        dn = {"e": "dnode", "corr": corr, "node": i, "name": nm}
        if par is not None:
            dn["parent"] = par
        L.append(dn)
    for w in range(warps):
        cta, wi = divmod(w, 8)
        if not (variant == "short" and corr == 3 and w == 0):
            L.append({"e": "region", "corr": corr, "node": 0, "cta": cta, "warp": wi, "off": 10, "dur": 40000})
        for t in range(tiles):
            base = 20 + t * 100
            L.append({"e": "region", "corr": corr, "node": 1, "cta": cta, "warp": wi, "off": base, "dur": 20})
            L.append({"e": "region", "corr": corr, "node": 2, "cta": cta, "warp": wi, "off": base + 20, "dur": 10})
            L.append({"e": "region", "corr": corr, "node": 3, "cta": cta, "warp": wi, "off": base + 30, "dur": 30})
            L.append({"e": "region", "corr": corr, "node": 2, "cta": cta, "warp": wi, "off": base + 60, "dur": 10})
        L.append({"e": "region", "corr": corr, "node": 4, "cta": cta, "warp": wi, "off": 40020, "dur": 10})
    L.append({"e": "armed", "corr": corr, "name": name, "state": "decoded", "why": "synthetic", "records_lost": 0})
L.append({"e": "pop", "tid": 1, "ts": 10 ** 6})
open(path, "w").write("".join(json.dumps(x) + "\n" for x in L))
GEN
        "$SHIM" --replay "$RES/partb_$variant.jsonl" -o "$RES/partb_$variant" >/dev/null
        cp "$RES/partb_$variant.jsonl" "$RES/partb_$variant/events.jsonl"
        set +e
        python3 "$RES/check_armed.py" "$RES/partb_$variant" 64 >"$RES/partb_$variant.txt" 2>&1
        b=$?
        set -e
        if [[ $variant == right && $b != 0 ]] || [[ $variant == short && $b == 0 ]]; then
            cat "$RES/partb_$variant.txt" >&2
            log "part B's checker on the $variant synthetic recording exited $b"
            crc=1
        fi
    done
    log "part B's checker: passes the right synthetic recording, fails the short one"
    # Part B's program must build (it runs only on a GPU).
    NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    if [[ -x $NVCC && -x $BDIR/bin/argus ]]; then
        bw=$RES/partb_build
        mkdir -p "$bw"
        "$BDIR/bin/argus" registry tests/argus/gpu_gemm_kernels.cu -o "$bw/gemm.argus.json" \
            --embed "$bw/gemm.argus.cuh" >/dev/null &&
            "$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Werror all-warnings -DARGUS_ENABLE \
                -include "$bw/gemm.argus.cuh" -Iinclude -c tests/argus/gpu_gemm_kernels.cu -o "$bw/gemm_on.o" &&
            "$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Werror all-warnings \
                tests/argus/gpu_gemm_shim_main.cu "$bw/gemm_on.o" -o "$bw/gpu_gemm_shim" ||
            { log "part B's program does not build"; crc=1; }
        rm -rf "$bw"
        log "part B's program builds (sm_90a, registry embedded)"
    fi
    { echo "dry run (fake CUPTI, argus_shim_prog): nothing measured; times are of the fake, not a GPU"
      tail -1 "$RES/checks.txt"; column -t -s$'\t' "$RES/overhead.tsv" 2>/dev/null || cat "$RES/overhead.tsv"; } >"$RES/summary.txt"
    cat "$RES/summary.txt"
    exit "$crc"
fi

brc=skipped
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [[ -x $NVCC && -x $BDIR/bin/argus ]] && nvidia-smi -L >/dev/null 2>&1; then
    bw=$RES/partb
    mkdir -p "$bw"
    set +e
    "$BDIR/bin/argus" registry tests/argus/gpu_gemm_kernels.cu -o "$bw/gemm.argus.json" \
        --embed "$bw/gemm.argus.cuh" >"$bw/build.log" 2>&1 &&
        "$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DARGUS_ENABLE \
            -include "$bw/gemm.argus.cuh" -Iinclude -c tests/argus/gpu_gemm_kernels.cu -o "$bw/gemm_on.o" >>"$bw/build.log" 2>&1 &&
        "$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a tests/argus/gpu_gemm_shim_main.cu \
            "$bw/gemm_on.o" -o "$bw/gpu_gemm_shim" >>"$bw/build.log" 2>&1
    b=$?
    if [[ $b == 0 ]]; then
        timeout 120 "$SHIM" -o "$RES/armed" -- "$bw/gpu_gemm_shim" 128 >"$bw/run.out" 2>&1
        b=$?
        [[ $b == 0 ]] && python3 "$RES/check_armed.py" "$RES/armed" 128 >"$RES/checks_armed.txt" 2>&1 &&
            python3 "$RES/check.py" "$RES/armed" gemm >>"$RES/checks_armed.txt" 2>&1
        b=$?
        brc=$b
        # Some 70,000 region lines: the report stays, the recording's head
        # and the trace's size only (the tarball must come back whole).
        if [[ -f $RES/armed/events.jsonl ]]; then
            head -n 3000 "$RES/armed/events.jsonl" >"$RES/armed/events.head.jsonl"
            grep -E '"e":"(armed|unavailable|cupti|kernel|launch)"' "$RES/armed/events.jsonl" >"$RES/armed/events.armed.jsonl" || true
            ls -l "$RES/armed" >"$RES/armed/sizes.txt"
            rm -f "$RES/armed/events.jsonl" "$RES/armed/trace.json"
        fi
    else
        brc="build failed ($(tail -1 "$bw/build.log"))"
    fi
    set -e
    rm -f "$bw/gemm_on.o" "$bw/gpu_gemm_shim"
    log "part B (instrumented kernels armed under argus-shim): $brc"
else
    log "part B skipped: needs nvcc, $BUILD/bin/argus and a GPU"
fi

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>"$RES/torch.err"; then
    log "no torch with CUDA here ($(tail -1 "$RES/torch.err")): nothing measured"
    echo "== argus_shim_torch: no GPU or no torch: nothing measured" | tee "$RES/summary.txt"
    exit 0
fi
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')"
    echo "method: $reps repetitions of each variant (plain, argus-shim, argus-shim with ARGUS_SHIM_ARM=0), interleaved in rotating order; wall = the process's wall time (date +%s%N around it); loop = the program's $steps timed steps after 3 warm-ups (perf_counter, synchronised)"
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt" >&2
prog=(python3 "$REPO/scripts/gpu/workloads/argus_torch_prog.py" --steps "$steps")
variants=(plain shim shim_arm_off)
for rep in $(seq 1 "$reps"); do
    for k in 0 1 2; do
        v=${variants[$(((k + rep) % 3))]}
        case $v in
        plain) run plain "$rep" "${prog[@]}" --out "$RES/plain_$rep.json" ;;
        shim) run shim "$rep" "$SHIM" -o "$RES/shim_$rep" -- "${prog[@]}" --out "$RES/shim_$rep.json" ;;
        shim_arm_off) ARGUS_SHIM_ARM=0 run shim_arm_off "$rep" "$SHIM" -o "$RES/shimoff_$rep" -- "${prog[@]}" --out "$RES/shim_arm_off_$rep.json" ;;
        esac
    done
done
set +e
python3 "$RES/check.py" "$RES/shim_1" step step/forward step/backward step/optimizer >"$RES/checks.txt" 2>&1
crc=$?
set -e
python3 "$RES/overhead.py" "$RES" "$reps" >"$RES/overhead.tsv"
# One recording kept in full; the others' reports only.
for r in $(seq 2 "$reps"); do rm -f "$RES/shim_$r/events.jsonl" "$RES/shim_$r/trace.json" "$RES/shimoff_$r/events.jsonl" "$RES/shimoff_$r/trace.json"; done
{ sed -n 1,3p "$RES/env.txt"
  echo "part B (armed instrumented kernels under argus-shim): exit $brc"
  [[ -f $RES/checks_armed.txt ]] && grep -E '^(FAIL|checks)|largest excess' "$RES/checks_armed.txt"
  echo "part A (PyTorch):"
  grep -E '^FAIL' "$RES/checks.txt" || true
  tail -1 "$RES/checks.txt"
  grep -E 'kernel records|kernels under|kernel times|trace: every track' "$RES/checks.txt"
  column -t -s$'\t' "$RES/overhead.tsv" 2>/dev/null || cat "$RES/overhead.tsv"; } >"$RES/summary.txt"
cat "$RES/summary.txt"
echo "== result: part A checks exit $crc, part B $brc ($((SECONDS - T0)) s); full results in $OUT/argus_shim_torch.tar.gz"
[[ $crc == 0 && ( $brc == 0 || $brc == skipped ) ]]
