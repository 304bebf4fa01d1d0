#!/usr/bin/env bash
# sass_loops.py (the SASS gate's measure, check_ptx.sh) on a hand-made
# cuobjdump listing whose answers are known by construction
# (fixtures/sass_loops/README.md); runs without CUDA, so CI tests the
# measure even where it cannot run the gate.
# usage: test_sass_loops.sh PYTHON3 SRC_DIR
set -euo pipefail
py=$1 src=$2
tool=$src/sass_loops.py fix=$src/fixtures/sass_loops/synthetic.sass
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect WANT ARGS...
    local want=$1 got; shift
    got=$("$py" "$tool" "$@") || fail "sass_loops.py $* exited $?"
    [[ $got == "$want" ]] || fail "sass_loops.py $*: got '$got', want '$want'"
}
# 4 loads; the first wait after 2; R3 back with R2, R8 with R4: 2 waits.
expect 'loop=0x50-0xe0 loads=4 first_wait_after=2 most_in_flight=2 waits=2' loads "$fix" mem
# Outer loop 0x10-0xa0 less the inner loop 0x50-0x70, FFMA and NOP:
# IADD3 2 + CS2R 1 + ISETP 13 + STG 1 + BRA 5.
expect 'loop=0x10-0xa0 instructions=5 stalls=22' region "$fix" cmp
# Bad input: a function the listing lacks, a file that is not there, a
# listing with no loop, wrong arguments: exit 2 with a message.
for args in "loads $fix nosuch" "region /nonexistent/x.sass cmp" "region $fix other" "loads $fix other" "frobnicate $fix cmp"; do
    set +e
    msg=$("$py" "$tool" $args 2>&1 >/dev/null)
    rc=$?
    set -e
    [[ $rc == 2 && $msg == sass_loops.py:* ]] || fail "sass_loops.py $args: exit $rc, '$msg' (want 2 and a message)"
done
echo "sass_loops.py: synthetic listing measured as constructed; bad input refused"
