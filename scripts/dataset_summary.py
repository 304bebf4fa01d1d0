#!/usr/bin/env python3
"""Summary of a committed co-run dataset (profiler/data/<gpu>/): what it
holds, how co-runs slow kernels down, run-to-run spread, whether the
in-process numbers carry over to two processes under MPS, what the placement
probes show, and how the CUPTI profiles compare with ncu.

    scripts/dataset_summary.py [profiler/data/h200] [--check]

--check exits non-zero when the dataset misses what issue 3 promises (at
least 5000 co-run measurements over both modes and both orders, a profile of
every zoo variant, a complete ResNet-50 profile). Standard library only.
"""
import json
import os
import re
import statistics as st
import sys
from collections import Counter, defaultdict


def jsonl(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def pct(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    k = min(len(v) - 1, max(0, int(round(q / 100 * (len(v) - 1)))))
    return v[k]


def fmt(x, d=3):
    return "-" if x != x else f"{x:.{d}f}"


def corun_section(ds, out):
    rows = [r for r in jsonl(f"{ds}/corun.jsonl") if r.get("record") == "corun" and r.get("ok")]
    out.append("## Co-run measurements\n")
    out.append(f"{len(rows)} measurements, each the median of its repeats (gated simultaneous launch, CUDA events).\n")
    out.append("| mode | SMs a/b | order | measurements | pairs | slowdown p50 | p90 | p99 |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    groups = defaultdict(list)
    for r in rows:
        groups[(r["mode"], r["sms_a"], r["sms_b"], r["order"])].append(r)
    for key in sorted(groups):
        g = groups[key]
        sl = [r["slowdown_a"] for r in g] + [r["slowdown_b"] for r in g]
        pairs = {(r["a"], r["b"]) for r in g}
        out.append(f"| {key[0]} | {key[1]}/{key[2]} | {key[3]} | {len(g)} | {len(pairs)} | "
                   f"{fmt(pct(sl, 50))} | {fmt(pct(sl, 90))} | {fmt(pct(sl, 99))} |")
    out.append("")
    return rows


def spread_section(ds, rows, out):
    main = {(r["a"], r["b"]): r for r in rows if r["mode"] == "shared" and r["order"] == "ab"}
    diffs, idiffs = [], []
    for r in jsonl(f"{ds}/corun_spread_repeat.jsonl"):
        m = main.get((r["a"], r["b"]))
        if not m:
            continue
        for side in "ab":
            diffs.append(abs(r[f"corun_{side}_us"] - m[f"corun_{side}_us"]) / m[f"corun_{side}_us"])
            idiffs.append(abs(r[f"iso_{side}_us"] - m[f"iso_{side}_us"]) / m[f"iso_{side}_us"])
    out.append("## Run-to-run spread\n")
    out.append(f"{len(diffs) // 2} shared-mode pairs (order ab) measured twice in separate runs of "
               "`mosaic-zoo corun`; relative difference between the two runs:\n")
    out.append("| quantity | p50 | p90 | max |")
    out.append("| --- | --- | --- | --- |")
    out.append(f"| co-run duration | {fmt(pct(diffs, 50))} | {fmt(pct(diffs, 90))} | {fmt(max(diffs) if diffs else float('nan'))} |")
    out.append(f"| isolated duration (graph replay) | {fmt(pct(idiffs, 50))} | {fmt(pct(idiffs, 90))} | {fmt(max(idiffs) if idiffs else float('nan'))} |")
    out.append("")
    return len(diffs) // 2


def mps_section(ds, out):
    recs = list(jsonl(f"{ds}/mps.jsonl"))
    alone = {r["variant"]: r["median_us"] for r in recs
             if r.get("record") == "mps_corun" and r["file"].startswith("mps_alone_")}
    inproc = defaultdict(list)
    for r in recs:
        if r.get("record") == "corun" and r.get("ok"):
            inproc[(r["a"], r["b"])].append(r)
    out.append("## Two processes under MPS against one process\n")
    out.append("Each variant alone in its own process under MPS, then the two processes launching together "
               "(CLOCK_REALTIME-aligned, 9 repeats, median); against the same pair co-run inside one process "
               "(both launch orders, median of 9).\n")
    out.append("| A | B | MPS slowdown A | in-process A | MPS slowdown B | in-process B |")
    out.append("| --- | --- | --- | --- | --- | --- |")
    for r in recs:
        if r.get("record") != "mps_corun" or not r["file"].endswith(".a"):
            continue
        m = re.match(r"mps_pair_(.+)__(.+)\.a$", r["file"])
        a, b = m.group(1), m.group(2)
        rb = next((x for x in recs if x.get("file") == r["file"][:-2] + ".b" and x.get("record") == "mps_corun"), None)
        ip = inproc.get((a, b), [])
        ipa = st.median(x["slowdown_a"] for x in ip) if ip else float("nan")
        ipb = st.median(x["slowdown_b"] for x in ip) if ip else float("nan")
        sa = r["median_us"] / alone[a] if a in alone else float("nan")
        sb = rb["median_us"] / alone[b] if rb and b in alone else float("nan")
        out.append(f"| {a} | {b} | {fmt(sa)} | {fmt(ipa)} | {fmt(sb)} | {fmt(ipb)} |")
    out.append("")


def placement_section(ds, out):
    summ = [r for r in jsonl(f"{ds}/placement.jsonl") if r.get("record") == "placement_summary"]
    out.append("## Placement probes\n")
    out.append("| experiment | question | k1 grid x threads, smem, carveout | k1 SMs used, max blocks/SM | "
               "k2 grid x threads, smem, carveout | k2 SMs used | SMs with both at once | k2 first start - k1 last end (us) |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in summ:
        k2 = r.get("k2_grid")
        out.append("| {e} | {q} | {g}x{t}, {s} B, {c} | {u}, {m} | {k2} | {u2} | {both} | {gap} |".format(
            e=r["experiment"], q=r.get("question", ""), g=r["k1_grid"], t=r["k1_threads"], s=r["k1_smem_bytes"],
            c=r["k1_carveout"], u=r["k1_sms_used"], m=r["k1_max_blocks_per_sm"],
            k2=(f"{k2}x{r['k2_threads']}, {r['k2_smem_bytes']} B, {r['k2_carveout']}" if k2 else "-"),
            u2=r.get("k2_sms_used", "-"), both=r.get("sms_both_concurrent", "-"),
            gap=(fmt(r["k2_first_start_minus_k1_last_end_ns"] / 1000, 1) if k2 else "-")))
    out.append("")


def profile_section(ds, out):
    out.append("## Kernel profiles\n")
    res = {}
    for name in ("zoo.profile.json", "resnet50_b8.profile.json"):
        p = json.load(open(f"{ds}/{name}"))
        ks = p.get("kernels", [])
        nmiss = sum(1 for k in ks if k.get("missing"))
        res[name] = (p.get("complete"), len(ks))
        out.append(f"- `{name}`: {len(ks)} distinct kernels (name, grid, block, dynamic smem), "
                   f"complete={p.get('complete')}, {len(p.get('problems', []))} problems, "
                   f"{nmiss} kernels with missing features; method {p.get('method')}.")
    once = [r for r in jsonl(f"{ds}/once.jsonl") if r.get("record") == "once"]
    out.append(f"- `mosaic-zoo once` launched {sum(r['ok'] for r in once)} of {len(once)} variants under the capture.")
    cmp_path = f"{ds}/zoo_subset.compare.txt"
    if os.path.exists(cmp_path):
        rel = [float(m.group(1)) for m in re.finditer(r"rel=([0-9.]+)", open(cmp_path).read())]
        if rel:
            within = sum(1 for x in rel if x <= 0.05) / len(rel)
            out.append(f"- CUPTI capture against `ncu --csv` on the same kernels: {len(rel)} feature values compared, "
                       f"{within:.0%} within 5% (details: `zoo_subset.compare.txt`).")
    out.append("")
    return res, once


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    check = "--check" in sys.argv
    ds = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "profiler", "data", "h200")
    out = ["# Dataset summary: " + os.path.normpath(ds) + "\n"]
    env = open(f"{ds}/env.txt").read().strip() if os.path.exists(f"{ds}/env.txt") else ""
    if env:
        out.append("Recorded on:\n\n```\n" + env + "\n```\n")
    rows = corun_section(ds, out)
    n_spread = spread_section(ds, rows, out)
    mps_section(ds, out)
    placement_section(ds, out)
    prof, once = profile_section(ds, out)
    print("\n".join(out))
    if check:
        problems = []
        modes = Counter((r["mode"], r["order"]) for r in rows)
        if len(rows) < 5000:
            problems.append(f"only {len(rows)} co-run measurements (need 5000)")
        for mode in ("shared", "partitioned"):
            for order in ("ab", "ba"):
                if modes[(mode, order)] == 0:
                    problems.append(f"no {mode} measurements in order {order}")
        variants = {r["name"] for r in jsonl(f"{ds}/variants.jsonl") if r.get("record") == "variant"}
        if {r["variant"] for r in once if r["ok"]} != variants:
            problems.append("not every zoo variant was launched under the profile capture")
        if not all(c for c, n in prof.values()) or any(n == 0 for c, n in prof.values()):
            problems.append("a profile is incomplete or empty")
        if n_spread < 100:
            problems.append(f"spread subset has {n_spread} pairs (need 100)")
        if problems:
            print("DATASET CHECK FAILED: " + "; ".join(problems), file=sys.stderr)
            return 1
        print("dataset check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
