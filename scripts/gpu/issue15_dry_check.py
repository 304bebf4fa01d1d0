#!/usr/bin/env python3
"""The checks of scripts/gpu/issue15_dry_test.sh on what
scripts/gpu/issue15_services.sh left (see that script for what each
asserts and why the answers are known):

  issue15_dry_check.py dry|gpu-path|budget OUT_DIR [RC]
Prints "ok: ..." lines, or one "FAIL: ..." line per problem and exits 1."""
import glob
import json
import os
import sys

T = "resnet50+resnet18_train"


def load_and_fault(pair):
    """Both modes: the isolated runs made the load asked for (LOAD 0.5: the
    summary scores no pair otherwise), every co-run has its busy fraction,
    and the fault run's kill fell among requests being served: at least one
    HP request overlapped the kill-restart gap (the 2026-12-02 H200 call
    had none), BE stepped again after the restart."""
    bad = []
    if pair.get("not_scored"):
        bad.append(f"not scored: {pair['not_scored']}")
    busy = pair.get("hp_iso_busy") or [None]
    if any(b is None or abs(b - 0.5) > 0.1 for b in busy):
        bad.append(f"isolated busy fractions {busy}, not 0.5 +- 0.1")
    if any(r.get("hp_busy") is None for r in pair["runs"]):
        bad.append("a co-run without its busy fraction")
    f = pair.get("fault") or {}
    # The kill is cued by the 100th measured request (FAULT_AT), the
    # pre-roll's not counted: at least 100 measured requests ended before it.
    if f.get("requests_before_kill", 0) < 100:
        bad.append(f"fault: {f.get('requests_before_kill')} measured requests before the kill, not FAULT_AT 100 "
                   "(did --touch-after count the pre-roll?)")
    if not f.get("requests_in_gap"):
        bad.append(f"fault: no HP request in the kill-restart gap: {f}")
    if "be_first_step_after_restart_s" not in f:
        bad.append(f"fault: no BE step after the restart: {f}")
    if not bad:
        print(f"ok: HP busy {', '.join(f'{b:.3f}' for b in busy)} alone; fault: {f['requests_in_gap']} requests "
              f"in the {f['kill_to_restart_s']:.2f} s gap (max {f.get('in_gap_max_ms', 0):.1f} ms), BE stepped "
              f"{f['be_first_step_after_restart_s']:.3f} s after the restart")
    return bad


def preroll(run, res, pair, want):
    """Both modes: every HP run made the pre-roll and measured only its
    REQUESTS (60): the co-runs' JSON says preroll and 60 requests, their
    latency files hold 60 lines; the keys count the pre-roll among the
    start-up requests (replay's warm-up); results.json records it; a
    MosaicSched co-run has its transient (BE's first step after HP's
    first request)."""
    bad = []
    if res.get("preroll") != want:
        bad.append(f"results.json preroll {res.get('preroll')}, not {want}")
    for tag in ("resnet50.iso1", f"{T}.none", f"{T}.mosaic-1.25", f"{T}.fault", "resnet50.rec_hp"):
        j = [json.loads(x) for x in open(os.path.join(run, f"{tag}.hp.json")) if x.startswith("{")] \
            if os.path.exists(os.path.join(run, f"{tag}.hp.json")) else []
        if not j or j[-1].get("preroll", want) != want:
            bad.append(f"{tag}: the HP service's JSON does not say preroll {want}: {j[-1:] or 'no JSON'}")
        n = sum(1 for _ in open(os.path.join(run, f"{tag}.lat"))) if os.path.exists(os.path.join(run, f"{tag}.lat")) else 0
        if tag != f"{T}.fault" and n != 60:
            bad.append(f"{tag}: {n} measured latencies, not the 60 REQUESTS (the pre-roll recorded?)")
    k = pair.get("hp_kernels") or {}
    if k.get("preroll_requests") != want or k.get("startup_requests", 0) < want:
        bad.append(f"keys: the pre-roll not among the start-up requests: {k}")
    rows = {(r["policy"], r["p"]): r for r in pair["runs"]}
    m = rows.get(("mosaic", 1.25)) or {}
    if m.get("be_first_step_ms") is None:
        bad.append(f"mosaic-1.25: no transient (BE's first step after HP's first request): {m}")
    if not bad:
        print(f"ok: pre-roll {want} in every HP run checked; transient under mosaic {m['be_first_step_ms']:.1f} ms, "
              f"none {(rows.get(('none', 1.25)) or {}).get('be_first_step_ms')}")
    return bad


def gpu_path(d, run, res, pair, rc):
    bad = load_and_fault(pair) + preroll(run, res, pair, 20)
    rows = {r["policy"]: r for r in pair["runs"]}
    for pol in ("none", "mps-priority", "orion", "static", "mosaic"):
        if pol not in rows:
            bad.append(f"no {pol} row")
        elif rows[pol]["be_rate_over"] != "steps within the HP service's measured requests":
            bad.append(f"{pol}: BE counted over {rows[pol]['be_rate_over']}")
    # Co-runs start HP beside the BE job (CORUN_START=parallel): each HP
    # service waited for its BE job's ready file before measuring.
    for pol in ("none", "mps-priority", "orion", "static", "mosaic-1.25", "fault"):
        j = [json.loads(x) for x in open(os.path.join(run, f"{T}.{pol}.hp.json")) if x.startswith("{")] \
            if os.path.exists(os.path.join(run, f"{T}.{pol}.hp.json")) else []
        if not j or j[-1].get("waited_for_after_s") is None:
            bad.append(f"{pol}: the HP service did not wait for the BE job (parallel start): {j[-1:] or 'no JSON'}")
    if pair.get("hp_kernels", {}).get("keys_written") != 3:
        bad.append(f"keys: {pair.get('hp_kernels')}")
    if "tuned" not in rows and not os.path.exists(os.path.join(run, f"{T}.tune-1.25.err")):
        bad.append("neither a tuned row nor tune's reason")
    logs = sorted(glob.glob(os.path.join(run, f"{T}.tune-1.25.keep", "t*.hp.log")))
    waits = {}
    for l in logs:
        t = os.path.basename(l).split(".")[0]
        j = [json.loads(x) for x in open(l) if x.startswith("{")]
        waits[t] = (j[-1].get("waited_for_after_s") if j else "no JSON",
                    os.path.exists(os.path.join(os.path.dirname(l), f"{t}.be.log")))
    if not waits:
        bad.append("no tune trial logs kept")
    for t, (w, with_be) in waits.items():
        if with_be and w is None:
            bad.append(f"tune trial {t} (with BE) did not wait for the BE job")
        if not with_be and w is not None:
            bad.append(f"tune trial {t} (isolated) waited for a BE job: {w}")
    if not all("real" in r for r in pair.get("replay") or [{}]):
        bad.append("replay rows without their real runs")
    if not bad:
        print(f"ok: gpu path: tune trial waits {waits}")
    return bad


def dry(d, run, res, pair, rc):
    bad = load_and_fault(pair) + preroll(run, res, pair, 20)
    rows = {(r["policy"], r["p"]): r for r in pair["runs"]}
    # The HP kernels from the trace: the three convolutions, in order.
    want = ["_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
            "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
            "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192"]
    keys = [l.strip() for l in open(os.path.join(run, "resnet50.hp.keys")) if not l.startswith("#")]
    if keys != want:
        bad.append(f"hp.keys {keys}")
    # The static split.
    st = rows.get(("static", 1.25))
    if not st or st.get("split") != "HP on 120 SMs, BE on 12":
        bad.append(f"static row {st}")
    # tune's pick follows its rule, and the tuned run used it.
    tj = os.path.join(run, f"{T}.tune-1.25.json")
    if os.path.exists(tj):
        t = json.load(open(tj))
        ok = [c for c in t["candidates"] if c.get("ran") and c["over_p_pct"] <= 1.0]
        chosen = [c for c in t["candidates"] if c.get("chosen")]
        if len(chosen) != 1 or not ok or chosen[0]["be_kernels_per_s"] != max(c["be_kernels_per_s"] for c in ok):
            bad.append(f"tune's pick breaks its rule: {t['candidates']}")
        elif ("tuned", 1.25) not in rows:
            bad.append("no tuned row after a tune that chose")
        else:
            mode = chosen[0]["sm_mode"]
            conf = open(os.path.join(run, f"{T}.tune-1.25.conf")).read()
            if f"\nsm-mode {mode}\n" not in conf:
                bad.append(f"the tuned config does not say sm-mode {mode}")
            beside = chosen[0].get("beside_hp")
            if f"\nbeside-hp {beside}\n" not in conf:
                bad.append(f"the tuned config does not say beside-hp {beside}")
            log = open(os.path.join(run, f"{T}.tuned-1.25.daemon.log")).read()
            if mode == "partition" and "sm-mode partition" not in log:
                bad.append("the tuned daemon did not run the partition tune chose")
            print(f"ok: tune chose {chosen[0]['candidate']}")
    else:
        err = open(os.path.join(run, f"{T}.tune-1.25.err")).read()
        if "no candidate kept at most 1%" not in err or ("tuned", 1.25) in rows:
            bad.append(f"tune gave no report: {err[-300:]}")
        else:
            print("ok: tune refused (no candidate within p on this machine), no tuned row")
    # Replay: 60 requests counted in each, none's p99 above mosaic's.
    rp = {r["policy"]: r["replay"] for r in pair.get("replay") or []}
    if sorted(rp) != ["mosaic", "mps-priority", "none", "orion"]:
        bad.append(f"replays: {sorted(rp)}")
    elif any(r["hp_requests"] != 60 for r in rp.values()):
        bad.append(f"replay request counts {[r['hp_requests'] for r in rp.values()]}, not 60")
    elif not rp["none"]["hp_p99_ms"] > rp["mosaic"]["hp_p99_ms"]:
        bad.append(f"replay ranks none ({rp['none']['hp_p99_ms']}) not above mosaic ({rp['mosaic']['hp_p99_ms']})")
    if not all(("real" in r) for r in pair["replay"]):
        bad.append("a replay row without its real run")
    # The model policies' BE time by where it ran: a mosaic row counts the
    # units it followed, and its alone time is within its observed time.
    for (pol, p), r in rows.items():
        if pol != "mosaic":
            continue
        bt = r.get("be_time") or {}
        done = sum(x["units"] for x in bt.values())
        if not done or any(x["units"] and not 0 < x["alone"] <= x["observed"] * 1.5 for x in bt.values()):
            bad.append(f"mosaic p={p:g}: BE time by where it ran {bt}")
    # Costs.
    c = res.get("costs") or {}
    for k in ("hp_launch_connected_added_ns", "be_grant_host_hold_us", "be_grant_device_gate_us", "decision_ns"):
        if k not in c:
            bad.append(f"costs lack {k}")
    if "fault" not in pair:
        bad.append("no fault run")
    if res["missing"]:
        bad.append(f"missing: {res['missing']}")
    ph = {p["phase"] for p in res["phases"]}
    if ph != {"iso", "overhead", "policies", "static", "tune", "replay", "fault", "costs"}:
        bad.append(f"phase times for {sorted(ph)}")
    return bad


def budget(d, run, res, pair, rc):
    bad = []
    sk = res.get("skipped_for_budget", [])
    if rc != 0:
        bad.append(f"exit status {rc}")
    if "resnet50+resnet18_train.none" not in sk or "resnet50+resnet18_train.mosaic-1.25" not in sk:
        bad.append(f"skipped: {sk}")
    if res["pairs"][0]["runs"]:
        bad.append(f"co-runs ran over the budget: {[r['policy'] for r in res['pairs'][0]['runs']]}")
    if not os.path.exists(os.path.join(d, "run.tgz")) or "skipped (the call's time budget" not in open(os.path.join(d, "summary.txt")).read():
        bad.append("no archive, or the summary does not say what was skipped")
    if not bad:
        print(f"ok: budget: {len(sk)} runs skipped and named")
    return bad


def main():
    mode, d = sys.argv[1], sys.argv[2]
    rc = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    try:
        res = json.load(open(os.path.join(d, "results.json")))
    except (OSError, ValueError) as e:
        print(f"FAIL: {mode}: no results.json from the harness: {e}")
        sys.exit(1)
    check = {"dry": dry, "gpu-path": gpu_path, "budget": budget}[mode]
    bad = check(d, os.path.join(d, "run"), res, res["pairs"][0], rc)
    for b in bad:
        print(f"FAIL: {mode}: {b}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
