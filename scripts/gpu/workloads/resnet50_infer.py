"""ResNet-50 inference (torchvision, random weights, batch 8, fp32 and fp16):
the PyTorch program whose every kernel `mosaic-profile capture` must profile.
Two forward passes per precision after building the model; prints one line."""
import sys

import torch
import torchvision

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 8
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).cuda().eval()
x = torch.randn(batch, 3, 224, 224, device="cuda")
with torch.inference_mode():
    for dtype in (torch.float32, torch.float16):
        m = model.to(dtype)
        for _ in range(2):
            y = m(x.to(dtype))
torch.cuda.synchronize()
print(f"RESULT: OK resnet50 batch {batch} logits {tuple(y.shape)} finite={bool(torch.isfinite(y).all())}")
