#!/usr/bin/env bash
# The two region buffers recorded on the H200 (scripts/gpu/argus_check.sh,
# docs/results/2026-12-01-argus/README.md), decoded through the argus CLI
# with the registry of tests/argus/kernel_known.cu: the counts that README
# states, and the JSON report and trace against their schemas. Unlike
# argus_cli, whose buffers come from the device model, these bytes were
# written by the real markers, so a decoder change that only the model's
# writer agreed with fails here.
# With NVCC given, the registry also comes from the binary: kernel_known.cu
# compiled with the header `argus registry --embed` writes, as a cubin and
# as a host object (which holds it twice), decodes the same buffer to the
# same regions.
# usage: test_fixtures.sh ARGUS SRC_DIR WORK_DIR [NVCC]
set -euo pipefail
argus=$1 src=$2 work=$3 nvcc=${4:-}
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
known=$src/fixtures/known.raw wrap=$src/fixtures/wrap.raw
[ -s "$known" ] && [ -s "$wrap" ] || fail "fixtures missing under $src/fixtures"

"$argus" registry "$src/kernel_known.cu" -o "$work/reg.json" >/dev/null
"$argus" report "$known" --registry "$work/reg.json" --kernel argus_known --strict \
    --json "$work/known.json" >"$work/known.txt" || fail "known.raw: report failed or had diagnostics"
"$argus" report "$known" --registry "$work/reg.json" --role producer --json "$work/producer.json" \
    >/dev/null || fail "known.raw: producer-role report failed"
"$argus" trace "$known" --registry "$work/reg.json" -o "$work/known.trace.json" ||
    fail "known.raw: trace failed"
# The wrapped buffer has diagnostics by design: --strict must say so (3).
rc=0
"$argus" report "$wrap" --registry "$work/reg.json" --strict --json "$work/wrap.json" \
    >"$work/wrap.txt" || rc=$?
[ "$rc" = 3 ] || fail "wrap.raw: --strict exited $rc, not 3 (a wrapped ring is a diagnostic)"
grep -q '17952 records lost to ring wraps' "$work/wrap.txt" || fail "wrap warning: $(cat "$work/wrap.txt")"
"$argus" trace "$wrap" --registry "$work/reg.json" -o "$work/wrap.trace.json" || fail "wrap.raw: trace"

python3 - "$work" "$src/../../profiler/argus/schema" <<'PY'
import json, sys
work, schemas = sys.argv[1], sys.argv[2]
k = json.load(open(f"{work}/known.json"))
L = k["launch"]
assert (L["warps"]["value"], L["warps_ran"]["value"]) == (1056, 1056), L
assert L["records_lost"]["value"] == 0 and k["diagnostics"] == [], k["diagnostics"][:3]
counts = {r["path"]: (r["count"]["value"], r["partial"]["value"]) for r in k["regions"]}
want = {"outer": (1056, 0), "outer/load": (4224, 0), "outer/compute": (4224, 0), "tail": (1056, 0)}
assert counts == want, counts
assert k["clock"]["method"] == "globaltimer_anchors", k["clock"]
# The README's 1.944 GHz, from the anchors of 1056 warps.
assert abs(k["clock"]["sm_clock"]["value"] - 1.944) < 0.0005, k["clock"]
# Times come from the integer clocks: a region's total ns is its cycles at
# the SM clock, to rounding. (Times taken as differences of absolute
# globaltimer doubles step by 256 ns at 1.8e18 ns and failed this by 4%.)
ghz = k["clock"]["sm_clock"]["value"]
for r in k["regions"]:
    want = r["total_cycles"]["value"] / ghz
    got = r["time"]["total"]["value"]
    assert abs(got - want) <= 1e-6 * want + 1e-3, (r["path"], got, want)
    assert abs(r["time"]["mean"]["value"] * r["count"]["value"] - got) <= 1e-6 * got + 1e-3
p = json.load(open(f"{work}/producer.json"))
prod = sum(r["count"]["value"] for r in p["regions"])
assert prod == 2640, prod
w = json.load(open(f"{work}/wrap.json"))
assert w["launch"]["records_lost"]["value"] == 17952, w["launch"]
assert w["launch"]["warps_ran"]["value"] == 1056
lost = sum(d["count"] for d in w["diagnostics"] if d["what"].startswith("the warp's ring wrapped"))
assert lost == 17952 or w["diagnostics_dropped"] > 0, lost
for name in ("known.trace.json", "wrap.trace.json"):
    t = json.load(open(f"{work}/{name}"))
    x = [e for e in t["traceEvents"] if e["ph"] == "X"]
    assert x and all(e["dur"] >= 0 and e["ts"] >= 0 for e in x), name
    # Every warp track nests: an event starts after the previous one on its
    # track ended, or lies inside it.
    tracks = {}
    for e in x:
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for key, ev in tracks.items():
        ev.sort(key=lambda a: (a[0], -a[1]))
        stack = []
        for b, e in ev:
            while stack and stack[-1] <= b + 1e-9:
                stack.pop()
            assert not stack or e <= stack[-1] + 1e-9, (name, key, b, e, stack[-1])
            stack.append(e)
try:
    import jsonschema
except ImportError:
    print("argus fixtures: python3 jsonschema not installed; schemas not checked")
    sys.exit(0)
for schema, doc in [("argus.report.v1.json", "known.json"), ("argus.report.v1.json", "wrap.json"),
                    ("argus.report.v1.json", "producer.json"),
                    ("trace_event.json", "known.trace.json"), ("trace_event.json", "wrap.trace.json")]:
    jsonschema.validate(json.load(open(f"{work}/{doc}")), json.load(open(f"{schemas}/{schema}")))
print("argus fixtures: reports and traces valid against their schemas")
PY
if [ -n "$nvcc" ]; then
    "$argus" registry "$src/kernel_known.cu" -o "$work/reg2.json" --embed "$work/reg.cuh" >/dev/null
    inc=$src/../../include
    "$nvcc" -arch=sm_90 -cubin -DARGUS_ENABLE -I"$inc" -include "$work/reg.cuh" \
        "$src/kernel_known.cu" -o "$work/k.cubin"
    "$nvcc" -arch=sm_90 -c -DARGUS_ENABLE -I"$inc" -include "$work/reg.cuh" \
        "$src/kernel_known.cu" -o "$work/k.o"
    "$argus" report "$known" --registry "$work/reg.json" >"$work/from_json.txt"
    for bin in k.cubin k.o; do
        "$argus" report "$known" --registry "$work/$bin" >"$work/from_$bin.txt" ||
            fail "registry from $bin"
        cmp -s "$work/from_json.txt" "$work/from_$bin.txt" ||
            fail "the registry embedded in $bin gives another report"
    done
    grep -Eq '^outer/load +4224 +0 ' "$work/from_k.cubin.txt" || fail "embedded registry names"
    # A binary without the registry is refused with what to do.
    "$nvcc" -arch=sm_90 -cubin -DARGUS_ENABLE -I"$inc" "$src/kernel_known.cu" -o "$work/plain.cubin"
    rc=0; "$argus" report "$known" --registry "$work/plain.cubin" 2>"$work/err" >/dev/null || rc=$?
    [ "$rc" = 1 ] || fail "a cubin without a registry: exit $rc, not 1"
    grep -q 'argus registry --embed' "$work/err" || fail "no-registry message: $(cat "$work/err")"
    echo "argus fixtures: the registry embedded in a cubin and a host object names the regions"
fi
echo "argus fixtures: known.raw and wrap.raw decode to the counts recorded on the H200"
