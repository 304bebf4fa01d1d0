# Shared set-up of the dataset scripts in scripts/gpu (sourced, not run):
# needs OUT and PHASES set; defines REPO, BUILD, DS ($OUT/ds), ZOO, PROF,
# log and has; builds $BUILD (default build-gpu, carried from the
# development machine) when its mosaic-zoo is missing; records the GPU state
# in $DS/env.txt.
: "${OUT:?set OUT to a results directory}"
REPO=$(pwd)
BUILD=${BUILD:-build-gpu}
DS=$OUT/ds
mkdir -p "$DS"
: >>"$OUT/script.log"
T0=$SECONDS
CUPTI_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
# build-gpu/lib carries libcjson/libcsv for mosaic-profile (none on the image).
export LD_LIBRARY_PATH=$REPO/$BUILD/lib:$CUPTI_DIR:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MOSAIC_GIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
log() { printf '[+%4ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$OUT/script.log" >&2; }
has() { [[ " $PHASES " == *" $1 "* ]]; }

if [[ ! -x $BUILD/bin/mosaic-zoo ]]; then
    log "building into $BUILD"
    cmake -S . -B "$BUILD" -DMOSAIC_BUILD_TESTS=OFF -DMOSAIC_BUILD_CUDA=ON >"$OUT/build.log" 2>&1 &&
        cmake --build "$BUILD" -j 16 >>"$OUT/build.log" 2>&1 || { log "build failed"; tail -30 "$OUT/build.log"; }
fi
ZOO=$REPO/$BUILD/bin/mosaic-zoo
PROF=$REPO/$BUILD/bin/mosaic-profile
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,compute_mode --format=csv;
  nvcc --version | tail -2; } >"$DS/env.txt" 2>&1
