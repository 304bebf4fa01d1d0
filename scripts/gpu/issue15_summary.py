#!/usr/bin/env python3
"""Summarise scripts/gpu/issue15_services.sh's runs: RUNDIR PAIRS PS [PHASES [PAIR_PHASES]].

Per HP:BE pair: the isolated HP p50/p99 (two runs pooled) and BE steps/s
(and samples/s); the shim's cost with no BE work (under the daemon with
policy none, against no shim, same load); per policy and p: HP p99 /
isolated p99, % of requests over p x isolated p99, BE throughput against
isolated and the cost savings as issue 15 defines them (2 x colocated BE
throughput / isolated BE throughput). The p-independent policies (none,
mps-priority, orion, static) ran once and are scored against every p;
mosaic-P and tuned-P (the mode `mosaic-sched tune` chose at P) only at P.
Then: tune's candidates per p; replay against the real runs (HP p99, % over
p, BE steps/s, with the error of the trivial answer "no interference"
beside replay's); the fault run; the targets of issue 15 with the paper's
numbers; the wall time of each phase. Files are named as the script names
them: HP alone by the HP model (resnet50.iso1.lat), BE alone by the BE model
(resnet18_train.be_iso.json), co-runs by the pair (resnet50+resnet18_train.
none.lat). A run of PHASES whose files are missing is left out of the table
and listed under "missing", so a call cut short still reports what it
measured and says what it did not.
Writes RUNDIR/results.json (schema mosaic-issue15/2); prints the tables."""
import glob
import json
import os
import re
import sys

# Issue 15's targets and the paper's numbers (DESIGN.md, "Numbers to beat").
TARGET_OVER_P_PCT = 0.5        # MosaicSched: at most this % of HP requests over p
PAPER_OVER_P_PCT = 1.0         # MosaicSched in the paper (one case 1.2%)
PAPER_SAVINGS = (1.12, 1.31)   # mean cost savings per BE job at p = 1.6
MEETS_P_PCT = 1.0              # a baseline meets p when its HP p99 is within p
# hold-be (BE held while an HP request is in flight, admitted between
# requests: the trivial answer, and the daemon's default policy) is scored
# as a baseline when a call runs it (BASELINES="... hold-be").
BASELINES = ("none", "mps-priority", "orion", "static", "hold-be")


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
    except (OSError, ValueError):
        pass
    return ms, ts


def last_json(path):
    try:
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def whole_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def metrics(path):
    """The daemon's counters at the end of a run: name{labels} -> value."""
    m = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("mosaic_") and " " in line:
                    k, v = line.rsplit(" ", 1)
                    try:
                        m[k] = float(v)
                    except ValueError:
                        pass
    except OSError:
        pass
    return m


def pct(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.999999) - 1))] if s else float("nan")


def diff_pct(a, b):
    return 100.0 * (a - b) / b if b else float("nan")


def be_rate(j):
    """(steps/s, samples/s or None) of a svc_be / be_trainer JSON line."""
    if not j:
        return 0.0, None
    return j.get("steps_per_s", 0.0), j.get("samples_per_s")


def static_split(path):
    """'HP on N SMs, BE on M' from a static daemon's log, or None."""
    try:
        with open(path) as f:
            for line in f:
                i = line.find("policy static: HP on ")
                if i >= 0:
                    return line[i + len("policy static: "):].split(":")[0].strip()
    except OSError:
        pass
    return None


def lines_of(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip()]
    except OSError:
        return []


def numbers(path):
    try:
        with open(path) as f:
            return [float(l.split()[0]) for l in f if l.strip()]
    except (OSError, ValueError):
        return []


def be_in_window(run, tag, be):
    """BE steps/s while the HP service made its measured requests (from the
    first request's start to the last one's end): each BE step (from the
    previous step's end to its own) counts with the share of it that lies
    in that window, so a step that spans the whole window counts as the
    fraction of it the window holds (a BE job held through the window gets
    about 0, not the rate of its whole run), over the part of the window
    the steps cover; scaled to samples/s by the job's batch. The BE job's
    own rate covers its whole run, HP's start-up included (seconds of it
    for a PyTorch service), so it is only the fallback, when no steps were
    logged or they cover under half the window. Clocks: svc_hp's start
    times and svc_be's --steps-log are Unix s; hp_service's --times and
    be_trainer's --step-times (DRY=sim) are CLOCK_MONOTONIC ms. Returns
    (steps/s, samples/s, method)."""
    sps, samples = be_rate(be)
    steps = sorted(numbers(f"{run}/{tag}.steps"))
    t = []
    try:
        with open(f"{run}/{tag}.times") as f:  # hp_service: start_ms latency_ms
            t = [(float(a) / 1e3, float(b) / 1e3) for a, b in (l.split()[:2] for l in f if l.strip())]
        steps = [x / 1e3 for x in steps]
    except (OSError, ValueError):
        ms, ts = lat(f"{run}/{tag}.lat")
        if ms and ts and ts[0] is not None:
            t = [(a, b / 1e3) for a, b in zip(ts, ms)]
        # svc_be's ready file (Unix s, its mtime) begins the first step: with
        # co-runs started in parallel a BE job held from its start through
        # the window has no step end before the window, and its first step
        # is the one that spans it (seen on the fake GPU path, 2026-12-02).
        try:
            ready = os.path.getmtime(f"{run}/{tag}.ready")
            if steps and ready < steps[0]:
                steps = [ready] + steps
        except OSError:
            pass
    if not t or len(steps) < 2:
        return sps, samples, "the BE job's whole run"
    w0, w1 = t[0][0], t[-1][0] + t[-1][1]
    covered = max(0.0, min(steps[-1], w1) - max(steps[0], w0))
    if w1 <= w0 or covered < 0.5 * (w1 - w0):
        return sps, samples, "the BE job's whole run"
    done = sum(max(0.0, min(b, w1) - max(a, w0)) / (b - a) for a, b in zip(steps, steps[1:]) if b > a)
    rate = done / covered
    batch = (samples / sps) if samples and sps else None
    return rate, (rate * batch if batch is not None else None), "steps within the HP service's measured requests"


def starts(run, tag):
    """(latencies ms, starts in s) of a run: hp_service's --times (DRY=sim:
    CLOCK_MONOTONIC ms) or svc_hp's --latencies (Unix s); starts None when
    the file has none."""
    try:
        with open(f"{run}/{tag}.times") as f:
            rows = [l.split()[:2] for l in f if l.strip()]
        return [float(b) for a, b in rows], [float(a) / 1e3 for a, b in rows]
    except (OSError, ValueError):
        ms, ts = lat(f"{run}/{tag}.lat")
        return ms, (ts if ts and ts[0] is not None else None)


def busy_fraction(ms, ts):
    """The share of a run's measured window (the first request's start to
    the last one's end) that a request was in flight: the load the HP
    service made. None without start times."""
    if not ms or not ts:
        return None
    window = ts[-1] + ms[-1] / 1e3 - ts[0]
    return sum(ms) / 1e3 / window if window > 0 else None


def load_of(run):
    """(LOAD, tolerance, arrivals, where from) of the call: run/load.txt,
    which issue15_services.sh writes; ISSUE15_LOAD for a call made before
    it existed; (None, ...) when neither says: busy fractions are then
    reported but not checked."""
    kv = {}
    try:
        with open(f"{run}/load.txt") as f:
            kv = dict(l.split(None, 1) for l in f if len(l.split()) == 2)
    except (OSError, ValueError):
        pass
    if "load" in kv:
        return float(kv["load"]), float(kv.get("tolerance", 0.1)), kv.get("arrivals", "periodic").strip(), "load.txt"
    if os.environ.get("ISSUE15_LOAD"):
        return (float(os.environ["ISSUE15_LOAD"]), float(os.environ.get("LOAD_TOL", 0.1)), "periodic",
                "ISSUE15_LOAD")
    return None, None, None, None


def load_refusal(run, hm, load, tol):
    """Why the pair's isolated HP runs do not stand for LOAD, or None: each
    run's busy fraction must be within tol of LOAD, or the load every score
    is made at is not the one named (the 0.4 x median period of the
    2026-12-02 calls was shorter than a request: HP alone was busy 0.999)."""
    out = []
    for i in (1, 2):
        ms, ts = starts(run, f"{hm}.iso{i}")
        b = busy_fraction(ms, ts)
        if b is None:
            out.append(f"{hm}.iso{i} has no request start times: its busy fraction cannot be measured")
        elif abs(b - load) > tol:
            period = ""
            try:
                with open(f"{run}/{hm}.gap_ms") as f:
                    period = f" at a period of {float(f.read()):.3f} ms"
            except (OSError, ValueError):
                pass
            out.append(f"{hm}.iso{i} was busy {b:.3f} of its window{period} (median request "
                       f"{pct(ms, .5):.3f} ms), not LOAD {load:g} +- {tol:g}")
    if not out:
        return None
    return ("; ".join(out) + ". Fix: requests must arrive every (isolated median / LOAD) ms "
            "(issue15_services.sh sets the period so from its back-to-back iso0 run); re-run the iso "
            "phase, or summarise with the LOAD the runs were made at (ISSUE15_LOAD, LOAD_TOL)")


def preroll_of(run):
    """The pre-roll requests each HP run made before its measured ones
    (run/load.txt's "preroll"; None for a call from before PREROLL)."""
    try:
        with open(f"{run}/load.txt") as f:
            for line in f:
                k, _, v = line.partition(" ")
                if k == "preroll":
                    return int(v)
    except (OSError, ValueError):
        pass
    return None


def trust_transient_ms(run, tag):
    """The co-run's transient, which the pre-roll keeps out of the measured
    window: from the HP service's first request (the first pre-roll
    request; the first measured one without a pre-roll) to the end of the
    first BE step begun after it (its previous step's end at or after that
    request), ms. Under MosaicSched it is the daemon's learning of the
    request before it trusts it; under no control about one step. The step
    in flight at the first request is not counted, since its kernels may
    all be on the GPU already. Clocks: svc_hp's first_request_unix and
    svc_be's steps are Unix s; hp_service's first_start_ms and
    be_trainer's --step-times (DRY=sim) CLOCK_MONOTONIC ms. None when the
    run has no first request time or no such step."""
    hp = last_json(f"{run}/{tag}.hp.json") or {}
    steps = sorted(numbers(f"{run}/{tag}.steps"))
    if hp.get("first_request_unix") is not None:
        first = hp["first_request_unix"]
    elif hp.get("first_start_ms") is not None:
        first, steps = hp["first_start_ms"] / 1e3, [x / 1e3 for x in steps]
    else:
        return None
    for a, b in zip(steps, steps[1:]):
        if a >= first:
            return 1e3 * (b - first)
    return None


def score(run, tag, p, iso99, be_iso_sps, ms, pol):
    be = last_json(f"{run}/{tag}.be.json")
    sps, samples, how = be_in_window(run, tag, be)
    row = {"p": p, "policy": pol, "requests": len(ms), "hp_p99_ms": pct(ms, .99),
           "hp_p50_ms": pct(ms, .5), "hp_p99_slowdown": pct(ms, .99) / iso99,
           "over_p_pct": 100.0 * sum(x > p * iso99 for x in ms) / len(ms),
           "be_steps_per_s": sps, "be_samples_per_s": samples, "be_rate_over": how,
           "be_run_steps_per_s": be_rate(be)[0],
           "be_vs_isolated": sps / be_iso_sps if be_iso_sps else 0.0}
    row["cost_savings"] = 2 * row["be_vs_isolated"]
    row["hp_busy"] = busy_fraction(*starts(run, tag))
    row["be_first_step_ms"] = trust_transient_ms(run, tag)
    row["meets_p"] = row["over_p_pct"] <= MEETS_P_PCT
    met = metrics(f"{run}/{tag}.metrics.txt")
    row["decisions"] = {k.split('"')[1]: v for k, v in met.items()
                        if k.startswith("mosaic_policy_decisions_total{")}
    row["admissions"] = {k.split('"')[1]: v for k, v in met.items()
                         if k.startswith("mosaic_admissions_total{")}
    if met:
        # The daemon's own count of HP requests that ended, against the
        # service's: far fewer means the daemon did not see the requests'
        # ends (one request open for the whole run holds BE beside it: the
        # 2026-12-02 H200 calls had 0, docs/services-eval.md).
        row["daemon_hp_request_ends"] = met.get("mosaic_hp_request_duration_seconds_count")
        row["be_held_s"] = met.get("mosaic_be_held_seconds_total")
        row["be_time"] = be_time(met)
        row["policy_held_s"] = {f"{r.group(1)},{r.group(2)}": v for k, v in met.items()
                                for r in [re.match(r'mosaic_policy_held_seconds_total\{reason="([a-z_]+)",'
                                                   r'hp="([a-z_]+)"\}', k)] if r and v > 0}
    if pol == "static":
        row["split"] = static_split(f"{run}/{tag}.daemon.log")
    return row


def be_time(met):
    """The model policies' BE units by where they ran (beside an HP request
    or apart), with their summed alone, predicted and observed seconds."""
    out = {}
    for where in ("beside", "apart"):
        u = met.get(f'mosaic_policy_be_units_total{{hp="{where}"}}')
        if u is not None:
            out[where] = {"units": u, **{k: met.get(f'mosaic_policy_be_seconds_total{{hp="{where}",time="{k}"}}')
                                         for k in ("alone", "predicted", "observed")}}
    return out or None


def be_time_lines(rows, first_p, lines):
    """Per model-policy run: BE work (alone seconds) per wall second beside
    HP and apart, and observed over predicted wall time (the slowdown the
    policy admitted BE on, checked)."""
    for row in rows:
        bt = row.get("be_time")
        if not bt or (not row["policy"].startswith(("mosaic", "tuned")) and row["p"] != first_p):
            continue
        parts = []
        for where, x in bt.items():
            if not x["units"] or not x["observed"]:
                parts.append(f"{where} 0 units")
                continue
            parts.append(f"{where} {x['units']:.0f} units, alone {x['alone']:.3f} s in {x['observed']:.3f} s "
                         f"(work/wall {x['alone'] / x['observed']:.2f}, observed/predicted "
                         f"{x['observed'] / x['predicted'] if x['predicted'] else float('nan'):.2f})")
        held = ", ".join(f"{k} {v:.3f} s" for k, v in sorted(row.get("policy_held_s", {}).items()))
        lines.append(f"    BE p={row['p']:g} {row['policy']}: {'; '.join(parts)}"
                     + (f"; held {held}" if held else ""))


def tune_report(run, T, p, lines):
    t = whole_json(f"{run}/{T}.tune-{p:g}.json")
    if not t:
        err = ""
        try:
            with open(f"{run}/{T}.tune-{p:g}.err") as f:
                err = " ".join(l.strip() for l in f if l.strip())[-300:]
        except OSError:
            pass
        if err:
            lines.append(f"  tune p={p:g}: FAILED: {err}")
            return {"p": p, "failed": err}
        return None
    chosen = [c for c in t["candidates"] if c.get("chosen")]
    pick = chosen[0]["candidate"] if chosen else None
    lines.append(f"  tune p={p:g}: HP alone span p99 {t['hp_isolated_p99_ms']:.3f} ms "
                 f"(runs {', '.join(f'{x:.3f}' for x in t['hp_isolated_p99_ms_runs'])}); chosen: {pick}")
    for c in t["candidates"]:
        if c.get("ran"):
            lines.append(f"    {c['candidate']:14} pred {c['predicted_hp_slowdown']:.3f} "
                         f"{c['hp_requests']:4d} req p99 {c['hp_p99_ms']:8.3f} ms "
                         f"{c['over_p_pct']:5.1f}% over  BE {c['be_kernels_per_s']:9.1f} kernels/s"
                         f"{'  <- chosen' if c.get('chosen') else ''}")
        else:
            why = "discarded by prediction" if c.get("discarded") else c.get("failed", "not run")
            lines.append(f"    {c['candidate']:14} pred {c['predicted_hp_slowdown']:.3f} {why[:120]}")
    return {"p": p, "chosen": pick, "chosen_mode": chosen[0]["sm_mode"] if chosen else None,
            "chosen_hp_sms": chosen[0]["hp_sms"] if chosen else None, "report": t}


def replay_rows(run, T, hm, bm, ps, real, iso99, be_iso_sps, lines):
    """Replay beside the real runs of the same call; None when not replayed."""
    out = []
    for p in ps:
        for pol in ("none", "mps-priority", "orion", "mosaic"):
            rp = whole_json(f"{run}/{T}.replay-{pol}-{p:g}.json")
            if not rp:
                continue
            r = real.get((p, pol))
            row = {"p": p, "policy": pol, "replay": rp}
            if r:
                row["real"] = {k: r[k] for k in ("hp_p99_ms", "over_p_pct", "be_steps_per_s")}
                row["hp_p99_diff_pct"] = diff_pct(rp["hp_p99_ms"], r["hp_p99_ms"])
                row["be_diff_pct"] = diff_pct(rp["be_steps_per_s"], r["be_steps_per_s"])
                row["over_p_diff_points"] = rp["over_p_pct"] - r["over_p_pct"]
                # The floor: "no interference", i.e. HP at its isolated p99 and
                # BE at its isolated speed, as the real run of the same call had.
                row["floor_hp_p99_diff_pct"] = diff_pct(iso99, r["hp_p99_ms"])
                row["floor_be_diff_pct"] = diff_pct(be_iso_sps, r["be_steps_per_s"])
            out.append(row)
    if not out:
        return None
    lines.append(f"  replay (mosaic-sched replay of {hm} alone and {bm} alone, recorded under the "
                 "shim) against the real runs; floor = no interference (isolated numbers)")
    # How replay read the traces (replay.c since 2026-12-03): the BE step it
    # found and HP's isolated p99 without the warm-up.
    rp0 = out[0]["replay"]
    if "be_step_found" in rp0:
        how = (f"{rp0['be_step_kernels']} kernels after {rp0['be_step_prefix_kernels']} start-up "
               f"kernels, {rp0['be_step_full_periods']} full steps and a partial one of "
               f"{rp0['be_step_tail_kernels']} kernels recorded"
               if rp0["be_step_found"] == "period" else
               f"none repeats: the whole recording ({rp0['be_step_kernels']} kernels) is one step")
        lines.append(f"  replay's BE step: {how}; HP isolated p99 by the trace "
                     f"{rp0['hp_isolated_p99_ms']:.3f} ms (GPU span {rp0['hp_gpu_isolated_p99_ms']:.3f}), "
                     f"BE alone by the trace {rp0['be_isolated_steps_per_s']:.2f} steps/s")
    lines.append(f"  {'p':>5} {'policy':13} {'p99 real':>8} {'replay':>8} {'diff':>7} {'floor':>7} "
                 f"{'%>p real':>8} {'replay':>6} {'BE real':>8} {'replay':>8} {'diff':>7} {'floor':>7}")
    for row in out:
        rp = row["replay"]
        if "real" not in row:
            lines.append(f"  {row['p']:5.2f} {row['policy']:13} {'-':>8} {rp['hp_p99_ms']:8.3f} {'':>7} {'':>7} "
                         f"{'-':>8} {rp['over_p_pct']:6.1f} {'-':>8} {rp['be_steps_per_s']:8.2f}")
            continue
        r = row["real"]
        lines.append(f"  {row['p']:5.2f} {row['policy']:13} {r['hp_p99_ms']:8.3f} {rp['hp_p99_ms']:8.3f} "
                     f"{row['hp_p99_diff_pct']:+6.1f}% {row['floor_hp_p99_diff_pct']:+6.1f}% "
                     f"{r['over_p_pct']:8.1f} {rp['over_p_pct']:6.1f} {r['be_steps_per_s']:8.2f} "
                     f"{rp['be_steps_per_s']:8.2f} {row['be_diff_pct']:+6.1f}% {row['floor_be_diff_pct']:+6.1f}%")
    cmp_rows = [r for r in out if "real" in r]
    if cmp_rows:
        def within(k):
            return sum(abs(r[k]) <= 10.0 for r in cmp_rows)
        lines.append(f"  replay within 10%: HP p99 {within('hp_p99_diff_pct')}/{len(cmp_rows)} (floor "
                     f"{within('floor_hp_p99_diff_pct')}), BE {within('be_diff_pct')}/{len(cmp_rows)} "
                     f"(floor {within('floor_be_diff_pct')})")
    return out


def fault_report(run, T, iso99, lines, p=1.25):
    """The fault run: the daemon SIGKILLed once the HP service had ended
    FAULT_AT measured requests, restarted FAULT_GAP_S later. The HP
    requests whose latency overlapped the kill-restart gap (start before
    the restart, end after the kill) and their latencies against p x the
    isolated p99; the requests of the second after the restart; BE's first
    step after the restart. No request in the gap makes the run say
    nothing about HP under a fault: said (not_informative), and listed as
    missing. Clocks: svc_hp's starts, svc_be's steps and the kill stamps
    are Unix s; hp_service's --times and be_trainer's --step-times
    (DRY=sim) are CLOCK_MONOTONIC ms, moved to Unix time by the offset the
    script read beside them (T.fault.clock)."""
    tag = f"{T}.fault"
    ms, ts = starts(run, tag)
    if not ms:
        return None
    limit = p * iso99
    f = {"requests": len(ms), f"over_{p:g}_pct": 100.0 * sum(x > limit for x in ms) / len(ms)}
    mono = os.path.exists(f"{run}/{tag}.times")
    off = 0.0
    if mono:
        try:
            with open(f"{run}/{tag}.clock") as fh:
                off = float(fh.read())
        except (OSError, ValueError):
            off = None
    try:
        with open(f"{run}/{tag}.fault_err") as fh:
            f["fault_error"] = fh.read().strip()
    except OSError:
        pass
    try:
        kill, restart = numbers(f"{run}/{tag}.kill")[0], numbers(f"{run}/{tag}.restart")[0]
    except IndexError:
        kill = restart = None
    if kill is not None and ts and off is not None:
        f["kill_to_restart_s"] = restart - kill
        ts = [t + off for t in ts]
        f["requests_before_kill"] = sum(t + x / 1e3 <= kill for x, t in zip(ms, ts))
        gap = [x for x, t in zip(ms, ts) if t < restart and t + x / 1e3 > kill]
        f["requests_in_gap"] = len(gap)
        if gap:
            f["in_gap_p50_ms"] = pct(gap, .5)
            f["in_gap_max_ms"] = max(gap)
            f["in_gap_max_vs_iso_p99"] = max(gap) / iso99
            f[f"in_gap_over_{p:g}"] = sum(x > limit for x in gap)
        after = [x for x, t in zip(ms, ts) if restart <= t < restart + 1.0]
        f["requests_1s_after_restart"] = len(after)
        f[f"after_restart_over_{p:g}"] = sum(x > limit for x in after)
        f["not_informative"] = not gap
        steps = numbers(f"{run}/{tag}.steps")
        if mono:
            steps = [x / 1e3 + off for x in steps]
        f["be_steps_in_gap"] = sum(kill < t <= restart for t in steps)
        later = [t for t in steps if t > restart]
        if later:
            f["be_first_step_after_restart_s"] = later[0] - restart
    lines.append(f"  fault (daemon SIGKILL while serving, restart {f.get('kill_to_restart_s', float('nan')):.2f} s "
                 f"later, mosaic p={p:g}): " +
                 ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in f.items()
                           if k != "kill_to_restart_s"))
    if f.get("not_informative", True):
        lines.append("  fault: NOT INFORMATIVE for HP: no HP request was in flight between the kill and the "
                     "restart (FAULT_AT after the run's end, or the kill not made: fault_error). Fix: FAULT_AT "
                     "under the run's requests, FAULT_REQUESTS enough to serve through FAULT_GAP_S")
    return f


def targets(res, ps, lines):
    """Issue 15's targets over every pair and p, MosaicSched = the tuned row
    where tune ran, else mosaic at p (both are checked separately too)."""
    t = {"over_p_target_pct": TARGET_OVER_P_PCT, "paper_over_p_pct": PAPER_OVER_P_PCT,
         "paper_savings_p1.6": list(PAPER_SAVINGS), "meets_p_rule": f"<= {MEETS_P_PCT}% over p",
         "checks": []}
    savings16 = []
    for r in res["pairs"]:
        for p in ps:
            rows = {x["policy"]: x for x in r["runs"] if x["p"] == p}
            ms = rows.get("tuned") or rows.get("mosaic")
            if not ms:
                continue
            base = [x for k, x in rows.items() if k in BASELINES and x["meets_p"]]
            best = max(base, key=lambda x: x["be_steps_per_s"]) if base else None
            c = {"pair": f"{r['hp']}:{r['be']}", "p": p, "mosaic_row": ms["policy"],
                 "over_p_pct": ms["over_p_pct"], "over_p_met": ms["over_p_pct"] <= TARGET_OVER_P_PCT,
                 "be_steps_per_s": ms["be_steps_per_s"], "be_vs_isolated": ms["be_vs_isolated"],
                 "best_baseline": best["policy"] if best else None,
                 "best_baseline_be_steps_per_s": best["be_steps_per_s"] if best else None,
                 # No baseline meets p: the floor is holding BE (0 steps/s).
                 "be_met": ms["be_steps_per_s"] >= (best["be_steps_per_s"] if best else 0.0),
                 "cost_savings": ms["cost_savings"]}
            t["checks"].append(c)
            if abs(p - 1.6) < 1e-9:
                savings16.append(ms["cost_savings"])
    ok1 = [c for c in t["checks"] if c["over_p_met"]]
    ok2 = [c for c in t["checks"] if c["be_met"]]
    t["over_p_met"] = f"{len(ok1)}/{len(t['checks'])}"
    t["be_met"] = f"{len(ok2)}/{len(t['checks'])}"
    t["mean_savings_p1.6"] = sum(savings16) / len(savings16) if savings16 else None
    lines.append("targets (MosaicSched = the tuned row where tune ran, else mosaic at p; a baseline "
                 f"meets p with <= {MEETS_P_PCT:g}% of requests over p):")
    for c in t["checks"]:
        lines.append(f"  {c['pair']:34} p {c['p']:4.2f} {c['mosaic_row']:6}: {c['over_p_pct']:5.1f}% over p "
                     f"({'met' if c['over_p_met'] else 'MISSED'} <= {TARGET_OVER_P_PCT}%), BE "
                     f"{c['be_steps_per_s']:.2f} steps/s ({c['be_vs_isolated']:.3f} of alone) vs best baseline meeting p "
                     f"{c['best_baseline'] or 'none (floor: BE held, 0)'}"
                     f"{'' if c['best_baseline_be_steps_per_s'] is None else ' %.2f' % c['best_baseline_be_steps_per_s']}"
                     f" ({'met' if c['be_met'] else 'MISSED'})")
    lines.append(f"  <= {TARGET_OVER_P_PCT}% over p: {t['over_p_met']}; BE >= best baseline meeting p: "
                 f"{t['be_met']}; mean cost savings at p = 1.6: "
                 f"{'not run' if t['mean_savings_p1.6'] is None else '%.2f' % t['mean_savings_p1.6']} "
                 f"(paper {PAPER_SAVINGS[0]}-{PAPER_SAVINGS[1]}; floor: BE held = 0, uncontrolled "
                 "sharing's own row above)")
    return t


def costs_report(run, lines):
    """The costs phase: tests/arbiter/bench_arbiter.sh's output (HP launch,
    BE grant round trip, admission decision, one run) and issue10_gate.sh's
    device wake on the same host; None when the phase did not run."""
    try:
        with open(f"{run}/costs.bench.out") as f:
            text = f.read().splitlines()
    except OSError:
        return None
    c = {"source": "tests/arbiter/bench_arbiter.sh"}
    for line in text:
        if line.startswith("{"):
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("bench") == "hp_launch_connected_vs_observe":
                c["hp_launch_connected_added_ns"] = {"median": j["median_ns"], "p99": j["p99_ns"],
                                                     "pairs": j["pairs"]}
            elif j.get("bench") == "launch_ab" and "driver" not in c:
                c["driver"] = j.get("target")
                c["hp_launch_observe_added_ns"] = {"median": j["median_paired_diff_ns"],
                                                   "direct_ns": j["direct_ns"]}
            continue
        m = re.search(r"BE grant round trip, (host hold|device gate).*: p50 ([0-9.]+) us, p99 ([0-9.]+) us", line)
        if m:
            c["be_grant_" + m.group(1).replace(" ", "_") + "_us"] = {"p50": float(m.group(2)),
                                                                     "p99": float(m.group(3))}
        m = re.search(r"mosaic admission decision.*: p50 ([0-9.]+) ns, p99 ([0-9.]+) ns", line)
        if m:
            c["decision_ns"] = {"p50": float(m.group(1)), "p99": float(m.group(2))}
    try:
        with open(f"{run}/costs_gate/results.jsonl") as f:
            for line in f:
                j = json.loads(line)
                if j.get("run") in ("wake", "wake_mps") and j.get("probe") == "wake":
                    c["device_wake_" + j["run"] + "_us"] = {"p50": j.get("rt_write_us_p50"),
                                                            "p99": j.get("rt_write_us_p99")}
    except (OSError, ValueError):
        pass
    hp = c.get("hp_launch_connected_added_ns")
    lines.append(f"costs on this host, one run ({c.get('driver', '?')}):")
    if hp:
        lines.append(f"  HP launch, connected HP client over observe-only: median {hp['median']:+.1f} ns, "
                     f"p99 {hp['p99']:+.1f} ns ({hp['pairs']} paired rounds of 256 launches)")
    for k, what in (("be_grant_host_hold_us", "BE grant round trip, host hold"),
                    ("be_grant_device_gate_us", "BE grant round trip, device gate (host side)"),
                    ("device_wake_wake_us", "device: host write -> cuStreamWaitValue32 passes"),
                    ("device_wake_wake_mps_us", "device, under MPS: the same")):
        v = c.get(k)
        if v and v.get("p50") is not None:
            ratio = f", p50 {1e3 * v['p50'] / hp['median']:.0f}x the HP launch's added median" \
                if hp and hp["median"] > 0 else ""
            lines.append(f"  {what}: p50 {v['p50']:.2f} us, p99 {v['p99']:.2f} us{ratio}")
    d = c.get("decision_ns")
    if d:
        lines.append(f"  admission decision (policy mosaic, warm cache): p50 {d['p50']:.0f} ns, p99 {d['p99']:.0f} ns")
    return c


def failed_runs(run, T, ps):
    """The co-runs that ended without a row because their BE job died
    (issue15_services.sh's TAG.failed: "BE died before its ready file (exit
    status N): the last line of its stderr"): {(policy, p): reason}, the
    p-independent runs at every p."""
    out = {}
    for tag in ("none", "mps-priority", "orion", "static", "fault") + \
            tuple(f"{k}-{p:g}" for p in ps for k in ("mosaic", "tuned")):
        why = " ".join(lines_of(f"{run}/{T}.{tag}.failed"))
        if not why:
            continue
        if tag.startswith(("mosaic-", "tuned-")):
            out[(tag.rsplit("-", 1)[0], float(tag.rsplit("-", 1)[1]))] = why
        else:
            out.update({(tag, p): why for p in ps})
    return out


def missing(T, ps, want, r):
    """The runs PHASES asked for that left no scored row or report; a run
    whose BE died says so and why."""
    have = {(x["policy"], x["p"]) for x in r["runs"]}
    failed = r.get("failed") or {}
    out = []
    def need(pol, p, phase):
        if (pol, p) not in have:
            why = failed.get(f"{pol} p={p:g}")
            out.append(f"{T} {pol} p={p:g} ({phase}){': ' + why if why else ''}")
    # BASELINES (the script's, in the environment): the baselines the call
    # ran in phase policies; a call that leaves one out does not miss it.
    base = os.environ.get("BASELINES", "none mps-priority orion").split()
    for p in ps:
        if "policies" in want:
            for pol in base + ["mosaic"]:
                need(pol, p, "policies")
        if "static" in want:
            need("static", p, "static")
        # TUNE_PS (the script's, in the environment): the p's tuned.
        tune_ps = [float(x) for x in os.environ.get("TUNE_PS", "").split()] or ps
        if "tune" in want and any(abs(p - t) < 1e-9 for t in tune_ps):
            need("tuned", p, "tune")
        if "replay" in want and not any(x["p"] == p for x in r.get("replay") or []):
            out.append(f"{T} replay p={p:g} (replay)")
    if "bealone" in want and not r.get("bealone"):
        out.append(f"{T} BE alone under a daemon (bealone)")
    if "fault" in want and "fault" not in r:
        why = failed.get("fault p=1.25")
        out.append(f"{T} fault run (fault){': ' + why if why else ''}")
    elif "fault" in want and r["fault"].get("not_informative", True):
        out.append(f"{T} fault: no HP request in the kill-restart gap (fault)")
    return out


def phases(run, lines):
    out = []
    try:
        with open(f"{run}/phases.tsv") as f:
            for line in f:
                pair, ph, s = line.rstrip("\n").split("\t")
                out.append({"pair": pair, "phase": ph, "seconds": int(s)})
    except (OSError, ValueError):
        pass
    if out:
        lines.append("phase wall times (s): " + ", ".join(f"{o['pair']} {o['phase']} {o['seconds']}"
                                                          for o in out) +
                     f"; total {sum(o['seconds'] for o in out)}")
    return out


def bealone_report(run, bm, be_iso_sps, lines):
    """BE alone under a daemon of each policy (phase bealone), against BE
    alone without shim or daemon: the gate's and the decisions' cost to BE
    when no HP client is there to protect."""
    rows = []
    for path in sorted(glob.glob(f"{run}/{bm}.bealone-*.be.json")):
        pol = path[len(f"{run}/{bm}.bealone-"):-len(".be.json")]
        sps, _ = be_rate(last_json(path))
        m = metrics(f"{run}/{bm}.bealone-{pol}.metrics.txt")
        held = {}
        for k, v in m.items():
            r = re.match(r'mosaic_policy_held_seconds_total\{reason="([a-z_]+)"', k)
            if r and v > 0:
                held[r.group(1)] = held.get(r.group(1), 0.0) + v
        rows.append({"policy": pol, "be_steps_per_s": sps,
                     "be_vs_isolated": sps / be_iso_sps if be_iso_sps == be_iso_sps and be_iso_sps else None,
                     "gated_grants": m.get("mosaic_be_gated_grants_total"), "held_s": held if m else None})
    if rows:
        lines.append(f"  BE {bm} alone under a daemon, no HP client (phase bealone; alone without one "
                     f"{be_iso_sps:.2f} steps/s):")
        for x in rows:
            lines.append(f"    {x['policy']:13} {x['be_steps_per_s']:8.2f} steps/s "
                         f"{'-' if x['be_vs_isolated'] is None else '%.3f' % x['be_vs_isolated']} of alone, "
                         f"gated grants {'-' if x['gated_grants'] is None else '%.0f' % x['gated_grants']}, "
                         f"held {'-' if x['held_s'] is None else ', '.join(f'{k} {v:.3f} s' for k, v in sorted(x['held_s'].items())) or '0 s'}")
    return rows


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: issue15_summary.py RUNDIR PAIRS PS [PHASES [PAIR_PHASES]]")
    run, pairs, ps = sys.argv[1], sys.argv[2].split(), [float(x) for x in sys.argv[3].split()]
    want = set(sys.argv[4].split()) if len(sys.argv) > 4 else set()
    # PAIR_PHASES ("HP:BE=word,word ..."): one pair's phases beside PHASES.
    pair_want = {}
    for e in (sys.argv[5].split() if len(sys.argv) > 5 else []):
        pr, _, ws = e.partition("=")
        pair_want.setdefault(pr, set()).update(w for w in ws.split(",") if w)
    res = {"schema": "mosaic-issue15/2", "pairs": [], "missing": []}
    lines = []
    try:  # the script's env.txt, beside the run directory
        with open(os.path.join(run, "..", "env.txt")) as f:
            env = f.read()
        res["env"] = env.strip().splitlines()[:4]
        res["simulated"] = "DRY=sim" in env
    except OSError:
        res["simulated"] = None
    if res["simulated"]:
        lines.append("DRY=sim: the simulated GPU and the C demo programs; nothing here is a GPU measurement")
    load, tol, arrivals, load_from = load_of(run)
    res["load"] = {"load": load, "tolerance": tol, "arrivals": arrivals, "from": load_from}
    if load is None:
        lines.append("HP load: not recorded (no run/load.txt: a call before LOAD; ISSUE15_LOAD=L checks it): "
                     "busy fractions reported, not checked")
    else:
        lines.append(f"HP load: {load:g} of the time a request in flight, {arrivals} arrivals "
                     f"(from {load_from}); a pair whose isolated runs were busy outside {load:g} +- {tol:g} "
                     "is not scored")
    res["preroll"] = preroll_of(run)
    if res["preroll"] is None:
        lines.append("pre-roll: not recorded (a call before PREROLL): the measured windows began with the "
                     "HP service's first request")
    else:
        lines.append(f"pre-roll: every HP run made {res['preroll']} requests at its arrival schedule before its "
                     "measured ones (not measured: the window is the steady state); 'BE 1st ms': from HP's "
                     "first request to the end of the first BE step begun after it (the transient)")
    dargs = lines_of(f"{run}/daemon_args.txt")
    if dargs:
        res["daemon_args"] = " ".join(dargs)
        lines.append(f"every daemon of this call ran with {res['daemon_args']} (DAEMON_ARGS)")
    reused = lines_of(f"{run}/reused.txt")
    if reused:
        res["reused"] = reused
        iso_reused = [x for x in reused if ".iso" in x or x.endswith(".be_iso.json")]
        lines.append(f"reused from a previous call (REUSE): {len(reused)} files"
                     + (f"; the isolated runs too ({', '.join(iso_reused)}): scores divide by another "
                        "call's numbers" if iso_reused else ""))
    for pair in pairs:
        hm, bm = pair.split(":")
        T = f"{hm}+{bm}"
        iso = lat(f"{run}/{hm}.iso1.lat")[0] + lat(f"{run}/{hm}.iso2.lat")[0]
        be_iso = last_json(f"{run}/{bm}.be_iso.json")
        be_iso_sps, be_iso_samples = be_rate(be_iso)
        if not be_iso:
            be_iso_sps = float("nan")
        r = {"hp": hm, "be": bm, "hp_iso_requests": len(iso), "hp_iso_p50_ms": pct(iso, .5),
             "hp_iso_p99_ms": pct(iso, .99), "be_iso_steps_per_s": be_iso_sps,
             "be_iso_samples_per_s": be_iso_samples, "runs": []}
        ba = bealone_report(run, bm, be_iso_sps, lines)
        if ba:
            r["bealone"] = ba
        if not iso:
            res["missing"].append(f"{hm}: HP alone (phase iso): no score of this pair can be made")
            lines.append(f"{hm} + {bm}: no isolated HP runs (phase iso) in this call: nothing scored")
            res["pairs"].append(r)
            continue
        r["hp_iso_busy"] = [busy_fraction(*starts(run, f"{hm}.iso{i}")) for i in (1, 2)]
        busy_txt = ", ".join("-" if b is None else f"{b:.3f}" for b in r["hp_iso_busy"])
        lines.append(f"{hm} + {bm}: HP alone p50 {r['hp_iso_p50_ms']:.3f} ms p99 {r['hp_iso_p99_ms']:.3f} ms "
                     f"({len(iso)} requests, busy {busy_txt}), BE alone {be_iso_sps:.2f} steps/s"
                     f"{'' if be_iso_samples is None else ' (%.1f samples/s)' % be_iso_samples}")
        why = load_refusal(run, hm, load, tol) if load is not None else None
        if why:
            r["not_scored"] = why
            res["missing"].append(f"{T}: not scored: {why}")
            lines.append(f"  NOT SCORED: {why}")
            res["pairs"].append(r)
            continue
        keys = whole_json(f"{run}/{hm}.keys.json")
        if keys:
            r["hp_kernels"] = keys
            pre = keys.get("preroll_requests")
            lines.append(f"  HP request: {keys['request_kernels']} kernels ({keys['unprofiled_kernels']} "
                         f"without a profile), {keys['startup_requests']} start-up requests before the "
                         f"measured ones{f' ({pre} of them the pre-roll)' if pre else ''} (from the recorded trace)")

        def pooled(name):
            return lat(f"{run}/{hm}.{name}1.lat")[0] + lat(f"{run}/{hm}.{name}2.lat")[0]
        base = pooled("noshim_alone")
        if base:
            r["shim_overhead"] = {}
            lines.append(f"  no BE work, same load: no shim p50 {pct(base, .5):.3f} ms p99 {pct(base, .99):.3f} ms")
            for name, what in (("observe_alone", "shim observing"), ("disconnected_alone", "HP client, no daemon"),
                               ("shim_alone", "HP client + daemon"),
                               ("shim_oldmode_alone", "HP client + daemon, as before 12-02")):
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
                     f"{'BE st/s':>8} {'BE/iso':>6} {'savings':>7} {'HP busy':>7} {'BE 1st ms':>9}")
        real = {}
        for p in ps:
            for pol in ("none", "mps-priority", "orion", "hold-be", "static", f"mosaic-{p:g}", f"tuned-{p:g}"):
                name = pol.rsplit("-", 1)[0] if pol.startswith(("mosaic-", "tuned-")) else pol
                ms, _ = lat(f"{run}/{T}.{pol}.lat")
                if not ms:
                    continue
                row = score(run, f"{T}.{pol}", p, iso99, be_iso_sps, ms, name)
                r["runs"].append(row)
                real[(p, name)] = row
                extra = f"  {row['split']}" if row.get("split") else ""
                died = " ".join(lines_of(f"{run}/{T}.{pol}.be_died"))
                if died:
                    row["be_died"] = died
                    extra += f"  [{died}: BE numbers cover only its life]"
                ends = row.get("daemon_hp_request_ends")
                if ends is not None and ends < 0.9 * row["requests"]:
                    extra += (f"  [the daemon saw {ends:.0f} HP request ends of {row['requests']}: "
                              "requests not delimited]")
                lines.append(f"  {p:5.2f} {row['policy']:13} {row['hp_p99_ms']:9.3f} "
                             f"{row['hp_p99_slowdown']:7.2f} {row['over_p_pct']:6.1f} {row['be_steps_per_s']:8.2f} "
                             f"{row['be_vs_isolated']:6.2f} {row['cost_savings']:7.2f} "
                             f"{'-' if row['hp_busy'] is None else '%.3f' % row['hp_busy']:>7} "
                             f"{'-' if row['be_first_step_ms'] is None else '%.1f' % row['be_first_step_ms']:>9}{extra}")
        be_time_lines(r["runs"], ps[0], lines)
        # Runs ended early because their BE job died: no row, the reason.
        failed = failed_runs(run, T, ps)
        if failed:
            r["failed"] = {f"{pol} p={p:g}": why for (pol, p), why in failed.items()}
            for (pol, p), why in sorted(failed.items()):
                lines.append(f"  {p:5.2f} {pol:13} FAILED: {why}")
        tunes = [t for t in (tune_report(run, T, p, lines) for p in ps) if t]
        if tunes:
            r["tune"] = tunes
            for row in r["runs"]:
                if row["policy"] == "tuned":
                    t = [x for x in tunes if x["p"] == row["p"] and x.get("chosen")]
                    row["mode"] = t[0]["chosen"] if t else None
        rp = replay_rows(run, T, hm, bm, ps, real, iso99, be_iso_sps, lines)
        if rp:
            r["replay"] = rp
        f = fault_report(run, T, iso99, lines)
        if f:
            r["fault"] = f
        res["missing"] += missing(T, ps, want | pair_want.get(pair, set()), r)
        res["pairs"].append(r)
    costs = costs_report(run, lines)
    if costs:
        res["costs"] = costs
    res["targets"] = targets(res, ps, lines)
    res["phases"] = phases(run, lines)
    skipped = lines_of(f"{run}/skipped.txt")
    if skipped:
        res["skipped_for_budget"] = skipped
        lines.append("skipped (the call's time budget, BUDGET_S): " + ", ".join(skipped))
    if res["missing"]:
        lines.append("missing: " + "; ".join(res["missing"]))
    with open(os.path.join(run, "results.json"), "w") as fh:  # moved up by the script
        json.dump(res, fh, indent=1)
        fh.write("\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
