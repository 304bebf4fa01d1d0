#!/usr/bin/env bash
# CPU benchmarks of the shim against the fake driver (no GPU needed): what
# libmosaic.so adds to one launch, side by side with the driver's own entry
# point in one process. The GPU run of the same program is in
# scripts/gpu/issue2_launch_coverage.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target mosaic fakecuda bench_launch >/dev/null
LD_LIBRARY_PATH=build/tests/fakecuda LD_PRELOAD=$PWD/build/lib/libmosaic.so \
  build/bin/bench_launch "${1:-400}" "${2:-256}"
