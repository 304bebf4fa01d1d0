"""Eager PyTorch workload for the Mosaic launch-coverage check.

matmul, softmax and conv2d (cuBLAS, PyTorch's own kernels, cuDNN) for a few
iterations, then torch.cuda.synchronize(). Results are checked against the
CPU. Prints "RESULT: OK" and exits 0 when the checks pass.
"""
import sys

import torch
import torch.nn.functional as F

ITERS = 5


def main() -> int:
    if not torch.cuda.is_available():
        print("CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} cuda {torch.version.cuda} "
          f"cudnn {torch.backends.cudnn.version()} "
          f"device {torch.cuda.get_device_name(0)}")
    g = torch.Generator().manual_seed(0)
    a_cpu = torch.randn(512, 768, generator=g)
    b_cpu = torch.randn(768, 256, generator=g)
    x_cpu = torch.randn(8, 3, 64, 64, generator=g)
    w_cpu = torch.randn(16, 3, 3, 3, generator=g)
    a, b, x, w = (t.to(dev) for t in (a_cpu, b_cpu, x_cpu, w_cpu))

    for _ in range(ITERS):
        c = a @ b
        s = torch.softmax(c, dim=-1)
        y = F.conv2d(x, w, padding=1)
        y = F.relu(y)
    torch.cuda.synchronize()

    ok = True
    # TF32 may be enabled for convolutions by default: loose tolerances.
    c_ref = a_cpu @ b_cpu
    if not torch.allclose(c.cpu(), c_ref, rtol=2e-2, atol=2e-1):
        print("matmul mismatch", file=sys.stderr)
        ok = False
    if not torch.allclose(s.cpu(), torch.softmax(c_ref, dim=-1), rtol=5e-2,
                          atol=1e-3):
        print("softmax mismatch", file=sys.stderr)
        ok = False
    y_ref = F.relu(F.conv2d(x_cpu, w_cpu, padding=1))
    if not torch.allclose(y.cpu(), y_ref, rtol=2e-2, atol=5e-2):
        print("conv2d mismatch", file=sys.stderr)
        ok = False
    torch.cuda.synchronize()
    print("RESULT: OK" if ok else "RESULT: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
