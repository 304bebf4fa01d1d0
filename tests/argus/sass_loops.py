#!/usr/bin/env python3
"""What a kernel's loops cost in SASS, from `cuobjdump -sass` text (sm_70 and
later: one 128-bit instruction printed as two 64-bit words, the control bits
in the second). Used by tests/argus/check_ptx.sh on the Fig. 14a overhead
kernels (tests/argus/gpu_overhead_kernels.cu), markers on and off.

  sass_loops.py loads  SASS FUNC   the innermost loop with the most global
                                   loads: loads, loads issued before the
                                   first wait, the most in flight, waits
  sass_loops.py region SASS FUNC   the outermost loop, inner loops and FFMA
                                   left out: instructions and encoded stall
                                   cycles (one region occurrence per
                                   iteration in the overhead kernels)

A "wait" is an instruction that reads the result of a load issued since the
previous wait: in-order issue stops the warp there until that load (and
every load issued with it) is back, so in a latency-bound loop the time of
one iteration is about (waits x memory latency), and 16 loads with 2 waits
run twice as fast as with 4. Stall cycles are ptxas's encoded stall counts
(bits 41-44 of the second word): the issue time of straight-line code, not
counting waits on variable-latency results.
Prints one line of key=value pairs; exits 2 on input it cannot read.
Tested on cuobjdump/nvdisasm 13.2 output for nvcc 13.0 cubins (sm_90, sm_90a).
"""
import re
import sys

INSN = re.compile(r'^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/')
CTRL = re.compile(r'^\s+/\* (0x[0-9a-f]{16}) \*/')
BRA = re.compile(r'\bBRA (0x[0-9a-f]+)')
REG = re.compile(r'\bR(\d+)\b')


def fail(msg):
    print("sass_loops.py: " + msg, file=sys.stderr)
    sys.exit(2)


def function(path, name):
    """[(address, text, stall)] of one function of the dump."""
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e))
    out, inside, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if 'Function :' in line:
            inside = line.split('Function :', 1)[1].strip() == name
        elif inside:
            m = INSN.match(line)
            if m and i + 1 < len(lines) and CTRL.match(lines[i + 1]):
                hi = int(CTRL.match(lines[i + 1]).group(1), 16)
                out.append((int(m.group(1), 16), m.group(2), (hi >> 41) & 0xf))
                i += 1
        i += 1
    if not out:
        fail("no function %s in %s (cuobjdump -sass output expected)" % (name, path))
    return [x for x in out if not x[1].startswith('NOP')]


def loops(ins):
    """(head, back-branch address) of every backward branch."""
    res = []
    for a, t, _ in ins:
        m = BRA.search(t)
        if m and int(m.group(1), 16) <= a:
            res.append((int(m.group(1), 16), a))
    return res


def operands(text):
    """(destination registers, source registers) of one instruction."""
    t = re.sub(r'^@!?U?P[T0-9]+\s+', '', text)
    parts = t.split(None, 1)
    op = parts[0]
    ops = [x.strip() for x in parts[1].split(',')] if len(parts) > 1 else []
    if not ops or op.startswith(('ST', 'BRA', 'RED', 'ATOM')) or '[' in ops[0]:
        return op, set(), set().union(*[set(REG.findall(x)) for x in ops]) if ops else set()
    src = set().union(*[set(REG.findall(x)) for x in ops[1:]]) if len(ops) > 1 else set()
    dst = set(REG.findall(ops[0]))
    if op.startswith('IMAD.WIDE') or op == 'CS2R' or '.64' in op or '.128' in op:
        dst |= {str(int(r) + 1) for r in dst}
    return op, dst, src


def loads(ins):
    best = None
    lp = loops(ins)
    for head, back in lp:
        if any(l != (head, back) and head <= l[0] and l[1] <= back for l in lp):
            continue  # not innermost
        body = [x for x in ins if head <= x[0] <= back]
        n = sum(1 for x in body if x[1].split()[0].startswith('LDG') or ' LDG' in x[1])
        if best is not None and n <= best[0]:
            continue
        pending, wave, waits, first, issued, most = {}, 0, 0, None, 0, 0
        for _, t, _ in body:
            op, dst, src = operands(t)
            if any(pending.get(r) == wave for r in src):
                if first is None:
                    first = issued
                wave += 1
                waits += 1
            for r in src | dst:
                pending.pop(r, None)
            if op.startswith('LDG'):
                for r in dst:
                    pending[r] = wave
                issued += 1
            most = max(most, len({r for r in pending}))
        best = (n, first if first is not None else issued, most, waits, head, back)
    if best is None or best[0] == 0:
        fail("no loop with global loads")
    print("loop=%#x-%#x loads=%d first_wait_after=%d most_in_flight=%d waits=%d" %
          (best[4], best[5], best[0], best[1], best[2], best[3]))


def region(ins):
    lp = loops(ins)
    if not lp:
        fail("no loop")
    outer = max(lp, key=lambda l: l[1] - l[0])
    inner = [l for l in lp if l != outer and outer[0] <= l[0] and l[1] <= outer[1]]
    n = st = 0
    for a, t, s in ins:
        if outer[0] <= a <= outer[1] and not any(l[0] <= a <= l[1] for l in inner) \
                and 'FFMA' not in t:
            n += 1
            st += s
    print("loop=%#x-%#x instructions=%d stalls=%d" % (outer[0], outer[1], n, st))


if __name__ == '__main__':
    if len(sys.argv) != 4 or sys.argv[1] not in ('loads', 'region'):
        fail("usage: sass_loops.py loads|region SASS_FILE FUNCTION")
    ins = function(sys.argv[2], sys.argv[3])
    (loads if sys.argv[1] == 'loads' else region)(ins)
