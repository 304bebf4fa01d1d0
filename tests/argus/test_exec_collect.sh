#!/usr/bin/env bash
# argus exec run's external collectors (issue 13): sanitizer_patch, bpf,
# range_profiler and sass_metrics, each run of the variant's program under
# its own tool, without a GPU. Stand-ins with known outputs take the tools'
# places (ARGUS_PCMAP_LIB, ARGUS_BPF_BIN, MOSAIC_PROFILE_BIN, ARGUS_SASS):
# the program itself writes the PC map where CUDA_INJECTION64_PATH names the
# stand-in library, as libargus_pcmap.so would. Checked: each backend's
# evidence holds the known values, converted (map entries, per-PC values,
# kernel metrics with units, BPF events); the device is bound in every run;
# argus-sass missing -> unavailable, saying so; BPF refused -> unavailable
# naming CAP_BPF and CAP_PERFMON; a crashing collector and a hanging one
# (killed at the limit) fail their evidence alone, the others kept, exit 1;
# the query's metric names passed on, kept, and an unknown one refused
# naming the nearest; evidence against its schema where jsonschema is.
# usage: test_exec_collect.sh ARGUS SRC_DIR WORK
set -euo pipefail
argus=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work/bin"
root=$(cd "$src/../.." && pwd)
schema=$root/profiler/argus/schema/argus.evidence.v1.json
fix=$src/fixtures/discover
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
# A stand-in compiler (the artifact's build is not what this tests).
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
export ARGUS_NVCC=$work/bin/nvcc PATH=$work/bin:$PATH
# The program: records its device; as the injection library would, writes a
# PC map (callA/work 3072, callB/work 1024 at one PC) when it is loaded.
cat >prog.sh <<'EOF2'
#!/bin/sh
echo "$CUDA_VISIBLE_DEVICES" >>"$(dirname "$0")/devices"
[ -n "${FAKE_HANG_PROG:-}" ] && sleep 60
if [ -n "${CUDA_INJECTION64_PATH:-}" ] && [ -n "${ARGUS_PCMAP_OUT:-}" ]; then
cat >"$ARGUS_PCMAP_OUT" <<'M'
{"schema": "argus.pcmap", "version": 1, "backend": "sanitizer_patch", "complete": true,
 "problems": [], "count": "warp-level executions", "modules": [{"sha256": "00"}],
 "launches": [], "regions": [{"path": "", "ids": []}, {"path": "callA", "ids": ["0x1"]},
 {"path": "callA/work", "ids": ["0x1", "0x2"]}, {"path": "callB/work", "ids": ["0x3", "0x2"]}],
 "pcs": [{"module": 0, "function": "work", "offset": "0x40", "kind": "syncwarp", "iter": null,
          "role": null, "exec": [[2, 3072], [3, 1024]]},
         {"module": 0, "function": null, "offset": "0x9000", "kind": "exit", "iter": null,
          "role": null, "exec": [[0, 128]]}]}
M
fi
exit 0
EOF2
cat >bin/fake-sass <<'EOF2'
#!/bin/sh
# argus-sass --out FILE [--metrics a,b] -- PROG ARGS...
[ -n "${FAKE_SASS_CRASH:-}" ] && kill -SEGV $$
out=; while [ "$1" != -- ]; do [ "$1" = --out ] && out=$2; [ "$1" = --metrics ] && echo "$2" >"$out.metrics"; shift; done; shift
"$@" || exit $?
cat >"$out" <<'S'
{"schema": "argus.sassmetrics", "version": 1, "kernels": [{"name": "work",
 "pcs": [{"offset": 64, "inst_executed": 4096, "thread_inst_executed": 131072},
         {"offset": "0x50", "inst_executed": 4096, "thread_inst_executed": 65536}]}]}
S
EOF2
cat >bin/fake-profile <<'EOF2'
#!/bin/sh
# mosaic-profile capture -o FILE -- CMD...
out=; while [ "$1" != -- ]; do [ "$1" = -o ] && out=$2; shift; done; shift
[ -n "${FAKE_PROFILE_HANG:-}" ] && sleep 60
"$@" || exit 4
cat >"$out" <<'P'
{"schema": "mosaic-profile/1", "complete": true, "problems": [],
 "features": [{"key": "duration_ns", "metric": "gpu__time_duration.sum", "unit": "ns"},
              {"key": "dram_read_bytes", "metric": "dram__bytes_read.sum", "unit": "bytes"}],
 "kernels": [{"name": "work", "launches": 3,
              "metrics": {"duration_ns": 60972.8, "dram_read_bytes": 134227200, "l2_hit": null}}]}
P
EOF2
cat >bin/fake-bpf <<'EOF2'
#!/bin/sh
if [ "$1" = probe ]; then
  if [ -n "${FAKE_BPF_DENY:-}" ]; then
    echo "argus-bpf: BPF programs cannot be loaded here: bpf(BPF_PROG_LOAD) failed with EPERM (Operation not permitted): this process lacks CAP_BPF and CAP_PERFMON (effective capabilities 0x0)" >&2
    exit 3
  fi
  echo "argus-bpf: usable"; exit 0
fi
out=; while [ "$1" != -- ]; do [ "$1" = -o ] && out=$2; shift; done; shift
"$@"
printf '%s\n' '{"schema": "argus.bpf.events", "version": 1, "pid": 7, "complete": true}' \
  '{"t_ns": 10, "tid": 7, "call": "cuLaunchKernel", "site": "entry"}' \
  '{"tid": 7, "launches": 1, "syncs": 0}' >"$out"
EOF2
chmod +x prog.sh bin/*
touch fake_pcmap.so
export ARGUS_PCMAP_LIB=$work/fake_pcmap.so ARGUS_BPF_BIN=$work/bin/fake-bpf \
       MOSAIC_PROFILE_BIN=$work/bin/fake-profile ARGUS_SASS=$work/bin/fake-sass
printf '{"schema": "argus.exec.program", "version": 1, "source": "%s", "include": ["%s"],
 "sm": "90", "run": ["./prog.sh"], "device": "3", "timeout_s": 4}\n' \
  "$src/async_cpasync.cu" "$root/include" >prog.json
be=sanitizer_patch,bpf,range_profiler,sass_metrics
ev() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
validate() {
    python3 - "$schema" "$@" <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
s = json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    jsonschema.validate(json.load(open(f)), s)
PY
}

# 1. All four, with known answers; the metric names passed to argus-sass.
"$argus" exec run v0 $be prog.json s.json b.json r.json m.json 2>log || { cat log; fail "run exited $?"; }
for f in s b r m; do [[ $(ev $f.json 'd["status"]') == ok ]] || { cat $f.json; fail "$f not ok"; }; done
[[ $(ev s.json '[(x["region"],x["count"]) for x in d["map"] if x["pc"]==64]') == "[('callA/work', 3072), ('callB/work', 1024)]" ]] || fail "map: $(ev s.json 'd["map"]')"
[[ $(ev s.json 'len(d["map"])') == 2 ]] || fail "a PC of no function kept in the map"
[[ $(ev m.json 'd["metrics"]') == "['inst_executed', 'thread_inst_executed']" ]] || fail "sass names"
[[ $(ev m.json '[(p["pc"],p["values"]["thread_inst_executed"]) for p in d["pcs"]]') == "[(64, 131072), (80, 65536)]" ]] || fail "sass pcs"
[[ $(ev r.json 'd["kernels"][0]["metrics"]["dram_read_bytes"]') == "{'value': 134227200, 'unit': 'bytes'}" ]] || fail "kernels: $(ev r.json 'd["kernels"]')"
[[ $(ev r.json '"l2_hit" in d["kernels"][0]["metrics"]') == False ]] || fail "a null metric given as a number"
[[ $(ev r.json 'd["kernels"][0]["launch"]') == 3 ]] || fail "launches"
[[ $(ev b.json 'd["events"][1]["call"]') == cuLaunchKernel ]] || fail "bpf events"
[[ $(ev r.json '"fake-profile; CUDA_VISIBLE_DEVICES=3; exit 0" in d["tool"]') == True ]] || fail "tool: $(ev r.json 'd["tool"]')"
[[ $(sort -u devices) == 3 ]] || fail "device not bound in every run: $(cat devices)"
[[ $(wc -l <devices) == 4 ]] || fail "4 runs of the program, one per collector: $(wc -l <devices)"
validate s.json b.json r.json m.json

# 1b. The query's metric names (ARGUS_EXEC_METRICS): passed to argus-sass;
# the range profiler's kernels keep only those asked (a counter name means
# its feature), and a name it does not know fails, naming the nearest.
ARGUS_EXEC_METRICS=inst_executed,thread_inst_executed \
    "$argus" exec run v0 sass_metrics prog.json m1.json 2>log || { cat log; fail "sass with names"; }
grep -q -- '--metrics inst_executed,thread_inst_executed' log || fail "metric names not passed to argus-sass"
ARGUS_EXEC_METRICS=dram__bytes_read.sum "$argus" exec run v0 range_profiler prog.json r1.json 2>log ||
    { cat log; fail "range with names"; }
[[ $(ev r1.json 'sorted(d["kernels"][0]["metrics"])') == "['dram_read_bytes']" ]] || fail "names not kept: $(cat r1.json)"
set +e; ARGUS_EXEC_METRICS=dram__bytes_red.sum "$argus" exec run v0 range_profiler prog.json r2.json 2>log; rc=$?; set -e
[[ $rc == 1 && $(ev r2.json 'd["status"]') == failed ]] || fail "an unknown metric: rc $rc $(cat r2.json)"
[[ $(ev r2.json '"dram__bytes_red.sum" in d["why"] and "nearest: dram__bytes_read.sum" in d["why"]') == True ]] ||
    fail "an unknown metric's why: $(cat r2.json)"
[[ $(ev r2.json '"kernels" in d') == False ]] || fail "an unknown metric's kernels given"
validate m1.json r1.json r2.json
validate s.json b.json r.json m.json

# 2. argus-sass missing: unavailable, naming it; BPF refused: unavailable, naming the capabilities.
ARGUS_SASS=$work/no-argus-sass PATH=/usr/bin:/bin FAKE_BPF_DENY=1 "$argus" exec run v0 bpf,sass_metrics prog.json b2.json m2.json 2>log \
    || { cat log; fail "unavailable backends made the run fail"; }
[[ $(ev m2.json 'd["status"]') == unavailable ]] || fail "sass missing: $(cat m2.json)"
grep -q 'argus-sass (the CUPTI SASS Metrics collector) is not installed' m2.json || fail "sass why: $(cat m2.json)"
[[ $(ev b2.json 'd["status"]') == unavailable ]] || fail "bpf refused: $(cat b2.json)"
grep -q 'CAP_BPF and CAP_PERFMON' b2.json || fail "bpf why: $(cat b2.json)"
validate b2.json m2.json

# 3. A crashing collector (argus-sass) and a hanging one (the profiler,
# killed at the description's 4 s): their evidence failed, the rest kept.
set +e
FAKE_SASS_CRASH=1 FAKE_PROFILE_HANG=1 "$argus" exec run v0 $be prog.json s3.json b3.json r3.json m3.json 2>log
rc=$?; set -e
[[ $rc == 1 ]] || { cat log; fail "a failed collector: exit $rc, not 1"; }
[[ $(ev m3.json 'd["status"]') == failed ]] && grep -q 'signal 11' m3.json || fail "crash: $(cat m3.json)"
[[ $(ev r3.json 'd["status"]') == failed ]] && grep -q 'ran past its limit of 4 s' r3.json || fail "hang: $(cat r3.json)"
[[ $(ev s3.json 'd["status"]') == ok && $(ev b3.json 'd["status"]') == ok ]] || fail "the other collections not kept"
[[ $(ev s3.json 'len(d["map"])') == 2 ]] || fail "map lost"
pgrep -f "$work/bin/fake-profile" >/dev/null && fail "the hanging profiler was left running"
validate s3.json b3.json r3.json m3.json

# 4. A tool whose output is not its format: failed, not joined.
cat >bin/bad-sass <<'EOF2'
#!/bin/sh
out=; while [ "$1" != -- ]; do [ "$1" = --out ] && out=$2; shift; done
echo '{"schema": "something.else", "kernels": []}' >"$out"
EOF2
chmod +x bin/bad-sass
set +e; ARGUS_SASS=$work/bin/bad-sass "$argus" exec run v0 sass_metrics prog.json m4.json 2>log; rc=$?; set -e
[[ $rc == 1 && $(ev m4.json 'd["status"]') == failed ]] || fail "foreign output: rc $rc $(cat m4.json)"
[[ $(ev m4.json '"not \"argus.sassmetrics\" v1" in d["why"]') == True ]] || fail "foreign output why: $(cat m4.json)"
[[ $(ev m4.json '"pcs" in d') == False ]] || fail "foreign output joined"
echo "argus_exec_collect: ok"
