#!/usr/bin/env bash
# The argus CLI on buffers from the device model: registry, report (text and
# JSON), scopes, trace, and bad input with its exit status and message.
# usage: test_cli.sh ARGUS GEN_RAW SRC_DIR WORK_DIR
set -euo pipefail
argus=$1 gen=$2 src=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC CMD...: runs CMD, checks its status, keeps stderr
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}

"$gen" "$work/k.raw"
"$gen" "$work/wrap.raw" 8
expect_rc 0 "$argus" registry "$src/kernel_known.cu" -o "$work/reg.json"
grep -q '6 regions and roles' "$work/out" || fail "registry count: $(cat "$work/out")"

expect_rc 0 "$argus" report "$work/k.raw" --registry "$work/reg.json" --kernel argus_known \
    --json "$work/report.json" --clock 1.98
out=$work/out
# region, count, partial: 4 warps, 4 iterations.
grep -Eq '^outer +4 +0 ' "$out" || fail "outer row: $(cat "$out")"
grep -Eq '^outer/load +16 +0 ' "$out" || fail "load row"
grep -Eq '^outer/compute +16 +0 ' "$out" || fail "compute row"
grep -Eq '^tail +4 +0 ' "$out" || fail "tail row"
# compute: 1000 cycles at 1.98 GHz = 0.505 us each, p50 = p99.
grep -Eq '^outer/compute +16 +0 +8\.081 +0\.505 +0\.505 +0\.505 ' "$out" || fail "compute times: $(grep compute "$out")"
grep -q 'globaltimer, observed' "$out" || fail "span line"
python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "argus.report" and r["version"] == 1
counts = {x["path"]: x["count"]["value"] for x in r["regions"]}
assert counts == {"outer": 4, "outer/load": 16, "outer/compute": 16, "tail": 4}, counts
assert r["clock"]["method"] == "given" and r["clock"]["sm_clock"]["mark"] == "observed"
assert r["diagnostics"] == []
PY

# Scopes: iterations 1..2 of the producer warps (warp 0 of each CTA).
expect_rc 0 "$argus" report "$work/k.raw" --registry "$work/reg.json" --iter 1:2 --role producer
grep -Eq '^outer/load +4 +0 ' "$work/out" || fail "scoped load: $(cat "$work/out")"
grep -Eq '^outer +' "$work/out" && fail "outer began before iteration 0: out of an iteration scope"
expect_rc 0 "$argus" report "$work/k.raw" --cta 1 --warp 1
grep -Eq ' +4 +0 ' "$work/out" || fail "cta/warp scope"

# A region and what lies below it; a region that does not exist.
expect_rc 0 "$argus" report "$work/k.raw" --registry "$work/reg.json" --region outer
grep -Eq '^outer/load +16 ' "$work/out" || fail "region scope keeps outer/load"
grep -Eq '^tail ' "$work/out" && fail "region scope keeps tail"
expect_rc 1 "$argus" report "$work/k.raw" --registry "$work/reg.json" --region gemm
grep -q 'no region of that name' "$work/err" || fail "unknown region message: $(cat "$work/err")"
grep -q ' outer load compute tail' "$work/err" || fail "unknown region lists the regions"

# Trace.
expect_rc 0 "$argus" trace "$work/k.raw" --registry "$work/reg.json" -o "$work/trace.json"
python3 - "$work/trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
x = [e for e in t["traceEvents"] if e["ph"] == "X"]
assert len(x) == 4 * (1 + 8 + 1), len(x)
assert {e["pid"] for e in x} == {10, 11}
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in x)
PY

# A wrapped buffer: a warning, partial regions, --strict says so.
expect_rc 3 "$argus" report "$work/wrap.raw" --registry "$work/reg.json" --strict
grep -q 'records lost to ring wraps' "$work/out" || fail "wrap warning"
grep -q "diagnostic: the warp's ring wrapped" "$work/out" || fail "wrap diagnostic"

# Bad input.
printf 'not a buffer at all, but long enough to hold a header.............' >"$work/bad.raw"
expect_rc 1 "$argus" report "$work/bad.raw"
grep -q 'magic' "$work/err" || fail "bad magic message: $(cat "$work/err")"
head -c 1000 "$work/k.raw" >"$work/short.raw"
expect_rc 1 "$argus" report "$work/short.raw"
grep -q 'cut short' "$work/err" || fail "truncated message"
expect_rc 1 "$argus" report "$work/nosuch.raw"
expect_rc 1 "$argus" report "$work/k.raw" --registry "$work/reg.json" --role nobody
grep -q 'no such role' "$work/err" || fail "unknown role message"
expect_rc 1 "$argus" report "$work/k.raw" --registry "$work/k.raw"
expect_rc 2 "$argus" report "$work/k.raw" --iter 3:1
expect_rc 2 "$argus" report
expect_rc 2 "$argus" frobnicate
# A FIFO named as the buffer or the registry is refused at once, not read
# (it would block the CLI forever with no writer).
mkfifo "$work/fifo"
rc=0; timeout 10 "$argus" report "$work/fifo" 2>"$work/err" || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a FIFO as the raw buffer: rc $rc"
grep -q 'not a regular file' "$work/err" || fail "FIFO message: $(cat "$work/err")"
rc=0; timeout 10 "$argus" report "$work/k.raw" --registry "$work/fifo" 2>"$work/err" || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a FIFO as the registry: rc $rc"
grep -q 'not a regular file' "$work/err" || fail "FIFO registry message: $(cat "$work/err")"
rm -f "$work/fifo"
# The JSON files against their schemas (profiler/argus/schema), where the
# Python jsonschema package is installed.
schemas=$src/../../profiler/argus/schema
if python3 -c 'import jsonschema' 2>/dev/null; then
    expect_rc 0 "$argus" report "$work/wrap.raw" --registry "$work/reg.json" --json "$work/wrap.json"
    python3 - "$schemas" "$work" <<'PY'
import json, sys, jsonschema
schemas, work = sys.argv[1], sys.argv[2]
for schema, doc in [("argus.report.v1.json", "report.json"), ("argus.report.v1.json", "wrap.json"),
                    ("argus.registry.v1.json", "reg.json"), ("trace_event.json", "trace.json")]:
    jsonschema.validate(json.load(open(f"{work}/{doc}")), json.load(open(f"{schemas}/{schema}")))
# A report that breaks the schema is caught (the check can fail).
bad = json.load(open(f"{work}/report.json"))
bad["regions"][0]["count"]["mark"] = "guessed"
try:
    jsonschema.validate(bad, json.load(open(f"{schemas}/argus.report.v1.json")))
    sys.exit("a wrong mark passed the schema")
except jsonschema.ValidationError:
    pass
PY
    echo "argus CLI: report, registry and trace valid against their schemas"
else
    echo "argus CLI: python3 jsonschema not installed; schemas not checked"
fi
echo "argus CLI: all checks passed"
