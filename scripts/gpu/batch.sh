#!/usr/bin/env bash
# Several GPU scripts in one device call, each under its own time limit and
# its own results folder, everything packed into one archive at the end
# (a device call brings back only a few files).
#
#   OUT=DIR scripts/gpu/batch.sh 'NAME:SECONDS:COMMAND' ...
#
# Each COMMAND runs with OUT=$OUT/NAME (created) and its console in
# $OUT/NAME/console.txt; a command still running after SECONDS is sent TERM
# (KILL 10 s later), so later ones still run. Prints each command's rc and
# the last lines of its console, then packs $OUT/* into $OUT/batch.tgz and
# removes the unpacked copies.
set -uo pipefail
: "${OUT:?set OUT to a results directory}"
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,compute_mode \
    --format=csv 2>&1; nvcc --version 2>&1 | tail -2; git rev-parse --short HEAD 2>/dev/null; } >"$OUT/env.txt"
names=()
for spec in "$@"; do
    name=${spec%%:*} rest=${spec#*:}
    limit=${rest%%:*} cmd=${rest#*:}
    [[ $name =~ ^[A-Za-z0-9_.-]+$ && $limit =~ ^[0-9]+$ ]] ||
        { echo "batch.sh: bad spec '$spec' (want NAME:SECONDS:COMMAND)" >&2; continue; }
    mkdir -p "$OUT/$name"
    t0=$SECONDS
    OUT=$OUT/$name timeout -k 10 "$limit" bash -c "$cmd" >"$OUT/$name/console.txt" 2>&1
    rc=$?
    echo "$name rc=$rc $((SECONDS - t0))s" >>"$OUT/batch.log"
    names+=("$name")
done
for name in "${names[@]}"; do
    echo "=== $(grep "^$name " "$OUT/batch.log")"
    tail -n "${TAIL_LINES:-25}" "$OUT/$name/console.txt"
done
tar -C "$OUT" -czf "$OUT/batch.tgz" env.txt batch.log "${names[@]}" && rm -rf "${names[@]/#/$OUT/}"
