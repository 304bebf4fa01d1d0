#!/usr/bin/env bash
# argus-sass (issue 13) on the fake CUPTI (fake_cupti_sass.c), with the real
# cubin of sass_loop.cu (fixtures/sass, nvcc 13.0, sm_90) launched by
# sass_prog: exact per-PC counts (the loop's PCs trip x warps x launches,
# worked out from the SASS listing by scripts/gpu/sass_check.py), and the
# checker failing a wrong trip count and a wrong loop; one metric; the
# module's sha256; matching by name when the CRC differs; bad and hostile
# inputs (an unknown metric, no privileges, an old CUPTI, no CUPTI, a
# crashing target, --out in a missing folder, a FIFO as --out, another
# injection library, a second device); the exit status passed through;
# silence unless ARGUS_SASS_LOG; no descriptor or thread left in the target
# (sass_prog exits 4 otherwise); argus exec with argus-sass as collector.
# usage: test_sass.sh ARGUS_SASS SASS_PROG FAKE_CUPTI FAKE_CUPTI_OLD SRC WORK ARGUS
set -euo pipefail
sass=$1 prog=$2 fake=$3 old=$4 src=$5 work=$6 argus=$7
root=$(cd "$src/../.." && pwd)
fix=$src/fixtures/sass cubin=$src/fixtures/sass/sass_loop.cubin
check=$root/scripts/gpu/sass_check.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
ev() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
export ARGUS_SASS_CUPTI=$fake
model=$(python3 "$check" loop "$fix/sass_loop.sass" sass_loop)
[[ $model == b0:e0:130 ]] || fail "the loop of the listing: $model"
export FAKE_SASS_MODEL=$model:1000
run() { # run NAME ARGS...: argus-sass's exit status in $rc, stderr in NAME.err
    local n=$1; shift
    set +e; "$sass" "$@" 2>"$n.err"; rc=$?; set -e
}

# 1. Exact counts: 2 launches of 4 blocks of 128 threads (16 warps), 1000 trips;
# a launch's total: 4 loop PCs x 16,000 + 16 other PCs up to EXIT x 16 = 64,256.
run a --out a.json -- "$prog" "$cubin" sass_loop 2 4 128
[[ $rc == 0 ]] || { cat a.err; fail "exit $rc"; }
[[ ! -s a.err ]] || { cat a.err; fail "not silent"; }
python3 "$check" check "$fix/sass_loop.sass" sass_loop a.json 1000 16 2 >a.check || { cat a.check; fail "counts"; }
[[ $(ev a.json '[p["smsp__sass_inst_executed"] for p in d["kernels"][0]["pcs"] if p["offset"] in ("0xb0","0xe0")]') == "[32000, 32000]" ]] || fail "loop PCs"
[[ $(ev a.json 'd["kernels"][0]["pcs"][0]') == "{'offset': '0x0', 'smsp__sass_inst_executed': 32, 'smsp__sass_thread_inst_executed': 1024}" ]] || fail "first PC: $(ev a.json 'd["kernels"][0]["pcs"][0]')"
[[ $(ev a.json 'len(d["kernels"][0]["pcs"])') == 32 ]] || fail "32 instructions (0x200 bytes)"
[[ $(ev a.json 'd["kernels"][0]["sha256"]') == $(sha256sum "$cubin" | cut -d' ' -f1) ]] || fail "sha256"
[[ $(ev a.json '[(l["grid"], l["block"], l["totals"]["smsp__sass_inst_executed"]) for l in d["launches"]]') == \
   "[([4, 1, 1], [128, 1, 1], 64256), ([4, 1, 1], [128, 1, 1], 64256)]" ]] || fail "launches: $(ev a.json 'd["launches"]')"
[[ $(ev a.json 'd["complete"]') == True ]] || fail "complete"
# The gate fails: a wrong trip count, and a model whose loop is one PC short.
python3 "$check" check "$fix/sass_loop.sass" sass_loop a.json 999 16 2 >bad.check && fail "a wrong trip count passed"
grep -q 'FAIL 28 of 32\|FAIL .* of 20 PCs' bad.check || grep -q '^FAIL' bad.check || fail "no FAIL line"
FAKE_SASS_MODEL=b0:d0:130:1000 run b --out b.json -- "$prog" "$cubin" sass_loop 2 4 128
python3 "$check" check "$fix/sass_loop.sass" sass_loop b.json 1000 16 2 >b.check && fail "a short loop passed"
grep -q '0x00e0 .*<-- differs' b.check || fail "the PC that differs not shown: $(cat b.check)"

# 1b. The H200's CUPTI (FAKE_SASS_READ_ONCE: once a kernel's records are read,
# its later launches add none): the second launch's empty read is said, the
# file incomplete, the counts the first launch's (not passed off as two).
FAKE_SASS_READ_ONCE=1 run r1 --out r1.json -- "$prog" "$cubin" sass_loop 2 4 128
[[ $rc == 0 ]] || { cat r1.err; fail "read-once exit $rc"; }
[[ $(ev r1.json 'd["complete"], [p["smsp__sass_inst_executed"] for p in d["kernels"][0]["pcs"] if p["offset"] == "0xb0"]') == "(False, [16000])" ]] ||
    fail "read-once counts: $(ev r1.json 'd["complete"], d["kernels"][0]["pcs"][11]')"
ev r1.json '"\n".join(d["problems"])' | grep -q "after its records were first read gave no SASS records.*ARGUS_SASS_FLUSH=sync" ||
    fail "read-once problem: $(ev r1.json 'd["problems"]')"

# 2. One metric; the log when asked; matching the module by name when the CRC differs.
ARGUS_SASS_LOG=1 FAKE_SASS_CRC_OFF=1 run c --out c.json --metrics smsp__sass_inst_executed -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 0 ]] || { cat c.err; fail "one metric: exit $rc"; }
[[ $(ev c.json 'd["metrics"]') == "['smsp__sass_inst_executed']" ]] || fail "metrics"
[[ $(ev c.json 'sorted(d["kernels"][0]["pcs"][11])') == "['offset', 'smsp__sass_inst_executed']" ]] || fail "one value per PC"
[[ $(ev c.json 'd["kernels"][0]["pcs"][11]["smsp__sass_inst_executed"]') == 1000 ]] || fail "0xb0 of 1 warp"
[[ $(ev c.json 'd["kernels"][0]["sha256"]') == $(sha256sum "$cubin" | cut -d' ' -f1) ]] || fail "sha256 by name"
grep -q '^argus-sass: launch 1 of sass_loop collected' c.err || { cat c.err; fail "log"; }

# 3. An unknown metric: nothing collected (exit 3), the chip's names listed.
run d --out d.json --metrics smsp__sass_inst_exec -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 3 ]] || fail "unknown metric: exit $rc"
grep -q 'the metric smsp__sass_inst_exec is not a SASS metric of chip GH100.*it has: smsp__sass_inst_executed, smsp__sass_thread_inst_executed' d.err || { cat d.err; fail "unknown metric why"; }
[[ $(ev d.json 'd["complete"], len(d["kernels"])') == "(False, 0)" ]] || fail "unknown metric file"

# 4. No privileges: ERR_NVGPUCTRPERM with the modprobe option and root.
FAKE_SASS_FAIL=cuptiSassMetricsSetConfig:35 run e --out e.json -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 3 ]] || fail "no privileges: exit $rc"
grep -q 'CUPTI_ERROR_INSUFFICIENT_PRIVILEGES.*ERR_NVGPUCTRPERM.*run as root.*NVreg_RestrictProfilingToAdminUsers=0' e.err || { cat e.err; fail "privileges why"; }
FAKE_SASS_FAIL=cuptiSubscribe:39 run e2 --out e2.json -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 3 ]] && grep -q 'another CUPTI tool is attached' e2.err || fail "another subscriber: $rc $(cat e2.err)"
FAKE_SASS_FAIL=cuptiSassMetricsEnable:27 run e3 --out e3.json -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 3 ]] && grep -q 'does not support SASS metrics.*compute capability 7.0.*CUDA 12.2.*R535' e3.err || fail "not supported: $(cat e3.err)"

# 5. A CUPTI without the SASS Metrics API, and none at all.
ARGUS_SASS_CUPTI=$old run f --out f.json -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 3 ]] || fail "old CUPTI: exit $rc"
grep -q 'has no SASS Metrics API (no cuptiSassMetricsGetProperties): it needs CUPTI from CUDA 12.2 or newer, with a driver of R535' f.err || { cat f.err; fail "old CUPTI why"; }
ARGUS_SASS_CUPTI=$work/none.so run g --out g.json -- "$prog" "$cubin" sass_loop 1 1 32
[[ $rc == 3 ]] && grep -q "ARGUS_SASS_CUPTI=$work/none.so cannot be loaded" g.err || fail "no CUPTI: $(cat g.err)"

# 6. A target that crashes after 2 launches: 139, the 2 launches kept and exact.
# (handle_segv=0: in the sanitizer build ASan would turn the SIGSEGV into exit 1.)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0 run h --out h.json -- "$prog" "$cubin" sass_loop 2 4 128 crash
[[ $rc == 139 ]] || fail "crash: exit $rc"
grep -q 'killed by signal 11 .* after 2 launches were collected' h.err || { cat h.err; fail "crash why"; }
[[ $(ev h.json 'd["complete"], d["kernels"][0]["launches"]') == "(False, 2)" ]] || fail "crash file"
python3 "$check" check "$fix/sass_loop.sass" sass_loop h.json 1000 16 2 >/dev/null || fail "crash counts"

# 7. --out in a folder that does not exist, a FIFO, a folder: refused before the program runs.
run i --out "$work/no/such/x.json" -- sh -c 'touch ran'
[[ $rc == 2 && ! -e ran ]] || fail "missing folder: exit $rc"
grep -q "the folder $work/no/such does not exist" i.err || { cat i.err; fail "missing folder why"; }
mkfifo fifo
set +e; timeout 20 "$sass" --out fifo -- sh -c 'touch ran' 2>j.err; rc=$?; set -e
[[ $rc == 2 && ! -e ran && -p fifo ]] || fail "FIFO: exit $rc"
grep -q 'is a FIFO, not a regular file' j.err || { cat j.err; fail "FIFO why"; }
# A symbolic link the target plants at --out is replaced, not written through.
run k --out k.json -- sh -c "ln -s $work/victim k.json; \"$prog\" \"$cubin\" sass_loop 1 1 32"
[[ $rc == 0 && ! -e victim && -f k.json && ! -L k.json ]] || fail "planted link: rc $rc"

# 8. The status passes through; no CUDA at all; another injection library; a second device.
run l --out l.json -- sh -c 'exit 7'
[[ $rc == 7 ]] || fail "status: $rc"
run m --out m.json -- "$prog" "$cubin" sass_loop 1 1 32 nocuda
[[ $rc == 3 ]] && grep -q 'never initialised CUDA' m.err || fail "no CUDA: $rc $(cat m.err)"
CUDA_INJECTION64_PATH=/x.so run n --out n.json -- sh -c 'touch ran'
[[ $rc == 2 && ! -e ran ]] && grep -q 'CUDA_INJECTION64_PATH is already set' n.err || fail "injection set"
run o --out o.json --device 0 -- "$prog" "$cubin" sass_loop 1 1 32 twodev
[[ $rc == 0 ]] && grep -q 'a context on device 1 was not collected' o.err || fail "second device: $(cat o.err)"
[[ $(ev o.json 'd["kernels"][0]["launches"]') == 1 ]] || fail "second device counted"
run p --out p.json --device x -- true
[[ $rc == 2 ]] || fail "--device x"
run q --out q.json --metrics a,,b -- true
[[ $rc == 2 ]] && grep -q 'an empty metric name' q.err || fail "metrics a,,b"
[[ $(ls /tmp | grep -c "^argus-sass\.") == 0 ]] || echo "note: argus-sass.* folders in /tmp (other runs?)"

# 9. argus exec with argus-sass as the sass_metrics collector.
mkdir -p bin
cat >bin/nvcc <<EOF2
#!/bin/sh
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$root/tests/argus/fixtures/discover/async_cpasync.ptx" "\$out"
EOF2
cat >bin/ptxas <<EOF2
#!/bin/sh
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$cubin" "\$out"
EOF2
chmod +x bin/*
printf '{"schema": "argus.exec.program", "version": 1, "source": "%s", "include": ["%s"],
 "sm": "90", "run": ["%s", "%s", "sass_loop", "3", "2", "64"], "device": "0", "timeout_s": 20}\n' \
  "$src/async_cpasync.cu" "$root/include" "$prog" "$cubin" >prog.json
ARGUS_NVCC=$work/bin/nvcc PATH=$work/bin:$PATH ARGUS_SASS=$sass \
    "$argus" exec run v0 sass_metrics prog.json x.json 2>x.err || { cat x.err; fail "argus exec"; }
[[ $(ev x.json 'd["status"]') == ok ]] || fail "exec status: $(cat x.json)"
[[ $(ev x.json 'd["metrics"]') == "['smsp__sass_inst_executed', 'smsp__sass_thread_inst_executed']" ]] || fail "exec metrics"
# 3 launches x 4 warps: 12 at the first PC, 12000 at each loop PC.
[[ $(ev x.json '[(p["pc"], p["values"]["smsp__sass_inst_executed"]) for p in d["pcs"] if p["pc"] in (0, 176, 224)]') == \
   "[(0, 12), (176, 12000), (224, 12000)]" ]] || fail "exec pcs: $(ev x.json 'd["pcs"][:12]')"
[[ $(ev x.json '[p["values"]["smsp__sass_thread_inst_executed"] for p in d["pcs"] if p["pc"] == 192]') == "[384000]" ]] || fail "exec thread"
python3 - "$root/profiler/argus/schema/argus.evidence.v1.json" x.json <<'PY' || fail "exec evidence against its schema"
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
PY
ARGUS_EXEC_METRICS=smsp__sass_inst_exec ARGUS_NVCC=$work/bin/nvcc PATH=$work/bin:$PATH ARGUS_SASS=$sass \
    "$argus" exec run v0 sass_metrics prog.json y.json 2>y.err && fail "exec with an unknown metric passed"
[[ $(ev y.json 'd["status"]') == failed ]] && grep -q 'not a SASS metric of chip GH100' y.json || fail "exec unknown metric: $(cat y.json)"
echo "argus_sass: ok"
