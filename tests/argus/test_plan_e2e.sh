#!/usr/bin/env bash
# One `argus query --run` through plan -> exec -> synth over every backend
# on the fakes (issue 13), with `argus exec` as the executor:
#   region timing     argus-shim's arming stand-in writes the device
#                     model's buffer of kernel_known.cu (argus_gen_raw): 2
#                     CTAs x 2 warps, 4 iterations, load 400 cycles in warp
#                     0 and 500 in warp 1, compute 1000, tail 50;
#   kernel timing     argus-shim's recorder on the fake CUPTI, one launch
#                     of "known" of 1000 ns (shim_prog known:7:1000);
#   BPF               argus-bpf's stand-in refusing (no CAP_BPF and
#                     CAP_PERFMON): unavailable, said plainly, the signal
#                     answered without it;
#   hardware metrics  mosaic-profile's stand-in (the range profiler), the
#                     query's --metrics dram__bytes_read.sum kept only;
#   PC-to-region map  the real argus-pcmap tool (libargus_pcmap.so) on the
#                     fake Sanitizer, driven by the model launch of
#                     g16_calls that test_pcmap.c checks (test_argus_pcmap
#                     --map): work() 3x under callA, 1x under callB;
#   SASS metrics      argus-sass's stand-in writing argus.sassmetrics v1,
#                     which answers only when it is given the query's
#                     metric name (smsp__sass_inst_executed): 4096 at each
#                     of work's two PCs, 3072 and 1024 at the call sites,
#                     128 at the out[] store and the exit.
# The numbers of the report are checked against answers worked out by hand
# from those stand-ins (not against what the code printed): region counts
# and cycles, the kernel's 1000 ns, 134227200 bytes, the 3:1 split of
# work's PCs (3072 / 1024), callA inclusive 9216 over both functions, the
# entropy H(3/4) = 0.811278 bits; and every number carries the mark
# observed, attributed or derived.
# Then a worker that hangs (the range profiler's run, killed at the
# description's 3 s): that run fails alone, every other task is done and
# kept, and the next --run runs only it and its synthesis.
# usage: test_plan_e2e.sh ARGUS SHIM_PROG FAKE_CUPTI_DIR GEN_RAW SRC_DIR WORK PCMAP_TEST PCMAP_LIB
set -euo pipefail
argus=$1 prog=$2 fakedir=$3 genraw=$4 src=$5 work=$6 pcmap_test=$7 pcmap_lib=$8
rm -rf "$work" && mkdir -p "$work/bin"
root=$(cd "$src/../.." && pwd)
fix=$src/fixtures/discover
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
export LD_LIBRARY_PATH=$fakedir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# A stand-in compiler (the build is not what this tests; test_exec.sh
# checks it with nvcc): the markers_on variant's registry is scanned from
# kernel_known.cu all the same, which is what decodes the region buffer.
cat >bin/nvcc <<EOF2
#!/bin/sh
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$fix/async_cpasync.ptx" "\$out"
EOF2
cat >bin/ptxas <<EOF2
#!/bin/sh
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$fix/async_cpasync.cubin" "\$out"
EOF2
# The host program: under argus-shim, arming's stand-in and the fake CUDA
# program; under the Sanitizer collector, the real argus-pcmap on the
# fake Sanitizer; under the other collectors' stand-ins, nothing to do.
cat >host.sh <<EOF2
#!/bin/bash
cubin=\$1 variant=\$2
echo "\$variant \${ARGUS_SHIM_OUT:+shim}\${ARGUS_PCMAP_OUT:+pcmap}" >>"$work/runs.log"
if [[ -n \${ARGUS_SHIM_OUT:-} ]]; then
    [[ -n \${ARGUS_SHIM_ARM_RAW:-} ]] && "$genraw" "\$ARGUS_SHIM_ARM_RAW/arm.1.raw"
    exec "$prog" 0 ctx module:"\$cubin" known:7:1000 sync
fi
if [[ -n \${ARGUS_PCMAP_OUT:-} && \${CUDA_INJECTION64_PATH:-} == "$pcmap_lib" ]]; then
    exec "$pcmap_test" --map "\$ARGUS_PCMAP_OUT" \$(cat "$work/model" 2>/dev/null)
fi
exit 0
EOF2
# The Sanitizer model's function names, as the cubin names them.
"$pcmap_test" --map pre.json >/dev/null 2>&1 || fail "test_argus_pcmap --map failed"
python3 - pre.json "$work/sass.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
fns = {p["function"] for p in m["pcs"] if p["function"]}
work = [f for f in fns if "4work" in f]
kern = [f for f in fns if "4work" not in f]
assert len(work) == 1 and len(kern) == 1, fns
M = "smsp__sass_inst_executed"
json.dump({"schema": "argus.sassmetrics", "version": 1, "kernels": [
    {"function": work[0], "pcs": [{"offset": 64, M: 4096}, {"offset": 128, M: 4096}]},
    {"function": kern[0], "pcs": [{"offset": 256, M: 3072}, {"offset": 512, M: 1024},
                                  {"offset": 768, M: 128}, {"offset": 784, M: 128}]}]},
          open(sys.argv[2], "w"))
PY
cat >bin/fake-sass <<EOF2
#!/bin/sh
# argus-sass --out FILE [--metrics a,b] [--device N] -- PROG ARGS...
out=; mets=; while [ "\$1" != -- ]; do
  [ "\$1" = --out ] && out=\$2; [ "\$1" = --metrics ] && mets=\$2; shift; done; shift
"\$@" || exit \$?
[ "\$mets" = smsp__sass_inst_executed ] || { echo "fake-sass: asked for '\$mets'" >&2; exit 7; }
cp "$work/sass.json" "\$out"
EOF2
# The hang's sleep carries this test's PID, so that the check below finds
# this run's only.
nap=61.$$
cat >bin/fake-profile <<'EOF2'
#!/bin/sh
# mosaic-profile capture -o FILE -- CMD...
out=; while [ "$1" != -- ]; do [ "$1" = -o ] && out=$2; shift; done; shift
[ -f "$(dirname "$0")/../hang" ] && sleep NAP
"$@" || exit 4
cat >"$out" <<'P'
{"schema": "mosaic-profile/1", "complete": true, "problems": [],
 "features": [{"key": "duration_ns", "metric": "gpu__time_duration.sum", "unit": "ns"},
              {"key": "dram_read_bytes", "metric": "dram__bytes_read.sum", "unit": "bytes"}],
 "kernels": [{"name": "known", "launches": 1,
              "metrics": {"duration_ns": 1000, "dram_read_bytes": 134227200}}]}
P
EOF2
cat >bin/fake-bpf <<'EOF2'
#!/bin/sh
if [ "$1" = probe ]; then
  echo "argus-bpf: BPF programs cannot be loaded here: bpf(BPF_PROG_LOAD) failed with EPERM (Operation not permitted): this process lacks CAP_BPF and CAP_PERFMON (effective capabilities 0x0)" >&2
  exit 3
fi
exit 9
EOF2
sed -i "s/NAP/$nap/" bin/fake-profile
chmod +x bin/* host.sh
export ARGUS_NVCC=$work/bin/nvcc PATH=$work/bin:$PATH ARGUS_PCMAP_LIB=$pcmap_lib \
       ARGUS_BPF_BIN=$work/bin/fake-bpf MOSAIC_PROFILE_BIN=$work/bin/fake-profile \
       ARGUS_SASS=$work/bin/fake-sass
unset ARGUS_EXEC_METRICS
printf '{"schema": "argus.exec.program", "version": 1, "source": "%s", "include": ["%s"],
 "sm": "90", "run": ["./host.sh", "{cubin}", "{variant}"], "timeout_s": 3}\n' \
  "$src/kernel_known.cu" "$root/include" >known.json
"$argus" registry "$src/kernel_known.cu" -o kreg.json >/dev/null
q=(--program "$work/known.json" --registry "$work/kreg.json"
   --signal region_time,kernel_time,hw_metrics,inst_executed_pc
   --metrics dram__bytes_read.sum,smsp__sass_inst_executed --assume-all
   --executor "$argus exec")
count() { grep -c -E -- "$2" "$work/$1" || true; }

# ---- the query, every backend ----
t0=$(date +%s%N)
set +e
"$argus" query "${q[@]}" --ws "$work/ws" --run --results "$work/res" >out 2>err
rc=$?
set -e
t1=$(date +%s%N)
[[ $rc == 0 ]] || { cat out err; fail "argus query --run exited $rc"; }
[[ $(count out '^(failed|skipped) ') == 0 ]] || { cat out; fail "a task failed"; }
[[ $(count out '^  t[0-9]+ synthesize:.*: complete ') == $(count out '^  t[0-9]+ synthesize:') ]] || { cat out; fail "a synthesis is incomplete"; }
echo "argus_plan_e2e: first query $(( (t1 - t0) / 1000000 )) ms"
# The checker of the report's numbers (check.py WS RESULTS_DIR), kept as a
# file so that the wrong model below can be shown to fail it.
cat >check.py <<'PY'
import json, math, sys
ws, resdir = sys.argv[1], sys.argv[2]
res = {s: json.load(open(f"{resdir}/{s}.json"))
       for s in ("region_time", "kernel_time", "hw_metrics", "inst_executed_pc")}
marks = {"observed", "attributed", "derived"}
def walk(x, where):
    """Every number of a result is {value, unit, mark, from}."""
    if isinstance(x, dict):
        if "value" in x and "mark" in x:
            assert x["mark"] in marks, (where, x)
            assert "unit" in x and isinstance(x["from"], list), (where, x)
            return 1
        n = 0
        for k, v in x.items():
            assert not (isinstance(v, (int, float)) and not isinstance(v, bool)
                        and k not in ("pc", "regions", "launch", "iter", "warps", "ctas",
                                      "count_launches", "index")), (where, k, v)
            n += walk(v, where + "." + k)
        return n
    if isinstance(x, list):
        return sum(walk(v, where + "[]") for v in x)
    return 0
for s, r in res.items():
    assert r["complete"], (s, r["problems"])
    assert walk(r["results"], s) > 0, s

def val(x):
    return x["value"]

# Region timing: the model's counts and cycles (2 CTAs x 2 warps x 4 iterations).
rt = res["region_time"]["results"]
launch = rt["launches"][0]
regs = {g["path"]: g for g in launch["regions"]}
assert val(regs["outer/load"]["count"]) == 16, regs["outer/load"]
assert val(regs["outer/compute"]["count"]) == 16
assert val(regs["outer"]["count"]) == 4 and val(regs["tail"]["count"]) == 4
# load: 8 warp-iterations of 400 cycles (warp 0) and 8 of 500 (warp 1).
assert val(regs["outer/load"]["total_cycles"]) == 8 * 400 + 8 * 500, regs["outer/load"]
assert regs["outer/load"]["total_cycles"]["mark"] == "observed"
assert regs["outer/load"]["mean"]["mark"] == "derived"
assert val(regs["outer/compute"]["total_cycles"]) == 16 * 1000
assert val(regs["tail"]["total_cycles"]) == 4 * 50

# Kernel timing: one launch of "known", 1000 ns, from the fake CUPTI.
kt = res["kernel_time"]
kr = {k["name"]: k for k in kt["results"]["kernels"]}
assert val(kr["known"]["count"]) == 1 and val(kr["known"]["total"]) == 1000, kr["known"]
assert kr["known"]["count"]["mark"] == "observed"
# BPF: its evidence unavailable, saying why plainly, and the signal
# answered without it (an optional collection).
bpf = [i for i in kt["inputs"] if i.get("backend") == "bpf"]
assert len(bpf) == 1 and bpf[0]["state"] in ("not_used", "unavailable"), kt["inputs"]
ob = bpf[0]["object"]
e = json.load(open(f"{ws}/objects/{ob[:2]}/{ob}"))
assert e["status"] == "unavailable" and "CAP_BPF and CAP_PERFMON" in e["why"], e
print("argus_plan_e2e: bpf:", e["why"][:100], "...")

# Hardware metrics: only the metric asked, with its unit.
hw = res["hw_metrics"]["results"]["kernels"]
assert [k["name"] for k in hw] == ["known"], hw
m = hw[0]["metrics"]
assert list(m) == ["dram_read_bytes"], m
assert val(m["dram_read_bytes"]) == 134227200 and m["dram_read_bytes"]["unit"] == "bytes"
assert m["dram_read_bytes"]["mark"] == "observed"

# Instructions per PC attributed through the real argus-pcmap's map.
ip = res["inst_executed_pc"]["results"]
fns = {f["function"]: f for f in ip["functions"]}
assert len(fns) == 2, list(fns)
work_f = next(f for n, f in fns.items() if "4work" in n)
kern_f = next(f for n, f in fns.items() if "4work" not in n)
M = "smsp__sass_inst_executed"
def self_of(f, path):
    g = {g["path"]: g for g in f["regions"]}[path]
    return g["self"][M]
# work's PC 0x40 (inside work): 4096 split 3072 / 1024; its return 0x80
# (after work's END): 3072 under callA, 1024 under callB.
assert val(self_of(work_f, "callA/work")) == 3072 and val(self_of(work_f, "callB/work")) == 1024
assert self_of(work_f, "callA/work")["mark"] == "attributed"
assert val(self_of(work_f, "callA")) == 3072 and val(self_of(work_f, "callB")) == 1024
ga = {g["path"]: g for g in work_f["regions"]}["callA"]
assert val(ga["inclusive"][M]) == 6144, ga["inclusive"]
# In the kernel: the call sites, and out[] and exit outside every region.
assert val(self_of(kern_f, "callA")) == 3072 and val(self_of(kern_f, "callB")) == 1024
assert val(kern_f["total"][M]) == 3072 + 1024 + 128 + 128
# callA inclusive over both functions: 6144 in work + 3072 at its call site.
ka = {g["path"]: g for g in kern_f["regions"]}["callA"]
assert val(ga["inclusive"][M]) + val(ka["inclusive"][M]) == 9216
pcs = {p["pc"]: p for p in work_f["pcs"]}
h = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))
assert abs(val(pcs[64]["entropy"]) - h) < 1e-9 and abs(h - 0.811278) < 1e-6, pcs[64]
assert pcs[64]["entropy"]["mark"] == "derived" and val(pcs[64]["executions"]) == 4096
kp = {p["pc"]: p for p in kern_f["pcs"]}
assert val(kp[256]["entropy"]) == 0
print("argus_plan_e2e: numbers ok")
PY
python3 check.py "$work/ws" "$work/res" || fail "the report's numbers"
# The runs, each variant's program once per collector: argus-shim's runs
# and the Sanitizer's each ran the host.
grep -q ' pcmap$' runs.log || fail "the Sanitizer collector did not run the program"
grep -q ' shim$' runs.log || fail "argus-shim did not run the program"

# ---- the gate fails on a wrong model: callB calls work() twice ----
echo wrong >model
"$argus" query "${q[@]}" --ws "$work/ws3" --run --results "$work/res3" >out4 2>err4 ||
    { cat out4 err4; fail "the query on the wrong model failed"; }
rm model
if python3 check.py "$work/ws3" "$work/res3" >check3.out 2>&1; then
    fail "the checker passed a map of a kernel whose callB calls work() twice"
fi
grep -q AssertionError check3.out || { cat check3.out; fail "the wrong model failed for another reason"; }

# ---- a worker that hangs: the range profiler's run, killed at 3 s ----
touch hang
t0=$(date +%s%N)
set +e
"$argus" query "${q[@]}" --ws "$work/ws2" --run >out2 2>err2
rc=$?
set -e
t1=$(date +%s%N)
rm hang
[[ $rc == 1 ]] || { cat out2 err2; fail "a hanging run: exit $rc, not 1"; }
[[ $(count out2 '^failed ') == 1 ]] || { cat out2; fail "one run failed"; }
hung=$(awk '$1 == "failed" { print $2 }' out2)
grep -q "^  $hung = v0: collect:kernel_counters@v0" out2 || { cat out2; fail "the failed run is not the profiler's"; }
grep -q "of 3 s (the description's timeout_s) and was killed" out2 || { cat out2; fail "the hang's reason"; }
ntasks=$(count out2 '^[a-z]+ +(t|run)[0-9]+ ')
[[ $(count out2 '^done ') == $((ntasks - 1)) ]] || { cat out2; fail "the other tasks not done"; }
sleep 0.2
if pgrep -f "sleep $nap\$" >/dev/null; then fail "the hanging profiler was left running"; fi
# Rerun: only the failed run and the synthesis that reads it run.
"$argus" query "${q[@]}" --ws "$work/ws2" --run >out3 2>err3 || { cat out3 err3; fail "the rerun failed"; }
[[ $(count out3 '^done ') == 2 ]] || { cat out3; fail "the rerun ran more than the hung branch"; }
[[ $(awk -v id="$hung" '$2 == id { print $1 }' out3) == done ]] || { cat out3; fail "the hung run not rerun"; }
[[ $(count out3 '^reused ') == $((ntasks - 2)) ]] || { cat out3; fail "the rest not reused"; }
echo "argus_plan_e2e: ok ($ntasks tasks; the hung run rerun alone)"
