#!/usr/bin/env python3
"""Compare two mosaic profiles kernel by kernel (e.g. capture vs ncu import).

usage: compare.py A.json B.json [--tol 0.15]
Prints, for each key present in both, every feature of A and B with the
relative difference, flags those beyond --tol, and ends with the worst
relative difference per feature. Exit status 0 always (a report, not a test).
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=0.15)
    opt = ap.parse_args()
    args, tol = [opt.a, opt.b], opt.tol
    a_prof, b_prof = (json.load(open(p)) for p in args)
    ka = {k["key"]: k for k in a_prof["kernels"]}
    kb = {k["key"]: k for k in b_prof["kernels"]}
    common = sorted(set(ka) & set(kb))
    print(f"{args[0]}: {len(ka)} kernels ({a_prof['method']}); "
          f"{args[1]}: {len(kb)} kernels ({b_prof['method']}); common {len(common)}")
    for name, only in (("only in A", set(ka) - set(kb)), ("only in B", set(kb) - set(ka))):
        if only:
            print(f"{name}: " + ", ".join(sorted(only)[:10]))
    feats = [f["key"] for f in a_prof["features"] if "metric" in f]
    worst = {}
    for key in common:
        a, b = ka[key], kb[key]
        print(f"\n== {key}\n   launches {a['launches']}/{b['launches']}  regs {a['regs']}/{b['regs']}"
              f"  static_smem {a['static_smem']}/{b['static_smem']}"
              f"  blocks/SM {a['occupancy']['blocks_per_sm']}/{b['occupancy']['blocks_per_sm']}")
        for f in feats:
            va, vb = a["metrics"].get(f), b["metrics"].get(f)
            if va is None or vb is None:
                print(f"   {f:28s} A={va} B={vb}")
                continue
            big = max(abs(va), abs(vb))
            rel = abs(va - vb) / big if big > 1e-9 else 0.0
            worst[f] = max(worst.get(f, 0.0), rel if big > 1e-3 else 0.0)
            flag = "  <-- differs" if rel > tol and big > 1e-3 else ""
            print(f"   {f:28s} A={va:<14.6g} B={vb:<14.6g} rel={rel:.3f}{flag}")
    print("\nworst relative difference per feature (|A-B| / max(|A|,|B|)):")
    for f in feats:
        if f in worst:
            print(f"   {f:28s} {worst[f]:.3f}")


if __name__ == "__main__":
    main()
