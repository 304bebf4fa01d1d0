#!/usr/bin/env python3
"""argus-sass's known answer: the per-PC instruction counts of
tests/argus/sass_loop.cu, from its SASS listing (`cuobjdump -sass`).

  sass_check.py loop  LISTING FUNC
      prints LO:HI:EXIT (hex): the loop's first and last PC (the target of
      its backward branch and the branch) and the first EXIT
  sass_check.py check LISTING FUNC SASS_JSON TRIP WARPS LAUNCHES
      checks argus-sass's file: the kernel's launches; at each loop PC
      smsp__sass_inst_executed = TRIP x WARPS x LAUNCHES and
      smsp__sass_thread_inst_executed 32 times that (full warps); at each
      other PC up to EXIT, WARPS x LAUNCHES; every PC an instruction of the
      listing. Prints a table (PC, instruction, expected, got) and one line
      per check; exits 1 when one fails, 2 on input it cannot read.

The counts follow from the kernel alone: each thread runs the loop TRIP
times (#pragma unroll 1), all 32 lanes of every warp active, so nothing is
taken from the collector's own numbers. Tested on cuobjdump 13.5 output of
an nvcc 13.0 cubin (sm_90).
"""
import json
import re
import sys

INSN = re.compile(r'^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;')
BRA = re.compile(r'\bBRA (0x[0-9a-f]+)')


def listing(path, func):
    insns, cur = [], None
    with open(path) as f:
        for line in f:
            m = re.search(r'Function : (\S+)', line)
            if m:
                cur = m.group(1)
                continue
            m = INSN.match(line)
            if m and cur == func:
                insns.append((int(m.group(1), 16), m.group(2).strip()))
    if not insns:
        sys.exit(f"sass_check: no instructions of {func} in {path}")
    return insns


def loop(insns):
    back = []
    for pc, text in insns:
        m = BRA.search(text)
        if m and int(m.group(1), 16) < pc:
            back.append((int(m.group(1), 16), pc))
    exits = [pc for pc, text in insns if text.split()[-1] == 'EXIT']
    if len(back) != 1 or not exits:
        sys.exit(f"sass_check: expected one backward branch and an EXIT, found "
                 f"{len(back)} and {len(exits)}")
    return back[0][0], back[0][1], exits[0]


def main(argv):
    if len(argv) >= 4 and argv[1] == 'loop':
        lo, hi, ex = loop(listing(argv[2], argv[3]))
        print(f"{lo:x}:{hi:x}:{ex:x}")
        return 0
    if len(argv) != 8 or argv[1] != 'check':
        print(__doc__, file=sys.stderr)
        return 2
    insns = listing(argv[2], argv[3])
    func, trip, warps, launches = argv[3], int(argv[5]), int(argv[6]), int(argv[7])
    lo, hi, ex = loop(insns)
    try:
        doc = json.load(open(argv[4]))
    except (OSError, ValueError) as e:
        print(f"sass_check: {argv[4]}: {e}", file=sys.stderr)
        return 2
    ks = [k for k in doc.get('kernels', []) if k.get('function') == func]
    fails = []

    def check(ok, what):
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            fails.append(what)

    check(doc.get('schema') == 'argus.sassmetrics' and doc.get('version') == 1,
          'schema argus.sassmetrics v1')
    check(len(ks) == 1, f'one kernel {func} (found {len(ks)})')
    if len(ks) != 1:
        return 1
    k = ks[0]
    check(k['launches'] == launches, f"launches {k['launches']} == {launches}")
    got = {int(p['offset'], 16): p for p in k['pcs']}
    known = {pc for pc, _ in insns}
    check(set(got) <= known, 'every PC an instruction of the listing')
    rows, bad = [], 0
    for pc, text in insns:
        if pc > ex:
            break
        n = warps * launches * (trip if lo <= pc <= hi else 1)
        p = got.get(pc, {})
        gi = p.get('smsp__sass_inst_executed')
        gt = p.get('smsp__sass_thread_inst_executed')
        ok = gi == n and gt in (None, 32 * n)
        bad += not ok
        rows.append((pc, text, n, gi, gt, ok))
    check(bad == 0, f'{len(rows) - bad} of {len(rows)} PCs up to EXIT exact '
                    f'(loop 0x{lo:x}..0x{hi:x}: {trip} x {warps} warps x {launches} launches)')
    print(f"{'pc':>6} {'instruction':<40} {'expected':>10} {'inst_exec':>10} {'thread_inst':>12}")
    for pc, text, n, gi, gt, ok in rows:
        print(f"0x{pc:04x} {text[:40]:<40} {n:>10} {str(gi):>10} {str(gt):>12}"
              f"{'' if ok else '  <-- differs'}")
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
