#!/usr/bin/env python3
"""Tests of issue15_summary.py, issue15_keys.py and issue15_plot.py on
synthetic run files in the shape scripts/gpu/issue15_services.sh leaves
(no GPU needed). Every expected number below is worked out by hand from the
synthetic latencies, not by the code under test.

  python3 scripts/gpu/issue15_summary_test.py
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import issue15_summary as S  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def lat(path, values):
    write(path, "".join(f"{v:.4f} {1000.0 + i:.6f}\n" for i, v in enumerate(values)))


def be(path, sps):
    write(path, json.dumps({"program": "svc_be", "steps_per_s": sps, "samples_per_s": 64 * sps}) + "\n")


def run_summary(d, pairs, ps, phases):
    old = sys.argv
    sys.argv = ["issue15_summary.py", d, pairs, ps, phases]
    out = io.StringIO()
    try:
        with redirect_stdout(out):
            S.main()
    finally:
        sys.argv = old
    with open(os.path.join(d, "results.json")) as f:
        return json.load(f), out.getvalue()


class Synthetic(unittest.TestCase):
    """One pair h:b at p = 1.25 and 1.6. HP alone: 100 requests, 99 at 10 ms
    and one at 11 ms, so the p99 (the 99th of 100 sorted) is 10.0 ms and a
    request is over p when above 12.5 ms (1.25) or 16 ms (1.6). BE alone
    100 steps/s."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.d = self.tmp.name
        lat(f"{d}/h.iso1.lat", [10.0] * 50)
        lat(f"{d}/h.iso2.lat", [10.0] * 49 + [11.0])
        be(f"{d}/b.be_iso.json", 100.0)
        T = f"{d}/h+b"
        lat(f"{T}.none.lat", [20.0] * 100)                  # 2.0x, all over
        be(f"{T}.none.be.json", 90.0)
        # BE steps every 0.25 s from 990 to 1110 (Unix s); HP requests start
        # at 1000 + i, the last ends at 1099.02: 397 steps end inside, from
        # 1000.0 to 1099.0, so 396 steps in 99 s, 4.0 steps/s (not the 90 of
        # the job's whole run), 256 samples/s at the job's batch of 64.
        write(f"{T}.none.steps", "".join(f"{990 + 0.25 * i:.6f}\n" for i in range(481)))
        lat(f"{T}.orion.lat", [10.0] * 100)                 # meets p, BE 50
        be(f"{T}.orion.be.json", 50.0)
        lat(f"{T}.static.lat", [10.0] * 98 + [13.0] * 2)     # 2% over 12.5, 0% over 16
        be(f"{T}.static.be.json", 70.0)
        write(f"{T}.static.daemon.log", "mosaic-sched info: policy static: HP on 120 SMs, BE on 12: "
              "HP's isolated slowdown there 1.107x\n")
        lat(f"{T}.mosaic-1.25.lat", [10.0] * 100)
        be(f"{T}.mosaic-1.25.be.json", 60.0)
        lat(f"{T}.tuned-1.25.lat", [10.0] * 99 + [12.6])    # 1% over 12.5: the target missed
        be(f"{T}.tuned-1.25.be.json", 45.0)                 # under orion's 50: missed
        # One BE step spanning the whole window (900 to 1200 s): the window
        # holds 99.0126 s of its 300 s, so 1/300 steps/s, not the job's 45.
        write(f"{T}.tuned-1.25.steps", "900.0\n1200.0\n")
        lat(f"{T}.mosaic-1.6.lat", [12.0] * 100)            # 0% over 16; BE 80 > static's 70
        be(f"{T}.mosaic-1.6.be.json", 80.0)
        write(f"{T}.tune-1.25.json", json.dumps({
            "schema": "mosaic-tune/1", "slo": 1.25, "hp_isolated_p99_ms": 10.0,
            "hp_isolated_p99_ms_runs": [10.5, 10.0],
            "candidates": [
                {"candidate": "full", "sm_mode": "full", "hp_sms": 0, "predicted_hp_slowdown": 1.0,
                 "discarded": False, "ran": True, "hp_requests": 100, "hp_p99_ms": 11.0,
                 "over_p_pct": 2.0, "be_kernels_per_s": 900.0, "chosen": False},
                {"candidate": "partition 96", "sm_mode": "partition", "hp_sms": 96,
                 "predicted_hp_slowdown": 1.05, "discarded": False, "ran": True, "hp_requests": 100,
                 "hp_p99_ms": 10.4, "over_p_pct": 0.0, "be_kernels_per_s": 700.0, "chosen": True},
                {"candidate": "partition 64", "sm_mode": "partition", "hp_sms": 64,
                 "predicted_hp_slowdown": 1.4, "discarded": True, "ran": False, "chosen": False}]}))
        write(f"{d}/phases.tsv", "h+b\tiso\t90\nh+b\tpolicies\t150\n")
        self.res, self.text = run_summary(d, "h:b", "1.25 1.6", "iso policies static tune")

    def tearDown(self):
        self.tmp.cleanup()

    def row(self, pol, p):
        r = [x for x in self.res["pairs"][0]["runs"] if x["policy"] == pol and x["p"] == p]
        self.assertEqual(len(r), 1, f"{pol} at {p}: {r}")
        return r[0]

    def test_isolated(self):
        pr = self.res["pairs"][0]
        self.assertEqual(pr["hp_iso_requests"], 100)
        self.assertEqual(pr["hp_iso_p99_ms"], 10.0)
        self.assertEqual(pr["be_iso_steps_per_s"], 100.0)
        self.assertEqual(pr["be_iso_samples_per_s"], 6400.0)

    def test_rows(self):
        n = self.row("none", 1.25)
        self.assertEqual((n["hp_p99_slowdown"], n["over_p_pct"], n["meets_p"]), (2.0, 100.0, False))
        self.assertAlmostEqual(n["be_steps_per_s"], 4.0)
        self.assertAlmostEqual(n["be_samples_per_s"], 256.0)
        self.assertEqual((n["be_run_steps_per_s"], n["be_rate_over"]),
                         (90.0, "steps within the HP service's measured requests"))
        self.assertAlmostEqual(n["cost_savings"], 0.08)
        self.assertEqual(self.row("orion", 1.25)["be_rate_over"], "the BE job's whole run")
        s = self.row("static", 1.25)
        self.assertEqual((s["over_p_pct"], s["meets_p"], s["split"]), (2.0, False, "HP on 120 SMs, BE on 12"))
        self.assertEqual((self.row("static", 1.6)["over_p_pct"], self.row("static", 1.6)["meets_p"]), (0.0, True))
        t = self.row("tuned", 1.25)
        self.assertEqual((t["over_p_pct"], t["mode"]), (1.0, "partition 96"))
        self.assertAlmostEqual(t["be_steps_per_s"], 1 / 300)
        self.assertEqual(t["be_run_steps_per_s"], 45.0)
        self.assertEqual(self.row("mosaic", 1.6)["hp_p99_slowdown"], 1.2)
        # mosaic-1.25 is scored only at 1.25, tuned only where tune ran.
        self.assertFalse([x for x in self.res["pairs"][0]["runs"] if x["policy"] == "tuned" and x["p"] == 1.6])

    def test_targets(self):
        t = self.res["targets"]
        c = {x["p"]: x for x in t["checks"]}
        # At 1.25 the tuned row stands for MosaicSched: 1% over (> 0.5%) and
        # 45 steps/s under orion's 50 (static does not meet 1.25): both missed.
        self.assertEqual((c[1.25]["mosaic_row"], c[1.25]["over_p_met"], c[1.25]["be_met"]), ("tuned", False, False))
        self.assertEqual(c[1.25]["best_baseline"], "orion")
        # At 1.6 mosaic (no tune there): 0% over; 80 against static's 70.
        self.assertEqual((c[1.6]["mosaic_row"], c[1.6]["over_p_met"], c[1.6]["be_met"]), ("mosaic", True, True))
        self.assertEqual(c[1.6]["best_baseline"], "static")
        self.assertEqual((t["over_p_met"], t["be_met"]), ("1/2", "1/2"))
        self.assertAlmostEqual(t["mean_savings_p1.6"], 1.6)
        self.assertIn("MISSED", self.text)

    def test_missing_and_phases(self):
        m = self.res["missing"]
        self.assertIn("h+b mps-priority p=1.25 (policies)", m)
        self.assertIn("h+b tuned p=1.6 (tune)", m)
        self.assertNotIn("h+b static p=1.6 (static)", m)
        self.assertEqual([p["seconds"] for p in self.res["phases"]], [90, 150])

    def test_plot(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib not installed: the plot is not checked")
        out = os.path.join(self.d, "plots")
        r = subprocess.run([sys.executable, os.path.join(HERE, "issue15_plot.py"),
                            os.path.join(self.d, "results.json"), out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "issue15_h+b.svg")) as f:
            svg = f.read()
        self.assertIn("<svg", svg)

    def test_plot_refuses_old_schema(self):
        p = os.path.join(self.d, "old.json")
        write(p, json.dumps({"schema": "mosaic-issue15/1", "pairs": []}))
        r = subprocess.run([sys.executable, os.path.join(HERE, "issue15_plot.py"), p, self.d],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not mosaic-issue15/2", r.stderr)


class NoIsolated(unittest.TestCase):
    def test_nothing_scored_and_said(self):
        with tempfile.TemporaryDirectory() as d:
            lat(f"{d}/h+b.none.lat", [20.0] * 10)
            res, text = run_summary(d, "h:b", "1.25", "policies")
            self.assertEqual(res["pairs"][0]["runs"], [])
            self.assertIn("no isolated HP runs", text)
            self.assertTrue(any("HP alone" in m for m in res["missing"]))


def lat_at(path, values, t0, step):
    """A --latencies file whose request i starts at t0 + i * step (Unix s)."""
    write(path, "".join(f"{v:.4f} {t0 + i * step:.6f}\n" for i, v in enumerate(values)))


class Load(unittest.TestCase):
    """The HP load check. HP alone: 50 requests of 10 ms each run. Started
    every 20 ms, a run's window is 49 x 20 + 10 = 990 ms with 500 ms in
    flight: busy 0.505, within 0.5 +- 0.1. Started every 1 s (the
    Synthetic files): busy 500 / 49010 = 0.0102, far from 0.5: the pair is
    not scored, and the summary says which run, its busy fraction and the
    fix. Back to back (every 10 ms): busy 1.0, the 2026-12-02 calls' case."""

    def summarise(self, step, load="load 0.5\narrivals periodic\ntolerance 0.1\n"):
        with tempfile.TemporaryDirectory() as d:
            for i in (1, 2):
                lat_at(f"{d}/h.iso{i}.lat", [10.0] * 50, 1000.0 + 100 * i, step)
            be(f"{d}/b.be_iso.json", 100.0)
            lat_at(f"{d}/h+b.none.lat", [20.0] * 50, 2000.0, 0.04)
            be(f"{d}/h+b.none.be.json", 50.0)
            if load:
                write(f"{d}/load.txt", load)
            return run_summary(d, "h:b", "1.25", "iso policies")

    def test_at_load_scored(self):
        res, text = self.summarise(0.02)
        pr = res["pairs"][0]
        self.assertNotIn("not_scored", pr)
        self.assertAlmostEqual(pr["hp_iso_busy"][0], 500 / 990, places=4)
        # The co-run: 20 ms every 40 ms, window 49 x 40 + 20 = 1980 ms: 1000/1980.
        self.assertAlmostEqual(pr["runs"][0]["hp_busy"], 1000 / 1980, places=4)
        self.assertEqual(res["load"]["load"], 0.5)

    def test_far_from_load_refused(self):
        for step, busy in ((1.0, "0.010"), (0.01, "1.000")):
            res, text = self.summarise(step)
            pr = res["pairs"][0]
            self.assertEqual(pr["runs"], [], f"step {step}: a run at the wrong load was scored")
            self.assertIn(f"h.iso1 was busy {busy} of its window", pr["not_scored"])
            self.assertIn("not LOAD 0.5 +- 0.1", pr["not_scored"])
            self.assertIn("Fix: requests must arrive every (isolated median / LOAD) ms", text)
            self.assertTrue(any("not scored" in m for m in res["missing"]))

    def test_no_load_recorded_not_checked(self):
        res, text = self.summarise(1.0, load=None)
        self.assertEqual(len(res["pairs"][0]["runs"]), 1)
        self.assertIn("busy fractions reported, not checked", text)


class Preroll(unittest.TestCase):
    """PREROLL: load.txt's count in the header and results.json, and the
    transient per co-run. HP's first (pre-roll) request at 1999.5 s (Unix),
    BE steps ending at 1999.4 (in flight at the first request), 1999.8
    (the held step in flight then), 1999.85, 1999.9: the first step begun
    after 1999.5 is the one from 1999.8 to 1999.85, so 350 ms. Under
    DRY=sim the same in hp_service's CLOCK_MONOTONIC ms: first request at
    5000 ms, steps at 4990, 5010, 5030: 30 ms."""

    def test_transient_and_header(self):
        with tempfile.TemporaryDirectory() as d:
            for i in (1, 2):
                lat_at(f"{d}/h.iso{i}.lat", [10.0] * 50, 1000.0 + 100 * i, 0.02)
            be(f"{d}/b.be_iso.json", 100.0)
            lat_at(f"{d}/h+b.none.lat", [20.0] * 50, 2000.0, 0.04)
            be(f"{d}/h+b.none.be.json", 50.0)
            write(f"{d}/h+b.none.hp.json", json.dumps({"program": "svc_hp", "preroll": 100,
                                                       "first_request_unix": 1999.5}) + "\n")
            write(f"{d}/h+b.none.steps", "1999.4\n1999.8\n1999.85\n1999.9\n")
            lat_at(f"{d}/h+b.orion.lat", [20.0] * 50, 2000.0, 0.04)
            be(f"{d}/h+b.orion.be.json", 50.0)
            write(f"{d}/h+b.orion.hp.json", json.dumps({"program": "hp_service", "first_start_ms": 5000.0}) + "\n")
            write(f"{d}/h+b.orion.steps", "4990\n5010\n5030\n")
            # A run whose BE made no step after HP's first request: no number.
            lat_at(f"{d}/h+b.mps-priority.lat", [20.0] * 50, 2000.0, 0.04)
            be(f"{d}/h+b.mps-priority.be.json", 50.0)
            write(f"{d}/h+b.mps-priority.hp.json", json.dumps({"first_request_unix": 1999.5}) + "\n")
            write(f"{d}/h+b.mps-priority.steps", "1999.4\n")
            write(f"{d}/load.txt", "load 0.5\narrivals periodic\ntolerance 0.1\npreroll 100\n")
            res, text = run_summary(d, "h:b", "1.25", "iso")
            rows = {r["policy"]: r for r in res["pairs"][0]["runs"]}
            self.assertAlmostEqual(rows["none"]["be_first_step_ms"], 350.0, places=3)
            self.assertAlmostEqual(rows["orion"]["be_first_step_ms"], 30.0, places=3)
            self.assertIsNone(rows["mps-priority"]["be_first_step_ms"])
            self.assertEqual(res["preroll"], 100)
            self.assertIn("every HP run made 100 requests at its arrival schedule before its measured ones", text)
            self.assertIn("BE 1st ms", text)
            os.remove(f"{d}/load.txt")
            res, text = run_summary(d, "h:b", "1.25", "iso")
            self.assertIsNone(res["preroll"])
            self.assertIn("pre-roll: not recorded", text)


class DeadBE(unittest.TestCase):
    """A co-run whose BE died before its ready file (issue15_services.sh's
    TAG.failed) has no row: the summary names the death at every p for a
    p-independent run, at its own p for mosaic-P, and lists it missing
    with the reason; one whose BE died during the run (TAG.be_died) keeps
    its row, flagged."""

    def test_failed_and_flagged(self):
        with tempfile.TemporaryDirectory() as d:
            for i in (1, 2):
                lat_at(f"{d}/h.iso{i}.lat", [10.0] * 50, 1000.0 + 100 * i, 0.02)
            be(f"{d}/b.be_iso.json", 100.0)
            why = "BE died before its ready file (exit status 1): RuntimeError: CUDA error: cluster misconfiguration"
            write(f"{d}/h+b.static.failed", why + "\n")
            write(f"{d}/h+b.mosaic-1.6.failed", why + "\n")
            lat_at(f"{d}/h+b.none.lat", [20.0] * 50, 2000.0, 0.04)
            be(f"{d}/h+b.none.be.json", 50.0)
            write(f"{d}/h+b.none.be_died", "BE died during the HP service's run (exit status 1): boom\n")
            res, text = run_summary(d, "h:b", "1.25 1.6", "iso policies static")
            pr = res["pairs"][0]
            self.assertEqual(pr["failed"], {"static p=1.25": why, "static p=1.6": why, "mosaic p=1.6": why})
            self.assertIn(f"h+b static p=1.25 (static): {why}", res["missing"])
            self.assertIn(f"h+b mosaic p=1.6 (policies): {why}", res["missing"])
            self.assertIn("h+b mosaic p=1.25 (policies)", res["missing"])
            self.assertIn(f"static        FAILED: {why}", text)
            none = [r for r in pr["runs"] if r["policy"] == "none"]
            self.assertEqual(len(none), 2)
            self.assertTrue(all("boom" in r["be_died"] for r in none))
            self.assertIn("[BE died during the HP service's run (exit status 1): boom: BE numbers cover only its life]", text)


class H200Archive(unittest.TestCase):
    """Session 7's call 3 on the H200 (docs/results/2026-12-02-s7-gpu):
    its period was 0.4 x the median, 0.981 ms against requests of 2.46 ms,
    so HP alone ran back to back. Summarised at the load it claimed
    (ISSUE15_LOAD=0.4) the pair is refused, both isolated runs named with
    busy fractions of 0.999 and 0.998 (hand check: 300 requests of ~2.46
    ms end to end in 0.74 s)."""

    def test_back_to_back_refused(self):
        arc = os.path.join(HERE, "..", "..", "docs", "results", "2026-12-02-s7-gpu", "call3_i15_run.tgz")
        if not os.path.exists(arc):
            self.skipTest(f"{arc} not in this tree")
        import tarfile
        with tempfile.TemporaryDirectory() as d, tarfile.open(arc) as t:
            for n in ("resnet50.iso1.lat", "resnet50.iso2.lat", "resnet50.gap_ms", "resnet18_train.be_iso.json"):
                with open(os.path.join(d, n), "wb") as f:
                    f.write(t.extractfile(f"run/{n}").read())
            old = os.environ.get("ISSUE15_LOAD")
            os.environ["ISSUE15_LOAD"] = "0.4"
            try:
                res, text = run_summary(d, "resnet50:resnet18_train", "1.25", "iso")
            finally:
                if old is None:
                    del os.environ["ISSUE15_LOAD"]
                else:
                    os.environ["ISSUE15_LOAD"] = old
            why = res["pairs"][0]["not_scored"]
            self.assertIn("resnet50.iso1 was busy 0.999 of its window at a period of 0.981 ms", why)
            self.assertIn("resnet50.iso2 was busy 0.998", why)


class Fault(unittest.TestCase):
    """The fault run at p = 1.25 (HP alone p99 10 ms, so over p is > 12.5
    ms): 100 requests started every 20 ms from 1000 s, 10 ms each except
    requests 25-29 at 20 ms. Killed at 1000.495, restarted at 1000.995:
    request i overlaps the gap when it starts before 1000.995 and ends
    after 1000.495, i.e. i = 25..49 (request 24 ends at 1000.49): 25
    requests, 5 of them over p, the largest 2.0x the isolated p99. The
    second after the restart: i = 50..99 start at 1001.00..1001.98, those
    before 1001.995: 50. BE steps end every 0.1 s to 1000.4, then at
    1001.2: none in the gap, the first 0.205 s after the restart."""

    def write_run(self, d, kill, restart):
        lat(f"{d}/h.iso1.lat", [10.0] * 50)
        lat(f"{d}/h.iso2.lat", [10.0] * 50)
        be(f"{d}/b.be_iso.json", 100.0)
        lat_at(f"{d}/h+b.fault.lat", [10.0] * 25 + [20.0] * 5 + [10.0] * 70, 1000.0, 0.02)
        write(f"{d}/h+b.fault.steps", "".join(f"{1000.0 + 0.1 * i:.6f}\n" for i in range(5)) + "1001.2\n")
        write(f"{d}/h+b.fault.kill", f"{kill}\n")
        write(f"{d}/h+b.fault.restart", f"{restart}\n")

    def test_requests_in_gap(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_run(d, 1000.495, 1000.995)
            res, text = run_summary(d, "h:b", "1.25", "iso fault")
            f = res["pairs"][0]["fault"]
            self.assertEqual((f["requests_before_kill"], f["requests_in_gap"], f["in_gap_over_1.25"]), (25, 25, 5))
            self.assertAlmostEqual(f["in_gap_max_vs_iso_p99"], 2.0)
            self.assertEqual((f["requests_1s_after_restart"], f["be_steps_in_gap"]), (50, 0))
            self.assertAlmostEqual(f["be_first_step_after_restart_s"], 0.205, places=6)
            self.assertFalse(f["not_informative"])
            self.assertFalse([m for m in res["missing"] if "fault" in m])

    def test_kill_after_the_requests_said(self):
        # The 2026-12-02 case: the kill after the HP service's last request.
        with tempfile.TemporaryDirectory() as d:
            self.write_run(d, 1003.0, 1005.0)
            res, text = run_summary(d, "h:b", "1.25", "iso fault")
            f = res["pairs"][0]["fault"]
            self.assertEqual(f["requests_in_gap"], 0)
            self.assertTrue(f["not_informative"])
            self.assertIn("NOT INFORMATIVE for HP", text)
            self.assertIn("h+b fault: no HP request in the kill-restart gap (fault)", res["missing"])


def trace(path, reqs, keys):
    """A mosaic-trace/1 file: reqs is a list of kernel-id lists, one per request."""
    lines = [json.dumps({"schema": "mosaic-trace/1", "tool": "test", "t0_ns": "0"})]
    for i, k in keys.items():
        lines.append(json.dumps({"ev": "kernel", "id": i, "key": k}))
    t = 0
    for n, ids in enumerate(reqs):
        lines.append(json.dumps({"ev": "hp_begin", "t": t, "client": 1, "req": n + 1}))
        for i in ids:
            t += 10
            lines.append(json.dumps({"ev": "hp_launch", "t": t, "client": 1, "id": i}))
        t += 10
        lines.append(json.dumps({"ev": "hp_end", "t": t, "client": 1, "req": n + 1}))
    lines.append(json.dumps({"ev": "end", "t": t, "events": len(lines) - 1 - len(keys)}))
    write(path, "\n".join(lines) + "\n")


class Keys(unittest.TestCase):
    def keys(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "issue15_keys.py"), *args],
                              capture_output=True, text=True)

    def test_last_request_and_startup(self):
        with tempfile.TemporaryDirectory() as d:
            ids = {"00000000000000a1": "k_a|grid=1,1,1|block=32,1,1|dsmem=0",
                   "00000000000000b2": "k_b|grid=2,1,1|block=64,1,1|dsmem=0",
                   "00000000000000c3": ""}
            # Two start-up requests (other kernels), then 3 measured ones of
            # a, b, unprofiled c, a.
            step = ["00000000000000a1", "00000000000000b2", "00000000000000c3", "00000000000000a1"]
            trace(f"{d}/t", [["00000000000000b2"], ["00000000000000a1"] * 5] + [step] * 3, ids)
            r = self.keys(f"{d}/t", "3", f"{d}/k")
            self.assertEqual(r.returncode, 0, r.stderr)
            j = json.loads(r.stdout)
            self.assertEqual((j["trace_requests"], j["startup_requests"], j["request_kernels"],
                              j["keys_written"], j["unprofiled_kernels"]), (5, 2, 4, 3, 1))
            with open(f"{d}/k") as f:
                body = [l.strip() for l in f if not l.startswith("#")]
            self.assertEqual(body, [ids[step[0]], ids[step[1]], ids[step[0]]])
            self.assertIn("00000000000000c3", r.stderr)

    def test_preroll_counted_as_startup(self):
        with tempfile.TemporaryDirectory() as d:
            ids = {"00000000000000a1": "k_a|grid=1,1,1|block=32,1,1|dsmem=0",
                   "00000000000000b2": "k_b|grid=2,1,1|block=64,1,1|dsmem=0"}
            # One start-up request (b), two pre-roll and three measured ones
            # (a, a), the last measured one (a, b): the keys are the last
            # request's; replay's warm-up skips the start-up and pre-roll.
            trace(f"{d}/t", [["00000000000000b2"]] + [["00000000000000a1"] * 2] * 4 +
                  [["00000000000000a1", "00000000000000b2"]], ids)
            r = self.keys(f"{d}/t", "3", f"{d}/k", "2")
            self.assertEqual(r.returncode, 0, r.stderr)
            j = json.loads(r.stdout)
            self.assertEqual((j["trace_requests"], j["startup_requests"], j["preroll_requests"]), (6, 3, 2))
            with open(f"{d}/k") as f:
                self.assertEqual([l.strip() for l in f if not l.startswith("#")],
                                 [ids["00000000000000a1"], ids["00000000000000b2"]])
            # Four requests cannot hold two pre-roll and three measured ones.
            trace(f"{d}/t", [["00000000000000a1"]] * 4, ids)
            r = self.keys(f"{d}/t", "3", f"{d}/k2", "2")
            self.assertEqual(r.returncode, 1)
            self.assertIn("4 HP requests recorded, fewer than the 3 the service measured and its 2 "
                          "pre-roll requests", r.stderr)
            r = self.keys(f"{d}/t", "3", f"{d}/k2", "-1")
            self.assertEqual(r.returncode, 1)
            self.assertIn("PREROLL -1", r.stderr)

    def test_refuses_short_trace(self):
        with tempfile.TemporaryDirectory() as d:
            trace(f"{d}/t", [["00000000000000a1"]] * 2, {"00000000000000a1": "k|grid=1,1,1|block=1,1,1|dsmem=0"})
            r = self.keys(f"{d}/t", "3", f"{d}/k")
            self.assertEqual(r.returncode, 1)
            self.assertIn("2 HP requests recorded, fewer than the 3", r.stderr)
            self.assertFalse(os.path.exists(f"{d}/k"))

    def test_refuses_no_profile_and_not_a_trace(self):
        with tempfile.TemporaryDirectory() as d:
            trace(f"{d}/t", [["00000000000000c3"]] * 2, {"00000000000000c3": ""})
            r = self.keys(f"{d}/t", "2", f"{d}/k")
            self.assertEqual(r.returncode, 1)
            self.assertIn("capture the HP service's profile first", r.stderr)
            write(f"{d}/x", '{"schema": "mosaic-tune/1"}\n')
            r = self.keys(f"{d}/x", "2", f"{d}/k")
            self.assertEqual(r.returncode, 1)
            self.assertIn("not a mosaic-trace/1 file", r.stderr)


if __name__ == "__main__":
    unittest.main()
