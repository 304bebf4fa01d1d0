#!/usr/bin/env bash
# argus-shim end to end without a GPU: --replay of the recorded fixture
# (report, trace and text against the hand-worked numbers and the
# schemas), a run of a program on the fake CUPTI (tests/argus/fake_cupti.c)
# through the real recorder libargus_inject.so, and bad input: a missing
# command, a command that fails (its status passed through), a command that
# does not exist, a second CUPTI subscriber, a truncated and a hostile
# recording.
# usage: test_shim_cli.sh SHIM PROG FAKE_CUPTI_DIR SRC_DIR WORK_DIR
set -euo pipefail
shim=$1 prog=$2 fakedir=$3 src=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
schemas=$src/../../profiler/argus/schema
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC CMD...
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
validate() { # validate DIR: report.json and trace.json against the schemas
    python3 - "$schemas" "$1" <<'PY'
import json, sys
schemas, d = sys.argv[1], sys.argv[2]
try:
    import jsonschema
except ImportError:
    sys.exit(0)
jsonschema.validate(json.load(open(f"{d}/report.json")), json.load(open(f"{schemas}/argus.report.v1.json")))
jsonschema.validate(json.load(open(f"{d}/trace.json")), json.load(open(f"{schemas}/trace_event.json")))
PY
}

# ---- replay of the fixture ----
expect_rc 0 "$shim" --replay "$src/shim/basic.jsonl" -o "$work/replay"
grep -Eq '^step/forward/gemm +kernel +1 +0 +0\.200 ' "$work/out" || fail "gemm row: $(cat "$work/out")"
grep -Eq '^never +nvtx range +1 +1 +- ' "$work/out" || fail "an unclosed range shows no time"
grep -q 'unavailable: pc_sampling' "$work/out" || fail "pc sampling said unavailable"
cmp -s "$work/out" "$work/replay/report.txt" || fail "stdout and report.txt differ"
validate "$work/replay"
python3 - "$work/replay" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/report.json"))
assert r["source"] == "argus-shim" and "launch" not in r
by = {x["path"]: x for x in r["regions"]}
assert by["step/forward/gemm"]["time"]["total"] == {"value": 200, "unit": "ns", "mark": "derived"}
assert by["step/forward/gemm"]["time"]["min"]["mark"] == "observed"
assert by["step/forward/gemm"]["placement"]["mark"] == "attributed"
assert by["(launch not recorded)/mystery"]["placement"]["mark"] == "observed"
assert by["step"]["kernels_inside"]["value"] == 2, by["step"]
assert by["never"]["time"] == {"method": "host_timestamps", "samples": 0}, by["never"]["time"]
assert by["step/prefetch"]["kind"] == "nvtx_start_end"
assert r["run"]["kernels"]["value"] == 6 and r["run"]["kernels_in_ranges"]["value"] == 4
whats = sorted(x["what"] for x in r["diagnostics"])
assert len(whats) == 4, whats
t = json.load(open(f"{d}/trace.json"))
x = [e for e in t["traceEvents"] if e["ph"] == "X"]
assert len(x) == 11, len(x)
names = {e["args"]["name"] for e in t["traceEvents"] if e["name"] == "thread_name"}
assert names == {"thread 100", "thread 100 (overlap)", "thread 200", "stream 7", "stream 13"}, names
pre = [e for e in x if e["name"] == "prefetch"][0]
assert abs(pre["ts"] - 0.4) < 1e-9 and abs(pre["dur"] - 0.3) < 1e-9, pre
PY
# A schema check that can fail: an untimed range given a time is refused.
python3 - "$schemas" "$work/replay" <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
r = json.load(open(f"{sys.argv[2]}/report.json"))
for x in r["regions"]:
    if x["path"] == "never":
        x["time"]["total"] = {"value": 0, "unit": "ns", "mark": "derived"}
try:
    jsonschema.validate(r, json.load(open(f"{sys.argv[1]}/argus.report.v1.json")))
    sys.exit("a time on an untimed region passed the schema")
except jsonschema.ValidationError:
    pass
PY

# ---- bad recordings ----
head -c 700 "$src/shim/basic.jsonl" >"$work/cut.jsonl"
expect_rc 0 "$shim" --replay "$work/cut.jsonl" -o "$work/cut"
grep -q 'last line was cut off' "$work/err" || fail "truncation message: $(cat "$work/err")"
printf '{"schema":"argus.shim.events","version":1,"cupti":"subscribed"}\n{"e":"push","tid":1,"ts":-1,"name":"x"}\n' >"$work/bad.jsonl"
expect_rc 1 "$shim" --replay "$work/bad.jsonl" -o "$work/bad"
grep -q 'bad.jsonl:2: ts' "$work/err" || fail "bad recording message: $(cat "$work/err")"
expect_rc 1 "$shim" --replay "$work/nosuch.jsonl" -o "$work/bad"
expect_rc 1 "$shim" --replay "$src/kernel_known.cu" -o "$work/bad"

# ---- usage ----
expect_rc 2 "$shim"
grep -q 'no command' "$work/err" || fail "missing command message"
expect_rc 2 "$shim" -o "$work/x" --
expect_rc 2 "$shim" --frob -- true
expect_rc 2 "$shim" --replay "$src/shim/basic.jsonl" -- true

# ---- runs on the fake CUPTI through the real recorder ----
export LD_LIBRARY_PATH=$fakedir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
expect_rc 0 "$shim" --kernels -o "$work/run" -- "$prog" 0 k_a:7:300 k_b:7:100 k_a:9:50
grep -Eq '^k_a +kernel +2 +0 +0\.350 ' "$work/out" || fail "run: k_a row: $(cat "$work/out")"
grep -Eq '^k_b +kernel +1 +0 +0\.100 ' "$work/out" || fail "run: k_b row"
grep -q '3 kernels (0 in ranges, 3 outside any range, 0 with no launch record)' "$work/out" ||
    fail "run: kernels joined to their launches: $(cat "$work/out")"
validate "$work/run"
head -1 "$work/run/events.jsonl" | grep -q '"schema":"argus.shim.events"' || fail "run: header"
grep -q '{"e":"cupti","state":"subscribed"' "$work/run/events.jsonl" || fail "run: CUPTI state line"
grep -q "\"command\":\"$prog 0 k_a:7:300" "$work/run/events.jsonl" || fail "run: command in the header"
# The same recording replayed gives the same report.
expect_rc 0 "$shim" --replay "$work/run/events.jsonl" -o "$work/rerun"
cmp -s "$work/run/report.json" "$work/rerun/report.json" || fail "replay of a run differs"

# NVTX ranges through the real nvtx3 headers and NVTX's loader, nested,
# crossing (io, a start/end range, outlives step), on a second thread; the
# fake CUPTI's clock advances one ns per call and by the kernel durations,
# so every time below is exact.
expect_rc 0 "$shim" -o "$work/nvtx" -- "$prog" 0 push:step push:fwd gemm:7:100 pop start:io \
    copy:7:50 pop thread:loader:decode end:0 tail:7:10
o=$work/out
grep -q '2 host threads, 2 streams; 4 NVTX ranges, 4 kernels (3 in ranges, 1 outside any range, 0 with no launch record)' "$o" ||
    fail "nvtx run summary: $(cat "$o")"
grep -Eq '^step +nvtx range +1 +0 +0\.168 ' "$o" || fail "nvtx: step row"
grep -Eq '^step/fwd +nvtx range +1 +0 +0\.108 ' "$o" || fail "nvtx: fwd row"
grep -Eq '^step/io +nvtx start/end +1 +0 +0\.108 ' "$o" || fail "nvtx: io row"
grep -Eq '^loader +nvtx range +1 +0 +0\.048 ' "$o" || fail "nvtx: second thread's range"
grep -Eq '^step/fwd/gemm +kernel +1 +0 +0\.100 ' "$o" || fail "nvtx: gemm in fwd"
grep -Eq '^step/io/copy +kernel +1 +0 +0\.050 ' "$o" || fail "nvtx: copy in io"
grep -Eq '^loader/decode +kernel +1 +0 +0\.040 ' "$o" || fail "nvtx: decode on the second thread"
grep -Eq '^tail +kernel +1 +0 +0\.010 ' "$o" || fail "nvtx: tail outside every range"
grep -q 'diagnostic' "$o" && fail "nvtx run: unexpected diagnostics: $(cat "$o")"
validate "$work/nvtx"
# A CUDA graph's kernels carry its cuGraphLaunch's correlation ID: all in
# the range open at the graph launch.
expect_rc 0 "$shim" -o "$work/graph" -- "$prog" 0 push:infer graph:conv:3 pop graph:conv:2
grep -Eq '^infer/conv +kernel +3 +0 +0\.060 ' "$work/out" || fail "graph kernels in their range: $(cat "$work/out")"
grep -Eq '^conv +kernel +2 +0 +0\.040 ' "$work/out" || fail "graph kernels outside ranges"
grep -q 'diagnostic' "$work/out" && fail "graph run: diagnostics: $(cat "$work/out")"
# NVTX without CUDA: the ranges are kept, and the report says why there
# are no kernels.
expect_rc 0 "$shim" -o "$work/nvtxonly" -- "$prog" 0 nocuda push:a pop
grep -Eq '^a +nvtx range +1 +0 ' "$work/out" || fail "nvtx without CUDA: $(cat "$work/out")"
grep -q 'WARNING: kernels unavailable: the program never initialised CUDA' "$work/out" ||
    fail "nvtx without CUDA: the reason"
# --nvtx alone: no CUPTI subscription, said so.
expect_rc 0 "$shim" --nvtx -o "$work/nvtxflag" -- "$prog" 0 push:a k:7:5 pop
grep -q 'kernels unavailable: kernels were not asked for' "$work/out" || fail "--nvtx alone: $(cat "$work/out")"
grep -Eq '^a +nvtx range' "$work/out" || fail "--nvtx alone keeps the range"
# --kernels alone: no NVTX.
expect_rc 0 "$shim" --kernels -o "$work/kflag" -- "$prog" 0 push:a k:7:5 pop
grep -Eq '^k +kernel +1 ' "$work/out" || fail "--kernels alone: $(cat "$work/out")"
grep -q 'nvtx range' "$work/out" && fail "--kernels alone recorded a range"
# Another NVTX tool configured: left alone, and said so.
expect_rc 0 env NVTX_INJECTION64_PATH=/nonexistent/libother.so "$shim" -o "$work/othernvtx" -- \
    "$prog" 0 push:a k:7:5 pop
grep -q 'NVTX_INJECTION64_PATH names another tool' "$work/err" || fail "another NVTX tool message"

# The program's exit status is passed through, with the report still written.
expect_rc 3 "$shim" -o "$work/fails" -- "$prog" 3 k_a:7:10
grep -q 'exited with status 3' "$work/err" || fail "failing command message"
[ -s "$work/fails/report.json" ] || fail "a failing command's recording is still reported"
# A program that never initialises CUDA: its status, and why no report.
expect_rc 4 env CUDA_INJECTION64_PATH= "$shim" -o "$work/nocuda" -- sh -c 'exit 4'
grep -q 'never initialised CUDA' "$work/err" || fail "no-CUDA message: $(cat "$work/err")"
# A clean exit without CUDA still leaves no report: 1, not a silent 0.
expect_rc 1 "$shim" -o "$work/nocuda0" -- true
grep -q 'never initialised CUDA' "$work/err" || fail "no-CUDA message for a clean exit"
expect_rc 127 "$shim" -o "$work/nosuch" -- "$work/no-such-program"
grep -q 'cannot run' "$work/err" || fail "missing program message"
# A stale recording of an earlier run is not reported as this one's.
[ ! -e "$work/nosuch/events.jsonl" ] || fail "stale recording left"

# A second CUPTI subscriber: said so, no kernels, the run still reported.
expect_rc 0 env FAKE_CUPTI_OTHER_SUBSCRIBER=1 "$shim" -o "$work/other" -- "$prog" 0 k_a:7:10
grep -q 'another CUPTI subscriber holds CUPTI' "$work/err" || fail "second subscriber on stderr"
grep -q 'WARNING: kernels unavailable: another CUPTI subscriber' "$work/out" || fail "second subscriber in the report"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["run"]["cupti"]["state"]=="another_subscriber" and r["run"]["kernels"]["value"]==0' "$work/other/report.json"
# Dropped activity records are counted and a diagnostic.
expect_rc 0 env FAKE_CUPTI_DROPPED=5 "$shim" -o "$work/drop" -- "$prog" 0 k_a:7:10
grep -q 'diagnostic: CUPTI dropped activity records: 5' "$work/out" || fail "dropped records: $(cat "$work/out")"
# ---- PC sampling on the fake CUPTI ----
# Samples from a hand-made set (shim/pcs_samples.txt: 99 per launch), the
# real cubin of fixtures/pcs and its nvdisasm -g listing as CUPTI's lines.
fix=$src/fixtures/pcs
pcsenv=(env FAKE_CUPTI_PCS_SAMPLES="$src/shim/pcs_samples.txt"
        FAKE_CUPTI_NVDISASM="$fix/pcs_kernel.nvdisasm-g.txt")
pcsprog=("$prog" 0 ctx "module:$fix/pcs_kernel.cubin" push:step argus_pcs_kernel:7:100 pop sync
         push:eval argus_pcs_kernel:7:100 pop)
expect_rc 0 "${pcsenv[@]}" "$shim" --pc-sampling -o "$work/pcs" -- "${pcsprog[@]}"
grep -q 'PC sampling: kernel_serialized mode' "$work/out" || fail "pc sampling header: $(cat "$work/out")"
grep -Eq '^  step/argus_pcs_kernel: 99 samples \(observed' "$work/out" || fail "kernel samples"
grep -q 'argus_pcs_kernel+0x1b0  60 (60.6%)  .*pcs_kernel.cu:7  smsp__pcsamp_warps_issue_stalled_math_pipe_throttle 83.3% (50)' \
    "$work/out" || fail "hot PC row: $(cat "$work/out")"
ls "$work/pcs"/events.jsonl.cubin.* >/dev/null || fail "the module image was not saved"
validate "$work/pcs"
python3 - "$work/pcs" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/report.json"))
pcs = r["run"]["pc_sampling"]
assert pcs["state"] == "collected" and pcs["mode"] == "kernel_serialized", pcs
assert pcs["period"]["value"] == 4096 and pcs["samples"]["value"] == 198, pcs
assert pcs["samples_cupti_total"]["value"] == 198 and pcs["samples_unattributed"]["value"] == 0
by = {x["path"]: x for x in r["regions"]}
for rng in ("step", "eval"):
    k = by[f"{rng}/argus_pcs_kernel"]["pc_sampling"]
    assert k["samples"] == {"value": 99, "unit": "samples", "mark": "observed"}, k
    hot = [(h["pc_offset"], h["samples"]["value"], h.get("source", {}).get("line")) for h in k["hot_pcs"]]
    assert hot == [(0x1b0, 60, 7), (0x50, 32, 13), (0x10, 4, 6), (0x600, 3, None)], hot
    assert all(h["source"]["from"] == "cupti_sass_to_source" for h in k["hot_pcs"][:3])
    assert [(l["line"], l["samples"]["value"]) for l in k["hot_lines"]] == [(7, 60), (13, 32), (6, 4)]
    assert by[rng]["pc_sampling"]["samples"] == {"value": 99, "unit": "samples", "mark": "attributed"}
    callee = by[f"{rng}/argus_pcs_kernel/$argus_pcs_kernel$_Z16argus_pcs_calleefi"]
    body = by[f"{rng}/argus_pcs_kernel/argus_pcs_kernel"]
    assert callee["kind"] == "device_function" and not callee["kernel_body"] and body["kernel_body"]
    assert callee["count"] == {"value": 64, "unit": "pc_samples", "mark": "attributed"}
    assert body["count"]["value"] == 32
    assert callee["range"]["lo"] == 0xb0 and callee["range"]["hi"] == 0x580
    assert callee["parent_node"] == by[f"{rng}/argus_pcs_kernel"]["node"]
assert any("0x600" in n and "outside every function" in n for n in pcs["notes"]), pcs["notes"]
PY
# The recording replays to the same report.
expect_rc 0 "$shim" --replay "$work/pcs/events.jsonl" -o "$work/pcs-replay"
cmp -s "$work/pcs/report.json" "$work/pcs-replay/report.json" || fail "pc sampling replay differs"
# Continuous mode: no correlation IDs, one kernel in two ranges: the
# samples are counted and said to be unattributable, not split by guess.
expect_rc 0 "${pcsenv[@]}" "$shim" --pc-sampling --pc-mode continuous -o "$work/pcs-cont" -- "${pcsprog[@]}"
grep -q '198 samples recorded.*198 not given to a region' "$work/out" || fail "continuous: $(cat "$work/out")"
grep -q 'the kernel ran in 2 regions' "$work/out" || fail "continuous note"
validate "$work/pcs-cont"
# Refused: the reason and the fix, the kernels kept.
expect_rc 0 "${pcsenv[@]}" FAKE_CUPTI_PCS_ERROR=35 "$shim" --pc-sampling -o "$work/pcs-priv" -- "${pcsprog[@]}"
grep -q 'unavailable: pc_sampling: cuptiPCSamplingEnable failed (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): profiling needs admin rights' \
    "$work/out" || fail "privileges: $(cat "$work/out")"
grep -Eq '^step/argus_pcs_kernel +kernel +1 ' "$work/out" || fail "kernels kept when PC sampling is refused"
validate "$work/pcs-priv"
python3 - "$work/pcs-priv" <<'PY'
import json, sys
r = json.load(open(f"{sys.argv[1]}/report.json"))
p = r["run"]["pc_sampling"]
assert p["state"] == "unavailable" and "INSUFFICIENT_PRIVILEGES" in p["why"], p
assert r["run"]["kernels"]["value"] == 2
assert all("pc_sampling" not in x for x in r["regions"])
PY
expect_rc 0 "${pcsenv[@]}" FAKE_CUPTI_PCS_ERROR=27 "$shim" --pc-sampling -o "$work/pcs-nosup" -- "${pcsprog[@]}"
grep -q 'CUPTI_ERROR_NOT_SUPPORTED): this GPU or driver does not offer the PC Sampling API' "$work/out" \
    || fail "not supported: $(cat "$work/out")"
expect_rc 0 env FAKE_CUPTI_OTHER_SUBSCRIBER=1 "$shim" --pc-sampling -o "$work/pcs-other" -- "$prog" 0 k_a:7:10
grep -q 'unavailable: pc_sampling: another CUPTI subscriber' "$work/out" || fail "pc sampling, other subscriber"
expect_rc 2 "$shim" --pc-sampling --pc-period 4 -- "$prog" 0
grep -q 'expected log2 of the sampling period' "$work/err" || fail "bad period message"
expect_rc 2 "$shim" --pc-sampling --pc-mode sometimes -- "$prog" 0
echo "argus-shim: replay, runs on the fake CUPTI and bad input: all checks passed"
