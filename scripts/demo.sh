#!/usr/bin/env bash
# Sets up and runs the demo on a machine without a GPU: installs the build
# dependencies (apt, when root), builds, runs the arbiter side by side with
# its baselines on the simulated GPU (scripts/arbiter_eval.sh: the table of
# HP p99 and BE throughput with and without control), runs a small program
# under libmosaic.so over the fake driver, prints the shim's statistics, and
# shows the launch-coverage results recorded on the H200.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
echo "== the arbiter on a simulated GPU: HP service + BE trainer, each policy and p (about two minutes) =="
scripts/arbiter_eval.sh --build build --json build/arbiter_eval.json
echo "(results as JSON: build/arbiter_eval.json; method and discussion: docs/arbiter-eval.md)"
echo
stats=$(mktemp -d)/stats.json
echo "== a program launching 1000 kernels (500 before and after a fork) under libmosaic.so =="
LD_LIBRARY_PATH=build/tests/fakecuda MOSAIC_STATS="$stats" MOSAIC_LOG=info \
  LD_PRELOAD=build/lib/libmosaic.so build/bin/shim_child 500 fork 100
echo "== the shim's statistics ($stats) =="
cat "$stats"
echo
echo "== the shipped H200 dataset (profiler/data/h200) =="
python3 scripts/dataset_summary.py profiler/data/h200 | sed -n '1,60p'
echo "(full tables: docs/dataset.md; shim results on the H200: docs/results/2026-11-30-issue2/README.md)"
echo
D=profiler/data/h200
key() { python3 -c "import json,sys;print(json.load(open('$D/variant_kernels.json'))['variants'][sys.argv[1]]['kernels'][0])" "$1"; }
for pair in "attention_bh16_s2048_q64_k128 triad_512M_w2" "gemm_cublas_bf16_8192 copy_1G"; do
  set -- $pair
  for mode in "shared" "partitioned --sms 64"; do
    echo "== mosaic-predict: $1 with $2, $mode (H200 models) =="
    build/bin/mosaic-predict "$D/zoo.profile.json" "$D/zoo.profile.json" \
      --key-a "$(key "$1")" --key-b "$(key "$2")" --mode $mode | sed -n '1,4p'
  done
done
echo "== mosaic-predict --sweep: gemm_cublas_bf16_8192 (A) with copy_1G (B), every split of 16 SMs =="
build/bin/mosaic-predict "$D/zoo.profile.json" "$D/zoo.profile.json" --mode partitioned --sweep 16 \
  --key-a "$(key gemm_cublas_bf16_8192)" --key-b "$(key copy_1G)" | sed -n '2,11p'
echo "(accuracy on unseen kernel families: docs/predictor-eval.md)"
