#!/usr/bin/env bash
# Hardware metrics in the reports, end to end without a GPU:
#  - argus-shim --replay of tests/argus/metrics/run.jsonl with the
#    hand-written profile tests/argus/metrics/known.profile.json: every
#    kernel configuration joined, refused as ambiguous, without an entry or
#    on another GPU, with the labels and % of peak worked out by hand (the
#    same numbers test_metrics.c checks), the counts, the schema, and the
#    regions exactly those of the replay without --metrics;
#  - bad profiles (not JSON, truncated, hostile values, a duplicate key,
#    another schema version, empty, a FIFO, a directory, missing): a clear
#    message, exit 1, and the report unharmed (metrics.state "refused", the
#    regions unchanged); in a run, refused before the command runs;
#  - a profile of another GPU, and of a GPU with no peak table;
#  - argus report --metrics on a device-model buffer;
#  - the recorder on the fake CUPTI writing device lines and launch
#    configurations, joined in the same run;
#  - --hw-metrics with a stand-in for mosaic-profile (no GPU here): the
#    two runs, counters refused (ERR_NVGPUCTRPERM: partial profile kept),
#    another CUPTI subscriber, the program failing, no tool.
# usage: test_metrics_cli.sh SHIM ARGUS GEN_RAW PROG FAKE_CUPTI_DIR SRC_DIR WORK_DIR
set -euo pipefail
shim=$1 argus=$2 gen=$3 prog=$4 fakedir=$5 src=$6 work=$7
rm -rf "$work" && mkdir -p "$work"
schemas=$src/../../profiler/argus/schema
known=$src/metrics/known.profile.json
rec=$src/metrics/run.jsonl
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC CMD...
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
# Reports to validate against the schema, all at the end in one python
# (each start of python and jsonschema costs about a second on a busy CI).
validate() { echo "$1" >>"$work/to_validate"; }
validate_all() {
    python3 - "$schemas" "$work/to_validate" <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
schema = json.load(open(f"{sys.argv[1]}/argus.report.v1.json"))
v = jsonschema.validators.validator_for(schema)(schema)
paths = open(sys.argv[2]).read().split()
for p in paths:
    v.validate(json.load(open(p)))
print(f"{len(paths)} reports valid against argus.report.v1")
PY
}
same_regions() { # same_regions A.json B.json: the regions and run of two reports are equal
    python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda r: [{k: v for k, v in x.items() if k != "hw_metrics"} for x in r["regions"]]
assert strip(a) == strip(b), "regions differ"
for k in ("run", "launch", "clock", "scope", "diagnostics"):
    assert a.get(k) == b.get(k), k
PY
}

# ---- the fixture: every configuration's outcome, by hand ----
expect_rc 0 "$shim" --replay "$rec" -o "$work/plain"
expect_rc 1 "$shim" --replay "$rec" --metrics "$known" -o "$work/m"
grep -q '1 kernel configurations ran on another GPU than the profile' "$work/err" ||
    fail "other-GPU message: $(cat "$work/err")"
out=$work/out
grep -q '4 kernel configurations joined, 2 without a profile entry, 1 ambiguous (refused), 1 on another GPU' "$out" ||
    fail "counts line: $(cat "$out")"
grep -q 'step/k_stream grid=1056,1,1 block=256,1,1 dyn_smem=0 (2 launches): memory-bandwidth (derived, R1)' "$out" ||
    fail "k_stream 1056 line"
grep -q 'DRAM 90.0% of peak (derived)' "$out" || fail "90% line"
grep -q 'step/k_stream grid=66,1,1 .*launch/occupancy-bound (derived, R2): a grid of 66 blocks on 132 SMs' "$out" ||
    fail "k_stream 66 line"
grep -q 'step/k_dsmem grid=128,1,1 block=128,1,1 (1 launches): no hardware metrics: 2 entries of that name match' "$out" ||
    fail "ambiguous line"
grep -q 'step/k_chase .*no hardware metrics: .*taken on NVIDIA H200 (132 SMs) but the kernels ran on NVIDIA A100-SXM4-80GB (108 SMs)' "$out" ||
    fail "other GPU line"
cmp -s <(sed -n '/^hardware metrics/,$p' "$out") <(sed -n '/^hardware metrics/,$p' "$work/m/report.txt") ||
    fail "report.txt and stdout differ in the metrics part"
validate "$work/m/report.json"
same_regions "$work/m/report.json" "$work/plain/report.json"
python3 - "$work/m/report.json" "$work/plain/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
plain = json.load(open(sys.argv[2]))
assert "metrics" not in plain and all("hw_metrics" not in x for x in plain["regions"])
m = r["metrics"]
assert m["state"] == "loaded" and m["profile_schema"] == "mosaic-profile/1"
assert m["peaks"]["gpu"] == "NVIDIA H200" and m["peaks"]["hbm_bandwidth"]["peak"] == 4.8e12
assert m["peaks"]["l2_bandwidth"]["peak"] is None and "no L2 bandwidth" in m["peaks"]["l2_bandwidth"]["source"]
counts = {k: m[k]["value"] for k in ("configs_joined", "configs_without_entry", "configs_ambiguous",
                                      "configs_other_gpu", "launches_joined", "launches_without_metrics")}
assert counts == {"configs_joined": 4, "configs_without_entry": 2, "configs_ambiguous": 1,
                  "configs_other_gpu": 1, "launches_joined": 5, "launches_without_metrics": 4}, counts
hw = {}
for x in r["regions"]:
    if x["kind"] != "kernel":
        continue
    assert "hw_metrics" in x, x["path"]
    for c in x["hw_metrics"]:
        hw[(x["path"], c["grid"][0], c.get("dyn_smem", {}).get("value"))] = c
want = {("step/k_stream", 1056, 0): ("joined", "memory-bandwidth", 90.0),
        ("step/k_stream", 66, 0): ("joined", "launch/occupancy-bound", 37.5),
        ("step/k_fma", 264, 0): ("joined", "compute-pipe fma", 0.1),
        ("step/k_dsmem", 128, 4096): ("joined", "compute-pipe lsu", 10.0),
        ("step/k_dsmem", 128, None): ("ambiguous", None, None),
        ("step/k_unknown", 1, 0): ("no_entry", None, None),
        ("step/k_fma", 999, 0): ("no_entry", None, None),
        ("step/k_chase", 132, 0): ("other_gpu", None, None)}
assert set(hw) == set(want), sorted(hw)
for k, (state, label, dram) in want.items():
    c = hw[k]
    assert c["join"]["state"] == state, (k, c["join"])
    if state != "joined":
        assert "metrics" not in c and "bottleneck" not in c and c["join"]["why"], k
        continue
    assert c["bottleneck"]["label"] == label and c["bottleneck"]["mark"] == "derived", (k, c["bottleneck"])
    d = c["pct_of_peak"]["dram_bandwidth"]["number"]
    assert abs(d["value"] - dram) < 1e-9 and d["mark"] == "derived" and d["unit"] == "% of peak", (k, d)
    assert all(v["mark"] == "observed" for v in c["metrics"].values())
    assert "omitted" in c["pct_of_peak"]["l2_bandwidth"]
    names = [i["name"] for i in c["bottleneck"]["inputs"]]
    assert names[0] == "dram_bandwidth_pct_of_peak" and "issue_active" in names
assert hw[("step/k_stream", 1056, 0)]["launches"]["value"] == 2
assert hw[("step/k_stream", 1056, 0)]["join"]["by"] == "name,grid,block,dyn_smem"
assert hw[("step/k_dsmem", 128, None)]["join"]["by"] == "name,grid,block"
assert hw[("step/k_dsmem", 128, None)]["join"]["candidates"]["value"] == 2
fma = hw[("step/k_fma", 264, 0)]["pct_of_peak"]["fma_pipe_lanes"]["number"]["value"]
assert abs(fma - 80.0) < 1e-9, fma
PY

# The schema refuses what must never be written: metrics beside a failed
# join, a label outside the rule, an unmarked % of peak (the gate fails).
python3 - "$schemas" "$work/m/report.json" <<'PY'
import copy, json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
schema = json.load(open(f"{sys.argv[1]}/argus.report.v1.json"))
r = json.load(open(sys.argv[2]))
def kern(doc, state):
    for x in doc["regions"]:
        for c in x.get("hw_metrics", []):
            if c["join"]["state"] == state:
                return c
def bad(mutate, what):
    d = copy.deepcopy(r)
    mutate(d)
    try:
        jsonschema.validate(d, schema)
    except jsonschema.ValidationError:
        return
    raise SystemExit(f"schema accepted {what}")
bad(lambda d: kern(d, "ambiguous").update(metrics={}), "metrics on an ambiguous join")
bad(lambda d: kern(d, "joined")["bottleneck"].update(label="memory-bound-ish"), "a label outside the rule")
bad(lambda d: kern(d, "joined")["pct_of_peak"]["dram_bandwidth"]["number"].pop("mark"), "an unmarked %")
bad(lambda d: kern(d, "joined")["bottleneck"].update(mark="observed"), "a label marked observed")
bad(lambda d: d["metrics"].pop("bottleneck_rule"), "metrics without the rule")
PY

# Without the other GPU's kernel: exit 0.
grep -v '"corr":9\|"id":1,' "$rec" >"$work/h200.jsonl"
expect_rc 0 "$shim" --replay "$work/h200.jsonl" --metrics "$known" -o "$work/h200"
grep -q '4 kernel configurations joined, 2 without a profile entry, 1 ambiguous (refused), 0 on another GPU' "$work/out" ||
    fail "h200-only counts: $(cat "$work/out")"
validate "$work/h200/report.json"

# A recording without device lines: joined, and the report says the GPU
# was not checked.
grep -v '"e":"device"' "$work/h200.jsonl" | sed 's/,"device":0//' >"$work/nodev.jsonl"
expect_rc 0 "$shim" --replay "$work/nodev.jsonl" --metrics "$known" -o "$work/nodev"
grep -q 'the recording names no device' "$work/out" || fail "no-device note"

# ---- bad profiles: refused, said, report unharmed ----
bad=$work/bad && mkdir -p "$bad"
printf 'not json' >"$bad/notjson.json"
head -c 700 "$known" >"$bad/truncated.json"
sed 's/"sm_count": 132/"sm_count": 0/' "$known" >"$bad/sm0.json"
sed 's/"block": \[256, 1, 1\], "dyn_smem": 0, "launches": 4/"block": [2048, 1, 1], "dyn_smem": 0, "launches": 4/' "$known" >"$bad/block.json"
sed 's|"schema": "mosaic-profile/1",|"schema": "mosaic-profile/1", "schema": "mosaic-profile/1",|' "$known" >"$bad/dupkey.json"
sed 's|"schema": "mosaic-profile/1"|"schema": "mosaic-profile/2"|' "$known" >"$bad/v2.json"
python3 -c "print('[' * 100000)" >"$bad/deep.json"
: >"$bad/empty.json"
mkfifo "$bad/fifo.json"
mkdir "$bad/dir.json"
declare -A want=(
    [notjson]='not valid JSON' [truncated]='not valid JSON' [sm0]='gpu.sm_count'
    [block]='kernels[0]' [dupkey]='the key appears twice' [v2]="'mosaic-profile/2' is not mosaic-profile/1"
    [deep]='nested deeper than 64 levels' [empty]='empty file' [fifo]='not a regular file' [dir]='not a regular file'
    [missing]='cannot open')
for name in "${!want[@]}"; do
    p=$bad/$name.json
    expect_rc 1 "$shim" --replay "$rec" --metrics "$p" -o "$work/bad-$name"
    grep -qF -- "$p" "$work/err" || fail "$name: message does not name the file: $(cat "$work/err")"
    grep -qF -- "${want[$name]}" "$work/err" || fail "$name: message: $(cat "$work/err")"
    grep -q 'hardware metrics: refused' "$work/out" || fail "$name: text does not say refused"
    validate "$work/bad-$name/report.json"
done
python3 - "$work/plain/report.json" "$work"/bad-*/report.json <<'PY'
import json, sys
plain = json.load(open(sys.argv[1]))
strip = lambda r: [{k: v for k, v in x.items() if k != "hw_metrics"} for x in r["regions"]]
for p in sys.argv[2:]:
    r = json.load(open(p))
    m = r["metrics"]
    assert m["state"] == "refused" and m["why"] and "peaks" not in m, (p, m)
    assert all("hw_metrics" not in x for x in r["regions"]), p
    assert strip(r) == strip(plain) and r["run"] == plain["run"], f"{p}: regions differ"
assert len(sys.argv) == 13, len(sys.argv)
PY
# In a run the profile is read first: nothing runs.
expect_rc 1 "$shim" --metrics "$bad/v2.json" -o "$work/run-bad" -- "$prog" 0 k_a:7:300
grep -q 'nothing was run' "$work/err" || fail "run with a bad profile: $(cat "$work/err")"
[[ ! -e $work/run-bad/events.jsonl ]] || fail "the command ran with a refused profile"

# ---- a profile of another GPU, and of a GPU with no peak table ----
sed 's/"name": "NVIDIA H200", "sm_count": 132/"name": "NVIDIA A100-SXM4-80GB", "sm_count": 108/; s/"cc": "9.0"/"cc": "8.0"/' \
    "$known" >"$work/a100.profile.json"
expect_rc 1 "$shim" --replay "$work/h200.jsonl" --metrics "$work/a100.profile.json" -o "$work/a100"
grep -q '7 kernel configurations ran on another GPU' "$work/err" || fail "a100 on h200: $(cat "$work/err")"
validate "$work/a100/report.json"
# The same profile for kernels that ran on the A100: joined, but no % of
# peak (not in the table) and no roof decision.
sed 's/"NVIDIA H200","sm_count":132,"cc":"9.0"/"NVIDIA A100-SXM4-80GB","sm_count":108,"cc":"8.0"/' \
    "$work/h200.jsonl" >"$work/a100run.jsonl"
expect_rc 0 "$shim" --replay "$work/a100run.jsonl" --metrics "$work/a100.profile.json" -o "$work/a100run"
grep -q 'is not in Argus.s peak table' "$work/out" || fail "unknown GPU said: $(cat "$work/out")"
validate "$work/a100run/report.json"
python3 - "$work/a100run/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert "peaks" not in r["metrics"] and "not in Argus's peak table" in r["metrics"]["peaks_omitted"]
for x in r["regions"]:
    for c in x.get("hw_metrics", []):
        if c["join"]["state"] != "joined":
            continue
        assert all("omitted" in v for v in c["pct_of_peak"].values()), c["pct_of_peak"]
        b = c["bottleneck"]
        assert b["label"] == "unknown" and "dram_bandwidth % of peak" in b["why"], b
        assert b["inputs"][0]["value"] is None
PY

# ---- argus report --metrics: the device report ----
"$gen" "$work/k.raw"
expect_rc 0 "$argus" registry "$src/kernel_known.cu" -o "$work/reg.json"
# The model's launch: 2 CTAs of 64 threads on SMs 10 and 11.
python3 - "$known" "$work" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
k = dict(p["kernels"][1], key="argus_known|grid=2,1,1|block=64,1,1|dsmem=0", name="argus_known",
         grid=[2, 1, 1], block=[64, 1, 1])
json.dump(dict(p, kernels=[k]), open(f"{sys.argv[2]}/dev.profile.json", "w"))
k2 = dict(k, key="argus_known|grid=2,1,1|block=64,1,1|dsmem=512", dyn_smem=512)
json.dump(dict(p, kernels=[k, k2]), open(f"{sys.argv[2]}/dev2.profile.json", "w"))
small = dict(p, gpu=dict(p["gpu"], name="Test GPU", sm_count=8), kernels=[k])
json.dump(small, open(f"{sys.argv[2]}/small.profile.json", "w"))
PY
expect_rc 0 "$argus" report "$work/k.raw" --registry "$work/reg.json" --kernel argus_known \
    --clock 1.98 --json "$work/dev.json" --metrics "$work/dev.profile.json"
grep -q 'argus_known: launch/occupancy-bound (derived, R2): a grid of 2 blocks on 132 SMs' "$work/out" ||
    fail "device report label: $(cat "$work/out")"
validate "$work/dev.json"
python3 - "$work/dev.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c, = r["hw_metrics"]
assert c["join"]["state"] == "joined" and c["join"]["by"] == "name,grid,block", c["join"]
assert c["grid"] == [2, 1, 1] and c["block"] == [64, 1, 1] and "dyn_smem" not in c
assert abs(c["pct_of_peak"]["dram_bandwidth"]["number"]["value"] - 37.5) < 1e-9
assert r["metrics"]["configs_joined"]["value"] == 1
PY
# The buffer has no dynamic shared memory: two entries differing in it are refused.
expect_rc 0 "$argus" report "$work/k.raw" --registry "$work/reg.json" --kernel argus_known \
    --json "$work/dev2.json" --metrics "$work/dev2.profile.json"
grep -q 'no hardware metrics: 2 entries of that name match' "$work/out" || fail "device ambiguous"
validate "$work/dev2.json"
# A buffer whose warps ran on SM 11 is not from a GPU of 8 SMs.
expect_rc 1 "$argus" report "$work/k.raw" --registry "$work/reg.json" --kernel argus_known \
    --json "$work/small.json" --metrics "$work/small.profile.json"
grep -q 'ran on SM 11, but the profile.s GPU (Test GPU) has 8 SMs' "$work/err" || fail "small GPU: $(cat "$work/err")"
grep -q '^hardware metrics: none: .*from another GPU' "$work/out" || fail "small GPU text"
validate "$work/small.json"
python3 -c "
import json; c, = json.load(open('$work/small.json'))['hw_metrics']; assert c['join']['state'] == 'other_gpu', c"
# Bad profile: refused, the report still written (and valid), exit 1.
expect_rc 1 "$argus" report "$work/k.raw" --registry "$work/reg.json" --kernel argus_known \
    --json "$work/devbad.json" --metrics "$bad/truncated.json"
grep -q 'not valid JSON' "$work/err" || fail "device bad profile: $(cat "$work/err")"
grep -Eq '^outer +4 +0 ' "$work/out" || fail "device report lost its regions"
validate "$work/devbad.json"
expect_rc 2 "$argus" report "$work/k.raw" --metrics "$work/dev.profile.json"
grep -q -- '--metrics needs --kernel NAME' "$work/err" || fail "--metrics without --kernel"

# ---- the recorder: device line and launch configurations, joined in the run ----
export LD_LIBRARY_PATH=$fakedir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 - "$known" "$work" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
k = dict(p["kernels"][0], key="k_a|grid=1056,1,1|block=256,1,1|dsmem=0", name="k_a")
json.dump(dict(p, kernels=[k]), open(f"{sys.argv[2]}/run.profile.json", "w"))
PY
FAKE_CUPTI_GRID=1056,1,1 FAKE_CUPTI_BLOCK=256,1,1 FAKE_CUPTI_DSMEM=0 \
    expect_rc 0 "$shim" --kernels --metrics "$work/run.profile.json" -o "$work/run" -- "$prog" 0 k_a:7:300
grep -q '{"e":"device","id":0,"name":"NVIDIA H200","sm_count":132,"cc":"9.0"}' "$work/run/events.jsonl" ||
    fail "recorder: device line: $(cat "$work/run/events.jsonl")"
grep -q '"grid":\[1056,1,1\],"block":\[256,1,1\],"dsmem":0,"device":0}' "$work/run/events.jsonl" ||
    fail "recorder: launch configuration"
grep -q 'k_a grid=1056,1,1 block=256,1,1 dyn_smem=0 (1 launches): memory-bandwidth' "$work/out" ||
    fail "run: joined: $(cat "$work/out")"
validate "$work/run/report.json"
# The same run on another GPU: refused for it.
FAKE_CUPTI_DEVICE="NVIDIA H100 80GB HBM3" FAKE_CUPTI_GRID=1056,1,1 FAKE_CUPTI_BLOCK=256,1,1 \
    expect_rc 1 "$shim" --kernels --metrics "$work/run.profile.json" -o "$work/run-h100" -- "$prog" 0 k_a:7:300
grep -q 'ran on NVIDIA H100 80GB HBM3 (132 SMs)' "$work/out" || fail "run on H100: $(cat "$work/out")"
# Kernel records without a configuration (zeros): none written, joined by
# name where that is unique.
expect_rc 0 "$shim" --kernels --metrics "$work/run.profile.json" -o "$work/run-nocfg" -- "$prog" 0 k_a:7:300
grep -q '"grid"' "$work/run-nocfg/events.jsonl" && fail "zero grid written"
grep -q 'k_a (1 launches): memory-bandwidth' "$work/out" || fail "name-only join: $(cat "$work/out")"
# ---- --hw-metrics: mosaic-profile capture first (a stand-in here), then the recorded run ----
export MOSAIC_PROFILE_BIN=$src/metrics/fake_mosaic_profile.sh FAKE_PROFILE_SRC=$work/run.profile.json
FAKE_CUPTI_GRID=1056,1,1 FAKE_CUPTI_BLOCK=256,1,1 FAKE_CUPTI_DSMEM=0 \
    expect_rc 0 "$shim" --kernels --hw-metrics -o "$work/hw" -- "$prog" 0 k_a:7:300
grep -q 'run 1 of 2: .* capture -o .*/hw/profile.json -- ' "$work/err" || fail "hw: run 1: $(cat "$work/err")"
grep -q 'run 2 of 2' "$work/err" || fail "hw: run 2"
grep -q 'k_a grid=1056,1,1 block=256,1,1 dyn_smem=0 (1 launches): memory-bandwidth' "$work/out" ||
    fail "hw: joined: $(cat "$work/out")"
validate "$work/hw/report.json"
# Counters refused (ERR_NVGPUCTRPERM; the problem text is the capture library's,
# profiler/capture/capture.c): named with the fix, the partial
# profile kept and joined, every counter missing, the label unknown.
FAKE_PROFILE_RC=3 FAKE_PROFILE_PROBLEM="device 0: the driver allows GPU performance counters to admin users only (ERR_NVGPUCTRPERM): run as root, or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0" \
    FAKE_CUPTI_GRID=1056,1,1 FAKE_CUPTI_BLOCK=256,1,1 FAKE_CUPTI_DSMEM=0 \
    expect_rc 0 "$shim" --kernels --hw-metrics -o "$work/hw-perm" -- "$prog" 0 k_a:7:300
grep -q 'restricted to admin users (ERR_NVGPUCTRPERM): run as root, or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0; the partial profile' "$work/err" ||
    fail "hw: permission message: $(cat "$work/err")"
[[ -s $work/hw-perm/profile.json ]] || fail "hw: partial profile not kept"
validate "$work/hw-perm/report.json"
python3 - "$work/hw-perm/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["metrics"]
assert m["profile_complete"] is False and "ERR_NVGPUCTRPERM" in m["profile_problems"][0], m
c, = [c for x in r["regions"] for c in x.get("hw_metrics", [])]
assert c["join"]["state"] == "joined" and c["metrics"] == {} and "duration_ns" in c["missing"], c
assert c["bottleneck"]["label"] == "unknown" and "missing" in c["bottleneck"]["why"]
assert "number" not in c["pct_of_peak"]["dram_bandwidth"]
PY
# Another CUPTI subscriber: refused, not run a second time.
FAKE_PROFILE_RC=3 FAKE_PROFILE_PROBLEM="another CUPTI tool (nsys) is attached to this process and CUPTI allows one subscriber: no kernel could be seen or profiled; run the program without the other tool" \
    expect_rc 1 "$shim" --kernels --hw-metrics -o "$work/hw-other" -- "$prog" 0 k_a:7:300
grep -q 'CUPTI allows one subscriber per process, so argus-shim.s recorder could not work either' "$work/err" ||
    fail "hw: other subscriber: $(cat "$work/err")"
[[ ! -e $work/hw-other/events.jsonl ]] || fail "hw: recorded beside another subscriber"
CUDA_INJECTION64_PATH=/opt/other/libtool.so \
    expect_rc 1 "$shim" --kernels --hw-metrics -o "$work/hw-inj" -- "$prog" 0 k_a:7:300
grep -q 'CUDA_INJECTION64_PATH names another tool (/opt/other/libtool.so)' "$work/err" || fail "hw: injection"
# The program failed under the capture: not run again.
FAKE_PROFILE_RC=4 expect_rc 1 "$shim" --kernels --hw-metrics -o "$work/hw-fail" -- "$prog" 0 k_a:7:300
grep -q 'failed under mosaic-profile capture' "$work/err" || fail "hw: CMD failed"
[[ ! -e $work/hw-fail/events.jsonl ]] || fail "hw: ran again after a failure"
MOSAIC_PROFILE_BIN=$work/nosuch expect_rc 1 "$shim" --hw-metrics -o "$work/hw-none" -- "$prog" 0
grep -q 'mosaic-profile is not beside argus-shim' "$work/err" || fail "hw: no tool"
expect_rc 2 "$shim" --hw-metrics --metrics "$known" -- "$prog" 0
expect_rc 2 "$shim" --hw-metrics --replay "$rec"
validate_all
echo "argus_metrics_cli: all checks passed"
