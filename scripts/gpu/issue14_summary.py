#!/usr/bin/env python3
"""The table of issue 14's offset co-runs, from the JSONL that
scripts/gpu/issue14_offsets.sh writes.

  issue14_summary.py DS_DIR [--json]

Reads DS_DIR/offset_*.jsonl (mosaic-zoo corun-offset: one process) and
DS_DIR/mps*_a.jsonl with DS_DIR/mps*_b.jsonl (mosaic-zoo mps-offset: the two
processes' halves of each co-run, joined by pair, order and delay) and
prints:

1. per phase: records ok/failed ("error" records, a run that could not
   measure at all, count as failed), the median and p95 of |measured offset -
   requested| (us), the median slowdown of each kernel against its isolated
   time under the same protocol (slowdown_sync);
2. the median slowdown of leader and follower by requested delay (shared,
   one process): what a scheduler buys by releasing later;
3. one process against two processes, row by row (same pair, order, delay):
   a kernel's two slowdowns differ beyond the run-to-run spread when the
   ranges of its per-repeat slowdowns in the two arrangements do not
   overlap; counted per category pair, with the rows where the slower
   kernel of the pair is not the same in both;
4. low MPS client priority for B against normal priority (same rows).

--json prints the same as one JSON object. Exit status 0, or 1 when no
record could be read.
"""
import collections
import glob
import json
import os
import statistics
import sys


def read_jsonl(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pct(xs, q):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))
    return xs[k]


def key(r):
    return (r["a"], r["b"], r["order"], r["delay_spec"])


def one_process_rows(recs):
    return [r for r in recs if r.get("record") == "corun_offset"]


def join_mps(recs_a, recs_b):
    """Joins process a's and process b's mps_offset records into rows with
    the fields of a one-process row (slowdown_sync_a/b, offset_meas_us,
    samples)."""
    by = {}
    for side, recs in (("a", recs_a), ("b", recs_b)):
        for r in recs:
            if r.get("record") != "mps_offset":
                continue
            by.setdefault(key(r), {})[side] = r
    rows = []
    for k, d in by.items():
        ra, rb = d.get("a"), d.get("b")
        row = {"a": k[0], "b": k[1], "order": k[2], "delay_spec": k[3],
               "ok": bool(ra and rb and ra.get("ok") and rb.get("ok"))}
        if ra and rb:
            fol = rb if k[2] == "ab" else ra
            row["category_a"] = ra.get("category_a")
            row["category_b"] = ra.get("category_b")
            row["delay_us"] = (ra if k[2] == "ab" else rb).get("delay_us")
            row["offset_meas_us"] = fol.get("offset_meas_us")
            row["slowdown_sync_a"] = ra.get("slowdown_sync")
            row["slowdown_sync_b"] = rb.get("slowdown_sync")
            row["iso_sync_a_us"] = ra.get("iso_sync_us")
            row["iso_sync_b_us"] = rb.get("iso_sync_us")
            row["corun_a_samples_us"] = ra.get("corun_samples_us") or []
            row["corun_b_samples_us"] = rb.get("corun_samples_us") or []
            row["mps_client_priority_b"] = rb.get("mps_client_priority")
        rows.append(row)
    return rows


def n_errors(recs):
    """Records that say a run could not measure at all (no GPU, a bad
    pairs line, a lost peer): failures with no co-run row of their own."""
    return sum(1 for r in recs if r.get("record") == "error")


def phase_row(name, rows, errors=0):
    ok = [r for r in rows if r.get("ok")]
    errs = [abs(r["offset_meas_us"] - r["delay_us"]) for r in ok
            if r.get("offset_meas_us") is not None and r.get("delay_us") is not None]
    return {
        "phase": name,
        "ok": len(ok),
        "failed": len(rows) - len(ok) + errors,
        "offset_err_med_us": median(errs),
        "offset_err_p95_us": pct(errs, 0.95),
        "slowdown_a_med": median([r.get("slowdown_sync_a") for r in ok]),
        "slowdown_b_med": median([r.get("slowdown_sync_b") for r in ok]),
    }


def by_delay(rows):
    """Median slowdown of the leader and of the follower per delay spec."""
    acc = collections.defaultdict(lambda: ([], []))
    for r in rows:
        if not r.get("ok"):
            continue
        lead, fol = ("a", "b") if r["order"] == "ab" else ("b", "a")
        acc[r["delay_spec"]][0].append(r.get(f"slowdown_sync_{lead}"))
        acc[r["delay_spec"]][1].append(r.get(f"slowdown_sync_{fol}"))

    def order(spec):
        return (1, float(spec[:-1])) if spec.endswith("x") else (0, float(spec))

    return [{"delay_spec": d, "n": len(acc[d][0]),
             "leader_med": median(acc[d][0]), "follower_med": median(acc[d][1])}
            for d in sorted(acc, key=order)]


def norm_range(samples, iso):
    if not samples or not iso:
        return None
    s = [x / iso for x in samples if x is not None]
    return (min(s), max(s)) if s else None


def compare(rows1, rows2, label1="one", label2="two"):
    """Rows of the same key in both sets: per kernel, do the per-repeat
    slowdown ranges overlap? Returns the summary and the differing rows."""
    idx = {key(r): r for r in rows1 if r.get("ok")}
    n = 0
    differ = []
    flips = []
    per_cat = collections.defaultdict(lambda: [0, 0])
    for r2 in rows2:
        r1 = idx.get(key(r2))
        if not r1 or not r2.get("ok"):
            continue
        n += 1
        cat = "+".join(sorted((r1.get("category_a") or "?", r1.get("category_b") or "?")))
        per_cat[cat][0] += 1
        hit = False
        for s in "ab":
            x1 = norm_range(r1.get(f"corun_{s}_samples_us"), r1.get(f"iso_sync_{s}_us"))
            x2 = norm_range(r2.get(f"corun_{s}_samples_us"), r2.get(f"iso_sync_{s}_us"))
            if x1 is None or x2 is None:
                continue
            if x1[1] < x2[0] or x2[1] < x1[0]:
                hit = True
                differ.append({"a": r2["a"], "b": r2["b"], "order": r2["order"],
                               "delay_spec": r2["delay_spec"], "kernel": s, "category": cat,
                               f"slowdown_{label1}": r1.get(f"slowdown_sync_{s}"),
                               f"slowdown_{label2}": r2.get(f"slowdown_sync_{s}")})
        if hit:
            per_cat[cat][1] += 1
        sa1, sb1 = r1.get("slowdown_sync_a"), r1.get("slowdown_sync_b")
        sa2, sb2 = r2.get("slowdown_sync_a"), r2.get("slowdown_sync_b")
        if None not in (sa1, sb1, sa2, sb2) and abs(sa1 - sb1) > 0.05 and \
                abs(sa2 - sb2) > 0.05 and (sa1 > sb1) != (sa2 > sb2):
            flips.append({"a": r2["a"], "b": r2["b"], "order": r2["order"],
                          "delay_spec": r2["delay_spec"],
                          label1: [sa1, sb1], label2: [sa2, sb2]})
    return {"rows_compared": n,
            "rows_differing": len({(d["a"], d["b"], d["order"], d["delay_spec"]) for d in differ}),
            "kernels_differing": len(differ),
            "per_category": {k: {"rows": v[0], "differing": v[1]} for k, v in sorted(per_cat.items())},
            "flipped": flips, "differing": differ}


def summarise(ds):
    phases = []
    one = {}
    for path in sorted(glob.glob(os.path.join(ds, "offset_*.jsonl"))):
        name = os.path.basename(path)[:-6]
        recs = read_jsonl(path)
        rows = one_process_rows(recs)
        one[name] = rows
        phases.append(phase_row(name, rows, n_errors(recs)))
    two = {}
    for pa in sorted(glob.glob(os.path.join(ds, "mps*_a.jsonl"))):
        name = os.path.basename(pa)[:-8]
        pb = pa[:-8] + "_b.jsonl"
        ra = read_jsonl(pa)
        rb = read_jsonl(pb) if os.path.exists(pb) else []
        rows = join_mps(ra, rb)
        two[name] = rows
        phases.append(phase_row(name, rows, n_errors(ra) + n_errors(rb)))
    out = {"phases": phases}
    if "offset_shared" in one:
        out["by_delay_shared"] = by_delay(one["offset_shared"])
    if "offset_shared" in one and "mps" in two:
        out["one_vs_two"] = compare(one["offset_shared"], two["mps"], "one", "two")
    if "mps" in two and "mps_lowprio" in two:
        out["lowprio_vs_normal"] = compare(two["mps"], two["mps_lowprio"], "normal", "low")
    return out


def fmt(x, w=8, p=3):
    return f"{x:{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}s}"


def print_table(s):
    print("\nissue 14: offset co-runs (offset = start(B) - start(A), us; slowdown vs the same kernel alone under the same protocol)")
    print(f"{'phase':18s} {'ok':>5s} {'failed':>6s} {'|off err| med':>13s} {'p95':>8s} {'slow A med':>10s} {'slow B med':>10s}")
    for p in s["phases"]:
        print(f"{p['phase']:18s} {p['ok']:5d} {p['failed']:6d} {fmt(p['offset_err_med_us'], 13, 2)} "
              f"{fmt(p['offset_err_p95_us'], 8, 2)} {fmt(p['slowdown_a_med'], 10)} {fmt(p['slowdown_b_med'], 10)}")
    if s.get("by_delay_shared"):
        print("\nshared, one process: median slowdown by requested delay")
        print(f"{'delay':>7s} {'rows':>5s} {'leader':>8s} {'follower':>8s}")
        for d in s["by_delay_shared"]:
            print(f"{d['delay_spec']:>7s} {d['n']:5d} {fmt(d['leader_med'])} {fmt(d['follower_med'])}")
    for k, title in (("one_vs_two", "one process (shared) vs two processes under MPS"),
                     ("lowprio_vs_normal", "two processes: B at low MPS priority vs normal")):
        c = s.get(k)
        if not c:
            continue
        print(f"\n{title}: {c['rows_compared']} rows compared, {c['rows_differing']} differ beyond "
              f"the run-to-run spread ({c['kernels_differing']} kernels), {len(c['flipped'])} with the "
              f"slowdown on the other kernel")
        for cat, v in c["per_category"].items():
            print(f"  {cat:18s} {v['differing']:4d} / {v['rows']:4d}")
        labels = [x for x in c["differing"][0] if x.startswith("slowdown_")] if c["differing"] else []
        for d in sorted(c["differing"], key=lambda d: -abs((d[labels[0]] or 0) - (d[labels[1]] or 0)))[:8]:
            print(f"  {d['a']} + {d['b']} {d['order']} {d['delay_spec']}: kernel {d['kernel']} "
                  f"{fmt(d[labels[0]], 6)} vs {fmt(d[labels[1]], 6)}")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    s = summarise(argv[0])
    if "--json" in argv[1:]:
        print(json.dumps(s, indent=1))
    else:
        print_table(s)
    return 0 if any(p["ok"] + p["failed"] for p in s["phases"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
