#!/usr/bin/env python3
"""Tests of issue14_summary.py on synthetic JSONL in the shape mosaic-zoo's
corun-offset and mps-offset write (no GPU needed).

  python3 scripts/gpu/issue14_summary_test.py
"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import issue14_summary as S  # noqa: E402


def one_rec(a, b, order, spec, delay, meas, sa, sb, iso_a=100.0, iso_b=200.0,
            spread=0.02, ok=True, cats=("memory", "compute")):
    """A corun_offset record whose samples give slowdowns sa, sb +- spread."""
    r = {"record": "corun_offset", "ok": ok, "a": a, "b": b, "order": order,
         "leader": "a" if order == "ab" else "b", "delay_spec": spec,
         "category_a": cats[0], "category_b": cats[1]}
    if not ok:
        r["error"] = "synthetic failure"
        return r
    r.update({
        "delay_us": delay, "offset_meas_us": meas, "start_offset_us": meas,
        "iso_sync_a_us": iso_a, "iso_sync_b_us": iso_b,
        "slowdown_sync_a": sa, "slowdown_sync_b": sb,
        "corun_a_samples_us": [iso_a * (sa + d) for d in (-spread, 0, spread)],
        "corun_b_samples_us": [iso_b * (sb + d) for d in (-spread, 0, spread)],
    })
    return r


def mps_pair(a, b, order, spec, delay, meas, sa, sb, iso_a=100.0, iso_b=200.0,
             spread=0.02, prio="0"):
    """Process a's and process b's mps_offset records of one co-run."""
    out = []
    for proc, s, iso, var in (("a", sa, iso_a, a), ("b", sb, iso_b, b)):
        follower = (proc == "b") == (order == "ab")
        r = {"record": "mps_offset", "ok": True, "process": proc, "a": a, "b": b,
             "variant": var, "order": order, "delay_spec": spec,
             "role": "follower" if follower else "leader",
             "category_a": "memory", "category_b": "compute",
             "mps_client_priority": prio if proc == "b" else "0",
             "delay_us": delay, "iso_sync_us": iso, "slowdown_sync": s,
             "corun_samples_us": [iso * (s + d) for d in (-spread, 0, spread)]}
        if follower:
            r["offset_meas_us"] = meas
        out.append(r)
    return out


def write(path, recs):
    with open(path, "w") as f:
        f.write(json.dumps({"record": "meta", "ok": True}) + "\n")
        for r in recs:
            f.write(json.dumps(r) + "\n")
        f.write("{not json\n")
        f.write(json.dumps({"record": "end", "ok": True}) + "\n")


class SummaryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.ds = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_phase_offset_error_and_counts(self):
        # Errors |meas - delay| of 0.5, 1.5 and 3.0 us: median 1.5.
        recs = [one_rec("x", "y", "ab", "0", 0.0, 0.5, 1.1, 1.3),
                one_rec("x", "y", "ab", "10", 10.0, 11.5, 1.2, 1.4),
                one_rec("x", "y", "ba", "10", -10.0, -13.0, 1.0, 1.6),
                one_rec("x", "y", "ba", "0", None, None, 0, 0, ok=False),
                {"record": "error", "ok": False, "error": "no usable GPU"}]
        write(os.path.join(self.ds, "offset_shared.jsonl"), recs)
        s = S.summarise(self.ds)
        p = s["phases"][0]
        self.assertEqual(p["phase"], "offset_shared")
        self.assertEqual((p["ok"], p["failed"]), (3, 2))
        self.assertAlmostEqual(p["offset_err_med_us"], 1.5)
        self.assertAlmostEqual(p["offset_err_p95_us"], 3.0)
        self.assertAlmostEqual(p["slowdown_a_med"], 1.1)
        self.assertAlmostEqual(p["slowdown_b_med"], 1.4)

    def test_by_delay_uses_roles_not_letters(self):
        # Order ba: B leads, so B's slowdown is the leader's.
        recs = [one_rec("x", "y", "ab", "20", 20.0, 20.0, 1.1, 1.9),
                one_rec("x", "y", "ba", "20", -20.0, -20.0, 1.7, 1.3)]
        write(os.path.join(self.ds, "offset_shared.jsonl"), recs)
        d = S.summarise(self.ds)["by_delay_shared"]
        self.assertEqual(len(d), 1)
        self.assertAlmostEqual(d[0]["leader_med"], 1.2)    # 1.1 and 1.3
        self.assertAlmostEqual(d[0]["follower_med"], 1.8)  # 1.9 and 1.7

    def test_join_takes_offset_from_follower(self):
        recs = mps_pair("x", "y", "ba", "5", -5.0, -6.0, 1.2, 1.1)
        rows = S.join_mps([r for r in recs if r["process"] == "a"],
                          [r for r in recs if r["process"] == "b"])
        self.assertEqual(len(rows), 1)
        self.assertTrue(rows[0]["ok"])
        self.assertAlmostEqual(rows[0]["offset_meas_us"], -6.0)
        self.assertAlmostEqual(rows[0]["delay_us"], -5.0)
        self.assertAlmostEqual(rows[0]["slowdown_sync_b"], 1.1)

    def test_half_missing_is_failed(self):
        recs = mps_pair("x", "y", "ab", "0", 0.0, 0.8, 1.2, 1.1)
        rows = S.join_mps([r for r in recs if r["process"] == "a"], [])
        self.assertEqual(len(rows), 1)
        self.assertFalse(rows[0]["ok"])

    def test_one_vs_two_detects_only_planted_differences(self):
        one = [one_rec("p", "q", "ab", "0", 0.0, 0.5, 1.10, 1.50),   # same in MPS
               one_rec("r", "s", "ab", "0", 0.0, 0.5, 1.10, 1.50),   # A differs
               one_rec("t", "u", "ab", "0", 0.0, 0.5, 1.05, 1.60)]   # flips
        write(os.path.join(self.ds, "offset_shared.jsonl"), one)
        two = (mps_pair("p", "q", "ab", "0", 0.0, 0.9, 1.11, 1.49) +
               mps_pair("r", "s", "ab", "0", 0.0, 0.9, 1.40, 1.52) +
               mps_pair("t", "u", "ab", "0", 0.0, 0.9, 1.70, 1.02))
        write(os.path.join(self.ds, "mps_a.jsonl"), [r for r in two if r["process"] == "a"])
        write(os.path.join(self.ds, "mps_b.jsonl"), [r for r in two if r["process"] == "b"])
        c = S.summarise(self.ds)["one_vs_two"]
        self.assertEqual(c["rows_compared"], 3)
        self.assertEqual(c["rows_differing"], 2)
        self.assertEqual({(d["a"], d["kernel"]) for d in c["differing"]},
                         {("r", "a"), ("t", "a"), ("t", "b")})
        self.assertEqual([f["a"] for f in c["flipped"]], ["t"])
        self.assertEqual(c["per_category"]["compute+memory"], {"rows": 3, "differing": 2})

    def test_wide_spread_is_not_a_difference(self):
        write(os.path.join(self.ds, "offset_shared.jsonl"),
              [one_rec("p", "q", "ab", "0", 0.0, 0.5, 1.10, 1.50, spread=0.3)])
        two = mps_pair("p", "q", "ab", "0", 0.0, 0.9, 1.35, 1.50, spread=0.3)
        write(os.path.join(self.ds, "mps_a.jsonl"), [r for r in two if r["process"] == "a"])
        write(os.path.join(self.ds, "mps_b.jsonl"), [r for r in two if r["process"] == "b"])
        c = S.summarise(self.ds)["one_vs_two"]
        self.assertEqual((c["rows_compared"], c["rows_differing"]), (1, 0))

    def test_table_prints_and_exit_status(self):
        write(os.path.join(self.ds, "offset_shared.jsonl"),
              [one_rec("x", "y", "ab", "0", 0.0, 0.5, 1.1, 1.3)])
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = S.main([self.ds])
        self.assertEqual(rc, 0)
        self.assertIn("offset_shared", buf.getvalue())
        empty = tempfile.mkdtemp()
        with redirect_stdout(io.StringIO()):
            self.assertEqual(S.main([empty]), 1)
        os.rmdir(empty)


if __name__ == "__main__":
    unittest.main()
