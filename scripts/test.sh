#!/usr/bin/env bash
# Builds Mosaic and runs every GPU-free test three times: a normal build
# (build/), an optimised one (build-release/, -O3: GCC warns about more
# there, and warnings are errors) and an AddressSanitizer +
# UndefinedBehaviorSanitizer build (build-asan/).
# This is the README's test command and what CI (.ci/run) runs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
run() {
  local dir=$1; shift
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 300
}
run build -DCMAKE_BUILD_TYPE=RelWithDebInfo
run build-release -DCMAKE_BUILD_TYPE=Release
run build-asan -DCMAKE_BUILD_TYPE=Debug -DMOSAIC_SANITIZE=ON
