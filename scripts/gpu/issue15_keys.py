#!/usr/bin/env python3
"""What an HP service runs, from its recorded trace (scripts/gpu/issue15_services.sh).

  issue15_keys.py TRACE MEASURED KEYS_OUT [PREROLL]

TRACE is a `mosaic-sched record` trace (mosaic-trace/1) of the HP service
alone; MEASURED is how many requests the service itself measured (its
--requests): those are the trace's last MEASURED requests, and the ones
before them are its start-up's (model building, warm-up, graph capture: the
shim learns a request at every synchronisation) and, last, its PREROLL
pre-roll requests (svc_hp.py --preroll: made at the arrival schedule, not
measured; default 0). The start-up requests printed (replay's --warmup,
which simulates them but counts only the measured ones) include the
pre-roll's, so that a replay counts the same MEASURED requests as the
real runs. Writes KEYS_OUT, the
`hp-kernels` file policy static and `mosaic-sched tune` need (the profile
keys of one request, a key once per launch, in launch order), from the last
measured request; prints one JSON line: the start-up requests (replay's
--warmup), the kernels of that request, and how many of them had no profile
in the recording daemon's profile directory (left out of the file, which
policy static would refuse; named on stderr). Exit status 1, with the
reason on stderr, when the trace is not one or holds no measured request
with a profiled kernel."""
import json
import sys


def fail(msg):
    print(f"issue15_keys: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) not in (4, 5):
        fail("usage: issue15_keys.py TRACE MEASURED KEYS_OUT [PREROLL]")
    path, out = sys.argv[1], sys.argv[3]
    try:
        measured = int(sys.argv[2])
        preroll = int(sys.argv[4]) if len(sys.argv) == 5 else 0
    except ValueError:
        fail(f"MEASURED {sys.argv[2]!r} and PREROLL {sys.argv[4:]} must be counts of requests")
    if preroll < 0:
        fail(f"PREROLL {preroll}: a count of requests, 0 or more")
    keys, reqs, open_req = {}, [], {}
    try:
        with open(path) as f:
            head = json.loads(f.readline() or "{}")
            if head.get("schema") != "mosaic-trace/1":
                fail(f"{path}: not a mosaic-trace/1 file (first line {str(head)[:80]}): "
                     "record it with `mosaic-sched record -o FILE`")
            for line in f:
                e = json.loads(line)
                ev = e.get("ev")
                if ev == "kernel":
                    keys[e["id"]] = e["key"]
                elif ev == "hp_begin":
                    open_req[e["client"]] = [e["req"], []]
                    reqs.append((e["client"], open_req[e["client"]]))
                elif ev == "hp_launch" and e["client"] in open_req:
                    open_req[e["client"]][1].append(e["id"])
                elif ev == "hp_end":
                    open_req.pop(e["client"], None)
    except (OSError, ValueError, KeyError) as ex:
        fail(f"{path}: {ex}: is it a complete trace (the recording daemon stopped with TERM)?")
    clients = {c for c, _ in reqs}
    if not reqs:
        fail(f"{path}: no HP request recorded: did the HP service run, under the shim as an HP "
             "client of the recording daemon (its log beside the trace, .rec_hp.hp.err)?")
    if len(clients) != 1:
        fail(f"{path}: {len(clients)} HP clients recorded, one expected (the HP service alone)")
    if len(reqs) < measured + preroll or measured <= 0:
        fail(f"{path}: {len(reqs)} HP requests recorded, fewer than the {measured} the service "
             f"measured{f' and its {preroll} pre-roll requests before them' if preroll else ''}: the daemon did not see the requests end (the synchronisation the shim "
             "learns them from was not interposed: docs/services-eval.md, 'requests not "
             "delimited'), or the service did not run as an HP client of the recording daemon")
    startup = len(reqs) - measured
    ids = reqs[-1][1][1]
    known = [keys[i] for i in ids if keys.get(i)]
    unknown = sorted({i for i in ids if not keys.get(i)})
    if not known:
        fail(f"{path}: the last request's {len(ids)} kernels have no profile in the recording "
             "daemon's --profile-dir: capture the HP service's profile first (phase capture, "
             "or PROFILES=DIR)")
    with open(out, "w") as f:
        f.write(f"# the HP service's kernels, one request ({path}, its last request)\n")
        f.write("".join(k + "\n" for k in known))
    for i in unknown:
        print(f"issue15_keys: kernel {i} of the HP request has no profile: left out of {out}",
              file=sys.stderr)
    print(json.dumps({"trace_requests": len(reqs), "startup_requests": startup,
                      "preroll_requests": preroll,
                      "request_kernels": len(ids), "keys_written": len(known),
                      "unprofiled_kernels": len(ids) - len(known),
                      "distinct_unprofiled": len(unknown)}))


if __name__ == "__main__":
    main()
