#!/usr/bin/env bash
# The PC sampling fixture against a cubin rebuilt from its source where
# nvcc is (CI has none: then only the committed cubin is dumped): the same
# device functions, ranges and line of every instruction, as the cubin
# reader sees them. A difference means this nvcc lays the code out
# differently; remake the fixture with tests/argus/fixtures/pcs/make.sh
# and the expected numbers in test_shim_pcs.c and pcs_samples.txt.
# usage: test_pcs_fixture.sh CUBIN_DUMP SRC_DIR WORK_DIR [NVCC]
set -euo pipefail
dump=$1 src=$2 work=$3 nvcc=${4:-}
rm -rf "$work" && mkdir -p "$work"
fix=$src/fixtures/pcs
"$dump" "$fix/pcs_kernel.cubin" > "$work/committed.txt"
grep -q '^function \$argus_pcs_kernel\$_Z16argus_pcs_calleefi entry 0 kernel argus_pcs_kernel range 0xb0 0x580$' \
    "$work/committed.txt" || { cat "$work/committed.txt"; echo "FAIL: callee range" >&2; exit 1; }
if [[ -z "$nvcc" ]]; then
    echo "test_pcs_fixture: no nvcc: the committed cubin was read, not rebuilt"
    exit 0
fi
"$fix/make.sh" "$work/rebuilt" "$nvcc" /nonexistent /nonexistent
"$dump" "$work/rebuilt/pcs_kernel.cubin" > "$work/rebuilt.txt"
if ! diff -u "$work/committed.txt" "$work/rebuilt.txt"; then
    echo "FAIL: the rebuilt cubin differs from the fixture (see make.sh)" >&2
    exit 1
fi
echo "test_pcs_fixture: rebuilt cubin matches the fixture ($(wc -l < "$work/rebuilt.txt") rows)"
