#!/usr/bin/env bash
# Task keys and metric names of `argus query --run` with `argus exec`
# (issue 13): a key names the program's content, never its path, and the
# query's metric names are part of the collection's configuration.
#   - a program description in a folder (source, header under its include
#     folder, host program): run once (done), again (reused);
#   - the source edited: the run is done again, not reused, and its
#     evidence is the new build's; the edit undone: reused again;
#   - a header under "include" edited: not reused;
#   - the same folder copied to another path: everything reused;
#   - --metrics dram__bytes_read.sum: the range profiler keeps only that
#     metric and the run is not reused; the same again: reused; another
#     name: done again; ARGUS_EXEC_METRICS overrides and says so;
#   - plan time: an unknown metric refused with the nearest names, a
#     metric whose signal is not asked refused, --metrics and the request's
#     field the same plan, the plan's COLLECT task carrying the names.
# Shown to fail on the old keys (the description's path in the key): the
# edited source was reused (check "edited source: not reused").
# usage: test_plan_keys.sh ARGUS SRC_DIR WORK
set -euo pipefail
argus=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work/bin" "$work/a/inc"
fix=$src/fixtures/discover
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
# A stand-in compiler that records what it compiled (the source's first
# line), so that the evidence can be traced to the build it came from.
cat >bin/nvcc <<EOF2
#!/bin/sh
for a; do case "\$a" in *.cu) src=\$a;; esac; done
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
head -n1 "\$src" >>"$work/compiled"
cp "$fix/async_cpasync.ptx" "\$out"
EOF2
cat >bin/ptxas <<EOF2
#!/bin/sh
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$fix/async_cpasync.cubin" "\$out"
EOF2
# mosaic-profile capture -o FILE -- CMD: two counters of one kernel.
cat >bin/fake-profile <<'EOF2'
#!/bin/sh
out=; while [ "$1" != -- ]; do [ "$1" = -o ] && out=$2; shift; done; shift
"$@" || exit 4
echo run >>"$(dirname "$0")/../profiled"
cat >"$out" <<'P'
{"schema": "mosaic-profile/1", "complete": true, "problems": [],
 "features": [{"key": "duration_ns", "metric": "gpu__time_duration.sum", "unit": "ns"},
              {"key": "dram_read_bytes", "metric": "dram__bytes_read.sum", "unit": "bytes"}],
 "kernels": [{"name": "work", "launches": 1,
              "metrics": {"duration_ns": 5000, "dram_read_bytes": 4096}}]}
P
EOF2
printf '#!/bin/sh\nexit 0\n' >a/prog.sh
chmod +x bin/* a/prog.sh
{ echo "// version 1"; cat "$src/async_cpasync.cu"; } >a/k.cu
echo "#define K_HEADER 1" >a/inc/k.h
printf '{"schema": "argus.exec.program", "version": 1, "source": "k.cu", "include": ["inc"],
 "sm": "90", "run": ["./prog.sh"], "timeout_s": 20}\n' >a/prog.json
export ARGUS_NVCC=$work/bin/nvcc PATH=$work/bin:$PATH MOSAIC_PROFILE_BIN=$work/bin/fake-profile
unset ARGUS_EXEC_METRICS
count() { grep -c -- "$2" "$work/$1" || true; }
state() { # the state of runtime task $2 in report $1
    awk -v id="$2" '$2 == id { print $1; exit }' "$work/$1"
}
query() { # DIR OUT [ARGS...]: the query on DIR's description, its report in OUT
    local d=$1 out=$2; shift 2
    set +e
    "$argus" query --program "$d/prog.json" --signal hw_metrics --assume-all --run \
        --executor "$argus exec" --ws "$work/ws" "$@" >"$work/$out" 2>"$work/$out.err"
    local rc=$?
    set -e
    [[ $rc == 0 ]] || { cat "$work/$out" "$work/$out.err"; fail "query on $d exited $rc"; }
}
ev() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# 1. Once, then again: done, then reused.
query a out1 --results res1
[[ $(state out1 run0) == done ]] || { cat out1; fail "first run: run0 not done"; }
query a out2
[[ $(state out2 run0) == reused ]] || { cat out2; fail "same content: run0 not reused"; }
[[ $(wc -l <profiled) == 1 ]] || fail "the program was profiled again"

# 2. The source edited: a new key, the run done again from the new build.
sed -i '1s/.*/\/\/ version 2/' a/k.cu
query a out3
[[ $(state out3 run0) == done ]] || { cat out3; fail "edited source: not reused (run0 $(state out3 run0))"; }
[[ $(tail -n1 compiled) == "// version 2" ]] || fail "the run did not build the edited source"
[[ $(wc -l <profiled) == 2 ]] || fail "the edited program was not profiled"
# The edit undone: the first evidence is the right one again.
sed -i '1s/.*/\/\/ version 1/' a/k.cu
query a out4
[[ $(state out4 run0) == reused ]] || { cat out4; fail "source restored: not reused"; }

# 3. A header under the description's include folder edited: not reused.
echo "#define K_HEADER 2" >a/inc/k.h
query a out5
[[ $(state out5 run0) == done ]] || { cat out5; fail "edited header: reused"; }
echo "#define K_HEADER 1" >a/inc/k.h

# 4. The same files at another path: everything reused.
cp -r a b
query b out6
[[ $(state out6 run0) == reused ]] || { cat out6; fail "same content at another path: not reused"; }
[[ $(count out6 '^done ') == 0 ]] || { cat out6; fail "a task ran again for a moved copy"; }
[[ $(wc -l <profiled) == 3 ]] || fail "the moved copy was profiled again"

# 5. Metric names: part of the collection's key, passed to the collector.
query a out7 --metrics dram__bytes_read.sum --results res7
[[ $(state out7 run0) == done ]] || { cat out7; fail "other metrics: evidence reused"; }
ev res7/hw_metrics.json 'd["complete"]' | grep -qx True || fail "metrics: incomplete"
python3 - "$work/res1/hw_metrics.json" "$work/res7/hw_metrics.json" <<'PY'
import json, sys
def names(path):
    r = json.load(open(path))["results"]
    return sorted(r["kernels"][0]["metrics"])
# Without names, the tool's defaults (both); with one, only that one.
assert names(sys.argv[1]) == ["dram_read_bytes", "duration_ns"], names(sys.argv[1])
assert names(sys.argv[2]) == ["dram_read_bytes"], names(sys.argv[2])
PY
query a out8 --metric dram__bytes_read.sum
[[ $(state out8 run0) == reused ]] || { cat out8; fail "the same metrics: not reused"; }
query a out9 --metrics duration_ns,dram_read_bytes
[[ $(state out9 run0) == done ]] || { cat out9; fail "other metrics again: reused"; }
# The override: the evidence's tool says where the names came from.
ws_tool=$(grep -rl 'metrics duration_ns (from ARGUS_EXEC_METRICS)' ws/objects 2>/dev/null | head -n1 || true)
[[ -z $ws_tool ]] || fail "override seen before it was used"
ARGUS_EXEC_METRICS=duration_ns query a out10 --metrics gpu__time_duration.sum
grep -rq 'metrics duration_ns (from ARGUS_EXEC_METRICS)' ws/objects || fail "the override not named"
grep -rq 'metrics duration_ns,dram_read_bytes (from task)' ws/objects || fail "the task's names not named"

# 6. Plan time: names checked, the request's field the same as the option.
set +e
"$argus" plan --program a/prog.json --signal hw_metrics --assume-all --metrics dram__bytes_red.sum \
    >p1 2>p1.err
rc=$?
set -e
[[ $rc == 1 ]] || fail "an unknown metric: exit $rc"
grep -q 'no metric "dram__bytes_red.sum": did you mean dram__bytes_read.sum' p1.err || { cat p1.err; fail "nearest name"; }
set +e
"$argus" plan --program a/prog.json --signal region_time --assume-all --metrics smsp__sass_inst_executed \
    >p2 2>p2.err
rc=$?
set -e
[[ $rc == 1 ]] && grep -q 'only the signal inst_executed_pc collects' p2.err || { cat p2.err; fail "metric without its signal"; }
"$argus" plan --program a/prog.json --signal hw_metrics,inst_executed_pc --assume-all \
    --metrics dram__bytes_read.sum,smsp__sass_inst_executed --format json >p3.json
printf '{"schema": "argus.query", "version": 1, "program": "a/prog.json",
 "signals": ["hw_metrics", "inst_executed_pc"],
 "metrics": ["dram__bytes_read.sum", "smsp__sass_inst_executed"]}\n' >req.json
"$argus" plan --json req.json --assume-all --format json >p4.json
cmp -s p3.json p4.json || fail "the request's metrics plan differently from --metrics"
python3 - p3.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
m = {t["backend"]: t.get("metrics") for t in p["tasks"] if t["type"] == "collect"}
assert m["range_profiler"] == ["dram__bytes_read.sum"], m
assert m["sass_metrics"] == ["smsp__sass_inst_executed"], m
assert m["sanitizer_patch"] is None, m
PY
# The plan with metrics against its schema, where jsonschema is.
python3 - "$src/../../profiler/argus/schema/argus.plan.v1.json" p3.json <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
PY
echo "argus_plan_keys: ok"
