#!/usr/bin/env python3
"""Compare Mosaic shim launch counts with CUPTI kernel records.

    compare_counts.py OUTDIR

Reads what scripts/gpu/issue2_launch_coverage.sh left in OUTDIR:

  runs.tsv                          name, variant, rc, seconds (one run a line)
  wl/<name>.<variant>.stdout        workload output ("MOSAIC_EXPECT {json}",
                                    "RESULT: OK")
  wl/<name>.cupti[.<pid>].json      cupti_count output, run with the shim
  wl/<name>.base.cupti[.<pid>].json cupti_count output, run without the shim
  wl/<name>.mosaic[.<pid>].json     shim stats (observe)
  wl/<name>.passthrough.mosaic[.<pid>].json, wl/<name>.debug.mosaic...
  bench/bench.tsv                   round, variant, rc
  bench/r<k>.<variant>.json         launch_bench output (one JSON line)
  bench/r<k>.<variant>.mosaic[.<pid>].json

Several files for one run (one per process, "%p" in the path) are summed.
Writes OUTDIR/summary.md and OUTDIR/results.json, prints the short table
last. Exit status: 0 when every workload matched, 1 otherwise.
Python 3 standard library only.
"""
import glob
import json
import os
import re
import statistics
import sys

TOP_N = 5
BENCH_VARIANTS = ("none", "observe", "passthrough")
SHIM_NUMERIC = ("launches_total", "captured_launches", "graph_launches",
                "graph_kernel_launches", "launch_errors", "errors",
                "unmatched_lookups")
CUPTI_NUMERIC = ("kernels_total", "graph_kernels", "dropped", "incomplete",
                 "no_timestamp", "device_launched", "cooperative", "cluster",
                 "other_records", "errors")


def load_json(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        return None, f"{os.path.basename(path)}: {e}"


def files_for(d, stem):
    """<stem>.json and <stem>.<anything>.json (per-pid files), sorted."""
    out = []
    exact = os.path.join(d, stem + ".json")
    if os.path.exists(exact):
        out.append(exact)
    out.extend(sorted(glob.glob(os.path.join(glob.escape(d),
                                             glob.escape(stem) + ".*.json"))))
    return out


def add_map(dst, src):
    if isinstance(src, dict):
        for k, v in src.items():
            if isinstance(v, (int, float)):
                dst[k] = dst.get(k, 0) + v


def merge(paths, numeric, maps):
    """Sum the numeric fields and name maps of several JSON files."""
    if not paths:
        return None
    agg = {k: 0 for k in numeric}
    for m in maps:
        agg[m] = {}
    agg["procs"] = 0
    agg["pids"] = []
    agg["load_errors"] = []
    agg["files"] = [os.path.basename(p) for p in paths]
    for p in paths:
        data, err = load_json(p)
        if err:
            agg["load_errors"].append(err)
            continue
        agg["procs"] += 1
        if "pid" in data:
            agg["pids"].append(data["pid"])
        for k in numeric:
            v = data.get(k, 0)
            if isinstance(v, (int, float)):
                agg[k] += v
        for m in maps:
            add_map(agg[m], data.get(m))
        for k, v in data.items():  # keep anything else of the first file
            if k not in agg and k not in ("pid",):
                agg[k] = v
    return agg


def load_shim(d, stem):
    agg = merge(files_for(d, stem), SHIM_NUMERIC,
                ("kernels", "graph_kernels", "launches"))
    if agg is not None:
        agg["kernels_sum"] = sum(agg["kernels"].values())
        agg["graph_kernels_sum"] = sum(agg["graph_kernels"].values())
    return agg


def load_cupti(d, stem):
    return merge(files_for(d, stem), CUPTI_NUMERIC,
                 ("kernels", "graph_kernels_by_name"))


def read_runs(outdir):
    runs = {}
    order = []
    path = os.path.join(outdir, "runs.tsv")
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 3 or parts[0] == "name":
                    continue
                name, variant, rc = parts[0], parts[1], parts[2]
                secs = parts[3] if len(parts) > 3 else ""
                note = parts[4] if len(parts) > 4 else ""
                if name not in runs:
                    runs[name] = {}
                    order.append(name)
                try:
                    rc_v = int(rc)
                except ValueError:
                    rc_v = rc
                runs[name][variant] = {"rc": rc_v, "seconds": secs,
                                       "note": note}
    except OSError:
        pass
    return runs, order


def parse_stdout(path):
    expect, result = None, None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("MOSAIC_EXPECT "):
                    try:
                        expect = json.loads(line[len("MOSAIC_EXPECT "):])
                    except ValueError:
                        pass
                m = re.match(r"RESULT: (\w+)", line)
                if m:
                    result = m.group(1)
    except OSError:
        pass
    return expect, result


def name_mismatches(cupti_map, shim_map):
    out = []
    for n in set(cupti_map) | set(shim_map):
        c, s = cupti_map.get(n, 0), shim_map.get(n, 0)
        if c != s:
            out.append({"name": n, "cupti": c, "shim": s, "diff": s - c})
    out.sort(key=lambda e: (-abs(e["diff"]), e["name"]))
    return out


def short(name, width=70):
    return name if len(name) <= width else name[:width - 3] + "..."


def analyze_workload(outdir, name, runs):
    wl = os.path.join(outdir, "wl")
    r = {"name": name}
    vr = runs.get(name, {})
    r["runs"] = vr
    r["rc_base"] = vr.get("base", {}).get("rc")
    r["rc_shim"] = vr.get("shim", {}).get("rc")
    expect, result = parse_stdout(os.path.join(wl, f"{name}.shim.stdout"))
    _, result_base = parse_stdout(os.path.join(wl, f"{name}.base.stdout"))
    r["expect"] = expect
    r["result_shim"] = result
    r["result_base"] = result_base
    r["cupti"] = load_cupti(wl, f"{name}.cupti")
    r["cupti_base"] = load_cupti(wl, f"{name}.base.cupti")
    r["shim"] = load_shim(wl, f"{name}.mosaic")

    notes = []
    c, s, cb = r["cupti"], r["shim"], r["cupti_base"]
    if r["rc_shim"] is None:
        notes.append("shim run not done")
    elif r["rc_shim"] != 0:
        notes.append(f"shim run rc={r['rc_shim']}")
    if r["rc_base"] not in (None, 0):
        notes.append(f"base run rc={r['rc_base']}")
    if result not in (None, "OK"):
        notes.append(f"workload check {result}")
    if c is None and r["rc_shim"] is not None:
        notes.append("no CUPTI file")
    if s is None and r["rc_shim"] is not None:
        notes.append("no shim stats file")
    for agg, what in ((c, "cupti"), (s, "shim"), (cb, "cupti base")):
        if agg and agg["load_errors"]:
            notes.append(f"{what}: unreadable file(s)")
    if c:
        if c["dropped"]:
            notes.append(f"CUPTI dropped {c['dropped']}")
        if c["incomplete"]:
            notes.append(f"CUPTI incomplete buffers {c['incomplete']}")
        if c["device_launched"]:
            notes.append(f"{c['device_launched']} device-side launches")
        if c["errors"]:
            notes.append(f"cupti_count errors {c['errors']}")
    if s:
        for k in ("launch_errors", "errors", "unmatched_lookups"):
            if s.get(k):
                notes.append(f"shim {k}={s[k]}")
        if s.get("mode") not in (None, "observe"):
            notes.append(f"shim mode {s.get('mode')}")

    match = None
    r["shim_executed"] = None
    if c and s and c["procs"] and s["procs"]:
        shim_exec = s["launches_total"] + s["graph_kernel_launches"]
        r["shim_executed"] = shim_exec
        match = shim_exec == c["kernels_total"]
        if not match:
            notes.append(f"count diff shim-cupti={shim_exec - c['kernels_total']:+d}")
        if s["graph_kernel_launches"] != c["graph_kernels"]:
            notes.append("graph kernels differ "
                         f"(shim {s['graph_kernel_launches']}, cupti {c['graph_kernels']})")
        # Per-name: executed = direct launches + graph-node executions.
        shim_names = dict(s["kernels"])
        add_map(shim_names, s["graph_kernels"])
        mm = name_mismatches(c["kernels"], shim_names)
        r["name_mismatches"] = mm
        if mm:
            notes.append(f"{len(mm)} kernel names differ")
        gmm = name_mismatches(c["graph_kernels_by_name"], s["graph_kernels"])
        r["graph_name_mismatches"] = gmm
        if s["kernels_sum"] != s["launches_total"]:
            notes.append(f"shim kernels{{}} sums to {s['kernels_sum']}, "
                         f"launches_total {s['launches_total']}")
        if s["graph_kernels_sum"] != s["graph_kernel_launches"]:
            notes.append(f"shim graph_kernels{{}} sums to {s['graph_kernels_sum']}, "
                         f"graph_kernel_launches {s['graph_kernel_launches']}")
    else:
        r["name_mismatches"] = []
        r["graph_name_mismatches"] = []
    if cb and c and cb["kernels_total"] != c["kernels_total"]:
        notes.append(f"CUPTI count differs without shim ({cb['kernels_total']})")

    if expect:
        if c and expect.get("kernels_total") is not None \
                and expect["kernels_total"] != c["kernels_total"]:
            notes.append(f"CUPTI != expected {expect['kernels_total']}")
        if s:
            for k in ("launches_total", "graph_kernel_launches",
                      "captured_launches", "graph_launches"):
                if k in expect and s.get(k) != expect[k]:
                    notes.append(f"shim {k}={s.get(k)} expected {expect[k]}")
    r["match"] = match
    r["ok"] = bool(match) and r["rc_shim"] == 0 and result in (None, "OK") \
        and not (c and (c["dropped"] or c["incomplete"])) \
        and not r["name_mismatches"]
    r["notes"] = notes
    return r


def analyze_extra(outdir, runs):
    """Debug-log and passthrough runs."""
    wl = os.path.join(outdir, "wl")
    extras = []
    for name, vr in runs.items():
        for variant in ("debug", "passthrough"):
            if variant not in vr:
                continue
            e = {"name": name, "variant": variant, "rc": vr[variant]["rc"]}
            _, e["result"] = parse_stdout(os.path.join(wl, f"{name}.{variant}.stdout"))
            st = load_shim(wl, f"{name}.{variant}.mosaic")
            e["launches_total"] = st["launches_total"] if st else None
            e["stats_mode"] = st.get("mode") if st else None
            notes = []
            if variant == "passthrough" and st and st["launches_total"]:
                notes.append("passthrough counted launches")
            if variant == "debug":
                log = None
                for cand in (os.path.join(outdir, f"{name}.debug.stderr"),
                             os.path.join(wl, f"{name}.debug.stderr")):
                    if os.path.exists(cand):
                        log = cand
                        break
                if log:
                    n_lines = n_err = n_warn = 0
                    with open(log, encoding="utf-8", errors="replace") as f:
                        for line in f:
                            n_lines += 1
                            low = line.lower()
                            n_err += "error" in low
                            n_warn += "warn" in low
                    e["log"] = os.path.relpath(log, outdir)
                    e["log_lines"], e["log_error_lines"], e["log_warn_lines"] = \
                        n_lines, n_err, n_warn
                    notes.append(f"{n_lines} log lines, {n_err} with 'error', "
                                 f"{n_warn} with 'warn'")
            e["notes"] = notes
            e["ok"] = e["rc"] == 0 and e["result"] in (None, "OK") and \
                not (variant == "passthrough" and st and st["launches_total"])
            extras.append(e)
    return extras


def analyze_bench(outdir):
    bd = os.path.join(outdir, "bench")
    rows = {}
    rcs = {}
    try:
        with open(os.path.join(bd, "bench.tsv"), encoding="utf-8") as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if len(p) >= 3 and p[0] != "round":
                    rcs[(p[0], p[1])] = p[2]
    except OSError:
        pass
    for path in sorted(glob.glob(os.path.join(glob.escape(bd), "r*.*.json"))):
        m = re.match(r"r(\d+)\.(\w+)\.json$", os.path.basename(path))
        if not m or m.group(2) not in BENCH_VARIANTS:
            continue
        rnd, var = int(m.group(1)), m.group(2)
        data = None
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{"):
                        data = json.loads(line)
        except (OSError, ValueError):
            data = None
        if not data:
            continue
        st = load_shim(bd, f"r{rnd}.{var}.mosaic") if var != "none" else None
        data["shim_launches_total"] = st["launches_total"] if st else None
        rows.setdefault(var, []).append(dict(data, round=rnd))
    res = {"variants": {}, "failed_runs": [
        {"round": k[0], "variant": k[1], "rc": v}
        for k, v in sorted(rcs.items()) if v != "0"]}
    for var in BENCH_VARIANTS:
        runs = sorted(rows.get(var, []), key=lambda d: d["round"])
        wall = [d["ns_per_launch"] for d in runs if "ns_per_launch" in d]
        enq = [d["enqueue_ns_per_launch"] for d in runs
               if "enqueue_ns_per_launch" in d]
        v = {"rounds": len(runs), "ns_per_launch": wall,
             "enqueue_ns_per_launch": enq,
             "median_ns_per_launch": statistics.median(wall) if wall else None,
             "median_enqueue_ns_per_launch": statistics.median(enq) if enq else None}
        if var == "observe":
            v["count_exact"] = all(d["shim_launches_total"] == d.get("launches_issued")
                                   for d in runs) if runs else None
            v["shim_counts"] = [d["shim_launches_total"] for d in runs]
        if var == "passthrough":
            v["counted_nothing"] = all(not d["shim_launches_total"]
                                       for d in runs) if runs else None
        res["variants"][var] = v
    base = res["variants"].get("none", {})
    by_round = {var: {d["round"]: d for d in rows.get(var, [])}
                for var in BENCH_VARIANTS}
    for var, v in res["variants"].items():
        for tag in ("ns_per_launch", "enqueue_ns_per_launch"):
            b, x = base.get(f"median_{tag}"), v.get(f"median_{tag}")
            v[f"ratio_{tag}"] = x / b if b and x is not None else None
            # Added cost: median of the per-round differences against the
            # no-shim run of the same round (pairing cancels slow drift).
            diffs = [d[tag] - by_round["none"][r][tag]
                     for r, d in by_round[var].items()
                     if r in by_round["none"] and tag in d
                     and tag in by_round["none"][r]]
            v[f"paired_diffs_{tag}"] = diffs
            v[f"added_{tag}"] = statistics.median(diffs) if diffs else None
            vals = v[tag]
            v[f"range_{tag}"] = [min(vals), max(vals)] if vals else None
    return res


def fmt(v, spec="{:.1f}", none="-"):
    if v is None:
        return none
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return spec.format(v)
    return str(v)


def get(agg, key):
    return agg.get(key) if agg else None


def workload_table(wls):
    head = ["workload", "rc b/s", "cupti", "cupti_graph", "shim_total",
            "shim_graph", "captured", "expect", "match"]
    rows = []
    for r in wls:
        rc = f"{fmt(r['rc_base'])}/{fmt(r['rc_shim'])}"
        exp = r["expect"].get("kernels_total") if r["expect"] else None
        rows.append([r["name"], rc, fmt(get(r["cupti"], "kernels_total")),
                     fmt(get(r["cupti"], "graph_kernels")),
                     fmt(get(r["shim"], "launches_total")),
                     fmt(get(r["shim"], "graph_kernel_launches")),
                     fmt(get(r["shim"], "captured_launches")),
                     fmt(exp),
                     "n/a" if r["match"] is None else
                     ("yes" if r["ok"] else ("count-only" if r["match"] else "NO"))])
    return head, rows


def bench_table(b):
    head = ["variant", "runs", "wall ns/launch", "(min..max)", "x none", "+ns",
            "enqueue ns/launch", "x none", "+ns"]
    rows = []
    for var in BENCH_VARIANTS:
        v = b["variants"].get(var)
        if not v or not v["rounds"]:
            rows.append([var, "0", "-", "-", "-", "-", "-", "-", "-"])
            continue
        rng = v.get("range_ns_per_launch")
        rows.append([var, str(v["rounds"]),
                     fmt(v["median_ns_per_launch"]),
                     f"{rng[0]:.0f}..{rng[1]:.0f}" if rng else "-",
                     fmt(v["ratio_ns_per_launch"], "{:.3f}"),
                     fmt(v["added_ns_per_launch"], "{:+.1f}"),
                     fmt(v["median_enqueue_ns_per_launch"]),
                     fmt(v["ratio_enqueue_ns_per_launch"], "{:.3f}"),
                     fmt(v["added_enqueue_ns_per_launch"], "{:+.1f}")])
    return head, rows


def text_table(head, rows):
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w[i]) for i, x in enumerate(r))  # noqa: E731
    return "\n".join([line(head), "  ".join("-" * x for x in w)] +
                     [line(r) for r in rows])


def md_table(head, rows):
    esc = lambda x: str(x).replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(esc(h) for h in head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(esc(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    outdir = os.path.abspath(argv[1])
    runs, order = read_runs(outdir)
    names = [n for n in order
             if {"base", "shim"} & set(runs[n])]
    # Workloads that left files but no runs.tsv row.
    for p in glob.glob(os.path.join(glob.escape(os.path.join(outdir, "wl")),
                                    "*.cupti*.json")):
        n = os.path.basename(p).split(".")[0]
        if n not in names:
            names.append(n)
    wls = [analyze_workload(outdir, n, runs) for n in names]
    extras = analyze_extra(outdir, runs)
    bench = analyze_bench(outdir)

    env = ""
    try:
        with open(os.path.join(outdir, "env.txt"), encoding="utf-8",
                  errors="replace") as f:
            env = f.read()
    except OSError:
        pass
    n_ok = sum(1 for r in wls if r["ok"])
    ob = bench["variants"].get("observe", {})
    pt = bench["variants"].get("passthrough", {})
    all_ok = (bool(wls) and n_ok == len(wls) and all(e["ok"] for e in extras)
              and ob.get("count_exact") is not False
              and pt.get("counted_nothing") is not False)

    results = {"schema": "mosaic-issue2-results/1", "all_ok": all_ok,
               "workloads": wls, "extra_runs": extras, "bench": bench}
    with open(os.path.join(outdir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, sort_keys=False)

    wh, wr = workload_table(wls)
    bh, br = bench_table(bench)

    md = ["# Mosaic issue 2: launch coverage and overhead", ""]
    m = re.search(r"Driver Version:\s*(\S+)", env)
    if m:
        md += [f"Driver {m.group(1)}.", ""]
    md += ["## Launch counts", "",
           "cupti = CUPTI kernel records; shim_total = launches_total; "
           "shim_graph = graph_kernel_launches. match = yes when "
           "shim_total + shim_graph == cupti, the run exited 0, nothing was "
           "dropped and every kernel name matches (count-only: totals match, "
           "something else did not).", "",
           md_table(wh, wr), ""]
    for r in wls:
        md += [f"### {r['name']}", ""]
        if r["shim"]:
            s = r["shim"]
            nz = {k: v for k, v in sorted(s["launches"].items()) if v}
            md.append(f"- shim: procs {s['procs']}, launches by entry point "
                      f"{json.dumps(nz)}, "
                      f"graph_launches {s['graph_launches']}, captured "
                      f"{s['captured_launches']}, launch_errors "
                      f"{s['launch_errors']}, errors {s['errors']}, "
                      f"unmatched_lookups {s['unmatched_lookups']}")
        if r["cupti"]:
            c = r["cupti"]
            md.append(f"- cupti: procs {c['procs']}, kernels {c['kernels_total']}, "
                      f"graph {c['graph_kernels']}, cooperative {c['cooperative']}, "
                      f"cluster {c['cluster']}, dropped {c['dropped']}, "
                      f"incomplete {c['incomplete']}, no_timestamp {c['no_timestamp']}")
        if r["cupti_base"]:
            md.append(f"- cupti without shim: {r['cupti_base']['kernels_total']} "
                      f"(graph {r['cupti_base']['graph_kernels']}), run rc "
                      f"{fmt(r['rc_base'])}, check {fmt(r['result_base'])}")
        if r["expect"]:
            md.append(f"- workload says: {json.dumps(r['expect'])}")
        md.append(f"- notes: {'; '.join(r['notes']) or 'none'}")
        mm = r["name_mismatches"]
        if mm:
            md += ["", f"Top {min(TOP_N, len(mm))} of {len(mm)} kernel-name "
                   "mismatches (executed counts):", "",
                   md_table(["kernel", "cupti", "shim", "shim-cupti"],
                            [[short(e["name"], 100), e["cupti"], e["shim"],
                              f"{e['diff']:+d}"] for e in mm[:TOP_N]])]
        md.append("")
    if extras:
        md += ["## Debug-log and passthrough runs", "",
               md_table(["workload", "variant", "rc", "check", "launches_total",
                         "notes"],
                        [[e["name"], e["variant"], fmt(e["rc"]), fmt(e["result"]),
                          fmt(e["launches_total"]), "; ".join(e["notes"])]
                         for e in extras]), ""]
    md += ["## Launch overhead (launch_bench: empty <<<1,32>>> launches)",
           "", "Each run reports the best of its in-process repetitions; the "
           "table gives the median over rounds and the min..max of the "
           "rounds. Every round runs the variants back to back (rotating "
           "order); +ns is the median of the per-round differences against "
           "the no-shim run of the same round. wall = first launch to "
           "cudaDeviceSynchronize; enqueue = launch calls only, chunks of "
           "1000 with an untimed sync after each. Differences within the "
           "min..max spread of the no-shim runs are noise.", "",
           md_table(bh, br), ""]
    md.append(f"- observe counted exactly what was launched: "
              f"{fmt(ob.get('count_exact'))} (counts {ob.get('shim_counts')})")
    md.append(f"- passthrough counted nothing: {fmt(pt.get('counted_nothing'))}")
    if bench["failed_runs"]:
        md.append(f"- failed bench runs: {bench['failed_runs']}")
    md += ["", f"Overall: {'PASS' if all_ok else 'FAIL'} "
           f"({n_ok}/{len(wls)} workloads match)", ""]
    with open(os.path.join(outdir, "summary.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))

    # stdout: details first, the short tables last.
    for r in wls:
        if r["notes"]:
            print(f"{r['name']}: " + "; ".join(r["notes"]))
        for e in r["name_mismatches"][:TOP_N]:
            print(f"    {e['diff']:+6d}  cupti {e['cupti']:>6}  shim "
                  f"{e['shim']:>6}  {short(e['name'])}")
    for e in extras:
        print(f"{e['name']}/{e['variant']}: rc={fmt(e['rc'])} check="
              f"{fmt(e['result'])} launches_total={fmt(e['launches_total'])}"
              + (f"  ({'; '.join(e['notes'])})" if e["notes"] else ""))
    print(f"bench: observe count exact={fmt(ob.get('count_exact'))}, "
          f"passthrough counted nothing={fmt(pt.get('counted_nothing'))}"
          + (f", failed runs {len(bench['failed_runs'])}"
             if bench["failed_runs"] else ""))
    print(f"(full report: {os.path.join(outdir, 'summary.md')})")
    print()
    print(text_table(wh, wr))
    print()
    print(text_table(bh, br))
    print(f"\nOVERALL: {'PASS' if all_ok else 'FAIL'} "
          f"({n_ok}/{len(wls)} workloads match)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
