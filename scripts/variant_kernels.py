#!/usr/bin/env python3
"""Maps each zoo variant to the kernel keys of zoo.profile.json (issue 4).

The profile lists kernels in first-launch order. `mosaic-zoo once` set up and
ran the variants in variants.jsonl order; each variant's setup launches
helper kernels (k_fill*, k_chase_expand, k_spmv_cols), then one warm-up
launch, then `once` launches it again, so a variant's main key has
launches >= 2.

Rule (deterministic):
 1. Walk the variants in order with a cursor into the profile's kernels.
 2. The variant's main key is the first kernel at or after the cursor whose
    name matches the family's pattern (FAMILY_MAIN) and which is not a
    helper (HELPERS); the cursor moves past it.
 3. A variant whose launch configuration is identical to an earlier variant
    of its family launches no new key (SAME_AS): it gets that variant's keys
    and the cursor does not move.
 3a. If such a variant was also captured on its own (DATA_DIR/separate/
    NAME.profile.json, scripts/gpu/issue4_probes.sh), its main key is the
    family's kernel in that file, and the variant records the file under
    "profile".
 4. Kernels that follow the main key and match EXTRA (cuBLAS split-K reduce)
    belong to the same launch and are appended after the main key.
 5. Helper kernels between the previous variant's keys and this one's main
    key are listed as the variant's setup kernels.
Check: every main/extra key's `launches` equals 2 x the variants that use it.

Usage: variant_kernels.py DATA_DIR [--check]   (writes DATA_DIR/variant_kernels.json)
"""
import json
import os
import re
import sys

FAMILY_MAIN = {
    "copy": r"^_Z6k_copy", "triad": r"^_Z7k_triad", "silu_and_mul": r"k_silu_mul",
    "rmsnorm": r"k_rmsnorm", "softmax": r"k_softmax", "batchnorm": r"k_batchnorm",
    "stencil3d": r"k_stencil3d", "transpose": r"k_transpose",
    "fma": r"^_Z\d+k_fma", "gemm_cublas": r"^(nvjet|_ZN7cutlass|sm80_xmma)",
    "attention": r"k_attention", "conv": r"k_conv3x3", "pointer_chase": r"^_Z7k_chase",
    "gemv_cublas": r"(gemv2T_kernel|^nvjet)", "spmv": r"k_spmv_(warp|thread)",
    "histogram": r"k_histogram", "scan": r"^_Z6k_scan", "reduce": r"^_Z8k_reduce",
}
HELPERS = r"(k_fill|k_chase_expand|k_spmv_cols)"
EXTRA = r"splitKreduce_kernel"
# Variants whose launch configuration equals an earlier variant's (checked
# against variants.jsonl `p`: only a kernel argument or the data differ).
SAME_AS = {
    "pointer_chase_256M": "pointer_chase_1M",      # grid 132, block 64; chain size differs
    "histogram_256_skewed": "histogram_256_uniform",  # same bins and grid; data differ
    "transpose_tiled_nopad_8192": "transpose_tiled_8192",  # padding is an argument
}


def main():
    d = sys.argv[1]
    prof = json.load(open(f"{d}/zoo.profile.json"))
    kernels = prof["kernels"]
    variants = [json.loads(l) for l in open(f"{d}/variants.jsonl")]
    variants = [v for v in variants if v.get("record") == "variant"]
    out, setup, fam, own = {}, {}, {}, {}
    bad = 0
    cur = 0
    for v in variants:
        name, f = v["name"], v["family"]
        fam[name] = f
        if name in SAME_AS:
            sep = f"separate/{name}.profile.json"
            setup[name] = []
            if os.path.exists(f"{d}/{sep}"):
                ks = [k for k in json.load(open(f"{d}/{sep}"))["kernels"]
                      if re.search(FAMILY_MAIN[f], k["name"]) and not re.search(HELPERS, k["name"])]
                if len(ks) != 1 or ks[0]["launches"] != 2:
                    print(f"{sep}: want one {f} kernel launched twice", file=sys.stderr)
                    bad += 1
                if ks:
                    out[name] = [ks[0]["key"]]
                    own[name] = sep
                    continue
            out[name] = list(out[SAME_AS[name]])
            continue
        pat = re.compile(FAMILY_MAIN[f])
        helpers = []
        i = cur
        while i < len(kernels):
            k = kernels[i]
            if re.search(HELPERS, k["name"]):
                helpers.append(k["key"])
            elif pat.search(k["name"]):
                break
            i += 1
        if i == len(kernels):
            sys.exit(f"variant {name}: no kernel matching {FAMILY_MAIN[f]} after #{cur}")
        keys = [kernels[i]["key"]]
        i += 1
        while i < len(kernels) and re.search(EXTRA, kernels[i]["name"]):
            keys.append(kernels[i]["key"])
            i += 1
        cur = i
        out[name] = keys
        setup[name] = helpers
    # check the launch counts
    uses = {}
    for n, ks in out.items():
        # a variant captured on its own also ran in the shared capture,
        # under its sibling's key
        for k in (out[SAME_AS[n]] if n in own else ks):
            uses[k] = uses.get(k, 0) + 1
    for k in kernels:
        if k["key"] in uses and k["launches"] != 2 * uses[k["key"]]:
            print(f"launch count mismatch: {k['key']}: launches {k['launches']}, "
                  f"{uses[k['key']]} variants", file=sys.stderr)
            bad += 1
    unused = [k["key"] for k in kernels
              if k["key"] not in uses and not re.search(HELPERS, k["name"])]
    for k in unused:
        print(f"non-helper kernel used by no variant: {k}", file=sys.stderr)
        bad += 1
    doc = {"schema": "mosaic-variant-kernels/1",
           "profile": "zoo.profile.json",
           "rule": "scripts/variant_kernels.py: family pattern in launch order, "
                   "identical configurations share a key, split-K reduce appended",
           "variants": {n: dict({"family": fam[n], "kernels": out[n], "setup": setup[n]},
                                **({"profile": own[n]} if n in own else {}))
                        for n in out}}
    text = json.dumps(doc, indent=1) + "\n"
    path = f"{d}/variant_kernels.json"
    if "--check" in sys.argv:
        if open(path).read() != text:
            print(f"{path} differs from what the rule gives", file=sys.stderr)
            bad += 1
    else:
        open(path, "w").write(text)
    for n in out:
        print(f"{n:34s} {fam[n]:14s} " + "  +  ".join(
            k.split("|")[0][:40] + "|" + "|".join(k.split("|")[1:]) for k in out[n]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
