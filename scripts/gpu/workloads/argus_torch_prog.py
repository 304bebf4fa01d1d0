"""A small PyTorch training loop with NVTX ranges, for argus-shim on the GPU
(scripts/gpu/argus_shim_torch.sh).

A convolutional model (conv, batch norm, ReLU, pooling, linear: cuDNN,
cuBLAS and PyTorch's own kernels) trained for a few steps with SGD. Every
step is the NVTX range "step" holding "forward", "backward" and
"optimizer" (torch.cuda.nvtx.range: push/pop on the calling thread); the
warm-up steps run outside any range, so that kernels outside ranges exist
too. Prints one JSON line: the steps, the loop's wall time (measured after
the warm-up, with torch.cuda.synchronize() at both ends) and the last loss,
and writes it to --out when given. Exit 0, or 2 when CUDA is unavailable.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn


def model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(64, 10))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("argus_torch_prog: CUDA not available", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    dev = torch.device("cuda")
    net = model().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)

    def step(ranged: bool) -> torch.Tensor:
        if not ranged:
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            return loss
        with torch.cuda.nvtx.range("step"):
            with torch.cuda.nvtx.range("forward"):
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(net(x), y)
            with torch.cuda.nvtx.range("backward"):
                loss.backward()
            with torch.cuda.nvtx.range("optimizer"):
                opt.step()
        return loss

    for _ in range(a.warmup):
        step(False)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = None
    for _ in range(a.steps):
        loss = step(True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    res = {"steps": a.steps, "warmup": a.warmup, "batch": a.batch, "loop_s": loop_s,
           "loss": float(loss.item()), "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0)}
    line = json.dumps(res)
    print(line)
    if a.out:
        with open(a.out, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
