"""An HP service: a request loop over one model (scripts/gpu/workloads/svc_models.py).

Each request is one forward pass then torch.cuda.synchronize(), so the shim
learns requests from the synchronisation pattern (the program is not told
about Mosaic), `--gap-ms` apart (open loop: the next request starts at its
slot or at once if late, the schedule then moving on from that request's
end, so that arrivals never queue behind a late one). The load of a run is
the share of its measured window that a request is in flight: a period of
the isolated median / LOAD gives LOAD (scripts/gpu/issue15_services.sh);
--arrivals poisson draws each gap from an exponential of mean --gap-ms
(--seed), the same slot rule. Prints one JSON line (with the measured
busy fraction); --latencies writes each measured request's host latency in
ms and its start (Unix s), one a line.

  python3 svc_hp.py --model resnet50 [--batch N] [--requests N] [--warmup N]
                    [--gap-ms MS] [--latencies FILE] [--mark] [--eager]
                    [--after FILE [--after-timeout S] [--after-settle S]] [--arrivals periodic|poisson]
                    [--seed N] [--touch-after N FILE] [--preroll N]
--mark delimits requests with the `mosaic` package (python/mosaic) instead.
--after waits, once warm, until FILE exists (a BE job's --ready file, at
most --after-timeout s) before the first measured request, so that a run
started beside a BE job that is still loading meets it from its first
request (mosaic-sched tune starts both at once). --preroll N makes N
requests first, after that wait, at the same arrival schedule (the
measured ones follow at their slots), not recorded, so that the measured
window is the steady state; "first_request_unix" (Unix s) is the first
scheduled request's start, the pre-roll's when there is one (the trust
transient of docs/services-eval.md is counted from it); --touch-after
counts measured requests only. When the step cannot be
captured as a CUDA graph the service runs eager, and says so in "launch"."""
import json
import random
import sys
import time

import torch

import svc_args
import svc_models

a = svc_args.hp_parser().parse_args()
if a.preroll < 0:
    sys.exit(f"svc_hp: --preroll {a.preroll}: give a count of requests, 0 or more")

req = None
if a.mark:
    import mosaic
    req = mosaic.request
step = svc_models.build(a.model, a.batch)
for _ in range(a.warmup):
    step()
torch.cuda.synchronize()
launch = "eager" if a.eager else "cuda_graph"
if not a.eager:
    # One graph replay per request: the GPU, not Python's launches, bounds
    # a request. Eager launches of ResNet-50 under gVisor gave p50s of 3.7
    # to 6.9 ms between runs of the same configuration (2026-12-01).
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side):
            step()
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                step()
        torch.cuda.current_stream().wait_stream(side)
        step = g.replay
    except RuntimeError as e:
        # A model whose step syncs or allocates in a way capture refuses
        # runs eager; the method goes with the numbers.
        torch.cuda.synchronize()
        launch = f"eager (CUDA graph capture failed: {str(e).splitlines()[0][:160]})"
        print(f"svc_hp: {a.model}: {launch}", file=sys.stderr)
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
waited_s = None
if a.after:
    waited_s, found = svc_args.wait_for(a.after, a.after_timeout)
    if not found:
        print(f"svc_hp: {a.after} did not appear in {a.after_timeout} s: measuring without it",
              file=sys.stderr)
    elif a.after_settle > 0:
        time.sleep(a.after_settle)

touch_n, touch_path = (int(a.touch_after[0]), a.touch_after[1]) if a.touch_after else (0, None)
rng = random.Random(a.seed)
def next_gap_s():
    if a.gap_ms <= 0:
        return 0.0
    return (rng.expovariate(1e3 / a.gap_ms) if a.arrivals == "poisson" else a.gap_ms / 1e3)
lat, starts = [], []
t_first = t_next = time.perf_counter()
first_unix = None
for k in range(a.preroll + a.requests):
    # k counts every request of the schedule; i the measured ones (the
    # pre-roll's are negative and not recorded).
    i = k - a.preroll
    # Wait for the slot spinning, as a service polling its queue would. With
    # time.sleep here the same ResNet-50 requests took 5.7-6.6 ms at p50
    # against 3.7-4.0 ms back to back (H200, 2026-12-01; cause not isolated),
    # which would put the isolated baseline itself in question.
    while time.perf_counter() < t_next:
        pass
    t0 = time.perf_counter()
    u0 = time.time()
    if k == 0:
        first_unix = u0
    if i == 0:
        t_first = t0
    if req:
        with req():
            step()
            torch.cuda.synchronize()
    else:
        step()
        torch.cuda.synchronize()
    t1 = time.perf_counter()
    if i >= 0:
        starts.append(u0)
        lat.append((t1 - t0) * 1e3)
    if touch_path and i + 1 == touch_n:
        open(touch_path, "w").close()
    t_next = max(t_next + next_gap_s(), t1)
window_ms = (t1 - t_first) * 1e3

s = sorted(lat)
def pct(q):
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.999999) - 1))]
if a.latencies:
    with open(a.latencies, "w") as f:
        # latency ms, then the request's start as Unix time (for the fault run)
        f.write("".join(f"{x:.4f} {t:.6f}\n" for x, t in zip(lat, starts)))
print(json.dumps({"program": "svc_hp", "model": a.model, "requests": len(lat),
                  "launch": launch, "waited_for_after_s": waited_s,
                  "preroll": a.preroll, "first_request_unix": first_unix,
                  "p50_ms": pct(0.5), "p99_ms": pct(0.99), "mean_ms": sum(lat) / len(lat),
                  "max_ms": s[-1], "gap_ms": a.gap_ms, "arrivals": a.arrivals,
                  "busy_fraction": sum(lat) / window_ms if window_ms > 0 else None,
                  "method": "host perf_counter from the first launch to synchronize() returning"}))
sys.stdout.flush()
