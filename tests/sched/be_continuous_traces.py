#!/usr/bin/env python3
"""Synthetic mosaic-trace/1 files of an HP service under near-continuous load
and a BE trainer with many small kernels, some unprofiled, for replaying
policy mosaic old against new (tests/sched/test_be_continuous.sh,
docs/services-eval.md "BE throughput: the fixes").

Modelled on the H200 run of issue 15 (ResNet-50 inference HP + ResNet-18
training BE, docs/services-eval.md "BE throughput: the causes"):
  - HP requests back to back (4 us from one's end to the next one's begin,
    the host's median gap there was 3.7 us), each the service's kernel
    sequence, preceded by one-off start-up "requests" (synchronisations of
    a PyTorch start-up: other first kernels, up to 512+ kernels, lasting
    0.3-1.2 s, mostly host time);
  - BE steps of the trainer's kernels back to back, a few tens of us of
    host time between kernels; the policy's profile-dir lacks some of
    them (the grid-1 bookkeeping kernels among them), so they are unknown
    kernels to the policy while the replay's simulated GPU knows their
    durations.

Two pairs, fixed before any score was looked at:
  train:   HP resnet50 (profiler/data/h200/services), BE resnet18_train;
  lockbox: HP resnet50_b8 (profiler/data/h200), BE a trainer of 30 kernels
           of the zoo (profiler/data/h200/zoo.profile.json), 30% of them
           unprofiled, three one-off start-up types. Never tuned on.
  llama:   the Llama pair of session 9 (docs/services-eval.md, "The Llama
           pair"): HP the llama service's graph (profiler/data/h200/services/
           llama.profile.json, its 10 kernels without counters kept so in the
           policy's profile-dir, timed for the simulated GPU only), periodic
           at LOAD 0.5; its type's first request is the eager step cut after
           11 kernels, then a capture-like start-up request; BE the
           ResNet-50 batch-128 inference step, all profiled.

Writes OUT/hp.trace, OUT/be.trace, OUT/profiles/ (the policy's
profile-dir), OUT/simgpu_profiles (the replay dataset's profile list, for
MOSAIC_SIMGPU_PROFILES) and OUT/pair.json (what was made).

  be_continuous_traces.py ROOT PAIR OUT [--requests N]
"""
import argparse
import json
import os
import random
import sys


def fnv1a(key):
    h = 0xcbf29ce484222325
    for c in key.encode():
        h ^= c
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h or 1


def load(path):
    with open(path) as f:
        return json.load(f)


def dur(k):
    return float(k["metrics"]["duration_ns"])


class Trace:
    def __init__(self, path, policy):
        self.f = open(path, "w")
        self.n = 0
        self.named = set()
        self.f.write(json.dumps({
            "schema": "mosaic-trace/1", "tool": "be_continuous_traces.py", "version": "0",
            "created": "2026-12-02T00:00:00Z", "policy": policy, "slo": 1.25,
            "clock": "CLOCK_MONOTONIC", "t_unit": "ns since t0", "t0_ns": "0"},
            separators=(",", ":")) + "\n")

    def kid(self, key):
        i = fnv1a(key)
        if i not in self.named:
            self.named.add(i)
            self.f.write(json.dumps({"ev": "kernel", "id": "%016x" % i, "key": key},
                                    separators=(",", ":")) + "\n")
        return i

    def ev(self, name, t, client, **kw):
        o = {"ev": name, "t": int(t), "client": client}
        o.update(kw)
        self.f.write(json.dumps(o, separators=(",", ":")) + "\n")
        self.n += 1

    def close(self, t):
        self.f.write(json.dumps({"ev": "end", "t": int(t), "events": self.n},
                                separators=(",", ":")) + "\n")
        self.f.close()


def hp_trace(path, seq, startups, requests, warm_before, gap_ns, host_ns, step=None):
    """seq: the served request's kernels (key, ns); startups: (kernels,
    span ns[, gap ns after it]) of the one-off types, the first before
    warm_before served requests, the rest after them. step: (i, ns): from
    the i-th served request on, the gap is ns (a load step)."""
    tr = Trace(path, "none")
    t, req = 1000, 0

    def request(kernels, span, gap=None):
        nonlocal t, req
        req += 1
        tr.ev("hp_begin", t, 1, req=req)
        at = t
        for key, d in kernels:
            tr.ev("hp_launch", at, 1, id="%016x" % tr.kid(key))
            at += 500
        gpu = sum(d for _, d in kernels)
        end = t + max(span, gpu + host_ns)
        tr.ev("hp_end", end, 1, req=req)
        t = end + (gap_ns if gap is None else gap)

    request(*startups[0])
    for _ in range(warm_before):
        request(seq, 0)
    for s in startups[1:]:
        request(*s)
    for i in range(requests):
        request(seq, 0, step[1] if step and i >= step[0] else None)
    tr.close(t)


def be_trace(path, step, steps, gap_ns):
    tr = Trace(path, "none")
    t = 1000
    rng = random.Random(5)
    for _ in range(steps):
        for key, d in step:
            i = "%016x" % tr.kid(key)
            tr.ev("be_want", t, 2, id=i)
            tr.ev("be_grant", t, 2, id=i)
            t += d
            tr.ev("be_done", t, 2, id=i)
            t += gap_ns * rng.uniform(0.5, 1.5)
    tr.close(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("pair", choices=["train", "lockbox", "llama"])
    ap.add_argument("out")
    ap.add_argument("--requests", type=int, default=1200)
    ap.add_argument("--load", type=float, default=0,
                    help="train/lockbox: HP busy this share of the time (the gap a request's "
                    "GPU time x (1/LOAD - 1)), the last start-up request followed by 0.19 ms "
                    "as in the H200 ResNet-50 trace; 0: back to back (4 us)")
    ap.add_argument("--step-at", type=float, default=0,
                    help="with --load: from this share of the served requests on, gaps of "
                    "--step-gap-us (a load step after the policy learned the gaps)")
    ap.add_argument("--step-gap-us", type=float, default=4)
    a = ap.parse_args()
    if a.load and a.pair == "llama":
        ap.error("--load: the llama pair is at LOAD 0.5 already")
    if a.load and not 0 < a.load < 1:
        ap.error("--load must be in (0, 1)")
    data = os.path.join(a.root, "profiler", "data", "h200")
    os.makedirs(os.path.join(a.out, "profiles"), exist_ok=True)
    zoo = os.path.join(data, "zoo.profile.json")

    if a.pair == "train":
        hp_p = os.path.join(data, "services", "resnet50.profile.json")
        be_p = os.path.join(data, "services", "resnet18_train.profile.json")
        hp_doc, be_doc = load(hp_p), load(be_p)
        hk = hp_doc["kernels"]
        # The capture holds about four requests' launches (1,133 for 282).
        total = sum(k["launches"] for k in hk)
        seq = []
        for k in hk:
            seq += [(k["key"], dur(k))] * max(1, round(k["launches"] * 282 / total))
        # Start-up: the same kernels in another order (another first kernel),
        # 600 launches (over MAX_SEQ), 0.4 s and 0.8 s, mostly host time.
        rev = [(k["key"], dur(k)) for k in reversed(hk)]
        su = [((rev * 9)[:600], 400e6), ((rev[5:] * 9)[:520], 800e6)]
        bk = be_doc["kernels"]
        step = [(k["key"], dur(k)) for k in bk for _ in range(k["launches"])]
        # Unprofiled for the policy: the grid-1 kernels (as on the H200) and
        # every 8th of the rest.
        drop = {k["key"] for i, k in enumerate(bk)
                if k["grid"] == [1, 1, 1] or i % 8 == 3}
        be_gap = 25e3
        be_keep = dict(be_doc, kernels=[k for k in bk if k["key"] not in drop])
        json.dump(hp_doc, open(os.path.join(a.out, "profiles", "hp.profile.json"), "w"))
        json.dump(be_keep, open(os.path.join(a.out, "profiles", "be.profile.json"), "w"))
        sim = [zoo, hp_p, be_p]
        warm_before = 3
    elif a.pair == "llama":
        hp_p = os.path.join(data, "services", "llama.profile.json")
        be_p = os.path.join(data, "services", "resnet50_infer_be.profile.json")
        hp_doc, be_doc = load(hp_p), load(be_p)
        hk = hp_doc["kernels"]
        timed = [k for k in hk if k["metrics"].get("duration_ns")]
        untimed = [k for k in hk if not k["metrics"].get("duration_ns")]
        # The simulated GPU times the graph-only (causal-mask) kernels as a
        # grid-1 elementwise kernel of the same capture; the policy's copy of
        # the profile keeps them without counters, as on the H200.
        like = min(timed, key=dur)
        sim_mask = dict(hp_doc, kernels=[dict(like, key=k["key"], name=k["name"], grid=k["grid"],
                                              block=k["block"], launches=k["launches"],
                                              duration_ns=2500.0,
                                              metrics=dict(like["metrics"], duration_ns=2500.0))
                                         for k in untimed])
        json.dump(sim_mask, open(os.path.join(a.out, "sim_mask.profile.json"), "w"))
        # The profile saw two eager forwards and the capture: a graph holds
        # a third of the timed kernels' launches and every untimed one's.
        seq = []
        for k in timed:
            seq += [(k["key"], dur(k))] * max(1, round(k["launches"] / 3))
        mask = [(k["key"], 2500.0) for k in untimed for _ in range(k["launches"])]
        seq = seq[:11] + mask + seq[11:]
        # Start-up: the type's first request is the eager step that the
        # model's own synchronisation cut after 11 kernels (1 ms, mostly
        # host), then the capture and warm-up replays, another first kernel.
        rev = [(k["key"], dur(k)) for k in reversed(timed)]
        # The gaps after them as the same call's BERT trace had them (5.5 ms
        # after the eager side-stream step, 0.37 ms after the capture), so
        # the shortest gap the policy sees is the start-up's, not LOAD's.
        su = [(seq[:11], 1e6, 5.5e6), ((rev * 20)[:600], 300e6, 0.37e6)]
        bk = be_doc["kernels"]
        step = [(k["key"], dur(k)) for k in bk for _ in range(k["launches"])]
        drop = set()
        be_gap = 5e3
        json.dump(hp_doc, open(os.path.join(a.out, "profiles", "hp.profile.json"), "w"))
        json.dump(be_doc, open(os.path.join(a.out, "profiles", "be.profile.json"), "w"))
        sim = [zoo, hp_p, be_p, os.path.join(a.out, "sim_mask.profile.json")]
        warm_before = 0
    else:
        hp_p = os.path.join(data, "resnet50_b8.profile.json")
        hp_doc, zdoc = load(hp_p), load(zoo)
        hk = hp_doc["kernels"]
        seq = []
        for k in hk:
            seq += [(k["key"], dur(k))] * max(1, round(k["launches"] / 8))
        seq = seq[:500]
        rng = random.Random(7)
        short = sorted(zdoc["kernels"], key=dur)[:40]
        pick = [rng.choice(short) for _ in range(30)]
        step = [(k["key"], dur(k)) for k in pick]
        keys = sorted({k["key"] for k in pick})
        drop = set(rng.sample(keys, int(round(0.3 * len(keys)))))
        be_gap = 40e3
        rev = [(k["key"], dur(k)) for k in reversed(hk)]
        su = [((rev * 9)[:512], 300e6), ((rev[3:] * 9)[:400], 600e6),
              ((rev[11:] * 9)[:700], 1200e6)]
        zkeep = dict(zdoc, kernels=[k for k in zdoc["kernels"] if k["key"] not in drop])
        json.dump(hp_doc, open(os.path.join(a.out, "profiles", "hp.profile.json"), "w"))
        json.dump(zkeep, open(os.path.join(a.out, "profiles", "be.profile.json"), "w"))
        sim = [zoo, hp_p]
        warm_before = 2
    # The llama pair is half loaded (a request's GPU time between requests,
    # as the H200 run's period of 2x the median); the others back to back.
    gap = sum(d for _, d in seq) + 20e3 if a.pair == "llama" else 4e3
    if a.load:
        gap = (sum(d for _, d in seq) + 20e3) * (1 / a.load - 1)
        su[-1] = (su[-1][0], su[-1][1], 0.19e6)
    lstep = (int(a.step_at * a.requests), a.step_gap_us * 1e3) if a.load and a.step_at else None
    hp_trace(os.path.join(a.out, "hp.trace"), seq, su, a.requests, warm_before, gap, 20e3, lstep)
    # Replay repeats the BE sequence: four steps give its period.
    be_trace(os.path.join(a.out, "be.trace"), step, 4, be_gap)
    with open(os.path.join(a.out, "simgpu_profiles"), "w") as f:
        f.write(":".join(sim))
    info = {"pair": a.pair, "hp_kernels": len(seq), "hp_request_gpu_ms": sum(d for _, d in seq) / 1e6,
            "startups": [(len(x[0]), x[1] / 1e6) for x in su], "warmup": 1 + warm_before + len(su) - 1,
            "be_step_kernels": len(step), "be_step_gpu_ms": sum(d for _, d in step) / 1e6,
            "be_unprofiled_kernels_a_step": sum(1 for k, _ in step if k in drop),
            "be_unprofiled_keys": len(drop), "requests": a.requests,
            "hp_gap_ms": gap / 1e6, "load_step": lstep and [lstep[0], lstep[1] / 1e6]}
    json.dump(info, open(os.path.join(a.out, "pair.json"), "w"), indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    sys.exit(main())
