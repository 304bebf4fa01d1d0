#!/usr/bin/env python3
"""Checks `mosaic-predict --sweep 4` on a compute-bound kernel (A:
fma_8448_b128_c8, 66 waves of FMA blocks) beside a DRAM-bound copy (B:
copy_1G) against what the H200 measured for this pair
(profiler/data/h200, 2026-11-30):

- A alone on n SMs, estimated from its profile, against
  splits/time.jsonl (CUDA graph, 100 replays): 16, 48, 80, 112 SMs;
- both kernels' co-run durations against corun.jsonl's partitioned
  measurements of the pair (median of 7 repeats, order ab): A on 36, 68,
  100 SMs with B on the other 96, 64, 32.

Every value must be within TOL of the measurement: the predictions were
2-12% off when this test was written (2026-12-01), the bound leaves 3
points beyond the worst."""
import subprocess
import sys

TOL = 0.15
# A alone on n SMs, us (splits/time.jsonl, median_us)
A_ALONE = {16: 2416.646, 48: 813.296, 80: 492.786, 112: 356.936}
# A's SMs -> (A co-run us, B co-run us) (corun.jsonl, corun_*_us, order ab)
CORUN = {36: (1093.152, 514.528), 68: (585.024, 513.184), 100: (404.8, 697.92)}

out = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True).stdout
rows = {}
for line in out.splitlines():
    f = line.replace("|", " ").split()
    if len(f) == 8 and f[0].isdigit():
        rows[int(f[0])] = [float(x) for x in f[2:]]
# Only splits the H200 can make: each side at least 8 SMs (its minimum
# green-context partition), so a step of 4 offers 8 .. 124 and not 4 or 128.
unmakeable = [s for s in rows if s < 8 or 132 - s < 8]
assert not unmakeable, f"the sweep offers splits the GPU cannot make: A on {unmakeable}"
assert 8 in rows and 124 in rows, f"the sweep lacks 8/124 or 124/8: {sorted(rows)}"
missing = [s for s in list(A_ALONE) + list(CORUN) if s not in rows]
assert not missing, f"the sweep lacks A's SM counts {missing}"
bad = []
for s, meas in A_ALONE.items():
    pred = rows[s][0]
    if abs(pred - meas) > TOL * meas:
        bad.append(f"A alone on {s} SMs: predicted {pred:.1f} us, measured {meas:.1f} us")
for s, (ma, mb) in CORUN.items():
    pa, pb = rows[s][1], rows[s][4]
    if abs(pa - ma) > TOL * ma:
        bad.append(f"A co-run on {s} SMs: predicted {pa:.1f} us, measured {ma:.1f} us")
    if abs(pb - mb) > TOL * mb:
        bad.append(f"B co-run on {132 - s} SMs: predicted {pb:.1f} us, measured {mb:.1f} us")
assert not bad, "; ".join(bad)
print("sweep ok: within %d%% of the H200's measurements at %d points"
      % (TOL * 100, len(A_ALONE) + 2 * len(CORUN)))
