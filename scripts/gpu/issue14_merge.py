#!/usr/bin/env python3
"""Merges an issue-14 re-run (scripts/gpu/issue14_rerun.sh) into a committed
one-process offset file (profiler/data/h200/offsets/offset_*.jsonl).

    issue14_merge.py COMMITTED RERUN [-o OUT | --in-place]
    issue14_merge.py pairs COMMITTED     the pairs a re-run must measure

Two things are taken from the re-run, nothing else:
  * a committed `corun_offset` row with "ok":false is replaced by the re-run's
    row of the same pair, order and delay_spec when that row is ok (a re-run
    row that failed again leaves the committed row as it was);
  * an ok committed row without iso_sync_a (or _b) baselines gets them from
    the re-run's isolated protocol rounds of the same variant in the same role
    (leader or follower) and, in partitioned mode, on the same side (A's
    green context or B's), with slowdown_sync_* recomputed from the row's own
    co-run median. Shared mode has one configuration for both sides, as
    corun-offset's planner has (offset_plan.h, collapse_sides).

Every row the merge changes says so: a replaced row carries "rerun" and a
filled side "iso_sync_<side>_rerun", both the re-run's meta date_utc and git
commit. Unchanged lines are copied byte for byte. The report (stdout) counts
what was replaced, filled and left. Exit status 0; 2 when the files do not
fit together (not a corun-offset file, another mode or split), with the
reason on stderr.
"""
import argparse
import json
import os
import sys
import tempfile

ISO_FIELDS = ("iso_sync_{s}_us", "iso_sync_{s}_min_us", "iso_sync_{s}_max_us",
              "iso_sync_{s}_samples_us")


class MergeError(Exception):
    pass


def read_jsonl(path):
    """(raw line, parsed record) pairs; a line that is not JSON is an error
    naming the file and line."""
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append((line, json.loads(line)))
            except json.JSONDecodeError as e:
                raise MergeError(f"{path}:{i}: not JSON ({e}): is this a "
                                 f"mosaic-zoo JSON Lines file?")
    return out


def meta_of(rows, path):
    for _, r in rows:
        if r.get("record") == "meta":
            if r.get("subcommand") != "corun-offset":
                raise MergeError(f"{path}: meta subcommand is "
                                 f"{r.get('subcommand')!r}, not 'corun-offset'"
                                 f": give a one-process offset file")
            return r
    raise MergeError(f"{path}: no meta record: not a mosaic-zoo output file")


def config_of(rows, path):
    """The (mode, split_requested) of a file's corun_offset rows."""
    seen = {(r.get("mode"), r.get("split_requested")) for _, r in rows
            if r.get("record") == "corun_offset"}
    if len(seen) != 1:
        raise MergeError(f"{path}: corun_offset rows of {len(seen)} "
                         f"configurations {sorted(map(str, seen))}: expected "
                         f"one mode and split per file")
    return seen.pop()


def role_of(side, order):
    """0 when the side leads in that order, 1 when it follows."""
    leads = (side == "a") == (order == "ab")
    return 0 if leads else 1


def iso_key(mode, variant, side, order):
    return (variant, "a" if mode == "shared" else side, role_of(side, order))


def rerun_iso(rows, mode):
    """(variant, side, role) -> the iso_sync fields measured in the re-run."""
    iso = {}
    for _, r in rows:
        if r.get("record") != "corun_offset":
            continue
        for s in "ab":
            if f"iso_sync_{s}_us" not in r:
                continue
            k = iso_key(mode, r[s], s, r["order"])
            iso.setdefault(k, {f: r[f.format(s=s)] for f in ISO_FIELDS
                               if f.format(s=s) in r})
    return iso


def with_iso(r, s, vals, tag):
    """r with side s's iso_sync fields from vals (keys with a {s}
    placeholder), placed after check_<s> as corun-offset writes them, and
    slowdown_sync_<s> recomputed."""
    add = {k.format(s=s): v for k, v in vals.items()}
    out = {}
    for k, v in r.items():
        out[k] = v
        if k == f"check_{s}":
            out.update(add)
    if f"iso_sync_{s}_us" not in out:
        out.update(add)
    out[f"iso_sync_{s}_rerun"] = tag
    co = r.get(f"corun_{s}_us")
    if co is not None and add.get(f"iso_sync_{s}_us"):
        sd = round(co / add[f"iso_sync_{s}_us"], 4)
        if f"slowdown_sync_{s}" in out:
            out[f"slowdown_sync_{s}"] = sd
        else:
            # After the other slowdowns, where corun-offset writes it.
            res, placed = {}, False
            for k, v in out.items():
                if not placed and k == "start_offset_us":
                    res[f"slowdown_sync_{s}"] = sd
                    placed = True
                res[k] = v
            if not placed:
                res[f"slowdown_sync_{s}"] = sd
            out = res
    return out


def merge(committed_path, rerun_path):
    com = read_jsonl(committed_path)
    rer = read_jsonl(rerun_path)
    meta_of(com, committed_path)
    rmeta = meta_of(rer, rerun_path)
    cfg_c = config_of(com, committed_path)
    cfg_r = config_of(rer, rerun_path)
    if cfg_c != cfg_r:
        raise MergeError(f"{rerun_path}: mode/split {cfg_r} is not "
                         f"{committed_path}'s {cfg_c}: merge each re-run "
                         f"phase into its own file")
    mode = cfg_c[0]
    tag = f"{rmeta.get('date_utc', '?')} git {rmeta.get('git', '?')}"
    by_key = {}
    for _, r in rer:
        if r.get("record") == "corun_offset":
            by_key[(r["a"], r["b"], r["order"], r["delay_spec"])] = r
    iso = rerun_iso(rer, mode)
    n = {"replaced": 0, "still_failed": 0, "filled": 0, "iso_missing": 0,
         "rows": 0}
    used = set()
    lines = []
    for raw, r in com:
        if r.get("record") != "corun_offset":
            lines.append(raw)
            continue
        n["rows"] += 1
        if not r.get("ok"):
            k = (r["a"], r["b"], r["order"], r["delay_spec"])
            new = by_key.get(k)
            if new is not None and new.get("ok"):
                new = dict(new)
                new["rerun"] = tag
                used.add(k)
                lines.append(json.dumps(new, separators=(",", ":")) + "\n")
                n["replaced"] += 1
            else:
                lines.append(raw)
                n["still_failed"] += 1
            continue
        cur, changed = r, False
        for s in "ab":
            if f"iso_sync_{s}_us" in cur:
                continue
            vals = iso.get(iso_key(mode, cur[s], s, cur["order"]))
            if vals is None:
                n["iso_missing"] += 1
                continue
            cur = with_iso(cur, s, vals, tag)
            changed = True
            n["filled"] += 1
        lines.append(json.dumps(cur, separators=(",", ":")) + "\n"
                     if changed else raw)
    n["rerun_rows_unused"] = sum(1 for k in by_key if k not in used)
    return lines, n, tag


def rerun_pairs(committed_path):
    """The pairs (a, b) whose corun-offset run gives everything the merge
    needs for committed_path: every pair with a failed row, and for each
    missing iso_sync baseline that those do not measure (the same variant,
    role and, in partitioned mode, side), the first row's own pair. Each
    pair is measured in both orders, so it gives both roles."""
    com = read_jsonl(committed_path)
    meta_of(com, committed_path)
    mode = config_of(com, committed_path)[0]
    pairs, covered = [], set()

    def add(a, b):
        if (a, b) in pairs:
            return
        pairs.append((a, b))
        for order in ("ab", "ba"):
            covered.add(iso_key(mode, a, "a", order))
            covered.add(iso_key(mode, b, "b", order))

    rows = [r for _, r in com if r.get("record") == "corun_offset"]
    for r in rows:
        if not r.get("ok"):
            add(r["a"], r["b"])
    for r in rows:
        if not r.get("ok"):
            continue
        for s in "ab":
            if (f"iso_sync_{s}_us" not in r and
                    iso_key(mode, r[s], s, r["order"]) not in covered):
                add(r["a"], r["b"])
    return pairs


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pairs"]:
        if len(argv) != 2:
            print("usage: issue14_merge.py pairs COMMITTED", file=sys.stderr)
            return 2
        try:
            for a, b in rerun_pairs(argv[1]):
                print(a, b)
        except (MergeError, OSError, KeyError) as e:
            print(f"issue14_merge: {e}", file=sys.stderr)
            return 2
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("committed")
    ap.add_argument("rerun")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("-o", "--output")
    g.add_argument("--in-place", action="store_true")
    a = ap.parse_args(argv)
    try:
        lines, n, tag = merge(a.committed, a.rerun)
    except (MergeError, OSError, KeyError) as e:
        print(f"issue14_merge: {e}", file=sys.stderr)
        return 2
    dest = a.committed if a.in_place else a.output
    d = os.path.dirname(os.path.abspath(dest))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".merge.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.chmod(tmp, 0o644)
    os.replace(tmp, dest)
    print(f"{a.committed} + {a.rerun} ({tag}) -> {dest}: "
          f"{n['rows']} corun_offset rows; {n['replaced']} failed rows "
          f"replaced, {n['still_failed']} still failed; {n['filled']} "
          f"iso_sync sides filled, {n['iso_missing']} still missing; "
          f"{n['rerun_rows_unused']} re-run rows not needed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
