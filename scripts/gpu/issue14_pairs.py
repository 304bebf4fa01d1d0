#!/usr/bin/env python3
"""Pair lists and the time plan of issue 14's offset co-runs.

  issue14_pairs.py OUTDIR [--seed S] [--n-offset 150] [--n-mps 100]
                   [--n-lowprio 30] [--max-iso-us 1300] [--plan-only]

Pairs come from profiler/data/h200/pairs_part.txt (the 700 seeded pairs that
the dataset co-ran shared and at 32/64/96 SMs, so every offset co-run has an
in-process record with launches aligned beside it), restricted to pairs whose
kernels both take at most --max-iso-us alone (the isolated gated duration in
profiler/data/h200/corun.jsonl; longer kernels multiply the device time of a
1.5x delay), and spread evenly over the ten unordered category pairs of the
zoo (memory, compute, latency, smem: the co-location categories of the Mosaic
paper's Table 8): a seeded shuffle, then round-robin over the categories
until --n-offset pairs are chosen. The two-process pairs are the first
--n-mps of those (again round-robin, so spread the same way), the
low-priority ones the first --n-lowprio of the two-process pairs.

Writes OUTDIR/pairs_offset.txt, pairs_mps.txt, pairs_lowprio.txt and
plan.json (pair counts per category pair, estimated device seconds per phase
from the isolated durations) and prints the plan.
"""
import argparse
import collections
import json
import os
import random
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(REPO, "profiler", "data", "h200")

# Defaults of the run's arguments; issue14_offsets.sh passes the values it
# gives mosaic-zoo, so that the estimate describes what runs.
ONE_DELAYS = "0,2,5,10,20,50,0.5x,1x,1.5x"
MPS_DELAYS = ONE_DELAYS
LOW_DELAYS = "0,20,0.5x,1x"
REPEATS = 5
GATE_US = 30.0
# Seconds a variant's isolated timing costs in one configuration (setup,
# warm-ups, a CUDA graph of ~1 ms replayed 100 times, the gated single
# launches): the 2026-11-30 `time` run took 152.9 s for 67 variants x 5
# configurations (profiler/data/h200/splits/time.jsonl).
ISO_S = 0.46
# Per-round overhead on the GPU besides the kernels (gate wait, the protocol
# kernels, events), and the co-run slowdown assumed for the estimate.
ROUND_US = 15.0
SLOWDOWN = 1.4


def load_variants():
    cats = {}
    for line in open(os.path.join(DATA, "variants.jsonl")):
        r = json.loads(line)
        if r.get("record") == "variant":
            cats[r["name"]] = r["category"].lower()
    iso = {}
    for line in open(os.path.join(DATA, "corun.jsonl")):
        r = json.loads(line)
        if r.get("record") != "corun" or not r.get("ok") or r.get("mode") != "shared":
            continue
        for s in "ab":
            if r.get(f"iso_gated_{s}_us") is not None:
                iso[r[s]] = r[f"iso_gated_{s}_us"]
    return cats, iso


def delays_us(spec, lead_us):
    out = []
    for d in spec.split(","):
        out.append(float(d[:-1]) * lead_us if d.endswith("x") else float(d))
    return out


def pair_rounds_s(ta, tb, spec, orders=2):
    """Device seconds of one pair's co-run rounds (warm-up + repeats)."""
    t = 0.0
    for lead, fol in ((ta, tb), (tb, ta))[:orders]:
        for d in delays_us(spec, lead):
            t += (REPEATS + 1) * (GATE_US + ROUND_US + SLOWDOWN * max(lead, d + fol))
    return 1e-6 * t


def iso_rounds_s(t):
    return 1e-6 * 2 * (REPEATS + 1) * (GATE_US + ROUND_US + t)


def choose(args):
    cats, iso = load_variants()
    pairs = []
    for line in open(os.path.join(DATA, "pairs_part.txt")):
        f = line.split("#")[0].split()
        if len(f) != 2:
            continue
        a, b = f
        if a in cats and b in cats and iso.get(a, 1e9) <= args.max_iso_us \
                and iso.get(b, 1e9) <= args.max_iso_us:
            pairs.append((a, b))
    rng = random.Random(args.seed)
    rng.shuffle(pairs)
    by_cat = collections.OrderedDict()
    for a, b in pairs:
        by_cat.setdefault(tuple(sorted((cats[a], cats[b]))), []).append((a, b))
    keys = sorted(by_cat)
    chosen = []
    while len(chosen) < args.n_offset and any(by_cat[k] for k in keys):
        for k in keys:
            if by_cat[k] and len(chosen) < args.n_offset:
                chosen.append(by_cat[k].pop(0))
    # Round-robin order again for the two-process subsets: the first n of a
    # list built category by category are spread as evenly as the whole.
    rr = collections.OrderedDict((k, []) for k in keys)
    for a, b in chosen:
        rr[tuple(sorted((cats[a], cats[b])))].append((a, b))
    spread = []
    while any(rr.values()):
        for k in keys:
            if rr[k]:
                spread.append(rr[k].pop(0))
    mps = spread[: args.n_mps]
    low = mps[: args.n_lowprio]
    return cats, iso, chosen, mps, low


def plan(cats, iso, chosen, mps, low, n_splits):
    def cat_counts(ps):
        c = collections.Counter("+".join(sorted((cats[a], cats[b]))) for a, b in ps)
        return dict(sorted(c.items()))

    variants = sorted({v for p in chosen for v in p})
    one = sum(pair_rounds_s(iso[a], iso[b], ONE_DELAYS) for a, b in chosen)
    one_iso = sum(iso_rounds_s(iso[v]) + ISO_S for v in variants)
    phases = {
        "off_shared": one + one_iso,
    }
    for i in range(n_splits):
        # Both sides of a split have their own isolated timing.
        phases[f"off_part{i}"] = one + 2 * one_iso
    mv = sorted({v for p in mps for v in p})
    phases["mps"] = sum(pair_rounds_s(iso[a], iso[b], MPS_DELAYS) for a, b in mps) + \
        sum(iso_rounds_s(iso[v]) for v in mv) + 0.02 * len(mps) + 3.0
    lv = sorted({v for p in low for v in p})
    phases["mps_lowprio"] = sum(pair_rounds_s(iso[a], iso[b], LOW_DELAYS) for a, b in low) + \
        sum(iso_rounds_s(iso[v]) for v in lv) + 0.02 * len(low) + 3.0
    return {
        "pairs_offset": len(chosen),
        "pairs_mps": len(mps),
        "pairs_lowprio": len(low),
        "variants_offset": len(variants),
        "categories_offset": cat_counts(chosen),
        "categories_mps": cat_counts(mps),
        "categories_lowprio": cat_counts(low),
        "estimate_s": {k: round(v, 1) for k, v in phases.items()},
        "delays": {"one_process": ONE_DELAYS, "mps": MPS_DELAYS, "lowprio": LOW_DELAYS},
        "repeats": REPEATS,
        "gate_us": GATE_US,
    }


def main(argv):
    global ONE_DELAYS, MPS_DELAYS, LOW_DELAYS, REPEATS, GATE_US
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--n-offset", type=int, default=150)
    ap.add_argument("--n-mps", type=int, default=100)
    ap.add_argument("--n-lowprio", type=int, default=30)
    ap.add_argument("--max-iso-us", type=float, default=1300.0)
    ap.add_argument("--splits", type=int, default=2, help="SM splits in the plan")
    ap.add_argument("--plan-only", action="store_true", help="print, write nothing")
    ap.add_argument("--one-delays", default=ONE_DELAYS)
    ap.add_argument("--mps-delays", default=MPS_DELAYS)
    ap.add_argument("--low-delays", default=LOW_DELAYS)
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--gate-us", type=float, default=GATE_US)
    a = ap.parse_args(argv)
    ONE_DELAYS, MPS_DELAYS, LOW_DELAYS = a.one_delays, a.mps_delays, a.low_delays
    REPEATS, GATE_US = a.repeats, a.gate_us
    cats, iso, chosen, mps, low = choose(a)
    if len(chosen) < a.n_offset:
        print(f"issue14_pairs: only {len(chosen)} pairs of pairs_part.txt have both kernels "
              f"under {a.max_iso_us:.0f} us: raise --max-iso-us", file=sys.stderr)
    p = plan(cats, iso, chosen, mps, low, a.splits)
    if not a.plan_only:
        os.makedirs(a.outdir, exist_ok=True)
        for name, ps in (("pairs_offset.txt", chosen), ("pairs_mps.txt", mps),
                         ("pairs_lowprio.txt", low)):
            with open(os.path.join(a.outdir, name), "w") as f:
                f.write("".join(f"{x} {y}\n" for x, y in ps))
        with open(os.path.join(a.outdir, "plan.json"), "w") as f:
            json.dump(p, f, indent=1)
    print(json.dumps(p, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
