#!/usr/bin/env python3
"""Tests scripts/gpu/issue14_merge.py on synthetic corun-offset rows (ctest
zoo_offset_merge): a failed row is replaced, missing iso_sync baselines are
filled from the right variant, role and side, untouched lines stay byte for
byte, and files that do not fit together are refused."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MERGE = os.path.join(HERE, "issue14_merge.py")
FAILED = 0


def check(cond, what):
    global FAILED
    if not cond:
        FAILED += 1
        print(f"FAIL: {what}", file=sys.stderr)


def meta(date, git):
    return {"record": "meta", "ok": True, "subcommand": "corun-offset",
            "date_utc": date, "git": git}


def row(a, b, order, spec, mode="partitioned", split=32, ok=True, iso=None,
        co=(200.0, 300.0)):
    """A corun_offset row; iso: {side: value} of the iso_sync medians it
    has (a side left out has none, like the rows of the 2026-12-01 run)."""
    r = {"record": "corun_offset", "ok": ok, "mode": mode,
         "split_requested": split if mode == "partitioned" else None,
         "order": order, "a": a, "b": b, "delay_spec": spec,
         "check_a": "pass", "check_b": "pass"}
    if not ok:
        r["error"] = "5 rounds failed"
        return r
    for s in "ab":
        if iso and s in iso:
            r[f"iso_sync_{s}_us"] = iso[s]
            r[f"iso_sync_{s}_min_us"] = iso[s] - 1
            r[f"iso_sync_{s}_max_us"] = iso[s] + 1
            r[f"iso_sync_{s}_samples_us"] = [iso[s]] * 3
    r["corun_a_us"], r["corun_b_us"] = co
    for s in "ab":
        if f"iso_sync_{s}_us" in r:
            r[f"slowdown_sync_{s}"] = round(r[f"corun_{s}_us"] / iso[s], 4)
    r["start_offset_us"] = 1.0
    return r


def write(path, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


def load(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def run(*args):
    return subprocess.run([sys.executable, MERGE, *args], capture_output=True,
                          text=True)


def test_partitioned(d):
    F, C = "fma_66_b64_c32", "conv_n8_c256_h14_t16"
    com = [meta("2026-12-01T20:20:50Z", "e532ad3"),
           {"record": "stream_check", "ok": True, "label": "a"},
           row(F, C, "ab", "0", ok=False), row(F, C, "ba", "0", ok=False),
           row(F, C, "ab", "1x", ok=False),
           # F is side a here (missing), X's side b is fine.
           row(F, "x", "ab", "0", iso={"b": 50.0}),
           row(F, "x", "ba", "0", iso={"b": 51.0}),
           # C is side b (missing).
           row("y", C, "ab", "0", iso={"a": 40.0}),
           # F as side b: measured in the run, nothing to do.
           row("z", F, "ab", "0", iso={"a": 30.0, "b": 99.0}),
           {"record": "end", "ok": True}]
    # The re-run: the failed pair again; its isolated baselines differ by
    # role so that a role mix-up shows: F leads 170, follows 171; C leads
    # 250, follows 251.
    rer = [meta("2026-12-02T01:00:00Z", "abc1234"),
           row(F, C, "ab", "0", iso={"a": 170.0, "b": 251.0}, co=(180, 260)),
           row(F, C, "ba", "0", iso={"a": 171.0, "b": 250.0}, co=(181, 261)),
           row(F, C, "ab", "1x", ok=False),
           {"record": "end", "ok": True}]
    pc, pr, po = (os.path.join(d, n) for n in ("c.jsonl", "r.jsonl",
                                              "o.jsonl"))
    write(pc, com)
    write(pr, rer)
    # What a re-run must measure: the failed pair gives F on side a and C
    # on side b in both roles, so nothing else is needed.
    p = run("pairs", pc)
    check(p.returncode == 0 and p.stdout == f"{F} {C}\n",
          f"pairs: the failed pair only ({p.stdout!r} {p.stderr})")
    p = run(pc, pr, "-o", po)
    check(p.returncode == 0, f"merge exit 0 (got {p.returncode}: {p.stderr})")
    out = load(po)
    check(len(out) == len(com), "one output line per committed line")
    check(out[2]["ok"] and out[2]["corun_a_us"] == 180, "ab/0 replaced")
    check(out[2]["rerun"] == "2026-12-02T01:00:00Z git abc1234",
          "replaced row says where it came from")
    check(out[3]["ok"] and out[3]["corun_a_us"] == 181, "ba/0 replaced")
    check(not out[4]["ok"] and "rerun" not in out[4],
          "a row that failed again stays as committed")
    # F on side a: leads in ab (170), follows in ba (171).
    check(out[5]["iso_sync_a_us"] == 170.0, "F leading: its leader baseline")
    check(out[6]["iso_sync_a_us"] == 171.0, "F following: its follower one")
    check(out[5]["slowdown_sync_a"] == round(200.0 / 170.0, 4),
          "slowdown_sync_a recomputed from the row's own co-run median")
    check(out[5]["iso_sync_b_us"] == 50.0 and "iso_sync_b_rerun" not in out[5],
          "the side that had its baseline is untouched")
    check(out[5]["iso_sync_a_rerun"].startswith("2026-12-02"),
          "filled side says where it came from")
    check(list(out[5]).index("iso_sync_a_us") ==
          list(out[5]).index("check_a") + 1,
          "iso_sync fields where corun-offset writes them")
    # C on side b follows in ab: 251.
    check(out[7]["iso_sync_b_us"] == 251.0, "C following on side b")
    with open(pc) as f:
        raw_c = f.readlines()
    with open(po) as f:
        raw_o = f.readlines()
    check(raw_o[0] == raw_c[0] and raw_o[1] == raw_c[1] and
          raw_o[8] == raw_c[8] and raw_o[9] == raw_c[9],
          "unchanged lines copied byte for byte")
    check("2 failed rows replaced, 1 still failed" in p.stdout and
          "3 iso_sync sides filled, 0 still missing" in p.stdout,
          f"the report counts what it did: {p.stdout}")

    # A missing baseline no failed pair measures: its row's own pair.
    write(os.path.join(d, "c2.jsonl"),
          com[:2] + [row("q", F, "ab", "0", iso={"a": 1.0})] + com[2:])
    p = run("pairs", os.path.join(d, "c2.jsonl"))
    check(p.stdout == f"{F} {C}\nq {F}\n",
          f"pairs: F on side b needs a pair of its own ({p.stdout!r})")

    # Partitioned: side matters. A re-run that measured F only on side b
    # does not fill F's side-a baseline.
    rer2 = [meta("2026-12-02T01:00:00Z", "abc1234"),
            row(C, F, "ab", "0", iso={"a": 250.0, "b": 171.0}),
            row(C, F, "ba", "0", iso={"a": 251.0, "b": 170.0})]
    write(pr, rer2)
    p = run(pc, pr, "-o", po)
    out = load(po)
    check("iso_sync_a_us" not in out[5] and "iso_sync_a_us" not in out[6],
          "no side-a baseline from side b")

    # Another split: refused, naming both files' configurations.
    write(pr, [meta("x", "y"), row(F, C, "ab", "0", split=64,
                                   iso={"a": 1.0, "b": 1.0})])
    p = run(pc, pr, "-o", po)
    check(p.returncode == 2 and "merge each re-run phase" in p.stderr,
          f"another split refused ({p.returncode}: {p.stderr})")
    # Not a corun-offset file.
    write(pr, [{"record": "meta", "ok": True, "subcommand": "mps-offset"}])
    p = run(pc, pr, "-o", po)
    check(p.returncode == 2 and "corun-offset" in p.stderr,
          "a two-process file refused")


def test_shared(d):
    """Shared mode: one configuration for both sides, as the planner has."""
    F, C = "fma_66_b64_c32", "conv_n8_c256_h14_t16"
    com = [meta("a", "b"),
           row("z", F, "ab", "0", mode="shared", iso={"a": 30.0}),
           row(F, C, "ab", "0", mode="shared", ok=False)]
    rer = [meta("c", "d"),
           row(F, C, "ab", "0", mode="shared", iso={"a": 170.0, "b": 251.0}),
           row(F, C, "ba", "0", mode="shared", iso={"a": 171.0, "b": 250.0})]
    pc, pr = os.path.join(d, "sc.jsonl"), os.path.join(d, "sr.jsonl")
    write(pc, com)
    write(pr, rer)
    p = run(pc, pr, "--in-place")
    check(p.returncode == 0, "in-place merge")
    out = load(pc)
    # F is side b following in ab: in shared mode, F's follower baseline
    # from side a of the re-run (171).
    check(out[1]["iso_sync_b_us"] == 171.0, "shared: sides collapse")
    check(out[2]["ok"], "shared: failed row replaced in place")


def main():
    with tempfile.TemporaryDirectory() as d:
        test_partitioned(d)
        test_shared(d)
    print(f"issue14_merge_test: {'FAILED ' + str(FAILED) if FAILED else 'ok'}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
