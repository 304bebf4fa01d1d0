#!/usr/bin/env python3
"""A stack scan of a hung process where gdb is not there (the GPU image has
no gdb or eu-stack): for each thread, what /proc/PID/task/TID/syscall gives
(the system call, its arguments, SP and PC), the PC and, for a futex wait,
the futex word placed in their mappings (a word in a library's data is that
library's lock), then every 8-byte word of the thread's stack from SP up
(STACK_BYTES) that points into an executable mapping: the return addresses
among them name the libraries on the call chain, innermost first. Not a
backtrace (stale words show up too); each library+offset can be resolved
on the development machine with `addr2line -f -e LIB OFFSET` against the
same build. Reads /proc/PID/mem, which needs the right to trace PID (root
in the GPU container has it).

    pcmap_stackscan.py PID [STACK_BYTES]     prints the scan; exit 0, or 1
                                             when nothing could be read
"""
import os
import sys

FUTEX = 202  # x86_64


def mappings(pid):
    maps = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            p = line.split()
            lo, hi = (int(x, 16) for x in p[0].split("-"))
            maps.append((lo, hi, p[1], int(p[2], 16), p[5] if len(p) > 5 else "[anon]"))
    return maps


def place(maps, addr):
    for lo, hi, perm, off, name in maps:
        if lo <= addr < hi:
            return "%s+0x%x" % (name, addr - lo + off), perm
    return "?", ""


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    pid = int(sys.argv[1])
    nbytes = int(sys.argv[2]) if len(sys.argv) > 2 else 32768
    try:
        maps = mappings(pid)
    except OSError as e:
        print("pcmap_stackscan: /proc/%d/maps: %s" % (pid, e))
        return 1
    read_any = False
    for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % pid)):
        base = "/proc/%d/task/%d" % (pid, tid)
        try:
            comm = open(base + "/comm").read().strip()
            sc = open(base + "/syscall").read().split()
        except OSError as e:
            print("-- thread %d: %s" % (tid, e))
            continue
        print("-- thread %d (%s): syscall %s" % (tid, comm, " ".join(sc)))
        if len(sc) < 9 or not sc[0].lstrip("-").isdigit():
            continue  # running, or not in a system call
        nr, args, sp, pc = int(sc[0]), [int(a, 16) for a in sc[1:7]], int(sc[7], 16), int(sc[8], 16)
        print("   pc %s" % place(maps, pc)[0])
        if nr == FUTEX:
            print("   futex word 0x%x in %s (op 0x%x, value %d)" %
                  (args[0], place(maps, args[0])[0], args[1], args[2]))
        # Not past the end of the stack's mapping.
        top = next((hi for lo, hi, _, _, _ in maps if lo <= sp < hi), sp)
        try:
            with open("/proc/%d/mem" % pid, "rb") as mem:
                mem.seek(sp)
                data = mem.read(min(nbytes, top - sp))
        except OSError as e:
            print("   stack: /proc/%d/mem unreadable: %s" % (pid, e))
            continue
        read_any = True
        shown = 0
        for i in range(0, len(data) - 7, 8):
            w = int.from_bytes(data[i:i + 8], "little")
            where, perm = place(maps, w)
            if "x" in perm:
                print("   sp+0x%05x  %s" % (i, where))
                shown += 1
                if shown >= 80:
                    print("   (80 shown)")
                    break
    return 0 if read_any else 1


if __name__ == "__main__":
    sys.exit(main())
