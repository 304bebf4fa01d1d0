#!/usr/bin/env python3
"""Checks an argus-pcmap map (argus.pcmap v1) of the known-ratio kernel
g16_calls (tests/argus/gpu_truth_kernels.cu, gpu_truth.h) against what the
kernel's structure says, independently of Argus's code (region IDs are
recomputed here from record.h's definition: FNV-1a over the parent ID and
the name, folded to 28 bits):

- every PC of work() executed once per call splits exactly 3:1 between the
  callA side (callA, callA/work) and the callB side, L x 3 x 8 x 128 and
  L x 1 x 8 x 128 for L launches (a PC inside work's spin loop, which no
  patched instruction should be, is reported, not judged);
- at least one PC of work() lies under callA/work and callB/work (the region
  of the callee nests under its caller);
- the marker records seen are exactly 12 per warp and iteration;
- nothing was dropped and the map says it is complete.

  pcmap_check.py MAP.json LAUNCHES [TSV]      exit 0 all held, 1 a check failed
"""
import json
import sys

CTAS, THREADS, ITERS, CALL_A, CALL_B = 32, 128, 8, 3, 1
WARPS = CTAS * THREADS // 32


def region_id(name, parent):
    h = 2166136261
    for i in range(4):
        h ^= (parent >> (8 * i)) & 0xFF
        h = (h * 16777619) & 0xFFFFFFFF
    for c in name.encode():
        h ^= c
        h = (h * 16777619) & 0xFFFFFFFF
    v = (h ^ (h >> 28)) & 0x0FFFFFFF
    return v or 1


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    m = json.load(open(sys.argv[1]))
    launches = int(sys.argv[2])
    rows = []

    def check(what, got, want):
        ok = got == want
        rows.append((what, str(got), str(want), "pass" if ok else "FAIL"))
        return ok

    def info(what, got):
        rows.append((what, str(got), "-", "info"))

    ida, idb, idw = region_id("callA", 0), region_id("callB", 0), region_id("work", 0)
    if m.get("schema") != "argus.pcmap" or m.get("version") != 1:
        print("not an argus.pcmap v1 file", file=sys.stderr)
        return 1
    check("map complete", m["complete"], True)
    for p in m["problems"]:
        info("problem", p)
    ls = [l for l in m["launches"] if "g16_calls_on" in l["kernel"]]
    check("launches of g16_calls_on mapped", len(ls), launches)
    check("marker records seen", sum(l["markers"] for l in ls), launches * WARPS * ITERS * 12)
    check("executions dropped", sum(l["dropped"] + l["paths_dropped"] for l in ls), 0)
    regions = [[int(x, 16) for x in r["ids"]] for r in m["regions"]]
    side = []
    for ids in regions:
        side.append("A" if ids[:1] == [ida] else "B" if ids[:1] == [idb] else "-")
    # One PC may have an entry per (iteration, role) in force: summed here.
    merged = {}
    for p in m["pcs"]:
        if p["function"] and "4work" in p["function"]:
            q = merged.setdefault((p["offset"], p["kind"]), {"offset": p["offset"], "kind": p["kind"], "exec": []})
            q["exec"].extend(p["exec"])
    work_pcs = list(merged.values())
    check("PCs of work() mapped (> 0)", len(work_pcs) > 0, True)
    a_unit = launches * CALL_A * ITERS * WARPS
    b_unit = launches * CALL_B * ITERS * WARPS
    under_work = 0
    exact = 0
    for p in work_pcs:
        a = sum(c for r, c in p["exec"] if side[r] == "A")
        b = sum(c for r, c in p["exec"] if side[r] == "B")
        other = sum(c for r, c in p["exec"] if side[r] == "-")
        paths = {tuple(regions[r]) for r, _ in p["exec"]}
        if (ida, idw) in paths and (idb, idw) in paths:
            under_work += 1
        name = "work+%s %s" % (p["offset"], p["kind"])
        if b == b_unit:
            exact += 1
            check(name + " callA side", a, a_unit)
            check(name + " outside both callers", other, 0)
        else:
            info(name + " callA:callB (a loop PC?)", "%d:%d" % (a, b))
    check("work() PCs once per call, split exactly (> 0)", exact > 0, True)
    check("work() PCs under callA/work and callB/work (> 0)", under_work > 0, True)
    fails = sum(1 for r in rows if r[3] == "FAIL")
    lines = ["what\tgot\twant\tverdict"] + ["\t".join(r) for r in rows]
    if len(sys.argv) == 4:
        open(sys.argv[3], "w").write("\n".join(lines) + "\n")
    for r in rows:
        print("%-50s %-14s %-14s %s" % r)
    print("pcmap_check: %d checks, %d failed" % (sum(1 for r in rows if r[3] != "info"), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
