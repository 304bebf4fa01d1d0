#!/usr/bin/env bash
# Quick GPU smoke check of libmosaic.so: build, the cuGetProcAddress pointer
# identity probe, and one PyTorch run under the shim with debug logging.
set -uo pipefail
: "${OUT:?set OUT to a results directory}"
cmake -S . -B build -DMOSAIC_BUILD_TESTS=OFF >/dev/null && cmake --build build -j 8 >/dev/null || exit 1
gcc -O1 -o /tmp/getproc_identity scripts/gpu/probes/getproc_identity.c -I/usr/local/cuda/include -ldl
/tmp/getproc_identity > $OUT/getproc_identity.txt 2>&1
grep -E "IDENTITY|NO MATCH" $OUT/getproc_identity.txt | head -20
cat > /tmp/t.py <<'PY'
import torch
x = torch.randn(512, 512, device="cuda")
for _ in range(3):
    y = torch.softmax(x @ x, dim=-1)
c = torch.nn.Conv2d(3, 8, 3).cuda()
z = c(torch.randn(2, 3, 32, 32, device="cuda"))
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(2): y = x * 2 + 1
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        y = torch.relu(x * 2 + 1)
for _ in range(5): g.replay()
torch.cuda.synchronize()
print("torch ok", y.sum().item())
PY
MOSAIC_LOG=debug MOSAIC_STATS=$OUT/torch.stats.json LD_PRELOAD=$PWD/build/lib/libmosaic.so python3 /tmp/t.py > $OUT/torch.log 2>&1
echo "rc=$?"
grep -c "cuGetProcAddress" $OUT/torch.log
grep -v "cuGetProcAddress\|kernel 0x" $OUT/torch.log | head -30
cat $OUT/torch.stats.json | head -60
