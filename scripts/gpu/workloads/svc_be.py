"""A BE job: training steps (or inference batches) of one model in a loop
until SIGTERM or --seconds, then one JSON line with steps and samples per
second (samples = steps x the batch: images or sequences).

  python3 svc_be.py --model resnet18_train [--batch N] [--seconds S]
      [--warmup N] [--ready FILE] [--steps-log FILE]
A step ends with torch.cuda.synchronize(), so steps/s counts finished GPU
work; the timer starts after --warmup steps, when FILE (--ready) is made."""
import json
import signal
import time

import torch

import svc_args
import svc_models

a = svc_args.be_parser().parse_args()

stop = False
def on_term(_sig, _frm):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)

step = svc_models.build(a.model, a.batch)
for _ in range(a.warmup):
    step()
torch.cuda.synchronize()
if a.ready:
    open(a.ready, "w").close()
t0 = time.perf_counter()
n = 0
ends = []
while not stop and time.perf_counter() - t0 < a.seconds:
    step()
    torch.cuda.synchronize()
    n += 1
    ends.append(time.time())
dt = time.perf_counter() - t0
if a.steps_log:
    with open(a.steps_log, "w") as f:
        f.write("".join(f"{t:.6f}\n" for t in ends))
batch = svc_models.batch_of(a.model, a.batch)
print(json.dumps({"program": "svc_be", "model": a.model, "batch": batch, "steps": n,
                  "seconds": dt, "steps_per_s": n / dt if dt > 0 else 0.0,
                  "samples_per_s": n * batch / dt if dt > 0 else 0.0,
                  "method": "host perf_counter over the loop, synchronize() per step"}), flush=True)
