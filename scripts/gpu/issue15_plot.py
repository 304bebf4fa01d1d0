#!/usr/bin/env python3
"""A plot per HP:BE pair from issue15_summary.py's results.json.

  issue15_plot.py RESULTS_JSON OUT_DIR [--format svg|png]

For each pair, one figure of two panels side by side, one group of bars per
p: the HP p99 slowdown (HP p99 / isolated p99) of each policy with p drawn
as a line over its group, and the BE throughput against BE alone (the cost
savings are twice that). Policies that ran once (none, mps-priority, orion,
static) appear in every group, as the summary scores them. Writes
OUT_DIR/issue15_<hp>+<be>.<format> and prints each path. Runs where the
results are (matplotlib, no GPU); the GPU machine needs none of this."""
import argparse
import json
import os
import sys

ORDER = ("none", "mps-priority", "orion", "hold-be", "static", "mosaic", "tuned")
LABEL = {"none": "none (MPS)", "mps-priority": "MPS priority", "orion": "Orion-like", "hold-be": "hold BE beside HP",
         "static": "static partition", "mosaic": "MosaicSched (full)",
         "tuned": "MosaicSched (tuned mode)"}
COLOR = {"none": "#9e9e9e", "mps-priority": "#6a8caf", "orion": "#d9a441", "hold-be": "#bc7a5c",
         "static": "#8c6bb1", "mosaic": "#2e7d32", "tuned": "#66bb6a"}


def plot_pair(pair, out_dir, fmt, plt, simulated=False):
    runs = pair["runs"]
    ps = sorted({r["p"] for r in runs})
    pols = [p for p in ORDER if any(r["policy"] == p for r in runs)]
    if not ps or not pols:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.8 / len(pols)
    for i, pol in enumerate(pols):
        xs, slow, be = [], [], []
        for j, p in enumerate(ps):
            r = [x for x in runs if x["policy"] == pol and x["p"] == p]
            if r:
                xs.append(j - 0.4 + width * (i + 0.5))
                slow.append(r[0]["hp_p99_slowdown"])
                be.append(r[0]["be_vs_isolated"])
        ax1.bar(xs, slow, width, color=COLOR[pol], label=LABEL[pol])
        ax2.bar(xs, be, width, color=COLOR[pol], label=LABEL[pol])
    for j, p in enumerate(ps):
        ax1.hlines(p, j - 0.45, j + 0.45, colors="#c62828", linestyles="dashed",
                   label="p" if j == 0 else None)
    for ax in (ax1, ax2):
        ax.set_xticks(range(len(ps)))
        ax.set_xticklabels([f"p = {p:g}" for p in ps])
        ax.grid(axis="y", alpha=0.3)
    ax1.set_ylabel("HP p99 / isolated p99")
    ax1.set_title("HP p99 slowdown (dashed: p)")
    ax1.set_ylim(bottom=0.9 * min(1.0, min(r["hp_p99_slowdown"] for r in runs)))
    ax2.set_ylabel("BE throughput / BE alone")
    ax2.set_title("BE throughput (cost savings = 2x)")
    ax2.set_ylim(0, max(1.0, max(r["be_vs_isolated"] for r in runs)) * 1.05)
    ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.suptitle(f"{pair['hp']} (HP, isolated p99 {pair['hp_iso_p99_ms']:.3f} ms) + "
                 f"{pair['be']} (BE, {pair['be_iso_steps_per_s']:.1f} steps/s alone)"
                 f"{'; SIMULATED GPU, not a measurement' if simulated else ''}", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, f"issue15_{pair['hp']}+{pair['be']}.{fmt}")
    fig.savefig(path, format=fmt)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("out_dir")
    ap.add_argument("--format", choices=("svg", "png"), default="svg")
    a = ap.parse_args()
    try:
        with open(a.results) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"issue15_plot: {a.results}: {e}: give the results.json of "
                 "scripts/gpu/issue15_services.sh")
    if res.get("schema") != "mosaic-issue15/2":
        sys.exit(f"issue15_plot: {a.results} is {res.get('schema')!r}, not mosaic-issue15/2: "
                 "summarise the run again with scripts/gpu/issue15_summary.py RUNDIR PAIRS PS")
    try:
        import matplotlib
        matplotlib.use("Agg")
        # Text as text, not glyph paths: a third of the size, and searchable.
        matplotlib.rcParams["svg.fonttype"] = "none"
        matplotlib.rcParams["svg.hashsalt"] = "issue15"
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("issue15_plot: matplotlib is not installed: pip install matplotlib "
                 "(on the machine the results came back to; the GPU machine needs none)")
    os.makedirs(a.out_dir, exist_ok=True)
    made = 0
    for pair in res["pairs"]:
        path = plot_pair(pair, a.out_dir, a.format, plt, bool(res.get("simulated")))
        if path:
            print(path)
            made += 1
        else:
            print(f"issue15_plot: {pair['hp']}+{pair['be']}: no scored runs, no plot", file=sys.stderr)
    if not made:
        sys.exit("issue15_plot: no pair has scored runs (phases iso and policies/static/tune)")


if __name__ == "__main__":
    main()
