#!/usr/bin/env python3
"""Summary of scripts/gpu/argus16_multirun.sh (issue 16, multi-run queries).

    argus16_multirun.py RES WORK ARGUS MODE REGION_PATH REGION_NAME

RES holds batches.tsv and env.txt (written by the script); WORK/ws8 is the
8-probe batch's workspace. Writes RES/results.json, RES/probes.tsv and
RES/summary.txt (the table the script prints last).

Probe latency, per probe: REGION_PATH's mean cycles per occurrence at the
probed iteration in the probe run minus the base run's at the same
iteration (iteration i to iteration i, never by timestamps across runs),
each from the stored region buffer (argus.evidence raw_base64) decoded by
`argus report --iter I:I --region REGION_NAME`. Beside it, a floor with
nothing forced: the base's own iteration i + 1 minus iteration i.
"""
import base64
import glob
import json
import os
import re
import subprocess
import sys


def read_batches(res):
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(res, "batches.tsv"))]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def mean_cycles(argus, work, reg, raw_b64, it, path, name):
    """(mean cycles per occurrence of path at iteration it, SM GHz) or (None, why)."""
    raw = os.path.join(work, "latency.raw")
    rep = os.path.join(work, "latency.json")
    with open(raw, "wb") as f:
        f.write(base64.b64decode(raw_b64))
    r = subprocess.run([argus, "report", raw, "--registry", reg, "--iter", f"{it}:{it}",
                        "--region", name, "--json", rep], capture_output=True, text=True)
    if r.returncode not in (0, 3):  # 3: written, with decoder diagnostics
        return None, r.stderr.strip()
    doc = json.load(open(rep))
    for g in doc["regions"]:
        if g["path"] == path and g["count"]["value"] > 0:
            clock = doc["clock"].get("sm_clock", {}).get("value")
            return g["total_cycles"]["value"] / g["count"]["value"], clock
    return None, f"no {path} occurrence at iteration {it}"


def evidence(ws):
    """The region_runtime evidence of a workspace: (base, [(op, iter, probe)])."""
    base, probes = None, []
    for p in sorted(glob.glob(os.path.join(ws, "objects", "*", "*"))):
        try:
            e = json.load(open(p))
        except (ValueError, UnicodeDecodeError):
            continue
        if not (isinstance(e, dict) and e.get("schema") == "argus.evidence"
                and e.get("backend") == "region_runtime"):
            continue
        m = re.search(r"probe\(op=([0-9a-fx.]+),iter=(\d+)\)", e["variant"])
        if m:
            probes.append((m.group(1), int(m.group(2)), e))
        else:
            base = e
    return base, sorted(probes, key=lambda x: (x[0], x[1]))


def latencies(argus, work, reg, ws, path, name):
    base, probes = evidence(ws)
    out = []
    for op, it, e in probes:
        row = {"op": op, "iter": it, "status": e["status"], "why": e.get("why", "")}
        if base is None or base["status"] != "ok":
            row["why"] = "no base run evidence" if base is None else "base: " + base.get("why", "")
        elif e["status"] == "ok":
            pc, clk = mean_cycles(argus, work, reg, e["launches"][0]["raw_base64"], it, path, name)
            bc, why = mean_cycles(argus, work, reg, base["launches"][0]["raw_base64"], it, path, name)
            bn, _ = mean_cycles(argus, work, reg, base["launches"][0]["raw_base64"], it + 1, path,
                                name)
            if isinstance(pc, float) and isinstance(bc, float):
                row.update({"probe_cycles": pc, "base_cycles": bc, "added_cycles": pc - bc,
                            "floor_cycles": bn - bc if isinstance(bn, float) else None,
                            "sm_clock_ghz": clk,
                            "marks": {"probe_cycles": "observed", "base_cycles": "observed",
                                      "added_cycles": "derived", "floor_cycles": "derived"}})
            else:
                row["why"] = clk if not isinstance(pc, float) else why
        out.append(row)
    return out


def main(argv):
    res, work, argus, mode, path, name = argv[1:7]
    batches = read_batches(res)
    f = lambda b, k: float(b[k])
    measured = mode == "run" and all(int(b["runs_failed"]) == 0 and int(b["exit"]) == 0
                                     for b in batches)
    b1, b8 = batches[0], batches[-1]
    span = int(b8["probes"]) - int(b1["probes"])
    out = {"schema": "mosaic.argus16.multirun", "version": 1, "mode": mode, "measured": measured,
           "env": open(os.path.join(res, "env.txt")).read(), "batches": batches,
           "marginal": {"s_per_probe": (f(b8, "wall_s") - f(b1, "wall_s")) / span,
                        "bytes_per_probe": (f(b8, "ws_bytes") - f(b1, "ws_bytes")) / span},
           "anchor": {"s_per_probe_at_8": 1.00, "mib_per_probe": 2.08, "source": "Argus paper"}}
    out["probes"] = latencies(argus, work, os.path.join(work, "reg.json"),
                              os.path.join(work, "ws" + b8["probes"]), path, name)
    json.dump(out, open(os.path.join(res, "results.json"), "w"), indent=1)
    with open(os.path.join(res, "probes.tsv"), "w") as t:
        t.write("op\titer\tstatus\tbase_cycles\tprobe_cycles\tadded_cycles\tfloor_cycles\twhy\n")
        for r in out["probes"]:
            g = lambda k: "" if r.get(k) is None else "%.1f" % r[k]
            t.write(f"{r['op']}\t{r['iter']}\t{r['status']}\t{g('base_cycles')}\t"
                    f"{g('probe_cycles')}\t{g('added_cycles')}\t{g('floor_cycles')}\t{r['why']}\n")
    with open(os.path.join(res, "summary.txt"), "w") as s:
        s.write(f"argus16_multirun ({mode}): one argus query --run per batch on a fresh "
                "workspace; wall time of the whole query, workspace bytes by du -sb\n")
        ok = [r for r in out["probes"] if "added_cycles" in r]
        if ok:
            s.write(f"probe latencies: {path} mean cycles at the probed iteration (observed), "
                    "added = probe - base (derived); floor = base iteration i+1 - i\n")
            for r in ok:
                fl = "-" if r["floor_cycles"] is None else "%+.0f" % r["floor_cycles"]
                s.write("  %s iter %d: base %.0f, probe %.0f, added %+.0f cycles (floor %s)\n"
                        % (r["op"], r["iter"], r["base_cycles"], r["probe_cycles"],
                           r["added_cycles"], fl))
        elif measured:
            s.write("no probe latency: no region buffers collected (probes.tsv says why)\n")
        if not measured:
            s.write("NOTHING MEASURED on a GPU (%s): the times and bytes below are builds, "
                    "planning and failed runs, not probe costs\n"
                    % ("dry run, no GPU" if mode == "dry" else "some runs failed: query*.txt"))
        s.write("marginal (%s - %s probes): %.3f s/probe, %.3f MiB/probe; Argus: 1.00 s/probe "
                "at 8, 2.08 MiB/probe\n" % (b8["probes"], b1["probes"],
                                            out["marginal"]["s_per_probe"],
                                            out["marginal"]["bytes_per_probe"] / 2**20))
        s.write("probes  wall_s  s/probe  MiB/probe  runs ok/failed\n")
        for b in batches:
            s.write("%6s  %6.2f  %7.3f  %9.3f  %s/%s\n"
                    % (b["probes"], f(b, "wall_s"), f(b, "s_per_probe"),
                       f(b, "bytes_per_probe") / 2**20, b["runs_done"], b["runs_failed"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
