#!/usr/bin/env bash
# The arbiter's benchmarks, side by side in one run (CPU, fake driver, no
# GPU): what the shim adds to a launch observe-only against as a connected
# HP client (bench_launch, each against the driver's own entry point in the
# same process), the BE grant round trip (bench_sched_grant), and the mosaic
# policy's admission decision with a warm cache (bench_decide).
#   tests/arbiter/bench_arbiter.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bin=$build/bin
dir=$(mktemp -d /tmp/mosaic-arbiter-bench-XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
"$bin/mosaic-sched" --config /dev/null --socket "$dir/s.sock" --policy none --metrics-port 0 \
  --mps off --log-level warn daemon &
pid=$!
for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.05; done
export LD_LIBRARY_PATH=$build/tests/fakecuda
echo "== HP launch, shim observe-only (MOSAIC_ROLE unset) =="
LD_PRELOAD=$build/lib/libmosaic.so "$bin/bench_launch" 400 256
echo "== HP launch, shim connected as HP, no completion write (MOSAIC_HP_COMPLETION=off, the default) =="
MOSAIC_ROLE=hp MOSAIC_HP_COMPLETION=off MOSAIC_SCHED_SOCKET=$dir/s.sock \
  LD_PRELOAD=$build/lib/libmosaic.so "$bin/bench_launch" 400 256
echo "== HP launch, shim connected as HP, cuStreamWriteValue64 after each (MOSAIC_HP_COMPLETION=device) =="
MOSAIC_ROLE=hp MOSAIC_HP_COMPLETION=device MOSAIC_SCHED_SOCKET=$dir/s.sock \
  LD_PRELOAD=$build/lib/libmosaic.so "$bin/bench_launch" 400 256
echo "== BE grant round trip and HP post (client library, policy none) =="
"$bin/bench_sched_grant" "$dir/s.sock" 20000 200000
echo "== admission decision (policy mosaic) =="
"$bin/bench_decide" "$root/profiler/data/h200" "$root/predictor/models/h200/lockbox"
