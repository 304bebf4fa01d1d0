#!/usr/bin/env python3
"""Checks `mosaic-predict --sweep` on a compute-bound kernel (A: 4 waves of
FMA blocks) beside a DRAM-bound copy (B): A's duration alone on its
partition follows its waves (32 SMs: 4.1x what 128 SMs take, 4 waves
against 1), each side's co-run duration is at least its duration alone on
the partition, and B's cost over its full-GPU duration grows as its
partition shrinks."""
import subprocess
import sys

out = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True).stdout
rows = {}
for line in out.splitlines():
    f = line.replace("|", " ").split()
    if len(f) == 8 and f[0].isdigit():
        rows[int(f[0])] = [float(x) for x in f[2:]]
assert sorted(rows) == [32, 64, 96, 128], rows
a_us = {s: r[0] for s, r in rows.items()}
ratio = a_us[32] / a_us[128]
assert 3.9 < ratio < 4.3, f"A alone on 32 SMs over 128 SMs: {ratio:.2f}, want about 4.1"
for s, (a, a_co, a_full, b, b_co, b_full) in rows.items():
    assert a_co >= a and b_co >= b, f"split {s}: a co-run shorter than alone"
b_cost = [rows[s][5] for s in sorted(rows)]
assert b_cost == sorted(b_cost), f"B's cost does not grow as its SMs shrink: {b_cost}"
print("sweep ok:", {s: (round(r[2], 2), round(r[5], 2)) for s, r in sorted(rows.items())})
