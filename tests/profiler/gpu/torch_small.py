# A few PyTorch kernels (cuBLAS wgmma GEMM, cuDNN conv, softmax) for a
# mosaic-profile capture smoke test on the GPU machine (run_gpu.sh).
import torch
x = torch.randn(2048, 2048, device="cuda")
for _ in range(3):
    y = torch.softmax(x @ x, dim=-1)
c = torch.nn.Conv2d(16, 32, 3).cuda()
z = c(torch.randn(8, 16, 64, 64, device="cuda"))
h = (x.half() @ x.half()).float().sum()
torch.cuda.synchronize()
print("torch ok", float(y.sum()), float(z.detach().mean()), float(h))
