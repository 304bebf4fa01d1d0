#!/usr/bin/env bash
# argus query --run: a plan executed through the runtime on a workspace
# (docs/argus-plan.md, "Running a plan"), on the registry of
# tests/argus/async_cpasync.cu, with a stand-in executor that
#   - makes the marked variant from the committed nvcc 13.0 PTX
#     (fixtures/discover/async_cpasync.ptx) and each probe variant with the
#     real probe rewriting (argus_discover_tool probe);
#   - runs a variant by writing argus.evidence v1: region buffers from the
#     device model (gen_async_raw) in which every warp's load at the probed
#     step takes EXTRA = 100 (ordinal + 1) + 7 iter cycles more.
# Checked: the CONTROL task discovers the 4 looped cp.async of
# mainloop/load in the PTX and adds 8 probe branches (iterations 4, 5)
# while the graph runs; the synthesised latencies are EXTRA exactly, the
# base region times those of the model; every number is marked and names
# its inputs; a second run reuses everything but the CONTROL task;
# --discovered overrides discovery; a crashed run, evidence from a
# non-matching variant and evidence that is not JSON each leave the final
# synthesis incomplete with the task named and the other branches' numbers
# kept, and the next run redoes only those branches; a cubin artifact
# (no PTX) fails discovery with the fix; --run without --executor.
# usage: test_plan_run.sh ARGUS SRC_DIR WORK_DIR DISCOVER_TOOL GEN_ASYNC_RAW
set -euo pipefail
argus=$1 src=$2 work=$3 dtool=$4 gen=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
has() { grep -qF -- "$2" "$work/$1" || { cat "$work/$1" >&2; fail "$1 lacks: $2"; }; }
count() { grep -c -E -- "$2" "$work/$1" || true; }

expect_rc 0 "$argus" registry "$src/async_cpasync.cu" -o "$work/cp.argus.json"
touch "$work/cp"
cat >"$work/exec.py" <<'PY'
import base64, json, os, re, signal, subprocess, sys
work, src, dtool, gen = os.environ["T_WORK"], os.environ["T_SRC"], os.environ["T_DTOOL"], os.environ["T_GEN"]
kind, args = sys.argv[1], sys.argv[2:]
if kind == "transform":
    tx, variant, parent, op, it, out = args
    if tx == "markers_on":
        art = os.environ.get("T_ARTIFACT", src + "/fixtures/discover/async_cpasync.ptx")
        open(out, "wb").write(open(art, "rb").read())
    elif tx == "force_completion_probe":
        subprocess.run([dtool, "probe", parent, op, it, out], check=True)
    else:
        sys.exit(9)
    sys.exit(0)
variant, backends, artifact, outs = args[0], args[1].split(","), args[2], args[3:]
m = re.search(r"\+probe\(op=0x[0-9a-f]{7}\.(\d+),iter=(\d+)\)$", variant)
tag = "%s.%s" % m.groups() if m else "base"
if m:  # the artifact is the probe variant's PTX, with the probe's lines
    text = open(artifact).read()
    assert "// argus-probe" in text, artifact
    if "cp.async.cg" in text and "cp.async.bulk" not in text:  # the cp.async kernel: one forced wait
        assert text.count("cp.async.wait_all") == 1, artifact
if os.path.exists(work + "/crash") and tag == "1.5":
    os.kill(os.getpid(), signal.SIGSEGV)
raw = work + "/raw." + tag
cmd = [gen, raw] + ([m.group(2), str(100 * (int(m.group(1)) + 1) + 7 * int(m.group(2)))] if m else [])
subprocess.run(cmd, check=True)
for b, out in zip(backends, outs):
    e = {"schema": "argus.evidence", "version": 1, "backend": b, "variant": variant,
         "status": "ok", "tool": "test_plan_run.sh stand-in"}
    if os.path.exists(work + "/wrongvar") and tag == "2.4":
        e["variant"] = variant.replace("iter=4", "iter=6")
    if b == "region_runtime":
        e["launches"] = [{"kernel": "async_gemm_cpasync", "clock_ghz": 1.98,
                          "raw_base64": base64.b64encode(open(raw, "rb").read()).decode()}]
    elif b == "nvtx":
        e["report"] = {"schema": "argus.report", "version": 1, "source": "argus-shim", "regions": []}
    else:
        e["status"], e["why"] = "unavailable", "not in the stand-in"
    text = json.dumps(e)
    if os.path.exists(work + "/garbage") and tag == "3.4":
        text = "this is not evidence"
    open(out, "w").write(text)
PY
export T_WORK=$work T_SRC=$src T_DTOOL=$dtool T_GEN=$gen
q=(--program "$work/cp" --registry "$work/cp.argus.json" --region mainloop
   --signal region_time,async_latency --iter 4:5 --assume-all --executor "python3 '$work/exec.py'")

# Discovery inside the CONTROL task.
expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws" --run --results "$work/res"
# 1 transform + 1 run + 2 syntheses + control before; 8 branches of 3
# after (probe transform, run, branch synthesis): 29 runtime tasks.
[[ $(count out '^done ') == 29 ]] || { cat "$work/out"; fail "29 tasks done"; }
has out "t4 = control:discover_async_ops@v1"
has out "= v9: collect:probe_trace@v9"
[[ $(count out ' synthesize:.*: complete ') == 10 ]] || { cat "$work/out"; fail "10 complete syntheses"; }
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
ws_ops = None
lat = json.load(open(work + "/res/async_latency.json"))
assert lat["schema"] == "argus.synthesis" and lat["version"] == 1 and lat["complete"], lat["problems"]
r = lat["results"]
assert r["base_variant"] == "cp+markers_on" and r["branches"] == 8, r
got = {(l["op"], l["iter"]): l for l in r["latencies"]}
# Discovery's IDs: mainloop/load's region ID, ordinals 0-3.
ids = sorted({op for op, _ in got})
assert len(ids) == 4 and all(i.startswith("0xe693e43.") for i in ids), ids
for (op, it), l in got.items():
    o = int(op.split(".")[1])
    assert l["region"] == "load", l
    assert l["latency_cycles"]["value"] == 100 * (o + 1) + 7 * it, (op, it, l)
    assert l["latency_cycles"]["mark"] == "derived" and l["latency_cycles"]["unit"] == "cycles"
    assert l["base_cycles"]["value"] == 330 + 10 * it, l       # the model's mean load at step it
    assert l["probe_cycles"]["value"] == 330 + 10 * it + 100 * (o + 1) + 7 * it
    ins = [lat["inputs"][k] for k in l["latency_cycles"]["from"]]
    assert {i["kind"] for i in ins} == {"evidence", "synthesis"}, ins
    base = [i for i in ins if i["kind"] == "evidence"][0]
    assert base["task"] == "collect:region_trace@v1" and base["rt_id"] == "run0" and base["state"] == "used"
    br = [i for i in ins if i["kind"] == "synthesis"][0]
    # The branch names the probe run its number came from.
    assert br["inputs"][0]["task"].startswith("collect:probe_trace@v") and br["inputs"][0]["rt_id"].startswith("run")
    assert abs(l["latency_ns"]["value"] - (100 * (o + 1) + 7 * it) / 1.98) < 1e-6, l
assert [i for i in lat["inputs"] if i["kind"] == "ops"][0]["state"] == "used"
reg = json.load(open(work + "/res/region_time.json"))
assert reg["complete"], reg["problems"]
L = reg["results"]["launches"][0]
paths = {g["path"]: g for g in L["regions"]}
# mainloop began before any ARGUS_ITER: outside an iteration scope (docs/argus.md)
assert set(paths) == {"mainloop/load", "mainloop/mma"}, paths
ld = paths["mainloop/load"]
assert ld["count"]["value"] == 16 and ld["count"]["mark"] == "observed"     # 8 warps x 2 steps
assert ld["total_cycles"]["value"] == sum(300 + 10 * s + 20 * w for s in (4, 5) for w in range(4)) * 2
assert ld["mean"]["mark"] == "derived" and ld["mean"]["unit"] == "ns"
its = {i["iter"]: {g["path"]: g for g in i["regions"]} for i in L["iterations"]}
assert its[4]["mainloop/load"]["mean_cycles"]["value"] == 370, its
assert its[5]["mainloop/load"]["mean_cycles"]["value"] == 380, its
assert its[5]["mainloop/mma"]["total_cycles"]["value"] == 8000, its
PY

# The results and the evidence against their JSON Schemas, where Python's
# jsonschema is installed; the synthesis schema refuses a number without
# its mark.
if python3 -c 'import jsonschema' 2>/dev/null; then
python3 - "$work" "$src/../../profiler/argus/schema" <<'PY'
import glob, json, sys, jsonschema
work, sch = sys.argv[1], sys.argv[2]
syn = json.load(open(sch + "/argus.synthesis.v1.json"))
ev = json.load(open(sch + "/argus.evidence.v1.json"))
texts = [open(p).read() for p in glob.glob(work + "/ws/objects/*/*")]
docs = [json.loads(t) for t in texts if t.startswith("{")]
res = [d for d in docs if d.get("schema") == "argus.synthesis"]
evs = [d for d in docs if d.get("schema") == "argus.evidence"]
assert len(res) == 10 and len(evs) >= 9, (len(res), len(evs))
for d in res:
    jsonschema.validate(d, syn)
for d in evs:
    jsonschema.validate(d, ev)
bad = json.load(open(work + "/res/async_latency.json"))
del bad["results"]["latencies"][0]["latency_cycles"]["mark"]
try:
    jsonschema.validate(bad, syn)
    raise SystemExit("a number without its mark was accepted")
except jsonschema.ValidationError:
    pass
PY
fi

# Everything reused but the CONTROL task, which always runs.
expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws" --run
[[ $(count out '^reused ') == 28 ]] || { cat "$work/out"; fail "28 tasks reused"; }
[[ $(count out '^done ') == 1 ]] || fail "only the control task runs"

# The TMA kernel's committed PTX (sm_90a): discovery finds mainloop's two
# TMA loads (load) and its wgmma (mma); each probe variant is made by the
# real rewriting (an mbarrier wait, a wgmma wait); the model slows only
# load, so the wgmma's latency is 0.
T_ARTIFACT=$src/fixtures/discover/async_tma.ptx \
    expect_rc 0 "$argus" query "${q[@]/4:5/4:4}" --ws "$work/ws_tma" --run --results "$work/res_tma"
python3 - "$work" <<'PY'
import json, sys
lat = json.load(open(sys.argv[1] + "/res_tma/async_latency.json"))
assert lat["complete"], lat["problems"]
got = sorted((l["op"], l["region"], l["latency_cycles"]["value"]) for l in lat["results"]["latencies"])
assert got == [("0x3b448bc.0", "mma", 0), ("0xe693e43.0", "load", 128), ("0xe693e43.1", "load", 228)], got
PY

# --discovered overrides discovery: one op outside a loop, one probe.
cat >"$work/ops.json" <<'JSON'
[{"id": "0xe693e43.2", "kind": "cp.async", "completion": "cp.async.wait_group", "in_loop": false}]
JSON
expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws" --run --discovered "$work/ops.json" --results "$work/res1"
python3 - "$work" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/res1/async_latency.json"))["results"]
assert [(l["op"], l["iter"], l["latency_cycles"]["value"]) for l in r["latencies"]] == [("0xe693e43.2", 0, 300)], r
PY

# Faults on a fresh workspace: a crashed probe run (op .1, iter 5),
# evidence from another variant (op .2, iter 4), evidence that is not
# JSON (op .3, iter 4).
touch "$work/crash" "$work/wrongvar" "$work/garbage"
expect_rc 1 "$argus" query "${q[@]}" --ws "$work/ws2" --run --results "$work/res2"
has err "some tasks failed"
# The three runs fail (the wrong evidence is refused before it is stored,
# so that the next run redoes it); their branch syntheses and the final
# one still run, incomplete.
[[ $(count out '^failed ') == 3 ]] || { cat "$work/out"; fail "three failed runs"; }
has out "is refused: evidence from variant \"cp+markers_on+probe(op=0xe693e43.2,iter=6)\", not the variant the run executed"
has out "is refused: not JSON"
has out "INCOMPLETE"
python3 - "$work" <<'PY'
import json, sys
lat = json.load(open(sys.argv[1] + "/res2/async_latency.json"))
assert not lat["complete"]
why = " | ".join(p["why"] for p in lat["problems"])
assert "incomplete" in why, why
ok = {(l["op"], l["iter"]) for l in lat["results"]["latencies"]
      if l["latency_cycles"]["value"] is not None}
# Five branches keep their numbers; the three bad ones have none.
assert len(ok) == 5 and ("0xe693e43.1", 5) not in ok and ("0xe693e43.2", 4) not in ok \
    and ("0xe693e43.3", 4) not in ok, ok
for l in lat["results"]["latencies"]:
    o, it = int(l["op"].split(".")[1]), l["iter"]
    if (l["op"], it) in ok:
        assert l["latency_cycles"]["value"] == 100 * (o + 1) + 7 * it
# Each branch's own result names the problem and its task.
import glob
texts = [open(p).read() for p in glob.glob(sys.argv[1] + "/ws2/objects/*/*")]
res = [json.loads(t) for t in texts if t.startswith('{"schema":"argus.synthesis"')]
probs = [p for r in res for p in r["problems"]]
w = [p["why"] for p in probs]
assert any("did not succeed" in x and "non-matching variant" in x for x in w), w
assert any("did not succeed" in x and "not JSON" in x for x in w), w
assert any("did not succeed" in x and "status 139" in x for x in w), w
assert all(p["task"].startswith(("collect:probe_trace@v", "synthesize:probe_latency(op="))
           for p in probs), probs
PY
# Fixed: only the three bad branches (run and branch synthesis; the crashed
# one's transform was fine), the control and the final synthesis run.
rm "$work/crash" "$work/wrongvar" "$work/garbage"
expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws2" --run
[[ $(count out '^done ') == 8 ]] || { cat "$work/out"; fail "3 x (run, branch synthesis), the control and the final synthesis"; }

# A cubin has no PTX: discovery fails, naming the task and the fix.
T_ARTIFACT=$src/fixtures/discover/async_cpasync.cubin PATH=/usr/bin:/bin \
    expect_rc 1 "$argus" query "${q[@]}" --ws "$work/ws3" --run
has out "control:discover_async_ops@v1: transform:markers_on->v1: the artifact is not PTX text"
has out "--discovered OPS.json"
expect_rc 1 "$argus" query --program "$work/cp" --registry "$work/cp.argus.json" \
    --signal region_time --assume-all --run --ws "$work/ws4"
has err "running a plan needs an executor"
echo "argus_plan_run: ok"
