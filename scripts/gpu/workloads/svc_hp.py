"""An HP service: a request loop over one model (scripts/gpu/workloads/svc_models.py).

Each request is one forward pass then torch.cuda.synchronize(), so the shim
learns requests from the synchronisation pattern (the program is not told
about Mosaic), `--gap-ms` apart (open loop: the next request starts at its
slot or at once if late). Prints one JSON line; --latencies writes each
measured request's host latency in ms, one a line.

  python3 svc_hp.py --model resnet50 [--batch N] [--requests N] [--warmup N]
                    [--gap-ms MS] [--latencies FILE] [--mark]
--mark delimits requests with the `mosaic` package (python/mosaic) instead."""
import argparse
import json
import sys
import time

import torch

import svc_models

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--batch", type=int, default=0)
ap.add_argument("--requests", type=int, default=300)
ap.add_argument("--warmup", type=int, default=20)
ap.add_argument("--gap-ms", type=float, default=0.0)
ap.add_argument("--latencies")
ap.add_argument("--mark", action="store_true")
a = ap.parse_args()

req = None
if a.mark:
    import mosaic
    req = mosaic.request
step = svc_models.build(a.model, a.batch)
for _ in range(a.warmup):
    step()
torch.cuda.synchronize()

lat, starts = [], []
t_next = time.perf_counter()
for i in range(a.requests):
    now = time.perf_counter()
    if now < t_next:
        time.sleep(t_next - now)
    t0 = time.perf_counter()
    starts.append(time.time())
    if req:
        with req():
            step()
            torch.cuda.synchronize()
    else:
        step()
        torch.cuda.synchronize()
    t1 = time.perf_counter()
    lat.append((t1 - t0) * 1e3)
    t_next = max(t_next + a.gap_ms / 1e3, t1)

s = sorted(lat)
def pct(q):
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.999999) - 1))]
if a.latencies:
    with open(a.latencies, "w") as f:
        # latency ms, then the request's start as Unix time (for the fault run)
        f.write("".join(f"{x:.4f} {t:.6f}\n" for x, t in zip(lat, starts)))
print(json.dumps({"program": "svc_hp", "model": a.model, "requests": len(lat),
                  "p50_ms": pct(0.5), "p99_ms": pct(0.99), "mean_ms": sum(lat) / len(lat),
                  "max_ms": s[-1], "gap_ms": a.gap_ms,
                  "method": "host perf_counter from the first launch to synchronize() returning"}))
sys.stdout.flush()
