"""Triton workload for the Mosaic launch-coverage check.

A @triton.jit vector add launched LAUNCHES times (first launch compiles),
checked against torch. Triton's launcher calls cuLaunchKernelEx, which it
resolves with dlopen/dlsym of libcuda.so.1. Prints "RESULT: OK" and exits 0
when the check passes.
"""
import sys

import torch
import triton
import triton.language as tl

LAUNCHES = 10


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def main() -> int:
    if not torch.cuda.is_available():
        print("CUDA not available", file=sys.stderr)
        return 2
    print(f"triton {triton.__version__} torch {torch.__version__}")
    n = 98432
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    for _ in range(LAUNCHES):
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    ok = torch.allclose(out, x + y)
    torch.cuda.synchronize()
    print(f"launches={LAUNCHES}")
    print("RESULT: OK" if ok else "RESULT: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
