#!/usr/bin/env bash
# argus exec, the executor of argus query --run (docs/argus-plan.md, "The
# executor"), without a GPU: argus-shim's recorder on the fake CUPTI
# (tests/argus/fake_cupti.c) driven by argus_shim_prog stands in for the
# program, and a host script stands in for arming by writing the device
# model's buffer (argus_gen_raw: kernel_known.cu's structure, known counts)
# where argus-shim's arming would (ARGUS_SHIM_ARM_RAW).
#
# Checked:
#   transform: markers_on rebuilt from the source with the registry embedded
#     (8 operations and 10 markers found in the artifact's PTX, as in the
#     discovery fixtures); forced-completion probes of a cp.async (sm_90)
#     and a TMA (sm_90a) operation whose PTX is the parent's plus the
#     "// argus-probe" lines only, with one forced wait, and, where
#     cuobjdump is, SASS with the base's issue instructions and one added
#     wait; the artifact is PTX to discovery and ptxas as it is; errors: an
#     unknown operation, a probe of a probe, no compiler, a compile error, a
#     bad description, a damaged artifact;
#   run: evidence per backend (argus.evidence v1, against its schema where
#     the schema and jsonschema are), the region buffer decoded again by
#     `argus report` (outer/load 16, the model's), the kernel in argus-shim's
#     report, unavailable backends with their reasons, the base variant
#     built from the description, the device bound (CUDA_VISIBLE_DEVICES), a
#     crashing program, a hanging one killed at its limit with what it
#     started, a missing device, usage errors;
#   query --run: 4 probe branches built and run through the real executor,
#     the runs never overlapping (the runtime's "gpu" class), and a branch
#     whose program hangs killed at its limit, failing alone, and rerun
#     alone once it no longer hangs.
# Where nvcc is missing, a stand-in compiler copies the committed fixtures
# (the compile checks are then skipped, the rest runs).
# usage: test_exec.sh ARGUS SHIM_PROG FAKE_CUPTI_DIR GEN_RAW SRC_DIR WORK [NVCC] [CUOBJDUMP]
set -euo pipefail
argus=$1 prog=$2 fakedir=$3 genraw=$4 src=$5 work=$6 nvcc=${7:-} cuobjdump=${8:-}
rm -rf "$work" && mkdir -p "$work"
root=$(cd "$src/../.." && pwd)
schema=$root/profiler/argus/schema/argus.evidence.v1.json
fix=$src/fixtures/discover
export LD_LIBRARY_PATH=$fakedir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC CMD...
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
has() { grep -qF -- "$2" "$work/$1" || { cat "$work/$1" >&2; fail "$1 lacks: $2"; }; }
count() { grep -c -E -- "$2" "$work/$1" || true; }
with_nvdisasm() { if [[ -n ${NVDISASM_DIR:-} ]]; then PATH=$NVDISASM_DIR:$PATH "$@"; else "$@"; fi; }

if [[ -z $nvcc ]]; then
    # A stand-in toolkit: nvcc -ptx copies the fixture PTX of the source's
    # name, ptxas copies its cubin. Enough for runs; compile checks skipped.
    mkdir -p "$work/fakecc"
    cat >"$work/fakecc/nvcc" <<EOF
#!/bin/sh
for a; do case \$a in *.cu) name=\$(basename "\$a" .cu) ;; esac; done
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
f="$fix/\${name:-async_cpasync}.ptx"; [ -f "\$f" ] || f="$fix/async_cpasync.ptx"
cp "\$f" "\$out"
EOF
    cat >"$work/fakecc/ptxas" <<EOF
#!/bin/sh
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$fix/async_cpasync.cubin" "\$out"
EOF
    chmod +x "$work/fakecc/nvcc" "$work/fakecc/ptxas"
    export ARGUS_NVCC=$work/fakecc/nvcc
    echo "argus_exec: no nvcc: a stand-in compiler (compile checks skipped)"
else
    export ARGUS_NVCC=$nvcc
fi

prog_json() { # prog_json FILE SOURCE SM RUN_JSON [EXTRA]
    printf '{"schema": "argus.exec.program", "version": 1, "source": "%s", "include": ["%s"],
 "sm": "%s", "run": %s%s}\n' "$2" "$root/include" "$3" "$4" "${5:-}" >"$1"
}
validate() { # validate EVIDENCE...: against the schema, where both exist
    [[ -f $schema ]] || return 0
    python3 - "$schema" "$@" <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
s = json.load(open(sys.argv[1]))
for p in sys.argv[2:]:
    jsonschema.validate(json.load(open(p)), s)
PY
}

# ---- transform ----
cd "$work"
prog_json cp.json "$src/async_cpasync.cu" 90 '["/bin/true"]'
expect_rc 0 "$argus" exec transform markers_on v1 cp.json 0 -1 v1.art
"$argus" exec show v1.art >hdr.json
python3 - hdr.json <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
assert h["schema"] == "argus.exec.artifact" and h["version"] == 1, h
assert h["transforms"] == ["markers_on"] and h["markers"] and h["probe"] is None, h
assert [p["name"] for p in h["parts"]] == ["ptx", "cubin", "registry", "build_log"], h["parts"]
assert h["target"] == "sm_90", h["target"]
PY
"$argus" exec show v1.art registry >reg.json
python3 -c "
import json,sys; r=json.load(open('reg.json'))
assert sorted(x['name'] for x in r['regions']) == ['epilogue','load','mainloop','mma','prologue'], r"
"$argus" exec show v1.art build_log >build.log
[[ -z $nvcc ]] || grep -q -- '-DARGUS_ENABLE' build.log || fail "the build log has the marker build"
# The artifact is PTX as it is: discovery reads it whole.
expect_rc 0 "$argus" exec discover v1.art
python3 - out <<'PY'
import json, sys
ops = json.load(open(sys.argv[1]))
assert len(ops) == 8, ops
loop = [o["id"] for o in ops if o["in_loop"]]
assert loop == ["0xe693e43.0", "0xe693e43.1", "0xe693e43.2", "0xe693e43.3"], loop
assert all(o["kind"] == "cp.async" for o in ops)
PY
"$argus" exec show v1.art ptx >v1.ptx
if [[ -n $nvcc ]]; then
    grep -q 'argus_registry_v1' v1.ptx || fail "the registry is embedded in the module"
    ptxas=$(dirname "$nvcc")/ptxas
    "$ptxas" -arch=sm_90 v1.art -o direct.cubin || fail "ptxas reads the artifact as PTX"
fi

# A probe: the parent's PTX plus the probe lines only, one forced wait.
expect_rc 0 "$argus" exec transform force_completion_probe v2 v1.art 0xe693e43.1 4 v2.art
"$argus" exec show v2.art ptx >v2.ptx
grep -v '// argus-probe' v2.ptx | cmp -s - v1.ptx || fail "the probe variant differs beyond its probe lines"
[[ $(grep -c 'cp.async.wait_all; // argus-probe' v2.ptx) == 1 ]] || fail "one forced cp.async.wait_all"
grep -q 'setp.eq.u32 %argus_probe_q, %argus_probe_n, 5;' v2.ptx || fail "forced at execution 4 (counter 5)"
"$argus" exec show v2.art | python3 -c "
import json,sys; h=json.load(sys.stdin)
assert h['transforms'] == ['markers_on', 'force_completion_probe'], h
assert h['probe']['op'] == '0xe693e43.1' and h['probe']['iter'] == 4 and h['probe']['kind'] == 'cp.async', h"
if [[ -n $nvcc && -n $cuobjdump ]]; then
    "$argus" exec show v1.art cubin >v1.cubin
    "$argus" exec show v2.art cubin >v2.cubin
    with_nvdisasm "$cuobjdump" -sass v1.cubin >v1.sass
    with_nvdisasm "$cuobjdump" -sass v2.cubin >v2.sass
    delta() { echo $(($(grep -c -E -- "$1" v2.sass || true) - $(grep -c -E -- "$1" v1.sass || true))); }
    [[ $(delta ' LDGSTS') == 0 ]] || fail "SASS: the probe changed the LDGSTS count"
    [[ $(delta ' LDGDEPBAR ') == 1 && $(delta 'DEPBAR\.LE SB0, 0x0 ') == 1 ]] ||
        fail "SASS: one more LDGDEPBAR and DEPBAR.LE SB0, 0x0"
    sass=", SASS"
fi

# TMA, sm_90a: the probe after the phase's last issue, one try_wait added.
if [[ -n $nvcc ]]; then
    prog_json tma.json "$src/async_tma.cu" 90a '["/bin/true"]'
    expect_rc 0 "$argus" exec transform markers_on t1 tma.json 0 -1 t1.art
    "$argus" exec show t1.art | grep -q '"target":.*"sm_90a"' || fail "the TMA variant is sm_90a"
    "$argus" exec discover t1.art >tops.json
    top=$(python3 -c "
import json; ops=json.load(open('tops.json')); print([o['id'] for o in ops if o['kind']=='tma' and o['in_loop']][-1])")
    expect_rc 0 "$argus" exec transform force_completion_probe t2 t1.art "$top" 1 t2.art
    "$argus" exec show t1.art ptx >t1.ptx
    "$argus" exec show t2.art ptx >t2.ptx
    [[ $(grep -c 'mbarrier.try_wait.*// argus-probe' t2.ptx) -ge 1 ]] || fail "a forced mbarrier.try_wait"
    # The base less the probe lines: only the phase's arrive is rewritten.
    [[ $(diff <(grep -v '// argus-probe' t2.ptx) t1.ptx | grep -c '^[<>]' || true) -le 2 ]] ||
        fail "the TMA probe changed more than the phase's arrive"
    if [[ -n $cuobjdump ]]; then
        "$argus" exec show t1.art cubin >t1.cubin
        "$argus" exec show t2.art cubin >t2.cubin
        [[ $(with_nvdisasm "$cuobjdump" -sass t2.cubin | grep -c UTMALDG) == \
           $(with_nvdisasm "$cuobjdump" -sass t1.cubin | grep -c UTMALDG) ]] || fail "SASS: UTMALDG count"
        [[ $(with_nvdisasm "$cuobjdump" -sass t2.cubin | grep -c 'SYNCS.PHASECHK.TRANS64.TRYWAIT') -gt \
           $(with_nvdisasm "$cuobjdump" -sass t1.cubin | grep -c 'SYNCS.PHASECHK.TRANS64.TRYWAIT') ]] ||
            fail "SASS: one more try_wait site"
    fi
fi

# Transform errors, each naming what and why.
expect_rc 1 "$argus" exec transform force_completion_probe v3 v1.art 0xe693e43.9 4 v3.art
has err "force_completion_probe of op 0xe693e43.9 at iteration 4"
has err "no asynchronous operation 0xe693e43.9"
expect_rc 1 "$argus" exec transform force_completion_probe v3 v2.art 0xe693e43.1 5 v3.art
has err "the parent is a probe variant already"
expect_rc 2 "$argus" exec transform force_completion_probe v3 v1.art op1 x v3.art
has err "expected an operation ID"
ARGUS_NVCC=$work/no/nvcc expect_rc 1 "$argus" exec transform markers_on v1 cp.json 0 -1 x.art
has err "markers_on: no CUDA compiler: ARGUS_NVCC=$work/no/nvcc is not an executable"
[[ ! -e x.art ]] || fail "no artifact after a failed build"
if [[ -n $nvcc ]]; then
    printf '__global__ void k() { int x = ; }\n' >broken.cu
    prog_json broken.json "$work/broken.cu" 90 '["/bin/true"]'
    expect_rc 1 "$argus" exec transform markers_on v1 broken.json 0 -1 x.art
    has err "markers_on: compiling the source with markers: $nvcc exited"
    has err "error"
fi
printf '{"schema": "argus.exec.program", "version": 1, "source": "k.cu", "rnu": []}\n' >bad.json
expect_rc 1 "$argus" exec transform markers_on v1 bad.json 0 -1 x.art
has err "rnu: unknown key"
head -c 20000 v1.art >cut.art
expect_rc 1 "$argus" exec transform force_completion_probe v3 cut.art 0xe693e43.1 4 v3.art
has err "not a variant artifact"
head -c -40 v1.art >cut2.art
expect_rc 1 "$argus" exec transform force_completion_probe v3 cut2.art 0xe693e43.1 4 v3.art
has err "a damaged variant artifact"

# ---- run ----
# The host: arming's stand-in (the model buffer, when asked for), the
# device it was given, then the fake CUDA program; MODE makes it crash,
# hang or find no device.
# The hang's sleep carries this test's PID, so that the check below finds
# this run's program only.
nap=31.$$
cat >host.sh <<EOF
#!/bin/bash
cubin=\$1 variant=\$2
echo "\$CUDA_VISIBLE_DEVICES" >"$work/device.seen"
printf 'start %s %s\n' "\$(date +%s.%N)" "\$variant" >>"$work/runs.log"
[[ -n \${ARGUS_SHIM_ARM_RAW:-} ]] && "$genraw" "\$ARGUS_SHIM_ARM_RAW/arm.1.raw"
mode=\$(cat "$work/mode" 2>/dev/null || echo ok)
case \$mode in
crash) kill -SEGV \$\$ ;;
hang) sleep $nap ;;
hang5) [[ \$variant == *iter=5* ]] && sleep $nap ;;
nodev) exec "$prog" 1 nocuda ;;
slow) sleep 0.2 ;;
esac
printf 'end %s %s\n' "\$(date +%s.%N)" "\$variant" >>"$work/runs.log"
exec "$prog" 0 ctx module:"\$cubin" known:7:1000 sync
EOF
chmod +x host.sh
prog_json known.json "$src/kernel_known.cu" 90 "[\"./host.sh\", \"{cubin}\", \"{variant}\"]" \
    ', "device": "3", "timeout_s": 20'
expect_rc 0 "$argus" exec transform markers_on k1 known.json 0 -1 k1.art
be=region_runtime,cupti_activity,nvtx,pc_sampling,sass_metrics,range_profiler,sanitizer_patch,bpf
# The four collectors that run under their own tools (test_exec_collect.sh
# runs them): pointed at nothing here, so each is unavailable, saying which.
ARGUS_PCMAP_LIB=/nonexistent/libargus_pcmap.so ARGUS_BPF_BIN=/nonexistent/argus-bpf \
MOSAIC_PROFILE_BIN=/nonexistent/mosaic-profile ARGUS_SASS=/nonexistent/argus-sass \
    expect_rc 0 "$argus" exec run k1 $be k1.art e1 e2 e3 e4 e5 e6 e7 e8
[[ $(cat device.seen) == 3 ]] || fail "the run is bound to the description's device"
validate e1 e2 e3 e4 e5 e6 e7 e8
"$argus" exec show k1.art registry >kreg.json
python3 - "$argus" "$work" <<'PY'
import base64, json, subprocess, sys
argus, work = sys.argv[1], sys.argv[2]
ev = [json.load(open(f"{work}/e{i}")) for i in range(1, 9)]
names = ["region_runtime", "cupti_activity", "nvtx", "pc_sampling", "sass_metrics",
         "range_profiler", "sanitizer_patch", "bpf"]
assert [e["backend"] for e in ev] == names, [e["backend"] for e in ev]
assert all(e["variant"] == "k1" for e in ev)
assert [e["status"] for e in ev] == ["ok"] * 4 + ["unavailable"] * 4, [e["status"] for e in ev]
for e in ev[4:]:
    assert ("missing" in e["why"] or "not installed" in e["why"]) and "/nonexistent/" in e["why"] \
        and len(e) == 7, e
rr = ev[0]
assert len(rr["launches"]) == 1, rr
open(f"{work}/k1.raw", "wb").write(base64.b64decode(rr["launches"][0]["raw_base64"]))
# The buffer, decoded again by the CLI with the variant's registry: the
# device model's counts (4 warps x 4 iterations of load).
out = subprocess.run([argus, "report", f"{work}/k1.raw", "--registry", f"{work}/kreg.json",
                      "--json", f"{work}/k1.report.json"], capture_output=True, text=True)
rep = json.load(open(f"{work}/k1.report.json"))
counts = {r["path"]: r["count"]["value"] for r in rep["regions"]}
assert counts == {"outer": 4, "outer/load": 16, "outer/compute": 16, "tail": 4}, counts
k = {r["path"]: r for r in ev[1]["report"]["regions"]}
assert k["known"]["count"]["value"] == 1 and k["known"]["kind"] == "kernel", k
assert ev[1]["report"]["source"] == "argus-shim"
assert ev[3]["stall_reasons"] and ev[3]["totals"]["samples"] == 0, ev[3]
assert "CUDA_VISIBLE_DEVICES=3" in ev[0]["tool"] and "exited 0" in ev[0]["tool"], ev[0]["tool"]
PY
ARGUS_EXEC_DEVICE=5 expect_rc 0 "$argus" exec run k1 cupti_activity k1.art e1
[[ $(cat device.seen) == 5 ]] || fail "ARGUS_EXEC_DEVICE overrides the description's device"

# A buffer whose regions are not the variant's (kernel_known's model under
# the cp.async variant): left out, said why, never joined.
prog_json cpr.json "$src/async_cpasync.cu" 90 "[\"./host.sh\", \"{cubin}\", \"{variant}\"]"
expect_rc 0 "$argus" exec transform markers_on c1 cpr.json 0 -1 c1.art
expect_rc 0 "$argus" exec run c1 region_runtime c1.art e1
python3 -c "
import json; e=json.load(open('e1')); assert e['status']=='unavailable' and e['launches']==[], e
assert 'not in the variant' in e['why'] and 'not this variant' in e['why'], e"

# The program as given (v0): built without markers, so no region buffers.
expect_rc 0 "$argus" exec run v0 region_runtime,cupti_activity known.json e1 e2
python3 -c "
import json; e=json.load(open('e1')); assert e['status']=='unavailable' and 'no Argus markers' in e['why'], e
e=json.load(open('e2')); assert e['status']=='ok', e"

# A crash, a hang, no device: the run fails (exit 1) with the reason, and
# its evidence says failed.
echo crash >mode
expect_rc 1 "$argus" exec run k1 cupti_activity,region_runtime k1.art e1 e2
has err "was killed by signal 11"
python3 -c "
import json; e=json.load(open('e1')); assert e['status']=='failed' and 'signal 11' in e['why'], e"
validate e1 e2
echo hang >mode
prog_json hang.json "$src/kernel_known.cu" 90 "[\"./host.sh\", \"{cubin}\", \"{variant}\"]" \
    ', "timeout_s": 1'
t0=$(date +%s%N)
expect_rc 1 "$argus" exec run k1 cupti_activity hang.json e1
t1=$(date +%s%N)
has err "ran past its limit of 1 s"
(( (t1 - t0) / 1000000 < 15000 )) || fail "the hanging run took $(( (t1 - t0) / 1000000 )) ms"
sleep 0.2
if pgrep -f "sleep $nap\$" >/dev/null; then fail "the hanging program's sleep outlived its run"; fi
echo nodev >mode
expect_rc 1 "$argus" exec run k1 cupti_activity k1.art e1
has err "never initialised CUDA: no usable CUDA device (CUDA_VISIBLE_DEVICES=3)"
rm mode

# Usage.
expect_rc 2 "$argus" exec run k1 cupti_activity,nvtx k1.art e1
has err "2 backends (cupti_activity,nvtx) but 1 OUT files"
expect_rc 2 "$argus" exec run k1 cupti_activty k1.art e1
has err "unknown backend \"cupti_activty\""
expect_rc 2 "$argus" exec frobnicate
has err "unknown command"

# ---- argus query --run with the real executor ----
"$argus" registry "$src/async_cpasync.cu" -o cpreg.json >/dev/null
prog_json cpq.json "$src/async_cpasync.cu" 90 "[\"./host.sh\", \"{cubin}\", \"{variant}\"]" \
    ', "timeout_s": 2'
"$argus" exec discover v1.art | python3 -c "
import json,sys; json.dump([o for o in json.load(sys.stdin) if o['id'] in ('0xe693e43.0','0xe693e43.1')], open('ops.json','w'))"
q=(--program "$work/cpq.json" --registry "$work/cpreg.json" --region mainloop/load
   --signal region_time,async_latency --iter 4:5 --assume-all --discovered "$work/ops.json"
   --executor "$argus exec")
# The query's exit: 0; or, where the synthesis rules run, 1 because the
# stand-in's buffers hold no mainloop/load (the region runtime evidence is
# unavailable, said why), with no task failed.
query_ok() {
    set +e; "$argus" query "${q[@]}" "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == 0 ]] && return 0
    [[ $rc == 1 ]] && grep -q 'syntheses are incomplete' "$work/err" &&
        ! grep -qE '^failed ' "$work/out" && return 0
    cat "$work/out" "$work/err" >&2
    fail "argus query --run exited $rc"
}
echo slow >mode
: >runs.log
query_ok --ws "$work/ws" --run
[[ $(count out '^done +t[0-9]+ +transform') == 5 ]] || { cat out; fail "5 transforms done"; }
[[ $(count out '^done +run[0-9]+ +collect') == 5 ]] || { cat out; fail "5 runs done"; }
python3 - runs.log "$work/ws" <<'PY'
import glob, json, sys
ev = [l.split() for l in open(sys.argv[1])]
spans = {}
for kind, t, v in ev:
    spans.setdefault(v, {})[kind] = float(t)
assert len(spans) == 5, spans
iv = sorted((s["start"], s["end"]) for s in spans.values())
for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
    assert a1 <= b0, ("two runs overlapped on the GPU", iv)
probes = []
for p in glob.glob(sys.argv[2] + "/objects/*/*"):
    try:
        e = json.load(open(p))
    except Exception:
        continue
    if isinstance(e, dict) and e.get("schema") == "argus.evidence":
        probes.append(e["variant"])
assert sum("probe(" in v for v in probes) == 4, probes
PY
# A branch that hangs (iteration 5's probes): killed at 2 s, failing alone;
# then, no longer hanging, only those branches run again.
echo hang5 >mode
expect_rc 1 "$argus" query "${q[@]}" --ws "$work/ws2" --run
[[ $(count out '^failed +run[0-9]+ ') == 2 ]] || { cat out; fail "the two hanging runs failed"; }
has out "ran past its limit of 2 s"
sleep 0.2
if pgrep -f "sleep $nap\$" >/dev/null; then fail "a hanging branch's program outlived its run"; fi
[[ $(count out '^done +run[0-9]+ ') == 3 ]] || { cat out; fail "the other 3 runs done"; }
rm mode
query_ok --ws "$work/ws2" --run
[[ $(count out '^done +run[0-9]+ ') == 2 ]] || { cat out; fail "only the 2 failed runs run again"; }
[[ $(count out '^reused +(t|run)[0-9]+ +(transform|collect)') == 8 ]] ||
    { cat out; fail "5 transforms and 3 runs reused"; }
echo "argus_exec: ok (transform${nvcc:+, ptxas}${sass:-}, run, query --run)"
