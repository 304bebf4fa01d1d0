#!/usr/bin/env python3
"""Test of argus16_multirun.py on written evidence, no GPU (ctest argus_multirun_summary).

    argus16_multirun_test.py ARGUS GEN_RAW SRC_DIR WORK

The region buffer is the device model's (tests/argus/gen_raw.c, the
structure of kernel_known.cu: 4 warps, 4 iterations, each "outer/load" 400
cycles in warp 0 and 500 in warp 1 of each CTA), so outer/load's mean at
any iteration is (2 x 400 + 2 x 500) / 4 = 450 cycles. Probe runs given the
same buffer must show 0 added cycles, the floor (iteration i+1 - i) 0, no
floor past the last iteration; an unavailable probe run keeps its reason
and no number; a dry run says nothing was measured, a clean run does not.
"""
import base64
import json
import os
import shutil
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    argus, genraw, src, work = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    res, wd = os.path.join(work, "res"), os.path.join(work, "work")
    objs = os.path.join(wd, "ws8", "objects", "ab")
    os.makedirs(res)
    os.makedirs(objs)
    subprocess.run([argus, "registry", os.path.join(src, "kernel_known.cu"), "-o",
                    os.path.join(wd, "reg.json")], check=True, capture_output=True)
    raw = os.path.join(wd, "model.raw")
    subprocess.run([genraw, raw], check=True)
    b64 = base64.b64encode(open(raw, "rb").read()).decode()

    def ev(name, variant, status="ok", why=None):
        e = {"schema": "argus.evidence", "version": 1, "backend": "region_runtime",
             "variant": variant, "status": status}
        if status == "ok":
            e["launches"] = [{"kernel": "known", "raw_base64": b64}]
        else:
            e["why"] = why
        json.dump(e, open(os.path.join(objs, name), "w"))

    ev("01", "known+markers_on")
    ev("02", "known+markers_on+probe(op=0x23ce102.0,iter=1)")
    ev("03", "known+markers_on+probe(op=0x23ce102.0,iter=3)")
    ev("04", "known+markers_on+probe(op=0x23ce102.1,iter=1)", "unavailable",
       "no armed launch of the variant was collected")
    open(os.path.join(objs, "05"), "wb").write(b"\x00not json")
    with open(os.path.join(res, "batches.tsv"), "w") as t:
        t.write("probes\twall_s\ts_per_probe\tws_bytes\tbytes_per_probe\tws_files\t"
                "transforms_done\truns_done\truns_failed\texit\n")
        t.write("1\t2.0\t2.0\t1000000\t1000000\t12\t2\t2\t0\t0\n")
        t.write("8\t9.0\t1.125\t4500000\t562500\t47\t9\t9\t0\t0\n")
    open(os.path.join(res, "env.txt"), "w").write("date: test\n")
    py = os.path.join(here, "argus16_multirun.py")
    fails = []

    def check(ok, what):
        if not ok:
            fails.append(what)

    for mode in ("run", "dry"):
        subprocess.run([sys.executable, py, res, wd, argus, mode, "outer/load", "load"],
                       check=True)
        r = json.load(open(os.path.join(res, "results.json")))
        s = open(os.path.join(res, "summary.txt")).read()
        rows = {(p["op"], p["iter"]): p for p in r["probes"]}
        check(sorted(rows) == [("0x23ce102.0", 1), ("0x23ce102.0", 3), ("0x23ce102.1", 1)],
              f"three probes found: {sorted(rows)}")
        a = rows[("0x23ce102.0", 1)]
        check(a.get("base_cycles") == 450 and a.get("probe_cycles") == 450, f"450 cycles: {a}")
        check(a.get("added_cycles") == 0 and a.get("floor_cycles") == 0, f"added 0, floor 0: {a}")
        check(a.get("marks", {}).get("added_cycles") == "derived", "added is derived")
        c = rows[("0x23ce102.0", 3)]
        check(c.get("added_cycles") == 0 and c.get("floor_cycles") is None,
              f"no floor past the last iteration: {c}")
        u = rows[("0x23ce102.1", 1)]
        check(u["status"] == "unavailable" and "added_cycles" not in u and "no armed" in u["why"],
              f"the unavailable probe keeps its reason and no number: {u}")
        check(abs(r["marginal"]["s_per_probe"] - 1.0) < 1e-9, f"marginal 7 s / 7: {r['marginal']}")
        check(r["marginal"]["bytes_per_probe"] == 500000, f"marginal bytes: {r['marginal']}")
        check(("NOTHING MEASURED" in s) == (mode == "dry"), f"{mode}: the summary says so: {s}")
        check(s.rstrip().splitlines()[-1].split()[0] == "8", "the table is last")
    if fails:
        print("FAIL:\n  " + "\n  ".join(fails))
        return 1
    print("argus16_multirun summary: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
