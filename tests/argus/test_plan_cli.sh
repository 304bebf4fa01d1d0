#!/usr/bin/env bash
# argus plan / argus query on the command line (docs/argus-plan.md): the
# text and JSON plans of a query from options, from a request file and from
# standard input, a CONTROL task expanded by --discovered, --strict on a
# partial plan, and bad input: a region or signal that does not exist (named,
# with the nearest names), a malformed request, a recipes folder with an
# unknown effect, each with its exit status and message.
# usage: test_plan_cli.sh ARGUS SRC_DIR WORK_DIR
set -euo pipefail
argus=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC CMD...: runs CMD, checks its status, keeps stdout and stderr
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
has() { grep -qF -- "$2" "$work/$1" || { cat "$work/$1" >&2; fail "$1 lacks: $2"; }; }

expect_rc 0 "$argus" registry "$src/kernel_known.cu" -o "$work/known.argus.json"
touch "$work/known"   # the program: its registry sits beside it
prog=(--program "$work/known")
all=(--assume-all --target-sm 90)

# Text plan: region timing and stall reasons, the split and its reason.
expect_rc 0 "$argus" plan "${prog[@]}" --region outer/load --signal region_time \
    --signal stall_reasons_pc --scope role=producer,iter=2:3 "${all[@]}"
has out "region outer/load (0x"
has out "scope: role producer iter 2..3"
has out "v1 known+markers_on"
has out "collect:pc_samples@v1 serialises_kernels, which changes the timing collect:region_trace@v1 measures"
has out "runs (3;"

# JSON plan, then the same query as a request file and on standard input:
# the three plans are the same document.
expect_rc 0 "$argus" plan "${prog[@]}" --region outer/load --signal region_time,stall_reasons_pc \
    --iter 2:3 --role producer "${all[@]}" --format json -o "$work/plan.json"
cat >"$work/req.json" <<JSON
{"schema": "argus.query", "version": 1, "program": "$work/known", "region": "outer/load",
 "scope": {"role": "producer", "iter": [2, 3]}, "signals": ["stall_reasons_pc", "region_time"]}
JSON
expect_rc 0 "$argus" plan --json "$work/req.json" "${all[@]}" --format json -o "$work/plan2.json"
cmp "$work/plan.json" "$work/plan2.json" || fail "the request file's plan differs"
expect_rc 0 "$argus" plan --json - "${all[@]}" --format json -o "$work/plan3.json" <"$work/req.json"
cmp "$work/plan.json" "$work/plan3.json" || fail "the stdin request's plan differs"
python3 - "$work/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["schema"] == "argus.plan" and p["version"] == 1
assert p["partial"] is False and p["answered"] == ["region_time", "stall_reasons_pc"]
types = [t["type"] for t in p["tasks"]]
assert types.count("transform") == 1 and types.count("synthesize") == 3, types
runs = {r["id"]: [p["tasks"][t]["name"] for t in r["tasks"]] for r in p["runs"]}
assert runs[0] == ["collect:region_trace@v1", "collect:host_ranges@v1"], runs
assert all(r["why"] for r in p["runs"])
for t in p["tasks"]:
    assert all(d < len(p["tasks"]) for d in t["deps"])
PY

# A bare --json (last, or before another option) asks for the JSON plan.
expect_rc 0 "$argus" plan --json "$work/req.json" "${all[@]}" --json -o "$work/plan5.json"
cmp "$work/plan.json" "$work/plan5.json" || fail "a bare --json differs from --format json"
expect_rc 0 "$argus" plan --json "$work/req.json" "${all[@]}" --json
cmp "$work/plan.json" "$work/out" || fail "a last --json differs from --format json"

# argus query prints the resolved request, which plans the same again.
expect_rc 0 "$argus" query --json "$work/req.json" "${all[@]}"
cp "$work/out" "$work/canon.json"
expect_rc 0 "$argus" plan --json "$work/canon.json" "${all[@]}" --format json -o "$work/plan4.json"
cmp "$work/plan.json" "$work/plan4.json" || fail "the canonical request plans differently"
expect_rc 1 "$argus" query --json "$work/req.json" "${all[@]}" --run
has err "--run: running a plan needs an executor"

# A CONTROL task expanded from discovered operations: 2 ops in the loop x 2
# iterations.
cat >"$work/ops.json" <<'JSON'
[{"id": "0x23ce102.0", "kind": "cp.async", "completion": "cp.async.wait_group", "in_loop": true},
 {"id": "0x23ce102.1", "kind": "tma", "completion": "mbarrier", "in_loop": true}]
JSON
expect_rc 0 "$argus" plan "${prog[@]}" --region outer --signal async_latency --iter 4:5 \
    "${all[@]}" --discovered "$work/ops.json"
has out "control:discover_async_ops@v1 (expanded)"
has out "v5 known+markers_on+probe(op=0x23ce102.1,iter=5)"
has out "synthesize:probe_latency(op=0x23ce102.0,iter=4)"
[[ $(grep -c 'first run of variant v[2-5] ' "$work/out") == 4 ]] || fail "4 probe runs"
echo '[{"id": "mainloop.0"}]' >"$work/badops.json"
expect_rc 1 "$argus" plan "${prog[@]}" --signal async_latency "${all[@]}" --discovered "$work/badops.json"
has err "expected \"id\" as discovery prints it"
# A kind discovery does not have: refused, the kinds named.
echo '[{"id": "0x23ce102.0", "kind": "cp.asink", "in_loop": true}]' >"$work/badkind.json"
expect_rc 1 "$argus" plan "${prog[@]}" --signal async_latency "${all[@]}" --discovered "$work/badkind.json"
has err "\"kind\" cp.async, tma or wgmma"

# Partial: hardware metrics without admin counters; --strict says so.
expect_rc 0 "$argus" plan "${prog[@]}" --signal hw_metrics,kernel_time "${all[@]}" \
    --deny admin_counters
has out "(PARTIAL plan)"
has out "hw_metrics, collection kernel_counters: needs admin counters: admin_counters was turned off"
expect_rc 3 "$argus" plan "${prog[@]}" --signal hw_metrics,kernel_time "${all[@]}" \
    --deny admin_counters --strict
expect_rc 1 "$argus" plan "${prog[@]}" --signal hw_metrics "${all[@]}" --deny admin_counters
has err "no signal of the query can be measured here: hw_metrics"

# Bad input.
expect_rc 1 "$argus" plan "${prog[@]}" --region outr --signal region_time "${all[@]}"
has err 'region "outr": no such region in the registry; did you mean outer?'
expect_rc 1 "$argus" plan "${prog[@]}" --signal regoin_time "${all[@]}"
has err 'no signal "regoin_time": did you mean region_time?'
expect_rc 1 "$argus" plan "${prog[@]}" --region outer --role consmer --signal region_time "${all[@]}"
has err 'did you mean consumer?'
printf '{"schema": "argus.query", "version": 1, "program": "p", "signals": ["region_time"],}' \
    >"$work/bad.json"
expect_rc 1 "$argus" plan --json "$work/bad.json" "${all[@]}"
has err "$work/bad.json: not valid JSON"
expect_rc 1 "$argus" plan --json - "${all[@]}" <<<'{"schema":"argus.query","version":1,"program":"p","sigals":["region_time"]}'
has err "<stdin>: sigals: unknown key; did you mean signals?"
mkdir -p "$work/recipes"
sed 's/"perturbs_timing"/"perturbs_timings"/' "$src/../../profiler/argus/recipes/async_latency.json" \
    >"$work/recipes/async_latency.json"
expect_rc 1 "$argus" plan "${prog[@]}" --signal async_latency "${all[@]}" --recipes "$work/recipes"
has err "$work/recipes/async_latency.json: recipe async_latency: collect[1].effects[0]: unknown effect \"perturbs_timings\"; did you mean perturbs_timing?"
expect_rc 1 "$argus" plan "${prog[@]}" --signal region_time "${all[@]}" \
    --recipes "$src/../../profiler/argus/recipes/async_latency.json"
has err "no recipe for signal region_time"
expect_rc 2 "$argus" plan --signal region_time "${all[@]}"
has err "the query needs --program P"
expect_rc 2 "$argus" plan "${prog[@]}" --signal region_time --allow pc_sampler
has err 'did you mean pc_sampling?'
expect_rc 1 "$argus" plan --program "$work/nothing" --region outer --signal region_time "${all[@]}"
has err "no registry for program $work/nothing"
# The documents against their JSON Schemas (profiler/argus/schema), where
# Python's jsonschema is installed: the plans, the canonical request, and
# every shipped recipe file.
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 - "$work" "$src/../../profiler/argus" <<'PY'
import glob, json, sys, jsonschema
work, argus = sys.argv[1], sys.argv[2]
load = lambda p: json.load(open(p))
schema = lambda n: load(f"{argus}/schema/{n}")
for doc in ("plan.json", "plan4.json"):
    jsonschema.validate(load(f"{work}/{doc}"), schema("argus.plan.v1.json"))
for doc in ("req.json", "canon.json"):
    jsonschema.validate(load(f"{work}/{doc}"), schema("argus.query.v1.json"))
files = sorted(glob.glob(f"{argus}/recipes/*.json"))
assert len(files) == 6, files
for f in files:
    jsonschema.validate(load(f), schema("argus.recipes.v1.json"))
# The schemas refuse what the readers refuse.
bad = load(f"{work}/req.json"); bad["sigals"] = bad.pop("signals")
try:
    jsonschema.validate(bad, schema("argus.query.v1.json")); raise SystemExit("sigals passed")
except jsonschema.ValidationError:
    pass
bad = load(f"{work}/recipes/async_latency.json")
try:
    jsonschema.validate(bad, schema("argus.recipes.v1.json")); raise SystemExit("effect passed")
except jsonschema.ValidationError:
    pass
PY
else
    echo "argus_plan_cli: Python jsonschema not installed; schema checks skipped"
fi
echo "argus_plan_cli: ok"
