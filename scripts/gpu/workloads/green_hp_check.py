"""Does a request on an HP green context end when the host thinks it does?

The static row of issue 15 on the H200 (docs/results/2026-12-02-s10-gpu,
call 3) had HP p99 at 0.70x its isolated p99 on 120 of 132 SMs: faster on
fewer SMs. Either the partition really is faster under MPS, or
torch.cuda.synchronize() returned before the redirected work finished.
This tells them apart without trusting any CUDA call's ordering: the
ResNet-50 graph ends with a device counter's increment and a copy of it
into pinned host memory, so after each synchronize the host reads plain
memory; a value behind the replay count means the request was not done.
Beside it: the host latency and the latency between two CUDA events on
the application's stream (recorded before and after the replay).

  python3 green_hp_check.py [--requests N] [--batch N]
Prints one JSON line."""
import argparse
import json
import os
import time

import torch
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--requests", type=int, default=300)
ap.add_argument("--batch", type=int, default=32)
a = ap.parse_args()

torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).cuda().half().eval()
model = model.to(memory_format=torch.channels_last)
x = torch.randn(a.batch, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
flag = torch.zeros(1, dtype=torch.int64, device="cuda")
host = torch.zeros(1, dtype=torch.int64).pin_memory()


def body():
    with torch.inference_mode():
        model(x)
    flag.add_(1)
    host.copy_(flag, non_blocking=True)


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(5):
        body()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
for _ in range(20):
    g.replay()
torch.cuda.synchronize()
expect = int(flag.item())
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
host_ms, ev_ms, stale, behind_max = [], [], 0, 0
for i in range(a.requests):
    e0.record()
    t0 = time.perf_counter()
    g.replay()
    e1.record()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    expect += 1
    seen = int(host[0])  # a CPU tensor: plain memory, no CUDA call
    if seen != expect:
        stale += 1
        behind_max = max(behind_max, expect - seen)
    host_ms.append((t1 - t0) * 1e3)
    ev_ms.append(e0.elapsed_time(e1))
    time.sleep(0.002)
time.sleep(0.2)
final = int(host[0])


def pct(v, q):
    s = sorted(v)
    return round(s[min(len(s) - 1, int(q * len(s)))], 4)


print(json.dumps({"program": "green_hp_check", "requests": a.requests,
                  "hp_sms": os.environ.get("MOSAIC_HP_SMS"), "role": os.environ.get("MOSAIC_ROLE"),
                  "preload": bool(os.environ.get("LD_PRELOAD")),
                  "mps": bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY")),
                  "host_p50_ms": pct(host_ms, 0.5), "host_p99_ms": pct(host_ms, 0.99),
                  "event_p50_ms": pct(ev_ms, 0.5), "event_p99_ms": pct(ev_ms, 0.99),
                  "stale_after_sync": stale, "most_behind": behind_max,
                  "final_ok": final == expect}))
