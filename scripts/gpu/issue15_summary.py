#!/usr/bin/env python3
"""Summarise scripts/gpu/issue15_services.sh's runs: RUNDIR PAIRS PS.

Per HP:BE pair: the isolated HP p50/p99 (two runs pooled) and BE steps/s;
the shim's cost with no BE work (under the daemon with policy none, against
no shim, same load); per policy and p: HP p99 / isolated p99, % of requests
over p x isolated p99, BE steps/s against isolated and the cost savings as
issue 15 defines them (2 x colocated BE throughput / isolated BE
throughput); the fault run: requests over p around the kill, BE recovery.
The p-independent policies (none, mps-priority, orion) ran once and are
scored against every p. Writes OUT/results.json; prints the table."""
import json
import os
import sys


def lat(path):
    """Latencies (ms) and start times (Unix s, or None) of a --latencies file."""
    ms, ts = [], []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                ms.append(float(parts[0]))
                ts.append(float(parts[1]) if len(parts) > 1 else None)
    except OSError:
        pass
    return ms, ts


def last_json(path):
    try:
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def pct(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.999999) - 1))] if s else float("nan")


def main():
    out, pairs, ps = sys.argv[1], sys.argv[2].split(), [float(x) for x in sys.argv[3].split()]
    run = out  # the run directory itself
    res = {"schema": "mosaic-issue15/1", "pairs": []}
    lines = []
    for pair in pairs:
        hm, bm = pair.split(":")
        iso = lat(f"{run}/{hm}.iso1.lat")[0] + lat(f"{run}/{hm}.iso2.lat")[0]
        be_iso = last_json(f"{run}/{hm}.be_iso.json")
        be_iso_sps = be_iso["steps_per_s"] if be_iso else float("nan")
        r = {"hp": hm, "be": bm, "hp_iso_requests": len(iso), "hp_iso_p50_ms": pct(iso, .5),
             "hp_iso_p99_ms": pct(iso, .99), "be_iso_steps_per_s": be_iso_sps, "runs": []}
        lines.append(f"{hm} + {bm}: HP alone p50 {r['hp_iso_p50_ms']:.3f} ms p99 {r['hp_iso_p99_ms']:.3f} ms "
                     f"({len(iso)} requests), BE alone {be_iso_sps:.2f} steps/s")
        # The shim's cost, no BE work: each step against no shim, two
        # interleaved rounds pooled.
        def pooled(name):
            return lat(f"{run}/{hm}.{name}1.lat")[0] + lat(f"{run}/{hm}.{name}2.lat")[0]
        base = pooled("noshim_alone")
        if base:
            r["shim_overhead"] = {}
            lines.append(f"  no BE work, same load: no shim p50 {pct(base, .5):.3f} ms p99 {pct(base, .99):.3f} ms")
            for name, what in (("observe_alone", "shim observing"), ("disconnected_alone", "HP client, no daemon"),
                               ("shim_alone", "HP client + daemon")):
                a = pooled(name)
                if not a:
                    continue
                o = {"p50_added_pct": 100 * (pct(a, .5) / pct(base, .5) - 1),
                     "p99_added_pct": 100 * (pct(a, .99) / pct(base, .99) - 1), "requests": len(a)}
                r["shim_overhead"][name] = o
                lines.append(f"    {what:22} p50 {pct(a, .5):.3f} ms ({o['p50_added_pct']:+.2f}%) "
                             f"p99 {pct(a, .99):.3f} ms ({o['p99_added_pct']:+.2f}%)")
        iso99 = r["hp_iso_p99_ms"]
        lines.append(f"  {'p':>5} {'policy':13} {'HP p99 ms':>9} {'p99/iso':>7} {'%>p':>6} "
                     f"{'BE st/s':>8} {'BE/iso':>6} {'savings':>7}")
        for p in ps:
            for pol in ("none", "mps-priority", "orion", f"mosaic-{p:g}"):
                ms, _ = lat(f"{run}/{hm}.{pol}.lat")
                be = last_json(f"{run}/{hm}.{pol}.be.json")
                if not ms:
                    continue
                sps = be["steps_per_s"] if be else 0.0
                row = {"p": p, "policy": pol.split("-1")[0] if pol.startswith("mosaic") else pol,
                       "requests": len(ms), "hp_p99_ms": pct(ms, .99), "hp_p50_ms": pct(ms, .5),
                       "hp_p99_slowdown": pct(ms, .99) / iso99,
                       "over_p_pct": 100.0 * sum(x > p * iso99 for x in ms) / len(ms),
                       "be_steps_per_s": sps, "be_vs_isolated": sps / be_iso_sps if be_iso_sps else 0.0}
                row["cost_savings"] = 2 * row["be_vs_isolated"]
                r["runs"].append(row)
                lines.append(f"  {p:5.2f} {row['policy']:13} {row['hp_p99_ms']:9.3f} "
                             f"{row['hp_p99_slowdown']:7.2f} {row['over_p_pct']:6.1f} {sps:8.2f} "
                             f"{row['be_vs_isolated']:6.2f} {row['cost_savings']:7.2f}")
        ms, ts = lat(f"{run}/{hm}.fault.lat")
        if ms:
            f = {"requests": len(ms), "over_1.25_pct": 100.0 * sum(x > 1.25 * iso99 for x in ms) / len(ms)}
            try:
                kill = float(open(f"{run}/{hm}.fault.kill").read())
                restart = float(open(f"{run}/{hm}.fault.restart").read())
                f["kill_to_restart_s"] = restart - kill
                if ts[0] is not None:
                    near = [x for x, t in zip(ms, ts) if kill - 0.5 <= t <= restart + 2.0]
                    f["requests_near_fault"] = len(near)
                    f["near_fault_over_1.25"] = sum(x > 1.25 * iso99 for x in near)
                    f["near_fault_max_ms"] = max(near) if near else None
                steps = [float(x) for x in open(f"{run}/{hm}.fault.steps")] if os.path.exists(
                    f"{run}/{hm}.fault.steps") else []
                after = [t for t in steps if t > restart]
                if after:
                    f["be_first_step_after_restart_s"] = after[0] - restart
            except (OSError, ValueError):
                pass
            r["fault"] = f
            lines.append("  fault (daemon SIGKILL, restart 2 s later, mosaic p=1.25): " +
                         ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in f.items()))
        res["pairs"].append(r)
    with open(os.path.join(out, "results.json"), "w") as fh:  # moved up by the script
        json.dump(res, fh, indent=1)
        fh.write("\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
