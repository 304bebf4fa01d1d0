#!/usr/bin/env bash
# Policy mosaic's pair table on the H200's ResNet pair (docs/sched.md,
# "mosaic_policy_unknown_total"): the training pair of
# be_continuous_traces.py half loaded, replayed at p = 1.25 with the
# daemon's profile-dir of the H200 services run (all six profiles, as on
# the GPU), must ask for more than 8,192 HP/BE pairs (the table's old
# fixed size) and get a prediction for every one: no decision may come out
# unknown_kernel for want of a pair (cause no_pair). With the old table
# 205 decisions did here (8,760 pairs asked for), and on the GPU, where a
# device-gated BE queue keeps such a kernel running beside many
# decisions, 256,401 did (2026-12-03, call 2).
#
#   tests/sched/test_pair_table.sh BUILD_DIR ROOT
set -euo pipefail
build=${1:?usage: test_pair_table.sh BUILD_DIR ROOT}
root=${2:?usage: test_pair_table.sh BUILD_DIR ROOT}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$root/tests/sched/be_continuous_traces.py" "$root" train "$work/pair" --load 0.5 \
  --requests 200 > /dev/null
MOSAIC_SIMGPU_PROFILES=$(cat "$work/pair/simgpu_profiles") \
  "$build/bin/mosaic-sched" --policy mosaic --slo 1.25 \
  --profile-dir "$root/profiler/data/h200/services" --model-dir "$root/predictor/models/h200" \
  --log-level debug replay --warmup 5 "$work/pair/hp.trace" "$work/pair/be.trace" \
  > "$work/out" 2> "$work/err" || fail "replay: $(tail -3 "$work/err")"
line=$(grep "policy mosaic: decisions by reason" "$work/err") ||
  fail "the policy's closing line is missing: $(tail -3 "$work/err")"
echo "$line"
grep "^BE:" "$work/out"
pairs=$(grep -o "pairs predicted [0-9]*" <<< "$line" | grep -o "[0-9]*$") ||
  fail "the closing line does not count the pairs"
no_pair=$(grep -o "no_pair [0-9]*" <<< "$line" | grep -o "[0-9]*$")
[ "$no_pair" = 0 ] || fail "$no_pair decisions were unknown_kernel for want of a pair prediction ($pairs pairs)"
[ "$pairs" -gt 8192 ] || fail "only $pairs pairs asked for: the test no longer passes the old table's size"
echo "PASS: $pairs pairs, every one predicted; no decision held for want of one"
