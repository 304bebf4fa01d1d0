#!/usr/bin/env bash
# The client protocol's benchmark: starts a mosaic-sched (policy none, in a
# temporary directory), runs bench_sched_grant against it, stops it.
#   tests/sched/bench_sched.sh [ROUND_TRIPS] [HP_POSTS]
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build >/dev/null
cmake --build build -j2 --target mosaic-sched bench_sched_grant >/dev/null
dir=$(mktemp -d /tmp/mosaic-bench-XXXXXX)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
build/bin/mosaic-sched --socket "$dir/s.sock" --policy none --metrics-port 0 --mps off \
  --log-level warn daemon &
pid=$!
for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.05; done
build/bin/bench_sched_grant "$dir/s.sock" "${1:-20000}" "${2:-200000}"
