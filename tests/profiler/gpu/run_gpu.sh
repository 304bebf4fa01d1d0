#!/usr/bin/env bash
# GPU check of `mosaic-profile capture` (not run by ctest: it needs an H200
# and Nsight Compute). From the repository root on the GPU machine:
#
#   OUT=<results dir> bash tests/profiler/gpu/run_gpu.sh [DEPS]
#
# DEPS: a folder where the Debian packages libcjson1 libcjson-dev libcsv3
# libcsv-dev were unpacked with `dpkg -x` (the GPU image has neither cJSON
# nor libcsv, which the CLI needs; the capture library itself needs only
# CUPTI). Prepare it on the development machine:
#   mkdir -p .prof-deps && (cd .prof-deps && apt-get download libcjson1 \
#     libcjson-dev libcsv3 libcsv-dev && for f in *.deb; do dpkg -x $f .; done \
#     && rm -f *.deb) && echo /.prof-deps/ >> .git/info/exclude
# and carry ".prof-deps" to the GPU machine.
#
# It builds the project, then: runs testprog.cu plain and under capture
# (replay must not change its results), runs ncu on it twice (default, and
# --cache-control none --clock-control none), imports both, compares them
# with the capture (compare.py), and captures a small PyTorch program.
set -uo pipefail
: "${OUT:?set OUT to a results folder}"
DEPS=${1:-}
B=${BUILD:-/tmp/mosaic-gpu-build}
T=$B/gputest
HERE=tests/profiler/gpu
mkdir -p "$T"

EXTRA=()
if [ -n "$DEPS" ]; then
  DEPS=$(realpath "$DEPS")
  L=$DEPS/usr/lib/x86_64-linux-gnu
  export PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEPS
  export LD_LIBRARY_PATH=$L${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  EXTRA=(-DMOSAIC_CSV_LIBRARY=$L/libcsv.so -DMOSAIC_CSV_INCLUDE_DIR=$DEPS/usr/include)
fi
nvidia-smi -L; ncu --version | tail -1
cmake -S . -B "$B" -DMOSAIC_BUILD_TESTS=OFF "${EXTRA[@]}" > "$OUT/cmake.log" 2>&1 &&
  cmake --build "$B" -j 16 >> "$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log"; exit 1; }
grep -E "CUPTI|not found" "$OUT/cmake.log"
MP=$B/bin/mosaic-profile
[ -x "$MP" ] && [ -f "$B/lib/libmosaic_capture.so" ] || { echo "mosaic-profile or libmosaic_capture.so was not built"; exit 1; }

nvcc -O2 -arch=sm_90 -o "$T/testprog" $HERE/testprog.cu || exit 1
"$T/testprog" || exit 1

echo "=== capture testprog"
s=$(date +%s%N)
MOSAIC_CAPTURE_VERBOSE=1 "$MP" capture -o "$OUT/cap.json" -- "$T/testprog" > "$OUT/cap.log" 2>&1
echo "capture rc=$? (3 expected: testprog launches a CUDA graph) wall_ms=$(( ($(date +%s%N) - s) / 1000000 ))"
cut -c1-250 "$OUT/cap.log" | head -30
"$MP" show "$OUT/cap.json" | cut -c1-170

M=$("$MP" ncu-metrics)
for mode in default nocontrol; do
  opts=(); [ $mode = nocontrol ] && opts=(--cache-control none --clock-control none)
  echo "=== ncu $mode"
  ncu "${opts[@]}" --csv --page raw --print-kernel-base mangled --metrics "$M" \
      "$T/testprog" > "$OUT/ncu_$mode.csv" 2> "$T/ncu_$mode.err"; echo "ncu rc=$?"
  "$MP" import-ncu "$OUT/ncu_$mode.csv" -o "$T/ncu_$mode.json"; echo "import rc=$?"
  python3 $HERE/compare.py "$OUT/cap.json" "$T/ncu_$mode.json" > "$OUT/compare_$mode.txt" 2>&1
  tail -36 "$OUT/compare_$mode.txt"
done

echo "=== capture PyTorch"
"$MP" capture -o "$OUT/torch.json" -- python3 $HERE/torch_small.py > "$T/torch.log" 2>&1
echo "torch capture rc=$? (0 expected)"; tail -5 "$T/torch.log" | cut -c1-250
"$MP" show "$OUT/torch.json" | cut -c1-200 | head -30
