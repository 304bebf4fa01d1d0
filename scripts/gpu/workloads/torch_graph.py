"""CUDA-graph PyTorch workload for the Mosaic launch-coverage check.

A small MLP forward pass is warmed up on a side stream, captured with
torch.cuda.CUDAGraph, and replayed 20 times with fresh inputs copied into the
static input. The last replay is checked against an eager forward. Prints
"RESULT: OK" and exits 0 when the check passes.
"""
import sys

import torch
from torch import nn

REPLAYS = 20


def main() -> int:
    if not torch.cuda.is_available():
        print("CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 128)
    ).to(dev).eval()
    inputs = [torch.randn(32, 256, device=dev) for _ in range(REPLAYS)]
    static_in = torch.zeros(32, 256, device=dev)

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_in)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()

        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(static_in)

        for i in range(REPLAYS):
            static_in.copy_(inputs[i])
            graph.replay()
        torch.cuda.synchronize()
        got = static_out.clone()
        want = model(inputs[-1])
        torch.cuda.synchronize()

    ok = torch.allclose(got, want, rtol=1e-3, atol=1e-3)
    if not ok:
        print(f"graph output mismatch, max abs diff "
              f"{(got - want).abs().max().item()}", file=sys.stderr)
    print(f"replays={REPLAYS}")
    print("RESULT: OK" if ok else "RESULT: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
